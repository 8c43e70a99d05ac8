"""No per-env lists outside the envs: what an env needs is declared by its own package.

A module outside ``mimesis_gym/envs/`` that holds two or more env names as whole string literals
(``"turtle"``, ``"mimesis/TurtleGym-v0"``, ``"TurtleGym"``) keeps a list of envs that a new env would
have to join by hand; such knowledge belongs on the env class or its ``EnvEntry``. Names inside
longer strings (help texts, examples, docstrings) do not count, and neither do the short names that
are also ordinary words of the action grammar (:data:`ORDINARY_WORDS`). The lists that stay where
they are, by the name they are assigned to, are in :data:`ALLOWED` with the reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

from mimesis_gym.envs import ENV_TABLE

PACKAGE = Path(__file__).resolve().parents[1] / "mimesis_gym"

ORDINARY_WORDS = {
    "function": "the OpenAI tool-call type ({'type': 'function'})",
    "search": "an action kind of the grammar ([search])",
}

ALLOWED: dict[str, str] = {}
"""Names whose assigned value may list envs, with the reason; none: the fair baseline's strategies and
the ``mimesis-release`` preset's ``csd.skip_envs`` are declared by the envs (``baseline_strategy``,
``uncoached_in_release``)."""


def env_names() -> set[str]:
    """Every spelling of every env of the table: id, short name and UserRL's name (``TurtleGym``)."""
    names: set[str] = set()
    for entry in ENV_TABLE:
        names |= {entry.id, entry.short, entry.id.rsplit("/", 1)[-1].rsplit("-v", 1)[0]}
    return names - set(ORDINARY_WORDS)


class EnvLiterals(ast.NodeVisitor):
    """The env names that stand as whole string literals, outside the values assigned to :data:`ALLOWED`."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found: dict[str, int] = {}

    def visit_Assign(self, node: ast.Assign) -> None:
        if not any(isinstance(target, ast.Name) and target.id in ALLOWED for target in node.targets):
            self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if not (isinstance(node.target, ast.Name) and node.target.id in ALLOWED):
            self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and node.value in self.names:
            self.found.setdefault(node.value, node.lineno)


def env_literals(source: str, names: set[str]) -> dict[str, int]:
    visitor = EnvLiterals(names)
    visitor.visit(ast.parse(source))
    return visitor.found


def test_the_scanner_finds_a_list_and_spares_the_allowed_ones(monkeypatch):
    names = env_names()
    assert {"turtle", "mimesis/TurtleGym-v0", "TurtleGym", "abcd"} <= names and "search" not in names
    assert env_literals('WEIGHTS = {"turtle": 1, "TauGym": 2}\nHELP = "e.g. turtle"', names) == {
        "turtle": 1,
        "TauGym": 1,
    }
    assert env_literals('STRATEGIES: dict = {"turtle": 1, "tau": 2}', names) == {"turtle": 1, "tau": 1}
    monkeypatch.setitem(ALLOWED, "STRATEGIES", "an example of an allowed name")
    assert env_literals('STRATEGIES: dict = {"turtle": 1, "tau": 2}', names) == {}


def test_no_module_outside_the_envs_lists_envs():
    names = env_names()
    lists = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] == "envs":
            continue
        found = env_literals(path.read_text(encoding="utf-8"), names)
        if len(found) >= 2:
            lists[str(relative)] = found
    assert lists == {}, (
        "per-env knowledge outside mimesis_gym/envs/ (declare it on the env class or its EnvEntry; "
        f"docs/writing-an-env.md): {lists}"
    )
