"""The tiny agent's invalid-action rate with and without constrained decoding, and what it costs.

See docs/evaluation.md, "Constrained actions".

Runs the main job's workload (``mimesis-gym eval`` with no agent flags: every main-job env on its
shipped test pack, 2 tasks each, scripted users, the embedded tiny agent with the demo's turns and
max_tokens) twice into temporary directories, once with ``--no-constrained-actions`` and once with
``--constrained-actions``, and prints for each:

- the **invalid-action rate**: steps the env could not parse as an action (``action_kind == "invalid"``,
  e.g. "it does not start with a tag"), out of all steps; the goal with constraints is < 5 %;
- the **rejected rate**: steps with ``valid_action`` false for any reason, including well-formed actions
  whose content the env refuses (e.g. FunctionGym's ``[action]`` needs four numbers);
- agent steps per second of agent time (the decode cost) and the run's wall time.

    python benchmarks/constrained_actions.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOAL = 0.05


def run(out: Path, flag: str) -> tuple[list[dict], float]:
    """Episodes of one main-job run with ``flag`` and its wall time; exits 1 when the run fails."""
    command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--out", str(out), "--no-progress", flag]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        print(completed.stdout, completed.stderr, sep="\n")
        raise SystemExit(f"mimesis-gym eval {flag} exited {completed.returncode} after {wall:.1f}s")
    lines = (out / "episodes.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line], wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write both runs under this directory instead of a temporary one")
    args = parser.parse_args()
    print(f"{'decoding':<13} {'steps':>6} {'invalid':>8} {'rejected':>9} {'steps/agent-s':>14} {'wall s':>8}")
    rates = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = args.keep or Path(scratch)
        for label, flag in (("free", "--no-constrained-actions"), ("constrained", "--constrained-actions")):
            episodes, wall = run(root / label, flag)
            steps = [step for episode in episodes for step in episode["steps"]]
            invalid = sum(step["action_kind"] == "invalid" for step in steps) / max(1, len(steps))
            rejected = sum(not step["valid_action"] for step in steps) / max(1, len(steps))
            agent_seconds = sum(step["agent_latency_s"] for step in steps)
            flagged = all(step["constrained"] for step in steps) if label == "constrained" else True
            rates[label] = invalid
            print(
                f"{label:<13} {len(steps):>6} {invalid:>8.1%} {rejected:>9.1%} "
                f"{len(steps) / max(agent_seconds, 1e-9):>14.3f} {wall:>8.1f}"
                + ("" if flagged else "  (some steps not recorded as constrained!)")
            )
    verdict = "met" if rates["constrained"] < GOAL else "NOT met"
    print(f"goal: constrained invalid-action rate < {GOAL:.0%}: {verdict}")
    return 0 if rates["constrained"] < GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
