"""The behaviour lock: a short eval on fixed seeds reproduces the golden records and score tables.

The golden file was written from the code before the env table reshaped registration, scoring
and reporting; a refactor that changes any observation, reward, transcript or table value fails
here. Regenerate it (``python -m tests.support.behaviour_lock``) only for an intended change.
"""

from __future__ import annotations

import json

from tests.support.behaviour_lock import GOLDEN, LOCK_ENVS, lock_run


def test_a_fresh_lock_run_equals_the_golden_records_and_tables(tmp_path):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    fresh = lock_run(tmp_path)
    assert {record["key"].split("|")[2] for record in fresh["records"]} >= {
        f"mimesis/{name}" for name in ("TravelGym-v0", "ABCDBehavior-v0")
    }
    assert len(fresh["records"]) == len(golden["records"]) == 2 * 2 * len(LOCK_ENVS)
    for mine, theirs in zip(fresh["records"], golden["records"], strict=True):
        assert mine == theirs, f"record {theirs['key']} changed"
    assert fresh["summary"] == golden["summary"]
