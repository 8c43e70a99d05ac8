"""Score a user against real people from Python (docs/humans.md).

Replays the ``test`` half of each corpus with the user under test (here the template user,
``scripted``, which is also the floor row) and prints the overall index beside the humans' ceiling.
With no folder of corpora, it writes a small corpus of its own so the example runs anywhere.

    python examples/humans_scorecard.py [HUMANS_DIR] [USER_SPEC]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path

from mimesis_gym.evaluation.humanlike.scorecard import CEILING, ScorecardConfig, run_scorecard


def own_corpus(folder: Path) -> str:
    """A tiny corpus in the generic JSONL shape, written to ``folder``; the source name that reads it."""
    lines = []
    for index in range(8):
        messages = [
            {"role": "user", "content": f"can you suggest a dinner for {index + 2} people?"},
            {"role": "assistant", "content": "How about a pasta bake? It feeds a crowd and is cheap."},
            {"role": "user", "content": "nice, vegetarian ok?" if index % 2 else "thanks!"},
            {"role": "assistant", "content": "Yes: swap the meat for roasted vegetables."},
        ]
        lines.append(json.dumps({"id": str(index), "goal": "Plan a dinner for friends.", "messages": messages}))
    path = folder / "dinners.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f"jsonl:{path}"


def main() -> int:
    user = sys.argv[2] if len(sys.argv) > 2 else "scripted"
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        if len(sys.argv) > 1:
            humans, sources = Path(sys.argv[1]), []  # every shipped corpus in that folder
        else:
            humans, sources = folder, [own_corpus(folder)]
        config = ScorecardConfig(users=[user], humans_dir=str(humans), sources=sources, limit=3, max_turns=4)
        report = asyncio.run(run_scorecard(config, folder / "out", progress=False))
    for row in (user, CEILING):
        entry = report["overall"][row]
        index = "–" if entry["index"] is None else f"{entry['index']:.1f}"
        print(f"{row}: index {index} over {entry['turns']} turns")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
