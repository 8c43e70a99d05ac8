"""HumanReplay's task packs: human conversations as tasks (docs/humans.md, "The replay protocol").

A task is a :class:`~mimesis_gym.corpora.HumanConversation` (its id ``<source>/<conv_id>``). Two packs:

- ``original``: the demo pack shipped here (``data/demo.jsonl``, six short conversations written for
  this project, not real people): split ``demo`` (the first two, played by the contract suite) and
  ``dev``/``test`` by :func:`~mimesis_gym.corpora.split_of`;
- ``humans``: real corpora read from ``data_dir`` (the folder that holds them, e.g.
  ``../shared/data/humans``) by :func:`~mimesis_gym.corpora.load_corpus`, one or more ``sources``;
  splits ``dev`` and ``test``.

In both, ``train`` is the ``dev`` half (the same conversations): a trainer that names the env (a
simulator's SFT, which validates nothing here) never draws the ``test`` half the scorecard replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.corpora import HumanConversation, load_corpus

__all__ = ["DEMO_FILE", "DEMO_TASKS", "humans_pack", "load_original_pack", "normalise_sources"]

DEMO_FILE = Path(__file__).parent / "data" / "demo.jsonl"
DEMO_TASKS = 2
"""The first conversations of the demo file form the ``demo`` split."""


@cache
def load_original_pack() -> TaskPack[HumanConversation]:
    """The shipped demo pack (cached per process)."""
    conversations = load_corpus(f"jsonl:{DEMO_FILE}").conversations
    demo = conversations[:DEMO_TASKS]
    rest = conversations[DEMO_TASKS:]
    dev = [c for c in rest if c.split == "dev"]
    test = [c for c in rest if c.split == "test"]
    return TaskPack("original", {"demo": demo, "dev": dev, "train": dev, "test": test})


def normalise_sources(sources: str | Sequence[str] | None) -> tuple[str, ...]:
    """Sources as a tuple of names, in the order given, without repeats; ``None`` or ``""``: every
    shipped corpus. A comma-separated string is split (so ``--env-arg replay.sources=a,b`` works)."""
    from mimesis_gym.corpora import shipped_corpora

    if sources is None or sources == "":
        return tuple(shipped_corpora())
    names = sources.split(",") if isinstance(sources, str) else list(sources)
    cleaned = [name.strip() for name in names if name.strip()]
    if not cleaned:
        raise ConfigurationError(f"sources names no corpus: {sources!r} (e.g. 'oasst1,chitchat')")
    return tuple(dict.fromkeys(cleaned))


def humans_pack(
    data_dir: str | None, sources: tuple[str, ...], per_source: int | None = None
) -> TaskPack[HumanConversation]:
    """The ``humans`` pack of ``sources`` read from ``data_dir`` (cached per process); with
    ``per_source``, each split holds at most that many conversations of each source (file order)."""
    if data_dir is None:
        raise ConfigurationError(
            "pack='humans' reads real conversations from a folder: pass data_dir=<the folder that holds the "
            "corpora> (e.g. ../shared/data/humans; docs/humans.md, 'Corpora')"
        )
    if per_source is not None and per_source < 1:
        raise ConfigurationError(f"per_source must be a positive int or None; got {per_source!r}")
    return _humans_pack(str(Path(data_dir).expanduser().resolve()), sources, per_source)


@cache
def _humans_pack(data_dir: str, sources: tuple[str, ...], per_source: int | None) -> TaskPack[HumanConversation]:
    splits: dict[str, list[HumanConversation]] = {"dev": [], "test": []}
    for source in sources:
        try:
            conversations = load_corpus(source, Path(data_dir)).conversations
        except (FileNotFoundError, ValueError) as error:
            raise ConfigurationError(str(error)) from None
        for split, pool in splits.items():
            pool += [c for c in conversations if c.split == split][:per_source]
    return TaskPack("humans", {**splits, "train": splits["dev"]})
