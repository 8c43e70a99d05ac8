"""KeywordEcho, the learners' test env (docs/algorithms.md)."""

import pickle
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from mimesis_gym.algorithms.learners.csd.coach import CoachRequest
from mimesis_gym.algorithms.testing import (
    COACH_NOTE,
    ENV_ID,
    TEST_KEYWORDS,
    TRAIN_KEYWORDS,
    keyword_echo_coach,
)
from mimesis_gym.evaluation.contract import run_checks


def start(task="train-00", **kwargs):
    env = gym.make(ENV_ID, split="train", **kwargs)
    obs, info = env.reset(seed=0, options={"task_id": task})
    return env, obs, info


def test_registration_and_word_lists():
    assert gym.spec(ENV_ID).max_episode_steps == 3
    assert len(TRAIN_KEYWORDS) == len(set(TRAIN_KEYWORDS)) == 64
    assert len(TEST_KEYWORDS) == len(set(TEST_KEYWORDS)) == 32
    assert not set(TRAIN_KEYWORDS) & set(TEST_KEYWORDS)


def test_gymnasium_checker_passes_without_warnings():
    env = gym.make(ENV_ID)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


def test_contract_suite():
    failures = [r for r in run_checks([ENV_ID]) if not r.ok]
    assert failures == []


@pytest.mark.parametrize(
    ("reply", "reward"),
    [
        ("apple", 1.0),
        ("Apple.", 1.0),
        ("[action] APPLE", 1.0),
        ("<think>easy</think> apple", 1.0),
        ("Sure: apple!", 1.0),
        ("Here you go: apple", 0.0),  # four words
        ("pineapple", 0.0),  # not a whole word
        ("pear", 0.0),
        ("", 0.0),
    ],
)
def test_keyword_rule(reply, reward):
    env, _, _ = start()
    _, got, terminated, _, info = env.step(reply)
    assert (got, terminated, info["episode_score"]) == (reward, reward == 1.0, reward)


def test_the_user_repeats_the_request_and_three_turns_truncate():
    env, obs, info = start(privileged=True)
    assert obs == "Reply with exactly one word: apple"
    assert env.unwrapped.tools == [] and env.unwrapped.system_prompt == "You are a helpful assistant."
    assert info["privileged"]["hidden"] == {"keyword": "apple"}
    for _ in range(2):
        obs, reward, terminated, truncated, info = env.step("banana")
        assert obs == "That is not what I asked for. Reply with exactly one word: apple"
        assert (reward, terminated, truncated) == (0.0, False, False)
        assert info["privileged"]["user_utterance"] == obs
    assert env.step("banana")[3] is True


def test_train_profile_appends_the_reward_line_and_oracle_answers():
    env, _, _ = start(reward_profile="train")
    assert env.step("pear")[0].endswith("\nReward: 0.0")
    assert env.step(env.unwrapped.oracle_action())[0] == "Thank you.\nReward: 1.0"


def test_parity_rule_rewards_even_lengths():
    env, _, _ = start(reward_rule="parity")
    assert env.step("abc")[1] == 0.0
    assert env.step("abcd")[1] == 1.0
    with pytest.raises(ValueError, match="reward_rule"):
        gym.make(ENV_ID, reward_rule="odd")


def test_env_pickles():
    env, _, _ = start()
    clone = pickle.loads(pickle.dumps(env))
    assert clone.step("apple")[1] == 1.0


def test_scripted_coach_writes_the_fixed_public_note():
    request = CoachRequest(env_id=ENV_ID, turn=1, history="[user] hi", thought="(not available)", next_utterance="x")
    assert keyword_echo_coach(request) == COACH_NOTE
    assert COACH_NOTE == "The user wants only the single word they asked for, nothing else."
