"""FunctionGym acceptance tests (docs/envs/function.md)."""

import json
import pickle

import gymnasium as gym
import numpy as np
import pytest

from mimesis_gym.envs.function.generate import generate_task
from mimesis_gym.envs.function.rules import parse_rule
from mimesis_gym.envs.function.tasks import load_upstream_pack

REFUSAL = (
    "These are the numbers of the test case: no calculation feedback is given for them. "
    "Work out the rule with other numbers, then submit your answer."
)


def make(**kwargs):
    kwargs.setdefault("split", "demo")
    return gym.make("mimesis/FunctionGym-v0", **kwargs)


def start(task_id="fn-demo-01", **kwargs):
    env = make(**kwargs)
    env.reset(seed=0, options={"task_id": task_id})
    return env


def test_demo_01_walkthrough():
    env = start()
    steps = [
        ("[action] 1 1 1 1", "For numbers [1.0, 1.0, 1.0, 1.0], the result is 1.0.", 0.0, True, False),
        ("[action] 3 4 5 6", REFUSAL, 0.0, True, False),
        (
            "[action] 1 2 3",
            "Please provide exactly four numbers separated by spaces, e.g. [action] 1 2 3 4.",
            0.0,
            False,
            False,
        ),
        ("[search] TEST", "Test case: [3, 4, 5, 6]", 0.0, True, False),
        (
            "[search] rule",
            "Search content should only be 'test': use [search] test to get the test case.",
            0.0,
            False,
            False,
        ),
        (
            "[answer] 28",
            "Your answer is wrong. Keep reasoning about the function and try again later.",
            0.0,
            True,
            False,
        ),
        (
            "[answer] twenty-nine",
            "Invalid numerical answer: give a single number, e.g. [answer] 42.",
            0.0,
            False,
            False,
        ),
        ("[answer] 29.0000001", "Your answer is correct!", 1.0, True, True),
    ]
    for action, obs, reward, valid, terminated in steps:
        got_obs, got_reward, got_terminated, truncated, info = env.step(action)
        assert (got_obs, got_reward, info["valid_action"], got_terminated) == (obs, reward, valid, terminated), action
        assert info["user_failure"] is None and truncated is False
    assert info["episode_score"] == 1.0
    assert info["reward_parts"] == {"answer": 1.0, "step_penalty": 0.0, "clip": 0.0}


def test_tool_call_content_that_already_has_the_tag_is_scored():
    """UserRL's tool wrapper keeps ``content="[answer] 29"`` as is, so the answer counts."""
    obs, reward, terminated, _, _ = start().step({"choice": "answer", "content": "[answer] 29"})
    assert (obs, reward, terminated) == ("Your answer is correct!", 1.0, True)


def test_train_profile_appends_the_reward_line():
    env = start(reward_profile="train")
    assert env.step("[answer] 29")[0] == "Your answer is correct!\nReward: 1.0"


def test_finish_reveals_the_expected_result():
    env = start()
    obs, reward, terminated, _, info = env.step("[finish]")
    assert "29.0" in obs and reward == 0.0 and terminated and info["action_kind"] == "finish"


@pytest.mark.parametrize(
    ("task_id", "action", "obs"),
    [
        (
            "fn-demo-02",
            "[action] 1 1 1 1",
            "The numbers [1.0, 1.0, 1.0, 1.0] cannot be evaluated by the function (e.g. division by zero). "
            "Please try different numbers.",
        ),
        ("fn-demo-02", "[action] 1 3 1 0", "For numbers [1.0, 3.0, 1.0, 0.0], the result is 0.5."),
        ("fn-demo-02", "[action] 1 4 1 0", "For numbers [1.0, 4.0, 1.0, 0.0], the result is 0.3333."),
        ("fn-demo-03", "[action] 2 10 0 0", "For numbers [2.0, 10.0, 0.0, 0.0], the result is 1024.0."),
    ],
)
def test_probe_feedback(task_id, action, obs):
    assert start(task_id).step(action)[0] == obs


@pytest.mark.parametrize("action", ["[action] 10 400 0 0", "[action] -2 0.5 0 0"])  # overflow, complex
def test_evaluation_errors_ask_for_other_numbers(action):
    obs, reward, _, _, info = start("fn-demo-03").step(action)
    assert "cannot be evaluated" in obs and reward == 0.0 and info["valid_action"]


def test_float_overflow_without_exception_is_reported_as_is():
    big = "1" + "0" * 200  # (1e200 + 1) * 1e200 - 1 overflows float multiplication to inf, no exception
    obs = start().step(f"[action] {big} 1 {big} 1")[0]
    assert obs == "For numbers [1e+200, 1.0, 1e+200, 1.0], the result is inf."


@pytest.mark.parametrize("answer", ["29", "29.0", " 29 ", "2.9e1", "2_9"])
def test_answers_use_python_float_parsing(answer):
    assert start().step(f"[answer] {answer}")[1] == 1.0


@pytest.mark.parametrize("answer", ["nan", "inf", "-inf"])
def test_nan_and_inf_parse_but_are_never_correct(answer):
    obs, reward, terminated, _, info = start().step(f"[answer] {answer}")
    assert (reward, terminated, info["valid_action"]) == (0.0, False, True)


