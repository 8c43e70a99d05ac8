"""TelepathyDiscreteEnv: the discrete-action, vector-observation view of TelepathyGym (scripted user)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.error import InvalidAction, ResetNeeded
from gymnasium.utils.env_checker import check_env

from mimesis_gym.envs.telepathy.discrete import (
    DISCRETE_ENV_ID,
    PROPERTY_QUESTIONS,
    InvalidDiscreteAction,
    TelepathyDiscreteEnv,
    register_discrete_env,
)
from mimesis_gym.envs.telepathy.roles import scripted_reply
from mimesis_gym.envs.telepathy.tasks import load_original_pack

GIRAFFE = "telepathy-demo-01"
HIPPO = "telepathy-0161"  # test split
OWL = "telepathy-0163"  # test split
POOL = [GIRAFFE, HIPPO, OWL]


def state(env: TelepathyDiscreteEnv, obs: np.ndarray, question: str) -> str:
    """The one-hot state of ``question`` in ``obs`` (``unasked``, ``yes``, ``no`` or ``unknown``)."""
    index = [q.text for q in env.questions].index(question)
    row = obs[env.layout["answers"]].reshape(-1, 4)[index]
    assert row.sum() == 1.0
    return ("unasked", "yes", "no", "unknown")[int(row.argmax())]


def ask(env: TelepathyDiscreteEnv, question: str) -> tuple[np.ndarray, float, bool, bool, dict]:
    return env.step([q.text for q in env.questions].index(question))


def guess(env: TelepathyDiscreteEnv, task_id: str) -> tuple[np.ndarray, float, bool, bool, dict]:
    return env.step(len(env.questions) + [c.id for c in env.candidates].index(task_id))


def test_check_env_passes_with_warnings_as_errors() -> None:
    register_discrete_env()
    env = gym.make(DISCRETE_ENV_ID, split="test")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)
    env.close()


def test_spaces_follow_questions_candidates_and_teasers() -> None:
    env = TelepathyDiscreteEnv(split="test")
    q, m, t = len(env.questions), len(env.candidates), len(env.teasers)
    assert m == 40
    assert t == len({task.description for task in env.candidates})
    assert env.action_space == gym.spaces.Discrete(q + m)
    assert env.observation_space.shape == (4 * q + m + t + 1,)
    assert env.observation_space.dtype == np.float32
    assert (env.observation_space.low == 0.0).all() and (env.observation_space.high == 1.0).all()
    assert env.layout["turn"].stop == env.observation_space.shape[0]
    no_teaser = TelepathyDiscreteEnv(split="test", show_teaser=False)
    assert no_teaser.observation_space.shape == (4 * q + m + 1,)


def test_every_property_gets_its_hand_written_question() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL, distinct_questions=False)
    properties = [q for q in env.questions if q.kind == "property"]
    assert [q.subject for q in properties] == [name for name, _ in load_original_pack().vocabulary.properties]
    assert [q.text for q in properties] == [PROPERTY_QUESTIONS[q.subject] for q in properties]
    assert "Is it a wild animal?" in [q.text for q in env.questions]
    assert "Is it an owl?" in [q.text for q in env.questions]
    assert "Is it yellow?" in [q.text for q in env.questions]


def test_distinct_questions_split_the_pool_and_never_repeat_answers() -> None:
    pack = load_original_pack()
    env = TelepathyDiscreteEnv(split="test")
    signatures = [tuple(scripted_reply(q.text, task, pack)[0] for task in env.candidates) for q in env.questions]
    assert all(len(set(signature)) > 1 for signature in signatures)
    assert len(set(signatures)) == len(signatures)
    texts = [q.text for q in env.questions]
    assert "Is it grey?" in texts and "Is it gray?" not in texts  # same answers on every test entity


def test_hand_picked_episode_observation_and_rewards() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL, distinct_questions=False)
    obs, info = env.reset(seed=0, options={"task_id": GIRAFFE})
    assert info["task_id"] == GIRAFFE
    assert set(obs[env.layout["answers"]].reshape(-1, 4).argmax(axis=1)) == {0}  # all unasked
    assert obs[env.layout["teaser"]].tolist() == [1.0, 0.0]  # giraffe and hippo: "an animal"; owl: "a bird"
    assert obs[env.layout["turn"]].tolist() == [0.0]

    obs, reward, terminated, truncated, info = ask(env, "Is it an animal?")
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["action_text"] == "[action] Is it an animal?"
    assert state(env, obs, "Is it an animal?") == "yes"
    obs, *_ = ask(env, "Can it fly?")
    assert state(env, obs, "Can it fly?") == "no"
    obs, *_ = ask(env, "Is it sweet?")  # the giraffe's "sweet" is unknown (null): "Maybe"
    assert state(env, obs, "Is it sweet?") == "unknown"
    assert state(env, obs, "Is it yellow?") == "unasked"
    assert obs[env.layout["turn"]].tolist() == [3 / 16]

    obs, reward, terminated, truncated, info = guess(env, HIPPO)
    assert (reward, terminated, truncated) == (0.0, False, False)  # a wrong guess only costs the turn
    assert info["action_text"] == "[answer] Hippopotamus"
    assert obs[env.layout["wrong_guesses"]].tolist() == [0.0, 1.0, 0.0]
    assert obs[env.layout["turn"]].tolist() == [4 / 16]

    obs, reward, terminated, truncated, info = guess(env, GIRAFFE)
    assert (reward, terminated, truncated) == (1.0, True, False)
    assert info["episode_score"] == 1.0
    assert obs[env.layout["wrong_guesses"]].tolist() == [0.0, 1.0, 0.0]


def test_step_penalty_and_train_profile_pass_through() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL, reward_profile="train", step_penalty=0.1, distinct_questions=False)
    obs, _ = env.reset(seed=0, options={"task_id": HIPPO})
    obs, *_ = ask(env, "Is it an animal?")  # the train profile appends a reward line to the reply
    assert state(env, obs, "Is it an animal?") == "yes"
    _, reward, terminated, _, info = guess(env, HIPPO)
    assert terminated and reward == pytest.approx(0.8)  # 1.0 - 0.1 × turn 2
    assert info["reward_parts"]["step_penalty"] == pytest.approx(-0.2)


def test_truncates_after_sixteen_turns() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL)
    env.reset(seed=1, options={"task_id": OWL})
    for turn in range(1, 17):
        obs, reward, terminated, truncated, _ = guess(env, HIPPO)
        assert reward == 0.0 and not terminated
        assert truncated == (turn == 16)
    assert obs[env.layout["turn"]].tolist() == [1.0]


@pytest.mark.parametrize("action", [3.7, "3", True, np.float64(3.0), -1, np.int64(10**6)])
def test_actions_outside_the_discrete_space_are_rejected(action) -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL)
    env.reset(seed=0, options={"task_id": OWL})
    with pytest.raises(InvalidAction, match="is outside Discrete"):
        env.step(action)
    assert issubclass(InvalidDiscreteAction, ValueError)
    _, _, _, _, info = env.step(np.int64(len(env.questions)))  # the rejected actions cost no turn
    assert info["turn"] == 1


def test_stepping_before_reset_or_after_the_end_raises_reset_needed() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL)
    with pytest.raises(ResetNeeded):
        env.step(0)
    env.reset(seed=1, options={"task_id": OWL})
    for _ in range(16):
        truncated = guess(env, HIPPO)[3]
    assert truncated
    with pytest.raises(ResetNeeded, match="truncated"):
        guess(env, HIPPO)
    env.reset(seed=1, options={"task_id": OWL})
    assert guess(env, OWL)[2]  # terminated
    with pytest.raises(ResetNeeded):
        guess(env, OWL)
    env.reset(seed=1, options={"task_id": OWL})
    assert guess(env, HIPPO)[4]["turn"] == 1  # a reset starts over


def test_list_shows_the_discrete_view(capsys) -> None:
    from mimesis_gym.cli import main

    assert main(["list"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(DISCRETE_ENV_ID))
    assert "view: actions Discrete(" in line


def test_reset_draws_every_candidate_reproducibly() -> None:
    env = TelepathyDiscreteEnv(task_ids=POOL)
    drawn = [env.reset(seed=seed)[1]["task_id"] for seed in range(30)]
    assert set(drawn) == set(POOL)
    assert drawn == [env.reset(seed=seed)[1]["task_id"] for seed in range(30)]


def test_pool_selection_and_errors() -> None:
    animals = TelepathyDiscreteEnv(split="train", categories=["animal"])
    assert [c.title for c in animals.candidates][:3] == ["African Elephant", "Lion", "Bengal Tiger"]
    assert {c.category for c in animals.candidates} == {"animal"}
    with pytest.raises(ValueError, match="unknown telepathy task ids"):
        TelepathyDiscreteEnv(task_ids=["telepathy-9999"])
    with pytest.raises(ValueError, match="no candidate entities"):
        TelepathyDiscreteEnv(split="test", categories=["spaceship"])
    with pytest.raises(ValueError, match="outside Discrete"):
        animals.action_text(animals.action_space.n)


@pytest.mark.slow  # importing torch and building the policy alone take 5-15 s on two busy cores
def test_sb3_ppo_smoke_learn() -> None:
    sb3 = pytest.importorskip("stable_baselines3", reason="the sb3 extra is not installed")
    env = TelepathyDiscreteEnv(split="train", categories=["animal"], show_teaser=False)
    model = sb3.PPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(256)
    action, _ = model.predict(env.reset(seed=0)[0], deterministic=True)
    assert env.action_space.contains(int(action))


@pytest.mark.slow
def test_sb3_example_runs_end_to_end() -> None:
    pytest.importorskip("stable_baselines3", reason="the sb3 extra is not installed")
    script = Path(__file__).parent.parent / "examples" / "sb3_telepathy.py"
    command = [sys.executable, str(script), "--timesteps", "512", "--episodes", "5"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, check=True)
    lines = result.stdout.splitlines()
    assert lines[0].startswith("pool: 9 candidates (African Elephant, Lion,")
    assert lines[-2].startswith("random ") and lines[-1].startswith("PPO ")
