"""core/plugins.py: an entry-point group is loaded once, lazily, and a broken plug-in fails loudly every time.

The entry points are real: a distribution's ``*.dist-info`` on ``sys.path``, read by importlib.metadata.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.plugins import EntryPointGroup

GROUP = "mimesis_gym.tests_plugins"


def distribution(site: Path, name: str, entry_points: str, module: str) -> None:
    """A distribution ``name`` on ``site``: its metadata, its entry points of ``GROUP`` and its module."""
    info = site / f"{name}-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entry_points}\n")
    (site / f"{name}.py").write_text(module)


def test_a_group_loads_once_and_a_broken_plugin_fails_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    distribution(tmp_path, "plugin_good", "good = plugin_good:VALUE", "VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen: list[tuple[str, object]] = []
    group = EntryPointGroup(GROUP, lambda name, value: seen.append((name, value)))
    group.load()
    group.load()
    assert seen == [("good", 42)]

    distribution(tmp_path, "plugin_bad", "bad = plugin_bad:VALUE", "raise ImportError('no such thing')\n")
    failing = EntryPointGroup(GROUP, lambda name, value: None)
    message = (
        "plug-in 'bad' = 'plugin_bad:VALUE' of entry-point group mimesis_gym.tests_plugins (from plugin_bad) "
        "failed: ImportError: no such thing; fix or uninstall plugin_bad"
    )
    for _ in range(2):
        with pytest.raises(ConfigurationError) as raised:
            failing.load()
        assert str(raised.value) == message


def test_a_registration_error_names_the_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    distribution(tmp_path, "plugin_odd", "odd = plugin_odd:VALUE", "VALUE = 'not an env'\n")
    monkeypatch.syspath_prepend(str(tmp_path))

    def register(name: str, value: object) -> None:
        raise TypeError(f"{value!r} is not an EnvEntry")

    with pytest.raises(ConfigurationError, match=r"plug-in 'odd' .* TypeError: 'not an env' is not an EnvEntry"):
        EntryPointGroup(GROUP, register).load()
