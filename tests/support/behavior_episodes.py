"""Scripted episodes under ``user_behavior=``, for the per-env behaviour tests (tests/test_<env>_behaviors.py).

:func:`play` runs a fixed list of agent actions on one task and keeps every step; :func:`trace` is the
same episode as JSON text (observations, rewards, flags, infos and the transcript), so two runs compare
byte for byte; :func:`assert_shows` checks that a behaviour's scripted line shows where a test expects it
while the rewards stay those of the control user.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.enact import DISSATISFIED_LINE, DODGE_LINE, INSULT_OPENERS, LEAVE_LINE, PRESSURE_LINES
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS

STEP_FIELDS = ("obs", "reward", "terminated", "truncated", "info")

SCRIPTED_LINES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "B1": lambda f: DISSATISFIED_LINE,
    "B2": lambda f: f"Actually, {f['new_requirement_text']}",
    "B3": lambda f: DODGE_LINE,
    "B4": lambda f: f"Come on, make an exception. I still need {f['insist_text']}.",
    "B5": lambda f: f"You should have taken into account that {f['omitted_detail_text']}.",
    "B6": lambda f: f"Actually, forget that for now. {f['target_topic_text']}",
    "B7": lambda f: f"And {', and '.join(f['restrictions'])}.",
    "B8": lambda f: f["false_premise_text"],
    "B9": lambda f: PRESSURE_LINES[0],
    "B10": lambda f: LEAVE_LINE,
    "B11": lambda f: f["contradiction_b_text"],
    "B12": lambda f: f"Also, can you {f['extra_requests'][0]}",
    "B13": lambda f: INSULT_OPENERS[0],
}
"""The line a scripted user shows when its behaviour's check fires (B11: the contradicting half), from the
episode's facts (mimesis_gym/behaviors/enact.py)."""


@dataclass
class Episode:
    """One played episode: the env (still open), the reset's observation and info, and each step's result."""

    env: Any
    opening: tuple[str, dict[str, Any]]
    steps: list[tuple[str, float, bool, bool, dict[str, Any]]]

    def step(self, turn: int) -> dict[str, Any]:
        """Turn ``turn``'s result (turns count from 1) by field name."""
        return dict(zip(STEP_FIELDS, self.steps[turn - 1], strict=True))

    @property
    def facts(self) -> dict[str, Any]:
        return self.env.unwrapped.user_behavior_facts()

    @property
    def observations(self) -> list[str]:
        return [self.opening[0], *(step[0] for step in self.steps)]


def play(env_id: str, task_id: str, actions: Sequence[str], *, seed: int = 0, **kwargs: Any) -> Episode:
    """``actions`` on ``task_id`` of the demo split (``kwargs`` for ``gym.make``; ``privileged`` on unless
    given), stopping early where the episode ends."""
    kwargs.setdefault("split", "demo")
    kwargs.setdefault("privileged", True)
    env = gym.make(env_id, **kwargs)
    opening = env.reset(seed=seed, options={"task_id": task_id})
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return Episode(env, opening, steps)


def trace(env_id: str, task_id: str, actions: Sequence[str], *, seed: int = 0, **kwargs: Any) -> str:
    """The episode of :func:`play` as JSON text: every result and the transcript."""
    episode = play(env_id, task_id, actions, seed=seed, **kwargs)
    return json.dumps(
        {"opening": episode.opening, "steps": episode.steps, "transcript": episode.env.unwrapped.transcript},
        sort_keys=True,
    )


def drawn_conditions(env_id: str, task_id: str, user_behavior: Any, seeds: Sequence[int]) -> list[str]:
    """The condition each seeded episode drew under ``user_behavior`` (one env, reset once per seed)."""
    env = gym.make(env_id, split="demo", user_behavior=user_behavior)
    return [env.reset(seed=seed, options={"task_id": task_id})[1]["user_behavior"]["id"] for seed in seeds]


def assert_shows(env_id: str, task_id: str, script: Sequence[str], behavior: str, turn: int) -> Episode:
    """``behavior``'s scripted line is in turn ``turn``'s observation, as the user's own reply
    (``privileged["user_utterance"]``); its check fires there and not before; every step's reward and
    reward parts equal those of the control user fed the same actions."""
    control = play(env_id, task_id, script, user_behavior="control")
    played = play(env_id, task_id, script, user_behavior=behavior)
    shown = played.step(turn)
    assert SCRIPTED_LINES[behavior](played.facts) in shown["obs"]
    assert shown["info"]["privileged"]["user_utterance"] == shown["obs"]
    before = played.opening[1] if turn == 1 else played.step(turn - 1)["info"]
    assert before["user_behavior"]["enacted"] is False
    found = shown["info"]["user_behavior"]
    assert found["id"] == behavior and found["enacted"] is True and turn in found["turns"]
    assert len(played.steps) == len(control.steps)
    for ours, theirs in zip(played.steps, control.steps, strict=True):
        assert (ours[1], ours[4]["reward_parts"]) == (theirs[1], theirs[4]["reward_parts"])
    return played


def assert_draws_per_episode(env_id: str, task_id: str, behavior: str) -> None:
    """``["control", behavior]`` draws both over a dozen seeds, the same way twice; a mapping that
    weighs ``behavior`` alone always draws it."""
    seeds = range(12)
    drawn = drawn_conditions(env_id, task_id, ["control", behavior], seeds)
    assert set(drawn) == {"control", behavior}
    assert drawn == drawn_conditions(env_id, task_id, ["control", behavior], seeds)
    assert drawn_conditions(env_id, task_id, {"control": 0, behavior: 1}, seeds) == [behavior] * len(seeds)


def assert_control_is_the_env_without_the_knob(env_id: str, task_id: str, script: Sequence[str]) -> None:
    """``user_behavior=None`` and ``"control"`` give the trace of the env built without the kwarg, byte
    for byte (same seed, same actions)."""
    plain = trace(env_id, task_id, script, seed=3)
    for value in (None, "control"):
        assert trace(env_id, task_id, script, seed=3, user_behavior=value) == plain, value


def assert_plays_all(env_id: str) -> None:
    """Every one of B1–B13 is accepted; an id outside the registry is refused, naming the known ones."""
    for behavior in BEHAVIOR_IDS:
        gym.make(env_id, split="demo", user_behavior=behavior).close()
    with pytest.raises(ValueError, match=r"unknown user behavior 'B14'; known: control, B1"):
        gym.make(env_id, split="demo", user_behavior="B14")


def assert_hides_secrets(env_id: str, task: Any, script: Sequence[str], behavior: str) -> None:
    """Under ``behavior`` no ``secret_texts()`` of ``task`` reaches an observation, and the rewards are
    those of the control user fed ``script``."""
    played = play(env_id, task.id, script, split=task.split, user_behavior=behavior)
    secrets = played.env.unwrapped.secret_texts()
    assert not [secret for secret in secrets for text in played.observations if secret in text], task.id
    control = play(env_id, task.id, script, split=task.split)
    assert [step[1] for step in played.steps] == [step[1] for step in control.steps], task.id


def assert_pickles_mid_episode(env_id: str, task_id: str, script: Sequence[str], behavior: str) -> None:
    """An env pickled halfway through ``script`` under ``behavior`` plays the rest as the original does,
    behaviour state (facts, exchanges, what was already said) included."""
    half = len(script) // 2
    episode = play(env_id, task_id, script[:half], user_behavior=behavior)
    copy = pickle.loads(pickle.dumps(episode.env))
    for action in script[half:]:
        assert copy.step(action) == episode.env.step(action)
