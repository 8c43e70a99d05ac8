"""Scripted episodes under ``user_behavior=`` for the per-env behaviour tests (tests/test_persuade_behaviors.py,
tests/test_tau_behaviors.py): play a fixed list of actions, and where each behaviour's scripted line shows
when the agent is the contract's probe (mimesis_gym/evaluation/contract.py, ``BEHAVIOR_PROBE``)."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from mimesis_gym.behaviors.enact import DISSATISFIED_LINE, DODGE_LINE, INSULT_OPENERS, LEAVE_LINE, PRESSURE_LINES

__all__ = ["assert_pickles_mid_episode", "drawn_conditions", "play", "probe_lines", "trace"]


def play(
    env_id: str, behavior: str | None, actions: Sequence[str], task_id: str, seed: int = 0, **kwargs: Any
) -> tuple[list[tuple[Any, ...]], Any]:
    """One episode of ``actions`` on ``task_id`` (demo split and ``privileged`` unless ``kwargs`` say
    otherwise; ``behavior=None`` passes no ``user_behavior``), stopping where it ends: the reset's
    ``(obs, info)`` then each step's result, and the unwrapped env."""
    if behavior is not None:
        kwargs["user_behavior"] = behavior
    kwargs.setdefault("split", "demo")
    kwargs.setdefault("privileged", True)
    env = gym.make(env_id, **kwargs)
    steps: list[tuple[Any, ...]] = [env.reset(seed=seed, options={"task_id": task_id})]
    for action in actions:
        steps.append(env.step(action))
        if steps[-1][2] or steps[-1][3]:
            break
    return steps, env.unwrapped


def probe_lines(facts: Mapping[str, Any]) -> dict[str, list[tuple[int, str]]]:
    """Where each behaviour's scripted line shows when the agent plays the probe: ``(turn, text the user's
    reply holds)`` per behaviour, from the episode's ``facts``."""
    leave = " ".join(part for part in (LEAVE_LINE, str(facts.get("stop_text", ""))) if part)
    return {
        "B1": [(2, DISSATISFIED_LINE), (3, DISSATISFIED_LINE)],
        "B2": [(2, f"Actually, {facts['new_requirement_text']}")],
        "B3": [(1, DODGE_LINE), (2, DODGE_LINE)],
        "B4": [(2, f"Come on, make an exception. I still need {facts.get('insist_text', 'it')}.")],
        "B5": [(2, f"You should have taken into account that {facts['omitted_detail_text']}.")],
        "B6": [(2, facts["target_topic_text"])],
        "B7": [(1, restriction) for restriction in facts["restrictions"]],
        "B8": [(1, facts["false_premise_text"])],
        "B9": [(2, PRESSURE_LINES[0]), (4, PRESSURE_LINES[1])],
        "B10": [(3, leave)],
        "B11": [(1, facts["contradiction_a_text"]), (2, facts["contradiction_b_text"])],
        "B12": [(1, f"Also, can you {facts['extra_requests'][0]}")],
        "B13": [(1, INSULT_OPENERS[0]), (2, INSULT_OPENERS[1])],
    }


def trace(env_id: str, seed: int, actions: Sequence[str], **kwargs: Any) -> str:
    """The reset (task drawn from the demo split) and every step's result of ``actions``, as text."""
    env = gym.make(env_id, split="demo", **kwargs)
    results: list[Any] = [env.reset(seed=seed)]
    results += [env.step(action) for action in actions]
    return repr(results)


def drawn_conditions(
    env_id: str, mixture: Any, seeds: Sequence[int], actions: Sequence[str]
) -> dict[int, tuple[str, list[str]]]:
    """Per seed, the condition an episode draws under ``mixture`` and the observations of ``actions``,
    after checking that the seed replays its episode exactly (two runs, the same trace)."""
    drawn: dict[int, tuple[str, list[str]]] = {}
    for seed in seeds:
        first = trace(env_id, seed, actions, user_behavior=mixture)
        assert first == trace(env_id, seed, actions, user_behavior=mixture), f"seed {seed} does not replay"
        env = gym.make(env_id, split="demo", user_behavior=mixture)
        condition = env.reset(seed=seed)[1]["user_behavior"]["id"]
        drawn[seed] = (condition, [env.step(action)[0] for action in actions])
    return drawn


def assert_pickles_mid_episode(env_id: str, behavior: str, task_id: str, actions: Sequence[str]) -> None:
    """Under ``behavior``, a copy pickled after the first action steps as the env does on the second."""
    env = gym.make(env_id, split="demo", user_behavior=behavior)
    env.reset(seed=0, options={"task_id": task_id})
    env.step(actions[0])
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step(actions[1]) == env.step(actions[1])
