"""IntentionGym acceptance tests (docs/envs/intention.md)."""

import gymnasium as gym
import pytest

from mimesis_gym.envs._asking import QuestionGameEnv
from mimesis_gym.envs.intention.env import IntentionEnv
from mimesis_gym.envs.intention.roles import CANNED_REPLIES
from mimesis_gym.envs.intention.tasks import load_upstream_pack
from tests.support.chat_models import ScriptedChatModel, refusal

DEMO = "intention-demo-01"


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    kwargs.setdefault("privileged", True)
    env = gym.make("mimesis/IntentionGym-v0", **kwargs)
    _, info = env.reset(seed=0, options={"task_id": DEMO})
    return env, info


def test_scripted_demo_walkthrough():
    env, info = start()
    held = info["privileged"]["hidden"]["held_options"]
    obs, reward, *_ = env.step("[action] How much space do you have for the garden?")
    assert reward == 1.0 and held[0].rstrip(".") in obs
    obs, reward, *_ = env.step("[action] What is your favourite movie?")
    assert reward == 0.0 and "Help me plan a vegetable garden for my backyard." in obs
    obs, reward, *_ = env.step("[action] How big is the area and does it get full sun?")
    assert reward == 0.7 and held[1].rstrip(".") in obs
    assert env.step("[action] Which vegetables would you like to grow?")[1] == 0.7
    _, reward, terminated, _, info = env.step("[action] How much time per week can you spend tending it?")
    assert (reward, terminated) == (0.4, True)
    assert info["episode_score"] == pytest.approx(2.8)


def test_the_step_is_the_question_games_with_a_constant_step_penalty():
    """IntentionGym plays the shared question-game step (envs/_asking.py) through its hooks; unlike
    TurtleGym's and TelepathyGym's, its step penalty does not grow with the turn."""
    assert issubclass(IntentionEnv, QuestionGameEnv) and "_handle" not in vars(IntentionEnv)
    env, _ = start(step_penalty=0.1, reward_scale=0.5)
    parts = [env.step("[action] How much space do you have for the garden?")[4]["reward_parts"]]
    for _ in range(2):
        parts.append(env.step("[action] What is your favourite movie?")[4]["reward_parts"])
    obs, reward, terminated, _, info = env.step("[finish]")
    assert parts == [
        {"coverage": 0.5, "step_penalty": -0.1, "clip": 0.0},
        {"coverage": 0.0, "step_penalty": -0.1, "clip": 0.1},
        {"coverage": 0.0, "step_penalty": -0.1, "clip": 0.1},
    ]
    assert (obs, reward, terminated) == ("Session ended: 1/4 details covered (25%).", 0.0, True)
    assert info["privileged"]["judgements"] == {}


def test_two_details_in_one_question_are_penalised():
    env, _ = start()
    assert env.step("[action] How big is the area and does it get full sun?")[1] == pytest.approx(0.8)


def test_finish_reports_coverage():
    env, _ = start()
    obs, reward, terminated, _, _ = env.step("[finish]")
    assert "0/4" in obs and (reward, terminated) == (0.0, True)


def test_train_profile_and_untagged_input():
    env, _ = start(reward_profile="train")
    assert env.step("[action] How much space do you have for the garden?")[0].endswith("\nReward: 1.0")
    assert env.step("hello")[4]["valid_action"] is False


def test_search_passes_the_whole_action_string():
    env, _ = start()
    assert env.step("[search] space for the garden?")[1] == 1.0
    assert env.unwrapped._history[-1][0] == "[search] space for the garden?"


def test_held_options_are_seeded():
    first = start()[1]["privileged"]["hidden"]["held_options"]
    assert first == start()[1]["privileged"]["hidden"]["held_options"]


def test_oracle_agent_on_every_test_task():
    env = gym.make("mimesis/IntentionGym-v0")
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(options={"task_id": task.id})
        turns = 0
        terminated = False
        while not terminated:
            _, _, terminated, _, info = env.step(env.unwrapped.oracle_action())
            turns += 1
        assert turns == len(task.missing_details), task.id
        assert info["episode_score"] == pytest.approx(task.max_score), task.id


