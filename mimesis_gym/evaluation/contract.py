"""The env contract suite (docs/env-contract.md, "The contract suite"): checks every registered env must pass.

Each check takes an env id, builds the env through ``gym.make`` with the scripted user and raises
``AssertionError`` with a precise message on a violation. ``tests/test_env_contract.py``
parametrises them over the registry and ``mimesis-gym check`` runs them from the command line,
so an env joins the suite by being registered.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils.env_checker import check_env

from mimesis_gym.agents.oracle import OracleAgent, run_oracle_episode
from mimesis_gym.behaviors.detect import detect
from mimesis_gym.core.actions import ACTION_KINDS
from mimesis_gym.core.env import INFO_KEYS
from mimesis_gym.core.spaces import UnicodeText

__all__ = [
    "CHECKS",
    "CheckResult",
    "check_determinism",
    "check_fuzz",
    "check_gymnasium_api",
    "check_no_hidden_data",
    "check_oracle",
    "check_step_result",
    "check_user_alias",
    "check_user_behaviors",
    "fuzz_actions",
    "run_checks",
]

FUZZ_ACTIONS = 2000

_FIXED_MALFORMED: tuple[Any, ...] = (
    "",
    "   ",
    "hello there",
    "[Action] hi",
    "[ACTION] hi",
    "[ask] what?",
    "action] hi",
    "[action hi",
    "[]",
    "[action]",
    "[answer]   ",
    "[search]\n\t",
    "[finish] and some words",
    "\x00\x01[action]\x07 bell",
    "\u200b[answer] 1",
    "[answer] \ud7ff\ufffd",
    "{",
    '{"choice": "answer", "content": ',
    "{choice: answer}",
    '{"choice": "answer"}',
    '{"choice": "dance", "content": "x"}',
    '{"choice": null}',
    '{"choice": "answer", "content": null}',
    "[1, 2, 3]",
    "{}",
    '{"choice": "finish"}',
    '{"choice": "action", "content": {"nested": [1, 2, {"x": null}]}}',
    {"choice": "answer", "content": [1, 2]},
    {"choice": "action", "content": {"a": 1}},
    {"choice": "search", "content": True},
    {"choice": "finish"},
    {"content": "no choice"},
    {"choice": 5, "content": "x"},
    "[action] " + "ā" * 5000,
    "[answer] 1e308",
    "[answer] -inf",
    "[answer] nan",
    "[action] 1 2 3 4 5 6 7 8",
    "[action] -0.5 1e3 0 0",
    "[action] 99999999999 99999999999 99999 9999",
)


@dataclass(frozen=True)
class CheckResult:
    env_id: str
    check: str
    ok: bool
    detail: str = ""


def _make(env_id: str, **kwargs: Any) -> gym.Env[Any, Any]:
    kwargs.setdefault("user", "scripted")
    return gym.make(env_id, **kwargs)


def fuzz_actions(seed: int, n: int) -> Iterator[Any]:
    """``n`` random and malformed actions: fixed nasty cases, random Unicode, tags with junk."""
    rng = np.random.default_rng(seed)
    text = UnicodeText(seed=seed)
    tags = [f"[{kind}] " for kind in ACTION_KINDS] + ["[Answer] ", "[act] ", ""]
    for index in range(n):
        pick = index % 4
        if pick == 0:
            yield _FIXED_MALFORMED[int(rng.integers(len(_FIXED_MALFORMED)))]
        elif pick == 1:
            yield text.sample()
        elif pick == 2:
            yield tags[int(rng.integers(len(tags)))] + text.sample()
        else:
            choice = ACTION_KINDS[int(rng.integers(len(ACTION_KINDS)))]
            call = json.dumps({"choice": choice, "content": text.sample()})
            yield call[: int(rng.integers(1, len(call) + 1))]  # often cut mid-JSON


def check_step_result(env: gym.Env[Any, Any], result: tuple[Any, ...], *, after_reset: bool = False) -> None:
    """Assert the contract types of a ``reset`` or ``step`` result (docs/env-contract.md, "reset and step")."""
    if after_reset:
        obs, info = result
    else:
        obs, reward, terminated, truncated, info = result
        assert type(reward) is float, f"reward must be a float, got {type(reward).__name__}"
        assert math.isfinite(reward), f"reward must be finite, got {reward}"
        assert type(terminated) is bool and type(truncated) is bool, "terminated/truncated must be bools"
    assert isinstance(obs, str) and obs in env.observation_space, f"observation must be a str, got {type(obs)}"
    assert isinstance(info, dict), "info must be a dict"
    assert set(info) == set(INFO_KEYS), f"info keys {sorted(info)} differ from {sorted(INFO_KEYS)}"
    assert isinstance(info["task_id"], str), "info['task_id'] must be a str"
    assert type(info["turn"]) is int, "info['turn'] must be an int"
    assert info["action_kind"] in (None, "invalid", *ACTION_KINDS), f"bad action_kind {info['action_kind']!r}"
    assert type(info["valid_action"]) is bool, "info['valid_action'] must be a bool"
    assert isinstance(info["reward_parts"], dict), "info['reward_parts'] must be a dict"
    assert info["user_failure"] is None or isinstance(info["user_failure"], str), "bad info['user_failure']"
    assert type(info["episode_score"]) is float, "info['episode_score'] must be a float"
    assert isinstance(info["privileged"], dict), "info['privileged'] must be a dict"
    truncated_from = info["agent_text_truncated"]
    assert truncated_from is None or type(truncated_from) is int, "info['agent_text_truncated'] must be None or an int"
    if after_reset:
        assert info["turn"] == 0 and info["action_kind"] is None and info["valid_action"] is True
        assert info["episode_score"] == 0.0, "episode_score must be 0.0 after reset"
    else:
        parts = sum(v for v in info["reward_parts"].values() if isinstance(v, float))
        assert math.isclose(parts, reward, abs_tol=1e-9), f"reward parts sum to {parts}, reward is {reward}"
        if info["action_kind"] == "invalid":
            assert info["valid_action"] is False and reward == 0.0, "malformed input must give reward 0"


def check_gymnasium_api(env_id: str) -> None:
    """Gymnasium's ``check_env`` passes with every warning turned into an error."""
    env = _make(env_id)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_env(env.unwrapped)
    finally:
        env.close()


