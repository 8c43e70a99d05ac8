"""``users-report --humans`` timed end to end: ``tiny`` and the template user against every shipped corpus.

See docs/humans.md, "Benchmark". Runs the scorecard against real people the issue sizes — the embedded
tiny model and the ``scripted`` template user (the floor) replayed on the ``test`` half of every
shipped corpus (``--limit`` conversations of each, ``--max-turns`` real replies of each), with the
ceiling row — into a temporary directory, with the tiny user's calls capped at ``--role-max-tokens``,
and prints the wall time against the 15-minute target on 2 CPU cores, then the scorecard's tables.

    python benchmarks/humans_scorecard_time.py [--humans ../shared/data/humans] [--keep DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_S = 900.0
ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--humans", type=Path, default=ROOT.parent / "shared" / "data" / "humans")
    parser.add_argument("--users", default="tiny")
    parser.add_argument("--limit", type=int, default=None, help="conversations per source (default: the command's)")
    parser.add_argument("--max-turns", type=int, default=None, help="real replies per conversation (the command's)")
    parser.add_argument("--role-max-tokens", type=int, default=None, help="cap on the user's replies (the command's)")
    parser.add_argument("--keep", type=Path, help="write the scorecard here instead of a temporary directory")
    args = parser.parse_args()
    if not args.humans.is_dir():
        print(f"no corpora at {args.humans}: pass --humans DIR (the folder that holds them)")
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        out = args.keep or Path(scratch) / "humans"
        command = [
            sys.executable, "-m", "mimesis_gym.cli", "users-report", "--humans", str(args.humans),
            "--users", args.users, "--out", str(out), "--no-progress",
        ]  # fmt: skip
        for flag, value in (("--limit", args.limit), ("--max-turns", args.max_turns)):
            if value is not None:
                command += [flag, str(value)]
        if args.role_max_tokens is not None:
            command += ["--role-max-tokens", str(args.role_max_tokens)]
        started = time.perf_counter()
        completed = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - started
        if completed.returncode != 0:
            print(completed.stdout, completed.stderr, sep="\n")
            print(f"users-report --humans exited {completed.returncode} after {wall:.1f}s")
            return 1
        table = (out / "users_report.md").read_text(encoding="utf-8")
    verdict = "within" if wall <= TARGET_S else "OVER"
    target = f"{verdict} the {TARGET_S:.0f}s target on 2 cores"
    print(f"users-report --humans --users {args.users}: {wall:.1f}s wall ({target})")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
