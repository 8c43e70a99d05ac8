"""Env ids are registered on import, idempotently, and reachable through the module: prefix."""

import subprocess
import sys

import gymnasium as gym

import mimesis_gym
from mimesis_gym.envs import ENV_IDS


def test_every_id_is_registered_with_the_paper_turn_budget():
    for env_id in ENV_IDS:
        assert gym.spec(env_id).max_episode_steps == 16


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