def _trace(env_id: str, seed: int, n_fuzz: int, **kwargs: Any) -> list[Any]:
    env = _make(env_id, **kwargs)
    trace: list[Any] = []
    try:
        trace.append(env.reset(seed=seed))
        agent = OracleAgent()
        actions = list(fuzz_actions(seed, n_fuzz))
        done = False
        while not done:
            action = actions.pop(0) if actions else agent.act(env)
            result = env.step(action)
            trace.append(result)
            done = result[2] or result[3]
    finally:
        env.close()
    return trace


def check_determinism(env_id: str, seed: int = 7) -> None:
    """Two envs with the same seed and actions give identical observations, rewards and infos."""
    first, second = _trace(env_id, seed, 6), _trace(env_id, seed, 6)
    assert len(first) == len(second), "episode lengths differ under the same seed"
    for index, (a, b) in enumerate(zip(first, second, strict=True)):
        assert a == b, f"step {index} differs under the same seed:\n{a}\n{b}"


def check_fuzz(env_id: str, n: int = FUZZ_ACTIONS, seed: int = 0, **kwargs: Any) -> None:
    """``n`` random and malformed actions never raise and always return contract types (``kwargs``: for
    ``gym.make``)."""
    env = _make(env_id, **kwargs)
    try:
        check_step_result(env, env.reset(seed=seed), after_reset=True)
        for action in fuzz_actions(seed, n):
            result = env.step(action)
            check_step_result(env, result)
            if result[2] or result[3]:
                check_step_result(env, env.reset(), after_reset=True)
    finally:
        env.close()


def check_oracle(env_id: str) -> None:
    """The oracle agent reaches the env's maximum score on every demo task."""
    env = _make(env_id, split="demo")
    try:
        tasks = env.unwrapped.task_pack.pool("demo")  # type: ignore[attr-defined]
        for task in tasks:
            score, rewards, _ = run_oracle_episode(env, seed=0, options={"task_id": task.id})
            target = env.unwrapped.task_max_score()  # type: ignore[attr-defined]
            # 1e-6: rewards rounded to 6 decimals (PersuadeGym's 6 × 0.166667) may sum a hair off.
            assert score >= target - 1e-6, (
                f"oracle scored {score} on {task.id} (rewards {rewards}); maximum is {target}"
            )
    finally:
        env.close()


def check_no_hidden_data(env_id: str, seed: int = 3, **kwargs: Any) -> None:
    """Hidden task strings never appear in an observation; ``info["privileged"]`` stays empty (``kwargs``:
    for ``gym.make``)."""
    env = _make(env_id, split="demo", **kwargs)
    agent = OracleAgent()
    try:
        for task in env.unwrapped.task_pack.pool("demo"):  # type: ignore[attr-defined]
            for n_fuzz in (0, 40):
                obs, info = env.reset(seed=seed, options={"task_id": task.id})
                secrets = [s for s in env.unwrapped.secret_texts() if s]  # type: ignore[attr-defined]
                observations = [obs]
                infos = [info]
                actions = list(fuzz_actions(seed, n_fuzz))
                done = False
                while not done:
                    obs, _, terminated, truncated, info = env.step(actions.pop(0) if actions else agent.act(env))
                    observations.append(obs)
                    infos.append(info)
                    done = terminated or truncated
                for text in observations:
                    for secret in secrets:
                        assert secret not in text, f"hidden {secret!r} of {task.id} appears in observation {text!r}"
                assert all(i["privileged"] == {} for i in infos), "privileged=False must give an empty dict"
    finally:
        env.close()