def test_step_penalty_multiplies_the_turn():
    env = start(step_penalty=0.1)
    rewards = [env.step("[action] 1 1 1 1")[1], env.step("[answer] 29")[1]]
    assert rewards == pytest.approx([-0.1, 0.8])


def test_privileged_hidden_state():
    env = start(privileged=True)
    env.step("[search] test")
    info = env.step("[answer] 28")[4]
    assert info["privileged"] == {
        "thoughts": {},
        "judgements": {},
        "user_thought": None,
        "user_utterance": None,
        "hidden": {
            "rule": "(a + b) * c - d",
            "test_case": [3, 4, 5, 6],
            "expected_result": 29.0,
            "test_case_revealed": True,
            "answered": [28.0],
        },
    }


def test_oracle_on_every_test_task():
    env = gym.make("mimesis/FunctionGym-v0")
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(options={"task_id": task.id})
        actions = [env.unwrapped.oracle_action()]
        first = env.step(actions[0])
        actions.append(env.unwrapped.oracle_action())
        second = env.step(actions[1])
        assert actions == ["[search] test", f"[answer] {task.expected_result}"]
        assert [first[1], second[1]] == [0.0, 1.0] and second[2] and second[4]["turn"] == 2


def test_procedural_tasks_are_reproducible():
    env = gym.make("mimesis/FunctionGym-v0", pack="procedural", split="whatever")
    _, info_a = env.reset(seed=11)
    rule_a = env.unwrapped.task.rule
    _, info_b = env.reset(seed=11)
    assert info_a["task_id"] == info_b["task_id"] and info_a["task_id"].startswith("fn-proc-")
    assert env.unwrapped.task.rule == rule_a
    _, info = env.reset(options={"task_id": "fn-proc-12345"})
    assert info["task_id"] == "fn-proc-12345"
    assert env.unwrapped.task.rule == generate_task(np.random.default_rng(12345)).rule
    with pytest.raises(ValueError, match="procedural task ids look like"):
        env.reset(options={"task_id": "fn-demo-01"})


def test_generate_task_is_deterministic():
    for k in range(100):
        assert generate_task(np.random.default_rng(k)) == generate_task(np.random.default_rng(k))


def test_user_and_judge_are_validated_but_unused():
    env = gym.make(
        "mimesis/FunctionGym-v0", user="scripted", judge="scripted", prompt_set="userrl", lenient_parsing=True
    )
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown user alias"):
        gym.make("mimesis/FunctionGym-v0", user="gpt-nope")


def test_env_pickles_mid_episode():
    env = start()
    env.step("[search] test")
    copy = pickle.loads(pickle.dumps(env.unwrapped))
    assert copy.step("[answer] 29")[1] == 1.0


@pytest.mark.parametrize(
    "bad", ["__import__('os')", "a.b", "f(a)", "a if b else c", "[a][0]", "lambda: 0", "a @ b", "e + a"]
)
def test_interpreter_rejects_anything_outside_the_grammar(bad):
    with pytest.raises(ValueError):
        parse_rule(bad)


def test_upstream_pack_without_data_dir_names_both_sources(monkeypatch):
    monkeypatch.delenv("MIMESIS_GYM_USERRL_DIR", raising=False)
    with pytest.raises(ValueError, match=r"data_dir=\.\.\. or set \$MIMESIS_GYM_USERRL_DIR"):
        gym.make("mimesis/FunctionGym-v0", pack="upstream")


# ---------------------------------------------------------------- UserRL loader


def test_upstream_counts_and_sample_record(userrl_dir):
    pack = load_upstream_pack(str(userrl_dir))
    assert pack.counts() == {"train": 460, "test": 78}
    task = pack.get("func-3")
    assert (task.split, task.rule, task.test_case, task.expected_result) == (
        "train",
        "(b * c) - a + d",
        (10, 6, 9, 5),
        49.0,
    )


def test_interpreter_reproduces_every_upstream_expected_result(userrl_dir):
    records = json.loads((userrl_dir / "gyms/FunctionGym/functiongym/data/functions.json").read_text())
    assert len(records) == 538
    for record in records:
        value = parse_rule(record["rule"]).evaluate([float(x) for x in record["test_case"]])
        assert abs(value - record["expected_result"]) <= 1e-9, record["id"]


def test_upstream_episode_func_484(userrl_dir, monkeypatch):
    monkeypatch.setenv("MIMESIS_GYM_USERRL_DIR", str(userrl_dir))
    env = gym.make("mimesis/FunctionGym-v0", pack="upstream")
    obs, _ = env.reset(options={"task_id": "func-484"})
    import pyarrow.parquet as pq

    row = pq.read_table(userrl_dir / "data/function_multiturn/test.parquet").to_pylist()[0]
    assert row["reward_model"]["id"] == "func-484"
    assert env.unwrapped.system_prompt == row["prompt"][0]["content"]
    assert obs == row["prompt"][1]["content"]
    assert env.step("[action] 1 1 1 1")[0] == "For numbers [1.0, 1.0, 1.0, 1.0], the result is 1.0."
    assert env.step("[action] 5 2 5 5")[0] == REFUSAL
    _, reward, terminated, _, _ = env.step("[answer] -16")
    assert (reward, terminated) == (1.0, True)
