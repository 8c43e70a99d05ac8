"""PersuadeGym roles: the persuadee (user) and the optional stance judge (docs/envs/persuade.md, "Roles")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.jsonfix import field_text
from mimesis_gym.core.roles import LLMRole, RoleResult, ScriptedRole
from mimesis_gym.envs._matching import spec_matches
from mimesis_gym.envs.persuade.tasks import PersuadeTask

__all__ = [
    "FALLBACK_REPLY",
    "STANCES",
    "STANCE_SENTENCES",
    "LLMPersuadee",
    "LLMStanceJudge",
    "PersuadeeState",
    "ScriptedPersuadee",
    "ScriptedStanceJudge",
    "normalise_stance",
    "stance_index",
    "userrl_history",
]

STANCES = (
    "Strongly Agree",
    "Agree",
    "Partly Agree",
    "Neutral",
    "Partly Disagree",
    "Disagree",
    "Strongly Disagree",
)
STANCE_SENTENCES = (
    "Still, I strongly agree with the claim.",
    "I still agree with the claim, though you have made me think.",
    "I now only partly agree with the claim.",
    "Honestly, I am now neutral about the claim.",
    "I am starting to partly disagree with the claim.",
    "I now disagree with the claim.",
    "You've convinced me: I now strongly disagree with it.",
)
FALLBACK_REPLY = "I'm having trouble understanding your argument right now."
_SEPARATORS = re.compile(r"[\s_-]+")


def stance_index(stance: str | None) -> int | None:
    """The label's index 0..6, or ``None`` for anything that is not exactly a label."""
    return STANCES.index(stance) if stance in STANCES else None


def normalise_stance(stance: str, previous: str) -> str:
    """Lenient label matching: case and ``_``/``-``/space runs ignored; no match keeps ``previous``."""
    wanted = _SEPARATORS.sub(" ", stance.strip().lower())
    for label in STANCES:
        if label.lower() == wanted:
            return label
    return previous


@dataclass
class PersuadeeState:
    """The scripted persuadee's memory of an episode: conceded counterpoints and stalled turns."""

    matched: list[str] = field(default_factory=list)
    stalls: int = 0


def _scripted_step(
    argument: str, stance: str, task: PersuadeTask, state: PersuadeeState, max_levels: int
) -> tuple[str, str]:
    """Advance the scripted persuadee by one argument: (reply, new stance)."""
    new = [
        point
        for point in task.counterpoints or ()
        if point.id not in state.matched and spec_matches(point.keywords, argument)
    ][:max_levels]
    state.matched.extend(point.id for point in new)
    current = stance_index(stance)
    index = min(6, (current if current is not None else 0) + len(new))
    if new:
        reply = " ".join(point.concession for point in new)
    else:
        defenses = task.defenses or ("I am not convinced.",)
        reply = defenses[state.stalls % len(defenses)]
        state.stalls += 1
    return f"{reply} {STANCE_SENTENCES[index]}", STANCES[index]


class ScriptedPersuadee(ScriptedRole[tuple[str, str]]):
    name: ClassVar[str] = "persuadee"

    def __init__(self, max_levels_per_turn: int = 2) -> None:
        self.max_levels = max_levels_per_turn

    def decide(
        self, *, argument: str, stance: str, task: PersuadeTask, state: PersuadeeState, **_: Any
    ) -> RoleResult[tuple[str, str]]:
        reply, new_stance = _scripted_step(argument, stance, task, state, self.max_levels)
        return RoleResult((reply, new_stance), utterance=reply, parsed={"stance": new_stance, "response": reply})


class ScriptedStanceJudge(ScriptedRole[str]):
    """The scripted persuadee's label for the same argument (its own memory in ``judge_state``)."""

    name: ClassVar[str] = "stance_judge"

    def __init__(self, max_levels_per_turn: int = 2) -> None:
        self.max_levels = max_levels_per_turn

    def decide(
        self, *, argument: str, stance: str, task: PersuadeTask, judge_state: PersuadeeState, **_: Any
    ) -> RoleResult[str]:
        _, new_stance = _scripted_step(argument, stance, task, judge_state, self.max_levels)
        return RoleResult(new_stance, parsed={"stance": new_stance})


