"""``users-report --users scripted,tiny`` timed end to end on the default probing agent.

See docs/users-report.md, "What it runs and writes".

Runs the report the issue sizes (2 tasks × the nine envs with a user, the default probing agent
``scripted:baseline``, the embedded tiny model as a user in-process beside the scripted users) into
a temporary directory, with the tiny user's calls capped at ``--role-max-tokens`` (default 64), and
prints the wall time against the 10-minute target on 2 CPU cores, then the report's table. With
``--reference DIR`` (an ABCD data folder, e.g. ../shared/data/abcd) the table gets a human column.

    python benchmarks/users_report_time.py [--reference DIR] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 600.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", default="scripted,tiny")
    parser.add_argument("--reference", type=Path, help="ABCD data folder for the human column")
    parser.add_argument("--role-max-tokens", type=int, default=64)
    parser.add_argument("--keep", type=Path, help="write the report here instead of a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        out = args.keep or Path(scratch) / "users"
        command = [
            sys.executable, "-m", "mimesis_gym.cli", "users-report", "--users", args.users, "--out", str(out),
            "--no-progress", "--role-max-tokens", str(args.role_max_tokens),
        ]  # fmt: skip
        if args.reference:
            command += ["--reference", str(args.reference)]
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if completed.returncode != 0:
            print(completed.stdout, completed.stderr, sep="\n")
            print(f"users-report exited {completed.returncode} after {wall:.1f}s")
            return 1
        table = (out / "users_report.md").read_text(encoding="utf-8")
    verdict = "within" if wall <= TARGET_S else "OVER"
    print(f"users-report --users {args.users}: {wall:.1f}s wall ({verdict} the {TARGET_S:.0f}s target on 2 cores)")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
