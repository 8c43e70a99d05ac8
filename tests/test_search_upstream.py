"""SearchGym on UserRL's Bamboogle questions (docs/envs/search.md, "Task data"); skipped without ../shared/data."""

import json

import gymnasium as gym
import pytest

from mimesis_gym.envs.search.backends import DEFAULT_NOTICE
from tests.support.chat_models import ScriptedChatModel

ENV_ID = "mimesis/SearchGym-v0"

PARQUET = "data/bamboogle_multiturn/test.parquet"


def judge_reply(judgment):
    return json.dumps({"reasoning": "Madison was president then.", "judgment": judgment, "feedback": "Noted."})


def make(userrl_dir, **kwargs):
    return gym.make(ENV_ID, pack="upstream", data_dir=str(userrl_dir), **kwargs)


def on_bamboogle_1(userrl_dir, **kwargs):
    env = make(userrl_dir, **kwargs)
    env.reset(seed=0, options={"task_id": "Bamboogle-1"})
    return env


def test_loader_reads_125_test_questions_in_parquet_order(userrl_dir):
    import pyarrow.parquet as pq

    env = make(userrl_dir)
    pack = env.unwrapped.task_pack
    assert pack.counts() == {"test": 125} and len(pack) == 125
    assert {task.split for task in pack} == {"test"}
    assert sorted(task.id for task in pack) == sorted(f"Bamboogle-{n}" for n in range(1, 126))
    rows = pq.read_table(userrl_dir / PARQUET).to_pylist()
    assert [task.id for task in pack.pool("test")] == [r["reward_model"]["id"] for r in rows]
    assert pack.pool("test")[0].id == "Bamboogle-19"
    assert pack.get("Bamboogle-19").answer == "November 6, 1905"
    assert pack.get("Bamboogle-1").answer == "james madison"
    assert all(task.aliases == () and task.hops == () for task in pack)


def test_opening_and_system_prompt_are_the_parquet_messages(userrl_dir):
    import pyarrow.parquet as pq

    row = pq.read_table(userrl_dir / PARQUET).to_pylist()[0]
    env = make(userrl_dir)
    obs, info = env.reset(seed=0, options={"task_id": "Bamboogle-19"})
    assert obs == row["prompt"][1]["content"] and info["task_id"] == "Bamboogle-19"
    assert env.unwrapped.system_prompt == row["prompt"][0]["content"]


def test_default_backend_is_the_closed_book_notice(userrl_dir):
    env = on_bamboogle_1(userrl_dir)
    assert env.unwrapped.search_backend == "notice"
    query = "Citibank founding year"
    assert env.step(f"[search] {query}")[0] == f"Search results for '{query}':\n{DEFAULT_NOTICE}"


def test_exact_answer_needs_no_judge_call(userrl_dir):
    judge = ScriptedChatModel([RuntimeError("the judge must not be called")])
    env = on_bamboogle_1(userrl_dir, judge=judge)
    _, reward, terminated, _, info = env.step("[answer] James Madison")
    assert (reward, terminated, info["user_failure"]) == (1.0, True, None) and judge.calls == []


@pytest.mark.parametrize(
    ("reply", "lenient", "reward", "failure"),
    [
        (judge_reply("Yes"), False, 1.0, None),
        (judge_reply("yes"), False, 0.0, None),
        (judge_reply("yes"), True, 1.0, None),
        ("garbage, not a judgement", False, 0.0, "answer_judge:bad_json"),
    ],
)
def test_judge_decides_a_mismatch(userrl_dir, reply, lenient, reward, failure):
    judge = ScriptedChatModel([reply])
    env = on_bamboogle_1(userrl_dir, judge=judge, lenient_parsing=lenient)
    _, got, terminated, _, info = env.step("[answer] Madison")
    assert (got, terminated, info["user_failure"]) == (reward, reward == 1.0, failure)
    assert len(judge.calls) == 1
    assert "Correct answer: james madison" in judge.calls[0]["messages"][1]["content"]


def test_rule_method_makes_no_call(userrl_dir):
    judge = ScriptedChatModel([judge_reply("Yes")])
    env = on_bamboogle_1(userrl_dir, judge=judge, eval_method="rule")
    assert env.step("[answer] Madison")[1] == 0.0 and judge.calls == []


def test_oracle_answers_at_once(userrl_dir):
    env = on_bamboogle_1(userrl_dir)
    assert env.unwrapped.oracle_action() == "[answer] james madison"
    assert env.step(env.unwrapped.oracle_action())[1] == 1.0


def test_bm25_can_be_selected_for_upstream_questions(userrl_dir):
    env = on_bamboogle_1(userrl_dir, search_backend="bm25")
    assert env.step("[search] Odile Marsh")[0].startswith("Search results for 'Odile Marsh':\n1. Odile Marsh\n")


def test_only_the_test_split_exists(userrl_dir):
    with pytest.raises(ValueError, match="has no split 'train'"):
        make(userrl_dir, split="train").reset(seed=0)


def test_missing_data_dir_names_the_variable(monkeypatch):
    monkeypatch.delenv("MIMESIS_GYM_USERRL_DIR", raising=False)
    with pytest.raises(ValueError, match="MIMESIS_GYM_USERRL_DIR"):
        gym.make(ENV_ID, pack="upstream")
