"""No test asserts on elapsed wall time: under load (shared cores, a parallel suite) such a bound fails
on a correct program. Assert what the timing stood for instead (who answered, in which order, that a
deadline's error came back); a wait may still give up after a generous bound that only breaks a hang
(``assert time.monotonic() < deadline`` in a poll loop).
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}


def is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()``, ``perf_counter()`` and the like."""
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    return name in CLOCKS


def elapsed_asserts(path: Path) -> list[int]:
    """Lines of ``assert`` statements that compare an elapsed time (a clock reading minus a start)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
        and any(
            isinstance(part, ast.BinOp) and isinstance(part.op, ast.Sub) and is_clock_call(part.left)
            for part in ast.walk(node.test)
        )
    ]


def test_no_test_asserts_on_elapsed_wall_time():
    found = [
        f"{path.relative_to(TESTS.parent)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        for line in elapsed_asserts(path)
    ]
    assert not found, "assertions on elapsed wall time:\n" + "\n".join(found)


def test_the_check_sees_an_elapsed_assert(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import time\nstarted = time.monotonic()\nassert time.monotonic() - started < 1.5\n"
        "assert time.monotonic() < started + 60\n"
    )
    assert elapsed_asserts(sample) == [3]
