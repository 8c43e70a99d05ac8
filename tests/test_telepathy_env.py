"""TelepathyGym acceptance tests (docs/envs/telepathy.md)."""

import gymnasium as gym
import pytest

from mimesis_gym.envs.telepathy.roles import ANSWERER_FALLBACK, JUDGE_FALLBACK, guess_is_correct
from tests.support.chat_models import ScriptedChatModel, refusal

DEMO = "telepathy-demo-01"


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make("mimesis/TelepathyGym-v0", **kwargs)
    env.reset(seed=0, options={"task_id": DEMO})
    return env


def test_scripted_demo_walkthrough():
    env = start()
    steps = [
        ("[action] Is it an animal?", "Yes"),
        ("[action] Is it a bird?", "No"),
        ("[action] Is it a wild animal?", "Yes"),
        ("[action] Does it live in Africa?", "Yes"),
        ("[action] Can it fly?", "No"),
        ("[action] Is it bigger than a car?", "Yes"),
        ("[action] Does it have four legs?", "Yes"),
        ("[action] Is it not a mammal?", "No"),
        ("[action] Is it green?", "No"),
        ("[action] Is it sweet?", "Maybe"),
        ("[action] What is the meaning of life?", "Maybe"),
        ("[search] Is it a giraffe?", "Yes"),
    ]
    for action, expected in steps:
        obs, reward, terminated, _, info = env.step(action)
        assert (obs, reward, terminated, info["valid_action"]) == (expected, 0.0, False, True), action
    _, reward, terminated, _, _ = env.step("[answer] Zebra")
    assert (reward, terminated) == (0.0, False)
    _, reward, terminated, _, info = env.step("[answer] It's a giraffe!")
    assert (reward, terminated, info["episode_score"]) == (1.0, True, 1.0)


def test_train_profile_and_untagged_input():
    env = start(reward_profile="train")
    assert env.step("hello")[4]["valid_action"] is False
    assert env.step("[answer] giraffe")[0].endswith("\nReward: 1.0")


def test_property_beats_noun_and_records_the_match():
    env = start(privileged=True)
    info = env.step("[action] Is it bigger than a car?")[4]
    assert info["privileged"]["judgements"]["answerer"]["matched"]["kind"] == "property"
    assert info["privileged"]["hidden"]["title"] == "Giraffe"


@pytest.mark.parametrize("guess", ["giraffe", "A giraffe", "the Giraffe", "my guess is a giraffe", "Giraffes"])
def test_scripted_guess_judge_accepts_the_name(guess):
    env = start()
    assert guess_is_correct(guess, env.unwrapped.task)


@pytest.mark.parametrize("guess", ["zebra", "giraffe neck", "not a giraffe"])
def test_scripted_guess_judge_rejects_other_guesses(guess):
    assert not guess_is_correct(guess, start().unwrapped.task)


def test_oracle_agent_on_every_test_entity():
    env = gym.make("mimesis/TelepathyGym-v0")
    for task in env.unwrapped.task_pack.pool("test"):
        env.reset(options={"task_id": task.id})
        assert env.unwrapped.oracle_action() == f"[answer] {task.title}"
        _, reward, terminated, _, _ = env.step(env.unwrapped.oracle_action())
        assert (reward, terminated) == (1.0, True), task.id


def test_twenty_questions_baseline_runs(capsys):
    env = gym.make("mimesis/TelepathyGym-v0", max_episode_steps=40)
    pack = env.unwrapped.task_pack
    nouns = list(pack.vocabulary.nouns)
    for task in pack.pool("test")[:5]:
        env.reset(options={"task_id": task.id})
        for noun in nouns[:20]:
            obs, *_ = env.step(f"[action] Is it a {noun}?")
            assert obs in ("Yes", "No", "Maybe")
        env.step(f"[answer] {task.title}")


# ---------------------------------------------------------------- LLM roles with test doubles


