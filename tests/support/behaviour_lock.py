"""The behaviour lock: a short eval on fixed seeds whose stable output is kept as a golden file.

``lock_run(out)`` plays every registered conversation env (ABCD included) with the oracle and the
seeded random agent against the scripted user, two tasks per env, and returns what must not change
when the code is reshaped: per record the key, status, rewards, steps (observation, reward, reward
parts, validity), episode score, transcript and score context, plus the score tables of
``summary.json``. Timestamps, durations, run ids, workers and usage are left out.

Regenerate the golden file only when a change of behaviour is intended::

    PYTHONPATH=$PWD python -m tests.support.behaviour_lock
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "behaviour_lock.json"
LOCK_ENVS = ("travel", "turtle", "function", "tau", "persuade", "intention", "telepathy", "search", "abcd")
STEP_FIELDS = ("turn", "action_kind", "content", "observation", "reward", "reward_parts", "valid_action")
ABCD_TURN_BUDGET = 5
"""ABCD rows give the customer 8 turns, more than ``max_turns``: with 5 the episodes end and are judged, so the
lock covers ABCD's scoring (the first two held-out rows need more than 6 turns to finish on their own)."""
SUMMARY_KEYS = ("weights", "agents", "sections", "mean_over_users", "abcd")
"""The score tables of ``summary.json`` as they were before the env table (later keys are additions)."""


def lock_config() -> EvalConfig:
    return EvalConfig(
        envs=list(LOCK_ENVS),
        agents=["oracle", "scripted:random"],
        users=["scripted"],
        limit=2,
        max_turns=6,
        seed=0,
        env_args={"abcd": {"turn_budget": ABCD_TURN_BUDGET}},
    )


def stable_record(record: EpisodeRecord) -> dict[str, Any]:
    """The fields of a record that the same seeds must reproduce exactly."""
    return {
        "key": record.key,
        "status": record.status,
        "rewards": record.rewards,
        "steps": [{name: getattr(step, name) for name in STEP_FIELDS} for step in record.steps],
        "episode_score": record.episode_score,
        "transcript": record.transcript,
        "score_context": record.score_context,
        "terminated": record.terminated,
        "truncated": record.truncated,
        "error": record.error,
    }


def lock_run(out: Path) -> dict[str, Any]:
    """Run the lock eval into ``out``; the stable records (in key order) and the summary's score tables."""
    asyncio.run(run_eval(lock_config(), out, progress=False))
    records = sorted(ResultsStore(out / "episodes.jsonl").read(), key=lambda record: record.key)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    # a JSON round trip, so the fresh run compares like the golden file (tuples become lists)
    return json.loads(
        json.dumps(
            {
                "records": [stable_record(record) for record in records],
                "summary": {key: summary[key] for key in SUMMARY_KEYS},
            }
        )
    )


def main() -> int:
    with tempfile.TemporaryDirectory() as scratch:
        result = lock_run(Path(scratch))
    GOLDEN.write_text(json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN} ({len(result['records'])} records)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
