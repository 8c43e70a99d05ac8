"""The main job's wall time: ``mimesis-gym eval`` with no arguments, timed end to end.

See docs/evaluation.md, "Benchmarks".

Runs exactly what ``make run`` runs (the paper's eight envs on their shipped test packs, scripted users,
four agents: the embedded tiny agent, scripted:baseline, scripted:random and oracle; 2 tasks per
env, 6 turns, 64 agent tokens) into a temporary directory and
prints the wall time, the per-env episode count, mean turns and mean agent seconds per turn, and the
verdict against the demo's bounds: the demo must finish within 10 minutes on a 2-core CPU; above 8
minutes the demo's turn cap is to be lowered (never the bound raised).

    python benchmarks/bench_demo.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

BOUND_S = 600.0
LOWER_CAP_ABOVE_S = 480.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="write the run here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.keep or Path(scratch) / "run"
        command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--out", str(out), "--no-progress"]
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if completed.returncode != 0:
            print(completed.stdout, completed.stderr, sep="\n")
            print(f"mimesis-gym eval exited {completed.returncode} after {wall:.1f}s")
            return 1
        episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines() if line]
        run = json.loads((out / "run.json").read_text())
    by_env: dict[str, list[dict]] = defaultdict(list)
    for episode in episodes:
        by_env[episode["env"]].append(episode)
    print(f"config: max_turns {run['config']['max_turns']}, agent_max_tokens {run['config']['agent_max_tokens']}")
    print(f"{'env':<12} {'episodes':>8} {'mean turns':>11} {'agent s/turn':>13} {'env s/episode':>14}")
    for env, rows in by_env.items():
        turns = [row["n_turns"] for row in rows]
        agent = [step["agent_latency_s"] for row in rows for step in row["steps"]]
        steps = [sum(step["step_latency_s"] for step in row["steps"]) for row in rows]
        print(
            f"{env:<12} {len(rows):>8} {statistics.mean(turns):>11.1f} "
            f"{statistics.mean(agent) if agent else 0.0:>13.2f} {statistics.mean(steps):>14.3f}"
        )
    verdict = "ok" if wall <= LOWER_CAP_ABOVE_S else "lower the demo turn cap" if wall <= BOUND_S else "OVER BOUND"
    print(f"wall time {wall:.1f}s for {len(episodes)} episodes (bound {BOUND_S:.0f}s): {verdict}")
    return 0 if wall <= BOUND_S else 1


if __name__ == "__main__":
    sys.exit(main())
