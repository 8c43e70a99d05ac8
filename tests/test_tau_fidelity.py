"""Fidelity of TauGym to tau-bench on every upstream task (docs/envs/tau.md, "Fidelity notes").

For each of the 665 UserRL TauGym tasks (500 retail train, 115 retail test, 50 airline test), the
oracle replays the gold actions through the env's tools and closes with the completion message:
the scripted user must answer ``###STOP###`` and the reward must be 1. Then, for every task whose
last successful gold write changes the database, the same episode with that write's record id
changed must score 0 (the database then differs from the gold one). Needs ../shared/data.
"""

import json
from pathlib import Path

import pytest

from mimesis_gym.envs.tau.db import EpisodeDB
from mimesis_gym.envs.tau.env import TauEnv
from mimesis_gym.envs.tau.facts import WRITE_TOOLS
from mimesis_gym.envs.tau.roles import STOP
from mimesis_gym.envs.tau.tasks import domain_tools
from mimesis_gym.envs.tau.toolkit import TRANSFER_TOOL, call_tool

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
WRONG_IDS = {"order_id": "#W0000000", "reservation_id": "ZZZZZZ", "user_id": "nobody_0000"}


@pytest.fixture(scope="module")
def env():
    if not (SHARED_DATA / "tau-bench").is_dir() or not (SHARED_DATA / "userrl").is_dir():
        pytest.skip(f"tau-bench / UserRL reference data not found under {SHARED_DATA} (expected ../shared/data)")
    env = TauEnv(pack="upstream", data_dir=str(SHARED_DATA))  # no TimeLimit: gold runs have up to 20 calls
    yield env
    env.close()


def answer(name, arguments):
    return "[answer] " + json.dumps({"name": name, "arguments": arguments})


def last_changing_write(pack, task):
    """Index (in ``task.actions``) of the last gold write that succeeds and changes the database."""
    db = EpisodeDB(pack.databases[task.domain])
    tools = domain_tools(task.domain)
    found = None
    for index, action in enumerate(task.actions):
        if action.name == TRANSFER_TOOL:
            continue
        before = db.touched_texts()
        result = call_tool(tools, db, action.name, action.kwargs)
        if action.name in WRITE_TOOLS and not result.startswith("Error") and not db.matches(before):
            found = index
    return found


def run(env, task, actions):
    """Send ``actions``, the completion message (with the outputs), then a transfer if still running."""
    env.reset(seed=0, options={"task_id": task.id})
    for action in actions:
        obs, reward, terminated, _, info = env.step(action)
        assert not terminated, (task.id, action, obs)
    closing = " ".join(["Your request is complete.", *task.outputs])
    obs, reward, terminated, _, info = env.step(f"[action] {closing}")
    if not terminated:
        obs, reward, terminated, _, info = env.step(answer(TRANSFER_TOOL, {"summary": "x"}))
    assert terminated
    return obs, reward, info


def test_every_upstream_task_scores_1_with_its_gold_actions_and_0_with_one_argument_changed(env):
    pack = env.task_pack
    assert len(pack) == 665
    perturbed = 0
    for task in pack:
        gold_calls = [a for a in task.actions if a.name != TRANSFER_TOOL]
        obs, reward, info = run(env, task, [answer(a.name, a.kwargs) for a in gold_calls])
        parts = info["reward_parts"]
        assert (obs, reward) == (STOP, 1.0), (task.id, parts)
        assert parts["db_hash"] == parts["gold_hash"] == pack.gold(task).digest, task.id

        index = last_changing_write(pack, task)
        if index is None:
            continue
        changed = []
        for position, action in enumerate(task.actions):
            if action.name == TRANSFER_TOOL:
                continue
            kwargs = dict(action.kwargs)
            if position == index:
                key = next(k for k in WRONG_IDS if k in kwargs)
                kwargs[key] = WRONG_IDS[key]
            changed.append(answer(action.name, kwargs))
        obs, reward, info = run(env, task, changed)
        parts = info["reward_parts"]
        assert reward == 0.0 and parts["r_actions"] == 0, (task.id, parts)
        assert parts["db_hash"] != parts["gold_hash"], task.id
        perturbed += 1
    assert perturbed == 665 - 36  # every task but those whose gold state is the pristine one
