"""TurtleGym acceptance tests (docs/envs/turtle.md)."""

import json

import gymnasium as gym
import pytest

from mimesis_gym.envs.turtle.roles import FALLBACK_TEXT, scripted_answer, scripted_criterion_score
from mimesis_gym.envs.turtle.tasks import load_original_pack, load_upstream_pack
from tests.support.chat_models import ScriptedChatModel, refusal

DEMO = "turtle-demo-01"


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make("mimesis/TurtleGym-v0", **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env


def test_scripted_demo_walkthrough():
    env = start()
    bottom = env.unwrapped.task.bottom
    steps = [
        ("[action] Was the clock blinking?", "Yes"),
        ("[action] Did the neighbours lose power too?", "No"),
        ("[action] Was anything stolen?", "No"),
        ("[action] Was nothing stolen?", "Yes"),
        ("[action] Didn't the clock blink?", "Yes"),
        ("[action] Was the man a vampire?", "Maybe"),
        ("[search] Was someone in the garage?", "Yes"),
    ]
    for action, expected in steps:
        obs, reward, terminated, _, info = env.step(action)
        assert (obs, reward, terminated, info["valid_action"]) == (expected, 0.0, False, True), action
    assert info["action_kind"] == "action"
    obs, reward, terminated, _, info = env.step("[answer] The clock was blinking because the power had been cut.")
    assert reward == 0.5 and not terminated
    assert "The clock showed a power interruption (it was blinking or had reset): Covered" in obs
    assert obs.count(": Covered") == 1
    obs, reward, terminated, _, info = env.step(f"[answer] {bottom}")
    assert reward == pytest.approx(0.5, abs=1e-9) and terminated
    assert info["episode_score"] == pytest.approx(1.0, abs=1e-9)
    assert info["reward_parts"]["answer_gain"] == pytest.approx(0.5, abs=1e-9)


def test_train_profile_reward_line_and_untagged_input():
    env = start(reward_profile="train")
    for _ in range(7):
        env.step("[action] Was the clock blinking?")
    assert env.step("[answer] The clock was blinking because the power had been cut.")[0].endswith("\nReward: 0.5")
    _, reward, _, _, info = env.step("hello")
    assert (reward, info["valid_action"], info["action_kind"]) == (0.0, False, "invalid")


def test_finish_ends_the_game():
    obs, reward, terminated, _, info = start().step("[finish]")
    assert (obs, reward, terminated) == ("The game is over.", 0.0, True)


def test_privileged_content():
    env = start(privileged=True)
    info = env.step("[action] Was the clock blinking?")[4]
    privileged = info["privileged"]
    assert privileged["judgements"] == {
        "oracle": {"response": "Yes", "fact": privileged["judgements"]["oracle"]["fact"]}
    }
    assert privileged["judgements"]["oracle"]["fact"]
    assert privileged["user_utterance"] == "Yes" and privileged["hidden"]["best"] == 0.0
    assert [c["weight"] for c in privileged["hidden"]["criteria"]] == [0.4, 0.2, 0.3, 0.1]
    info = env.step("[answer] The clock was blinking because the power had been cut.")[4]
    assert info["privileged"]["judgements"]["rubric"]["S"] == 0.5
    assert info["privileged"]["user_utterance"] is None


def test_scripted_judge_and_oracle_on_the_demo_pack():
    task = load_original_pack().get(DEMO)
    assert [scripted_criterion_score(c, task.bottom) for c in task.criteria] == [1.0] * 4
    for fact in task.facts:
        assert scripted_answer(fact.probe, task.facts)[0] == fact.answer, fact.probe


def test_oracle_agent_on_every_test_puzzle():
    env = gym.make("mimesis/TurtleGym-v0")
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(options={"task_id": task.id})
        assert env.unwrapped.oracle_action() == f"[answer] {task.bottom}"
        _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
        assert terminated and info["episode_score"] >= 1.0 - 1e-9, task.id


# ---------------------------------------------------------------- LLM roles with test doubles


def rubric_reply(*scores):
    return json.dumps({"scores": [{"statement": "s", "thought": "t", "score": s} for s in scores], "feedback": "Good."})


def test_llm_oracle_reply_parsed_by_key_salvage():
    oracle = ScriptedChatModel(["{'thought': 'I'm sure', 'response': 'Yes'}"])
    env = start(user=oracle, judge="scripted")
    assert env.step("[action] Is it about a clock?")[0] == "Yes"
    call = oracle.calls[0]
    assert call["json_keys"] == ("response",) and call["temperature"] == 0.0 and call["max_tokens"] == 2048
    assert "Is it about a clock?" in call["messages"][1]["content"]


def test_the_llm_host_sees_earlier_questions_only_with_oracle_sees_history():
    for sees, expected in ((True, "Earlier questions and your answers:\nPlayer: Is it red?\nYou: No"), (False, None)):
        host = ScriptedChatModel(['{"response": "No"}', '{"response": "Yes"}'])
        env = start(user=host, judge="scripted", oracle_sees_history=sees)
        env.step("[action] Is it red?")
        env.step("[action] Is it big?")
        first, second = (call["messages"][1]["content"] for call in host.calls)
        assert "Earlier questions" not in first and first.endswith("The player's question: Is it red?")
        assert second.endswith("The player's question: Is it big?")
        assert (expected in second) if expected else ("Earlier questions" not in second)


def test_llm_rubric_validation_and_lenient_scores():
    env = start(user=ScriptedChatModel([rubric_reply(1.0, 1.0, 1.0)]))
    obs, reward, _, _, info = env.step("[answer] a story")
    assert (obs, reward, info["user_failure"]) == (FALLBACK_TEXT, 0.0, "rubric:invalid_value")
    strict = start(user=ScriptedChatModel([rubric_reply("1.0", 1.0, 1.0, 1.0)]))
    assert strict.step("[answer] a story")[4]["user_failure"] == "rubric:invalid_value"
    lenient = start(user=ScriptedChatModel([rubric_reply("1.0", 1.0, 1.0, 1.0)]), lenient_parsing=True)
    _, reward, terminated, _, info = lenient.step("[answer] a story")
    assert info["user_failure"] is None and terminated and reward == pytest.approx(1.0)


def test_refusing_oracle_falls_back_every_turn():
    env = start(user=ScriptedChatModel([refusal()]), judge="scripted")
    for _ in range(3):
        obs, reward, terminated, _, info = env.step("[action] Is it a ghost?")
        assert (obs, reward, terminated, info["user_failure"]) == (FALLBACK_TEXT, 0.0, False, "oracle:refusal")


def test_role_max_tokens_caps_the_llm_calls():
    oracle = ScriptedChatModel(['{"response": "No"}'])
    start(user=oracle, judge="scripted", role_max_tokens=128).step("[action] Is it a ghost?")
    assert oracle.calls[0]["max_tokens"] == 128


# ---------------------------------------------------------------- UserRL data


def test_upstream_loader(userrl_dir):
    import pyarrow.parquet as pq

    pack = load_upstream_pack(str(userrl_dir))
    assert pack.counts() == {"train": 423, "test": 48}
    histogram = {}
    for task in pack:
        histogram[len(task.criteria)] = histogram.get(len(task.criteria), 0) + 1
    assert histogram == {4: 215, 3: 191, 2: 32, 5: 27, 1: 6}
    broken = pack.get("the broken nails")
    assert (broken.split, broken.surface) == ("test", "Author:")
    row = pq.read_table(userrl_dir / "data/turtle_multiturn/test.parquet").to_pylist()[0]
    env = gym.make(
        "mimesis/TurtleGym-v0",
        pack="upstream",
        data_dir=str(userrl_dir),
        user=ScriptedChatModel(['{"response": "No"}']),
    )
    obs, info = env.reset(options={"task_id": row["reward_model"]["title"]})
    assert obs == row["prompt"][1]["content"] and env.unwrapped.system_prompt == row["prompt"][0]["content"]
    assert env.unwrapped.oracle_action().startswith("[answer] ")


def test_upstream_needs_llm_roles(userrl_dir):
    with pytest.raises(ValueError, match="need the original pack"):
        gym.make("mimesis/TurtleGym-v0", pack="upstream", data_dir=str(userrl_dir))


def test_float_sum_quirk_and_success_epsilon(userrl_dir):
    model = ScriptedChatModel([rubric_reply(1.0, 1.0, 1.0, 1.0)])
    env = gym.make("mimesis/TurtleGym-v0", pack="upstream", data_dir=str(userrl_dir), user=model)
    env.reset(options={"task_id": "The Cold Night"})
    assert [c.weight for c in env.unwrapped.task.criteria] == [0.5, 0.2, 0.2, 0.1]
    _, reward, terminated, _, _ = env.step("[answer] story")
    assert reward == 0.9999999999999999 and not terminated
    env = gym.make("mimesis/TurtleGym-v0", pack="upstream", data_dir=str(userrl_dir), user=model, success_epsilon=1e-9)
    env.reset(options={"task_id": "The Cold Night"})
    assert env.step("[answer] story")[2] is True