UNKNOWN_ALIAS = "no-such-alias"


def check_user_alias(env_id: str) -> None:
    """``user="no-such-alias"`` fails at construction with a ``ValueError`` naming the alias: no env
    ignores ``user=`` (``ConversationEnv.__init__`` resolves it for every env)."""
    try:
        env = gym.make(env_id, user=UNKNOWN_ALIAS)
    except ValueError as error:
        assert UNKNOWN_ALIAS in str(error), f"the error does not name the alias: {error}"
        return
    env.close()
    raise AssertionError(f"user={UNKNOWN_ALIAS!r} was accepted: the env ignores its user= argument")


BEHAVIOR_PROBE: tuple[str, ...] = (
    "[action] Could you tell me a bit more about what you need?",
    "[action] I have found an option for you. Unfortunately, I can't change that part. Is there anything else?",
    "[action] I've updated the plan. What else should I know?",
    "[action] Is there anything else I should know?",
    "[action] Is there anything else I should know?",
    "[action] Is there anything else I should know?",
)
"""The probing agent of :func:`check_user_behaviors`: questions, progress and a refusal, by turn 3, so
every behaviour has its cue; it talks to the user with ``[action]`` in every env that has one."""

PROBE_FUZZ = 120


def _probe(env_id: str, behavior: str, task_id: str, seed: int) -> tuple[dict[str, Any], Any]:
    env = _make(env_id, split="demo", user_behavior=behavior)
    try:
        _, info = env.reset(seed=seed, options={"task_id": task_id})
        for action in BEHAVIOR_PROBE:
            result = env.step(action)
            check_step_result(env, result)
            info = result[4]
            if result[2] or result[3]:
                break
        return info, env.unwrapped
    finally:
        env.close()


def check_user_behaviors(env_id: str, seed: int = 5) -> None:
    """Every behaviour the env's user plays (docs/behaviors.md) passes determinism, fuzz and no-hidden-data
    with the scripted user, and its enactment check fires on the probe's episode of every demo task,
    while no check fires on the control episode; a behaviour the env does not play is refused at
    construction with a ``ValueError`` listing the applicable ones."""
    env = _make(env_id)
    spec = env.unwrapped.user_behaviors  # type: ignore[attr-defined]
    tasks = [task.id for task in env.unwrapped.task_pack.pool("demo")]  # type: ignore[attr-defined]
    env.close()
    for behavior in spec.not_applicable:
        try:
            _make(env_id, user_behavior=behavior).close()
        except ValueError as error:
            assert "applicable: control" in str(error), f"refusing {behavior} does not list the applicable: {error}"
        else:
            raise AssertionError(f"user_behavior={behavior!r} was accepted, but the env declares it not applicable")
    for task_id in tasks:
        control, unwrapped = _probe(env_id, "control", task_id, seed)
        assert control["user_behavior"] == {"id": "control", "enacted": None, "turns": []}
        facts = unwrapped.user_behavior_facts()
        for behavior in spec.applicable:
            found = detect(behavior, unwrapped.user_exchanges, facts)
            assert not found.enacted, f"{behavior}'s check fires on the control episode of {task_id}: {found}"
            info, played = _probe(env_id, behavior, task_id, seed)
            assert info["user_behavior"]["id"] == behavior
            assert info["user_behavior"]["enacted"], (
                f"{behavior} not enacted on {task_id}: {[(e.agent_text, e.user_text) for e in played.user_exchanges]}"
            )
    for behavior in spec.applicable:
        first, second = (_trace(env_id, seed, 6, user_behavior=behavior) for _ in range(2))
        assert first == second, f"{behavior}: two episodes under the same seed differ"
        check_fuzz(env_id, PROBE_FUZZ, seed, user_behavior=behavior)
        check_no_hidden_data(env_id, seed, user_behavior=behavior)


CHECKS: dict[str, Callable[[str], None]] = {
    "gymnasium_api": check_gymnasium_api,
    "determinism": check_determinism,
    "fuzz": check_fuzz,
    "oracle": check_oracle,
    "no_hidden_data": check_no_hidden_data,
    "user_alias": check_user_alias,
    "user_behaviors": check_user_behaviors,
}


def run_checks(env_ids: list[str], checks: list[str] | None = None) -> list[CheckResult]:
    """Run the named checks (all by default) on each env; failures are collected, not raised."""
    results = []
    for env_id in env_ids:
        for name in checks or list(CHECKS):
            try:
                CHECKS[name](env_id)
            except Exception as error:  # every failure is reported, the suite goes on
                results.append(CheckResult(env_id, name, False, f"{type(error).__name__}: {error}"))
            else:
                results.append(CheckResult(env_id, name, True))
    return results
