"""Scripted episodes under ``user_behavior=``, for the per-env behaviour tests (tests/test_<env>_behaviors.py).

The one place that plays them: :func:`play` runs a fixed list of agent actions on one task (or on the
task a seed draws) and keeps every step; :func:`trace` is the same episode as JSON text (observations,
rewards, flags, infos and the transcript), so two runs compare byte for byte; :func:`drawn_episodes`
is what a mixture draws per seed; :func:`assert_shows` checks that a behaviour's scripted line shows where
a test expects it while the rewards stay those of the control user, and :func:`probe_lines` where each
line shows when the agent is the contract's probe (mimesis_gym/evaluation/contract.py, ``BEHAVIOR_PROBE``).
A yes/no host's checks build on these in :mod:`tests.support.host_behaviors`.
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


def probe_lines(facts: Mapping[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """Where each behaviour's scripted line shows when the agent plays the probe: ``(turn, text the user's
    reply holds)`` per behaviour, from the episode's ``facts``."""
    leave = " ".join(part for part in (LEAVE_LINE, str(facts.get("stop_text", ""))) if part)
    line = {behavior: SCRIPTED_LINES[behavior] for behavior in ("B1", "B2", "B3", "B5", "B8", "B12")}
    return {
        "B1": [(2, line["B1"](facts)), (3, line["B1"](facts))],
        "B2": [(2, line["B2"](facts))],
        "B3": [(1, line["B3"](facts)), (2, line["B3"](facts))],
        "B4": [(2, f"Come on, make an exception. I still need {facts.get('insist_text', 'it')}.")],
        "B5": [(2, line["B5"](facts))],
        "B6": [(2, facts["target_topic_text"])],
        "B7": [(1, restriction) for restriction in facts["restrictions"]],
        "B8": [(1, line["B8"](facts))],
        "B9": [(2, PRESSURE_LINES[0]), (4, PRESSURE_LINES[1])],
        "B10": [(3, leave)],
        "B11": [(1, facts["contradiction_a_text"]), (2, facts["contradiction_b_text"])],
        "B12": [(1, line["B12"](facts))],
        "B13": [(1, INSULT_OPENERS[0]), (2, INSULT_OPENERS[1])],
    }


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
    def results(self) -> list[tuple[Any, ...]]:
        """The reset's pair, then each step's result: ``results[turn]`` is turn ``turn``'s."""
        return [self.opening, *self.steps]

    @property
    def facts(self) -> dict[str, Any]:
        return self.env.unwrapped.user_behavior_facts()

    @property
    def observations(self) -> list[str]:
        return [self.opening[0], *(step[0] for step in self.steps)]


def play(env_id: str, task_id: str | None, actions: Sequence[str], *, seed: int = 0, **kwargs: Any) -> Episode:
    """``actions`` on ``task_id`` of the demo split (``None``: the task ``seed`` draws; ``kwargs`` for
    ``gym.make``, ``privileged`` on unless given), stopping early where the episode ends."""
    kwargs.setdefault("split", "demo")
    kwargs.setdefault("privileged", True)
    env = gym.make(env_id, **kwargs)
    opening = env.reset(seed=seed, options=None if task_id is None else {"task_id": task_id})
    steps = []
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return Episode(env, opening, steps)


def trace(env_id: str, task_id: str | None, actions: Sequence[str], *, seed: int = 0, **kwargs: Any) -> str:
    """The episode of :func:`play` as JSON text: every result and the transcript."""
    episode = play(env_id, task_id, actions, seed=seed, **kwargs)
    return json.dumps(
        {"opening": episode.opening, "steps": episode.steps, "transcript": episode.env.unwrapped.transcript},
        sort_keys=True,
    )


def drawn_episodes(
    env_id: str, user_behavior: Any, seeds: Sequence[int], actions: Sequence[str] = (), task_id: str | None = None
) -> dict[int, tuple[str, list[str]]]:
    """Per seed, the condition an episode draws under ``user_behavior`` and the observations of
    ``actions``, after checking that the seed replays its episode exactly (two runs, the same trace)."""
    drawn: dict[int, tuple[str, list[str]]] = {}
    for seed in seeds:
        first = trace(env_id, task_id, actions, seed=seed, user_behavior=user_behavior)
        assert first == trace(env_id, task_id, actions, seed=seed, user_behavior=user_behavior), f"seed {seed}"
        episode = play(env_id, task_id, actions, seed=seed, user_behavior=user_behavior)
        drawn[seed] = (episode.opening[1]["user_behavior"]["id"], episode.observations[1:])
    return drawn


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

    def conditions(user_behavior: Any) -> list[str]:
        return [condition for condition, _ in drawn_episodes(env_id, user_behavior, seeds, task_id=task_id).values()]

    drawn = conditions(["control", behavior])
    assert set(drawn) == {"control", behavior}
    assert drawn == conditions(["control", behavior])
    assert conditions({"control": 0, behavior: 1}) == [behavior] * len(seeds)


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
