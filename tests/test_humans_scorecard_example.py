"""examples/humans_scorecard.py runs as documented and prints the user's index beside the ceiling."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_example_scores_the_template_user_on_its_own_corpus() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "humans_scorecard.py")], capture_output=True, text=True, cwd=ROOT,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("scripted: index ") and lines[1].startswith("human (test half): index ")
    floor, ceiling = (float(line.split("index ")[1].split()[0]) for line in lines)
    assert floor < ceiling
