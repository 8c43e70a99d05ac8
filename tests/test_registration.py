"""Env ids are registered on import, idempotently, and reachable through the module: prefix."""

import subprocess
import sys

import gymnasium as gym

import mimesis_gym
from mimesis_gym.envs import ENV_IDS, ENV_TABLE


def test_every_id_is_registered_with_its_turn_budget_and_the_paper_envs_with_16():
    for env_id in ENV_IDS:
        entry = ENV_TABLE.find(env_id)
        assert gym.spec(env_id).max_episode_steps == entry.max_episode_steps
        if entry.column is not None:
            assert entry.max_episode_steps == 16, env_id
    assert gym.spec("mimesis/HumanReplay-v0").max_episode_steps is None  # it ends with its conversation


def test_registering_again_changes_nothing():
    before = {env_id: gym.spec(env_id) for env_id in ENV_IDS}
    mimesis_gym.register_envs()
    assert {env_id: gym.spec(env_id) for env_id in ENV_IDS} == before


def test_module_prefix_works_in_a_fresh_interpreter_without_the_import():
    code = (
        "import sys, gymnasium as gym\n"
        "assert 'mimesis_gym' not in sys.modules\n"
        "env = gym.make('mimesis_gym:mimesis/FunctionGym-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(info['task_id'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().startswith("fn-")
