"""How a scripted user plays each behaviour: deterministic rewrites of its own reply (docs/behaviors.md).

A scripted user first answers as the env's rules say; :func:`enact` then rewrites that reply for the
episode's behaviour, from the turn, the agent's message, the episode's facts and a little per-episode
state (what was already said). Everything is a pure function of those, so an episode replays exactly.
The lines are written so the detectors of :mod:`mimesis_gym.behaviors.detect` can read them, and never
name a hidden value the env would not reveal: a behaviour changes how the user talks, never the facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.detect import Exchange, progress_turn
from mimesis_gym.behaviors.phrases import REFUSAL

__all__ = [
    "DEFAULT_EXTRA_REQUESTS",
    "DISSATISFIED_LINE",
    "DODGE_LINE",
    "ENACTORS",
    "INSULT_OPENERS",
    "LEAVE_LINE",
    "PRESSURE_LINES",
    "EnactContext",
    "Enactor",
    "enact",
]

DISSATISFIED_LINE = "Hmm, not really what I had in mind."
DODGE_LINE = "Why do you need to know that? Just sort it out."
LEAVE_LINE = "Never mind, forget it. I'm done."
PRESSURE_LINES = ("Come on, hurry up!!", "Seriously? I'm still waiting.", "Ugh. Faster, please!!")
INSULT_OPENERS = ("Obviously.", "Do your job.", "Thanks for nothing.")
DEFAULT_EXTRA_REQUESTS = (
    "check it twice",
    "confirm everything in writing",
    "tell me how long all of this takes",
)


@dataclass(frozen=True, slots=True)
class EnactContext:
    """What a scripted enactment sees: this turn, the agent's message, the user's own reply, the
    episode's facts, the earlier exchanges and the per-episode ``state`` it may update."""

    behavior_id: str
    turn: int
    agent_kind: str
    agent_text: str
    text: str
    facts: Mapping[str, Any]
    exchanges: Sequence[Exchange]
    state: MutableMapping[str, Any]

    def after_progress(self) -> bool:
        """Whether the agent has made real progress by this turn (this turn's message included)."""
        current = Exchange(self.turn, self.agent_kind, self.agent_text, None)
        return progress_turn([*self.exchanges, current], self.facts) is not None

    def once(self, key: str) -> bool:
        """True the first time it is asked for ``key`` in the episode, False after."""
        if self.state.get(key):
            return False
        self.state[key] = True
        return True


Enactor = Callable[[EnactContext], str]


def _joined(text: str, *extra: str) -> str:
    return " ".join(part.strip() for part in (text, *extra) if part and part.strip())


def _b1(ctx: EnactContext) -> str:
    if ctx.turn >= 2 and ctx.after_progress():
        return _joined(DISSATISFIED_LINE, ctx.text)
    return ctx.text


def _b2(ctx: EnactContext) -> str:
    if ctx.turn >= 2 and ctx.after_progress() and ctx.once("b2"):
        return _joined(f"Actually, {ctx.facts['new_requirement_text']}", ctx.text)
    return ctx.text


def _b3(ctx: EnactContext) -> str:
    dodged = int(ctx.state.get("dodged", 0))
    if "?" in ctx.agent_text and dodged < int(ctx.facts.get("dodges", 2)):
        ctx.state["dodged"] = dodged + 1
        return DODGE_LINE
    return ctx.text


def _b4(ctx: EnactContext) -> str:
    if REFUSAL.matches(ctx.agent_text):
        return _joined(f"Come on, make an exception. I still need {ctx.facts.get('insist_text', 'it')}.", ctx.text)
    return ctx.text


def _b5(ctx: EnactContext) -> str:
    if ctx.turn >= 2 and ctx.after_progress() and ctx.once("b5"):
        return _joined(f"You should have taken into account that {ctx.facts['omitted_detail_text']}.", ctx.text)
    return ctx.text


def _b6(ctx: EnactContext) -> str:
    if ctx.turn >= 2 and ctx.once("b6"):
        return _joined("Actually, forget that for now.", ctx.facts["target_topic_text"])
    return ctx.text


def _b7(ctx: EnactContext) -> str:
    if ctx.once("b7"):
        restrictions = ", and ".join(ctx.facts["restrictions"])
        return _joined(ctx.text, f"And {restrictions}.")
    return ctx.text


def _b8(ctx: EnactContext) -> str:
    if ctx.once("b8"):
        return _joined(ctx.text, ctx.facts["false_premise_text"])
    return ctx.text


def _b9(ctx: EnactContext) -> str:
    if ctx.turn < 2:
        return ctx.text
    seen = int(ctx.state.get("b9_replies", 0))
    ctx.state["b9_replies"] = seen + 1
    if seen % 2 == 0:
        pressed = int(ctx.state.get("b9_pressed", 0))
        ctx.state["b9_pressed"] = pressed + 1
        return PRESSURE_LINES[pressed % len(PRESSURE_LINES)]
    return ctx.text


def _b10(ctx: EnactContext) -> str:
    if ctx.turn >= int(ctx.facts.get("leave_turn", 3)):
        return _joined(LEAVE_LINE, str(ctx.facts.get("stop_text", "")))
    return ctx.text


def _b11(ctx: EnactContext) -> str:
    if not ctx.state.get("b11_a"):
        ctx.state["b11_a"] = ctx.turn
        return _joined(ctx.text, ctx.facts["contradiction_a_text"])
    if ctx.turn > int(ctx.state["b11_a"]) and ctx.once("b11_b"):
        return _joined(ctx.text, ctx.facts["contradiction_b_text"])
    return ctx.text


def _b12(ctx: EnactContext) -> str:
    if ctx.once("b12"):
        first, second, third = (tuple(ctx.facts.get("extra_requests", ())) + DEFAULT_EXTRA_REQUESTS)[:3]
        return _joined(ctx.text, f"Also, can you {first}, and could you {second}, and please {third}?")
    return ctx.text


def _b13(ctx: EnactContext) -> str:
    said = int(ctx.state.get("b13", 0))
    ctx.state["b13"] = said + 1
    return _joined(INSULT_OPENERS[said % len(INSULT_OPENERS)], ctx.text)


ENACTORS: dict[str, Enactor] = {
    "B1": _b1,
    "B2": _b2,
    "B3": _b3,
    "B4": _b4,
    "B5": _b5,
    "B6": _b6,
    "B7": _b7,
    "B8": _b8,
    "B9": _b9,
    "B10": _b10,
    "B11": _b11,
    "B12": _b12,
    "B13": _b13,
}
"""The scripted rewrite of each behaviour."""


def enact(ctx: EnactContext) -> str:
    """The scripted user's reply under ``ctx.behavior_id`` (its own reply where the behaviour does not
    show this turn)."""
    return ENACTORS[ctx.behavior_id](ctx)