# ---------------------------------------------------------------- LLM roles with test doubles


def judge_episode(reply, **kwargs):
    env, _ = start(judge=ScriptedChatModel([reply]), **kwargs)
    return env.step("[action] How much space do you have for the garden?")


@pytest.mark.parametrize(
    ("reply", "lenient", "reward"),
    [
        ('{"covered_detail_indices": [0, 0]}', False, 0.8),
        ('{"covered_detail_indices": [0, 0]}', True, 1.0),
        ('{"is_task_related": "false", "covered_detail_indices": [0]}', False, 1.0),
        ('{"is_task_related": "false", "covered_detail_indices": [0]}', True, 0.0),
        ('{"covered_detail_indices": [7]}', False, 0.0),
        ('{"covered_detail_indices": ["1", true, -1]}', False, 0.7),
    ],
)
def test_fake_coverage_judge_normalisation(reply, lenient, reward):
    assert judge_episode(reply, lenient_parsing=lenient)[1] == pytest.approx(reward)


def test_garbage_coverage_judgement_covers_nothing():
    obs, reward, _, _, info = judge_episode("no json")
    assert (reward, info["user_failure"]) == (0.0, "coverage:bad_json")
    assert obs.startswith("Good question.")  # the scripted responder's reply is still shown


def test_fake_responder_plain_text_and_bad_json():
    env, _ = start(user=ScriptedChatModel(["Oh, about ten square metres."]), judge="scripted")
    assert env.step("[action] How much space?")[0] == "Oh, about ten square metres."
    env, _ = start(user=ScriptedChatModel(['{"thought": "x"}']), judge="scripted")
    obs, _, _, _, info = env.step("[action] How much space?")
    assert obs in CANNED_REPLIES and info["user_failure"] == "responder:bad_json"


@pytest.mark.parametrize(
    ("reply", "shown"), [('{"thought": "t", "response": 7}', "7"), ('{"response": [1, "a"]}', "[1, 'a']")]
)
def test_non_string_responder_reply_is_kept_as_its_str(reply, shown):
    env, _ = start(user=ScriptedChatModel([reply]), judge="scripted")
    obs, _, _, _, info = env.step("[action] How much space?")
    assert (obs, info["user_failure"]) == (shown, None)


def test_refusing_responder_gets_canned_replies():
    env, _ = start(user=ScriptedChatModel([refusal()]), judge="scripted")
    for _ in range(3):
        obs, _, _, _, info = env.step("[action] What is the weather like?")
        assert obs in CANNED_REPLIES and info["user_failure"] == "responder:refusal"


# ---------------------------------------------------------------- UserRL data


def test_upstream_loader(userrl_dir):
    import pyarrow.parquet as pq

    pack = load_upstream_pack(str(userrl_dir))
    assert len(pack) == 1107 and pack.counts() == {"train": 380, "test": 40, "other": 687}
    task = pack.get("06c2b5dd-7750-4cb6-8aad-1ff6554b98fb")
    assert task.task == "Teach me how to read sheet music for the piano."
    assert task.category == "Music Education and Activities"
    assert [d.importance for d in task.missing_details] == ["3", "2", "2"] and task.max_score == pytest.approx(2.4)
    mean = sum(t.max_score for t in pack.pool("test")) / 40
    assert mean == pytest.approx(2.6775, abs=1e-9)
    row = pq.read_table(userrl_dir / "data/intention_multiturn/test.parquet").to_pylist()[0]
    env = gym.make(
        "mimesis/IntentionGym-v0", pack="upstream", data_dir=str(userrl_dir), user=ScriptedChatModel(["Sure."])
    )
    obs, info = env.reset(
        options={"task_id": row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"]["id"]}
    )
    assert obs == row["prompt"][1]["content"]
