"""A robustness run timed end to end: scripted agents against users that play B3, B9 and B13.

See docs/evaluation.md, "User behaviours". Runs

    mimesis-gym eval --agent scripted:baseline,oracle --user-behaviors control,B3,B9,B13 --trials 3 --limit 2

into a temporary directory (the main job's envs unless ``--envs``), then prints the wall time, the
episodes per condition, the robustness table (score, Δ vs control and enacted share per agent and
condition) and pass^k per agent and condition, all read back from ``summary.json``. Measured numbers
only; nothing is asserted.

    python benchmarks/robustness.py [--envs turtle,tau] [--keep DIR] [--register MODULE]

``--register MODULE`` imports a module first, for envs it registers with Gymnasium (e.g.
``tests.support.behavior_env``, whose ``register()`` is then called, with ``--envs mimesis_test/Ask-v0``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

FLAGS = [
    "--agent",
    "scripted:baseline,oracle",
    "--user-behaviors",
    "control,B3,B9,B13",
    "--trials",
    "3",
    "--limit",
    "2",
]
LAUNCH = "import importlib, sys; from mimesis_gym.cli import main; {register}sys.exit(main(sys.argv[1:]))"


def command(out: Path, envs: str | None, register: str | None) -> list[str]:
    """The eval command line: ``python -m mimesis_gym.cli eval …``, or through a launcher that imports
    ``register`` (a module name, never text from a run) and calls its ``register()`` first."""
    arguments = ["eval", *FLAGS, "--out", str(out), "--no-progress", *(["--envs", envs] if envs else [])]
    if register is None:
        return [sys.executable, "-m", "mimesis_gym.cli", *arguments]
    setup = f"importlib.import_module({register!r}).register(); "
    return [sys.executable, "-c", LAUNCH.format(register=setup), *arguments]


def show(summary: dict, episodes: Counter[str]) -> None:
    """The robustness rows and pass^k rows of ``summary.json``."""
    print("episodes per condition:", ", ".join(f"{c} {n}" for c, n in episodes.items()))
    print(f"\n{'user':<12} {'agent':<18} {'condition':<9} {'envs':>4} {'score':>7} {'control':>8} {'Δ':>8} "
          f"{'enacted':>8} {'n':>4}")  # fmt: skip
    for row in summary["robustness"].get("rows", []):

        def number(value: float | None, sign: str = "") -> str:
            return "—" if value is None else f"{value:{sign}.2f}"

        share = "—" if row["enacted_share"] is None else f"{100 * row['enacted_share']:.0f}%"
        print(
            f"{row['user']:<12} {row['agent']:<18} {row['condition']:<9} {len(row['envs']):>4} "
            f"{number(row['score']):>7} {number(row['control']):>8} {number(row['delta'], '+'):>8} {share:>8} "
            f"{row['n_episodes']:>4}"
        )
    print(f"\n{'agent':<18} {'env':<12} {'condition':<9} pass^1..n / pass@2..n")
    for row in summary["pass_k"].get("rows", []):
        hat = " ".join("—" if v is None else f"{v:.3f}" for v in row["pass_hat_k"])
        at = " ".join("—" if v is None else f"{v:.3f}" for v in row["pass_at_k"][1:])
        print(f"{row['agent']:<18} {row['env']:<12} {row['condition']:<9} {hat} / {at}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", help="envs to run (default: the main job's)")
    parser.add_argument("--keep", type=Path, help="write the run here instead of a temporary directory")
    parser.add_argument("--register", help="a module whose register() adds envs first (e.g. a test env)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.keep or Path(scratch) / "run"
        started = time.perf_counter()
        completed = subprocess.run(command(out, args.envs, args.register), capture_output=True, text=True)
        wall = time.perf_counter() - started
        if completed.returncode not in (0, 4):  # 4: some cell is nothing but user failures; still a table
            print(completed.stdout, completed.stderr, sep="\n")
            print(f"mimesis-gym eval exited {completed.returncode} after {wall:.1f} s")
            return 1
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
        lines = (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()
        episodes = Counter(json.loads(line).get("user_behavior", "control") for line in lines if line)
    print(" ".join(["mimesis-gym eval", *FLAGS, *(["--envs", args.envs] if args.envs else [])]))
    print(f"wall time {wall:.1f} s for {sum(episodes.values())} episodes (exit {completed.returncode})")
    show(summary, episodes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
