"""Episodes of a yes/no host playing a user behaviour (docs/behaviors.md), and the checks the TurtleGym
and TelepathyGym behaviour tests share: a scripted run of a fixed agent script under a behaviour against
the same run under control, the knob's draws and refusals, and the directive in an LLM host's prompt.
The episodes themselves are played by :mod:`tests.support.behavior_episodes`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import pytest

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.registry import behavior
from tests.support.behavior_episodes import drawn_episodes, play

DIRECTIVE_MARK = "How you behave in this conversation: "
"""What opens the directive block in an LLM user's system message (behaviors/play.py)."""


@dataclass(frozen=True)
class HostScript:
    """An agent script on a demo task: the host's replies under control (``plain``, by turn; the other
    turns go to the judge) and, per behaviour, its reply at some turns (the first key: the turn where
    the behaviour's check first fires)."""

    env_id: str
    task_id: str
    actions: tuple[str, ...]
    plain: Mapping[int, str]
    expected: Mapping[str, Mapping[int, str]]

    def play(self, actions: Sequence[str] | None = None, **kwargs: Any) -> list[tuple]:
        """``reset`` on the task, then every action (not privileged unless ``kwargs`` say so): the reset
        pair and each step's result (:func:`tests.support.behavior_episodes.play`)."""
        kwargs.setdefault("privileged", False)
        episode = play(self.env_id, self.task_id, self.actions if actions is None else actions, **kwargs)
        episode.env.close()
        return episode.results


def enacted(steps: Sequence[tuple]) -> list[bool | None]:
    """``info["user_behavior"]["enacted"]`` after the reset and after each step."""
    return [step[-1]["user_behavior"]["enacted"] for step in steps]


def scoring(steps: Sequence[tuple]) -> list[tuple]:
    """What the env scores at each step: reward, end flags, reward parts and episode score."""
    return [(s[1], s[2], s[3], s[4]["reward_parts"], s[4]["episode_score"]) for s in steps[1:]]


def check_played_where_expected(script: HostScript, behavior_id: str) -> None:
    """The host's replies are the expected lines, the judge's observations and every reward are those of
    the control run, and the behaviour's check fires from the expected turn on."""
    control = script.play()
    played = script.play(user_behavior=behavior_id)
    lines = script.expected[behavior_id]
    for turn, line in lines.items():
        assert played[turn][0] == line, (turn, played[turn][0])
    for turn in range(1, len(script.actions) + 1):
        if turn not in script.plain:  # the judge's feedback, not the host's words
            assert played[turn][0] == control[turn][0]
    first = next(iter(lines))
    assert enacted(played) == [False] * first + [True] * (len(played) - first)
    assert {step[-1]["user_behavior"]["id"] for step in played} == {behavior_id}
    assert scoring(played) == scoring(control)  # the judge, not the host's words, makes the reward
    assert played[-1][2] and played[-1][4]["episode_score"] == pytest.approx(1.0, abs=1e-9)


def check_control_is_the_plain_env(script: HostScript) -> None:
    """``user_behavior=None`` and ``"control"`` give the trace of the env without the knob, byte for byte."""
    plain = script.play()
    assert {turn: plain[turn][0] for turn in script.plain} == dict(script.plain)
    for value in (None, "control"):
        assert repr(script.play(user_behavior=value)) == repr(plain)
    assert enacted(plain) == [None] * len(plain)


def check_draws(script: HostScript, mix: Any, first_reply: Mapping[str, str]) -> None:
    """Under ``mix`` each of 24 episodes draws one condition (all of ``first_reply``'s), the same one
    again under the same seed, and the host's first reply is that condition's."""

    drawn = drawn_episodes(script.env_id, mix, range(24), script.actions[:1])  # each seed replays its episode
    first = [(condition, observations[0]) for condition, observations in drawn.values()]
    assert {condition for condition, _ in first} == set(first_reply)
    assert all(reply == first_reply[condition] for condition, reply in first)


def check_refused(env_id: str, spec: EnvBehaviors, behavior_id: str) -> None:
    """Asking for a behaviour the host does not play fails naming it, the reason and the playable ones."""
    env_name = gym.make(env_id).unwrapped.env_name
    with pytest.raises(ValueError, match=f"{behavior_id} does not apply to {env_name}: ") as refused:
        gym.make(env_id, user_behavior=["control", behavior_id])
    message = str(refused.value)
    assert spec.not_applicable[behavior_id] in message
    assert message.endswith("applicable: " + ", ".join(["control", *spec.applicable]))


def directive_of(calls: Sequence[Mapping[str, Any]], user_role: str, behavior_id: str, rules_note: str) -> str:
    """The directive in the user role's one recorded system message (``ScriptedChatModel.calls``), checked
    to open with the registry's wording and end with the rules note, and to be in no other role's call."""
    (system,) = [call["messages"][0]["content"] for call in calls if call["role"] == user_role]
    others = [message["content"] for call in calls if call["role"] != user_role for message in call["messages"]]
    assert others and not [text for text in others if DIRECTIVE_MARK in text]
    directive = system.split(DIRECTIVE_MARK, 1)[1]
    assert directive.startswith(behavior(behavior_id).user_directive) and directive.endswith(rules_note)
    return directive


def no_directive(calls: Sequence[Mapping[str, Any]]) -> bool:
    """Whether no recorded call carries a directive (the control condition)."""
    return bool(calls) and not any(DIRECTIVE_MARK in m["content"] for call in calls for m in call["messages"])


def spoken_facts(facts: Mapping[str, Any]) -> list[str]:
    """Every text the behaviours' facts can put in the user's mouth (``informative``: what they must not)."""
    texts: list[str] = []
    for name, value in facts.items():
        if name in ("informative", "progress_kinds"):
            continue
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, tuple):
            texts.extend(item for item in value if isinstance(item, str))
    return texts
