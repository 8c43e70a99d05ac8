"""No dead functions: every function the package defines is named somewhere besides its own ``def``.

A function counts as used when its name appears anywhere else in the package, the tests, the
examples, the benchmarks, the scripts or the docs (as code or inside a string, so a name looked up
with ``getattr`` counts). Decorated functions (validators, properties, registered hooks) are called
by their decorator's machinery and are left out; so are the methods in :data:`CALLED_BY_A_BASE`,
which override a third-party base class that calls them.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mimesis_gym"
SOURCES = ("mimesis_gym/**/*.py", "tests/**/*.py", "examples/**/*.py", "benchmarks/**/*.py", "scripts/**/*")
DOCS = ("docs/**/*.md", "README.md", "pyproject.toml")

CALLED_BY_A_BASE = {
    "do_HEAD": "http.server.BaseHTTPRequestHandler dispatches on the method name",
    "model_post_init": "pydantic.BaseModel calls it after validation",
    "to_jsonable": "gymnasium.spaces.Space",
    "from_jsonable": "gymnasium.spaces.Space",
    "reset_async": "openenv's Environment (the server awaits it)",
    "step_async": "openenv's Environment (the server awaits it)",
    "get_metadata": "openenv's Environment",
    "_step_payload": "openenv's EnvClient",
    "_parse_result": "openenv's EnvClient",
    "_parse_state": "openenv's EnvClient",
}


def name_counts() -> Counter[str]:
    """How often each identifier-like word occurs over the sources and docs."""
    counts: Counter[str] = Counter()
    for pattern in (*SOURCES, *DOCS):
        for path in ROOT.glob(pattern):
            if path.is_file():
                counts.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", path.read_text(encoding="utf-8", errors="ignore")))
    return counts


def undecorated_functions(path: Path) -> list[tuple[int, str]]:
    """``(line, name)`` of every function and method in ``path`` without a decorator."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        (node.lineno, node.name)
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list
    ]


def test_every_function_is_used_somewhere():
    counts = name_counts()
    dead = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in undecorated_functions(path)
        if not (name.startswith("__") and name.endswith("__")) and name not in CALLED_BY_A_BASE and counts[name] <= 1
    ]
    assert not dead, "functions nothing calls (remove them, or name the base class that calls them):\n" + "\n".join(
        dead
    )


def test_the_allowed_overrides_still_exist():
    """An entry of :data:`CALLED_BY_A_BASE` whose method is gone is removed from the list too."""
    defined = {name for path in PACKAGE.rglob("*.py") for _, name in undecorated_functions(path)}
    assert set(CALLED_BY_A_BASE) <= defined