PERSUADEE_SYSTEM = f"""\
You hold a position on a statement, and someone is trying to change your mind. Respond naturally \
and thoughtfully to each of their arguments, then state your current stance. You may change your \
mind when you are given compelling evidence. Be respectful but critical, and point out logical \
fallacies. Your stance is one of: {", ".join(STANCES)}. Keep your reply conversational, at most \
200 tokens, and address the persuader as "you"."""

JUDGE_SYSTEM = f"""\
You read a person's reply in a debate about a statement and decide which label best describes \
their position on the statement now: one of {", ".join(STANCES)}."""


def _history_blocks(history: Sequence[tuple[str, str]]) -> str:
    if not history:
        return "This is the first argument."
    return "\n\n".join(
        f"Turn {number}:\nPersuader: {argument}\nYou: {reply}"
        for number, (argument, reply) in enumerate(history, start=1)
    )


def userrl_history(history: Sequence[tuple[str, str]]) -> str:
    """UserRL's history text: every turn's block ends with a blank line (the last one too)."""
    if not history:
        return "This is the first argument."
    return "".join(
        f"Turn {number}:\nPersuader: {argument}\nYou: {reply}\n\n"
        for number, (argument, reply) in enumerate(history, start=1)
    )


USERRL_PROMPTS = ("PERSUADEE_RESPONSE_SYS", "PERSUADEE_RESPONSE_USER")
"""Constants of UserRL's ``persuadegym/env/prompts.py`` used by ``prompt_set="userrl"``."""


class LLMPersuadee(LLMRole[tuple[str, str]]):
    name: ClassVar[str] = "persuadee"
    json_keys: ClassVar[tuple[str, ...] | None] = ("response", "stance")
    max_tokens = 2048

    def build_messages(
        self, *, argument: str, stance: str, task: PersuadeTask, history: Sequence[tuple[str, str]] = (), **_: Any
    ) -> list[dict[str, Any]]:
        if self.templates is not None:
            user = self.templates["PERSUADEE_RESPONSE_USER"].format(
                statement=task.claim,
                initial_argument=task.argument,
                current_stance=stance,
                conversation_history=userrl_history(history),
                latest_argument=argument,
            )
            return [
                {"role": "system", "content": self.templates["PERSUADEE_RESPONSE_SYS"]},
                {"role": "user", "content": user},
            ]
        user = (
            f"Statement: {task.claim}\n\nYour initial argument: {task.argument}\n\n"
            f"Your previous stance: {stance}\n\nConversation so far:\n{_history_blocks(history)}\n\n"
            f"Latest argument from the persuader: {argument}\n\n"
            'Answer in a fenced JSON block: ```json\n{"thought": "<your reasoning>", '
            '"response": "<your reply, at most 200 tokens>", "stance": "<one of the seven labels>"}\n```'
        )
        return [{"role": "system", "content": PERSUADEE_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, *, stance: str, **_: Any) -> tuple[str, str]:
        parsed = parsed or {}
        response, new_stance = parsed.get("response"), parsed.get("stance")
        # UserRL kept a non-string reply and stance (a stance like 3 is no label: no gain, and the next
        # turn starts from it); ``lenient`` maps a non-label back to the previous stance.
        response, new_stance = field_text(response), field_text(new_stance)
        return response, normalise_stance(new_stance, stance) if self.lenient else new_stance

    def fallback(self, *, stance: str, **_: Any) -> tuple[str, str]:
        return FALLBACK_REPLY, stance


class LLMStanceJudge(LLMRole[str]):
    name: ClassVar[str] = "stance_judge"
    json_keys: ClassVar[tuple[str, ...] | None] = ("stance",)
    max_tokens = 2048

    def build_messages(
        self, *, argument: str, stance: str, task: PersuadeTask, persuadee_reply: str, **_: Any
    ) -> list[dict]:
        user = (
            f"Statement: {task.claim}\nPrevious stance: {stance}\nLatest argument: {argument}\n"
            f"Their reply: {persuadee_reply}\n\n"
            'Answer in a fenced JSON block: ```json\n{"thought": "...", "stance": "<one of the seven labels>"}\n```'
        )
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, *, stance: str, **_: Any) -> str:
        new_stance = field_text((parsed or {}).get("stance"))
        return normalise_stance(new_stance, stance) if self.lenient else new_stance

    def fallback(self, *, stance: str, **_: Any) -> str:
        return stance