def test_fake_guess_judge_exact_yes_only_unless_lenient():
    judge = ScriptedChatModel(['{"judgment": "yes", "feedback": "Well done."}'])
    assert start(judge=judge).step("[answer] giraffe")[1] == 0.0
    judge = ScriptedChatModel(['{"judgment": "yes", "feedback": "Well done."}'])
    _, reward, _, _, _ = start(judge=judge, lenient_parsing=True).step("[answer] giraffe")
    assert reward == 1.0


@pytest.mark.parametrize(
    ("feedback", "shown"), [("5", "5"), ("null", "None"), ('["Well", "done"]', "['Well', 'done']")]
)
def test_non_string_feedback_keeps_the_verdict(feedback, shown):
    """UserRL scored ``{"judgment": "Yes", "feedback": 5}`` as correct; the feedback is shown as text."""
    judge = ScriptedChatModel([f'{{"judgment": "Yes", "feedback": {feedback}}}'])
    obs, reward, terminated, _, info = start(judge=judge).step("[answer] giraffe")
    assert (obs, reward, terminated, info["user_failure"]) == (shown, 1.0, True, None)


def test_garbage_guess_judgement_falls_back():
    env = start(judge=ScriptedChatModel(["no json at all"]))
    obs, reward, _, _, info = env.step("[answer] giraffe")
    assert (obs, reward, info["user_failure"]) == (JUDGE_FALLBACK, 0.0, "guess_judge:bad_json")


def test_fake_answerer_reply_with_single_quotes():
    env = start(user=ScriptedChatModel(["{'thought': \"it's big\", 'response': 'Yes'}"]), judge="scripted")
    assert env.step("[action] Is it big?")[0] == "Yes"


def test_refusing_answerer_falls_back_every_turn():
    env = start(user=ScriptedChatModel([refusal()]), judge="scripted")
    for _ in range(3):
        obs, reward, _, _, info = env.step("[action] Is it big?")
        assert (obs, reward, info["user_failure"]) == (ANSWERER_FALLBACK, 0.0, "answerer:refusal")


# ---------------------------------------------------------------- UserRL data


def test_upstream_loader_and_title_lookup(userrl_dir):
    import pyarrow.parquet as pq

    fake = ScriptedChatModel(['{"response": "No"}'])
    env = gym.make("mimesis/TelepathyGym-v0", pack="upstream", data_dir=str(userrl_dir), user=fake, judge="scripted")
    pack = env.unwrapped.task_pack
    assert pack.counts() == {"train": 360, "test": 41} and len(pack) == 401
    row = pq.read_table(userrl_dir / "data/telepathy_multiturn/test.parquet").to_pylist()[0]
    assert pack.pool("test")[0].title == "Kiwi" == row["reward_model"]["title"]
    obs, info = env.reset(options={"task_id": "kiwi"})
    assert info["task_id"] == "entity_388" and obs == row["prompt"][1]["content"]
    assert env.reset(options={"task_id": "entity_388"})[1]["task_id"] == "entity_388"
    assert env.step("[answer] kiwi")[1] == 1.0 and fake.calls == []


def test_upstream_with_a_scripted_answerer_is_refused(userrl_dir):
    with pytest.raises(ValueError, match="scripted answerer needs"):
        gym.make("mimesis/TelepathyGym-v0", pack="upstream", data_dir=str(userrl_dir))


def test_the_llm_host_sees_earlier_questions_only_with_answerer_sees_history():
    for sees, expected in ((True, "Earlier questions and your answers:\nPlayer: Is it red?\nYou: No"), (False, None)):
        host = ScriptedChatModel(['{"response": "No"}', '{"response": "Yes"}'])
        env = start(user=host, judge="scripted", answerer_sees_history=sees)
        env.step("[action] Is it red?")
        env.step("[action] Is it big?")
        first, second = (call["messages"][1]["content"] for call in host.calls)
        assert "Earlier questions" not in first and first.endswith("The player's question: Is it red?")
        assert second.endswith("The player's question: Is it big?")
        assert (expected in second) if expected else ("Earlier questions" not in second)
