"""The env contract suite, parametrised over every registered id: an env joins by being registered."""

import pickle

import gymnasium as gym
import pytest

from mimesis_gym.core.actions import cap_action
from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES
from mimesis_gym.envs import ENV_IDS
from mimesis_gym.evaluation import contract


@pytest.mark.parametrize("check", list(contract.CHECKS))
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_contract(env_id, check):
    contract.CHECKS[check](env_id)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_pickle_round_trip_mid_episode(env_id):
    env = gym.make(env_id, user="scripted", split="demo")
    env.reset(seed=0)
    first = env.step("[action] hello there")  # a step that ends no env's episode
    copy = pickle.loads(pickle.dumps(env))
    assert copy.unwrapped.transcript == env.unwrapped.transcript
    action = env.unwrapped.oracle_action()
    assert copy.step(action) == env.step(action)
    assert first[4]["turn"] == 1


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_an_oversized_turn_is_read_as_its_first_agent_text_max_bytes(env_id):
    """Every env (ABCD's own ``astep`` too) reads a turn over the cap exactly as the cut text, and says so."""
    big = "[action] " + "hello there " * 10_000
    cut, size = cap_action(big)
    assert size == len(big) > AGENT_TEXT_MAX_BYTES and len(cut) == AGENT_TEXT_MAX_BYTES
    results = []
    for action in (big, cut):
        env = gym.make(env_id, user="scripted", split="demo")
        env.reset(seed=0)
        results.append(env.step(action))
        env.close()
    (*over, over_info), (*under, under_info) = results
    assert over == under and over_info["agent_text_truncated"] == size and under_info["agent_text_truncated"] is None
    over_info["agent_text_truncated"] = None
    assert over_info == under_info


def test_fuzz_covers_the_requested_number_of_actions():
    actions = list(contract.fuzz_actions(0, contract.FUZZ_ACTIONS))
    assert len(actions) == 2000
    assert any(isinstance(a, dict) for a in actions) and any(a == "" for a in actions)


def test_a_broken_env_fails_the_suite(monkeypatch):
    from mimesis_gym.envs.function.env import FunctionEnv

    monkeypatch.setattr(FunctionEnv, "oracle_action", lambda self: "[finish]")
    results = contract.run_checks(["mimesis/FunctionGym-v0"], ["oracle"])
    assert not results[0].ok and "oracle scored 0.0" in results[0].detail
