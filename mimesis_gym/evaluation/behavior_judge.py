"""An LLM reading of whether a user played its behaviour (``eval --judge``; docs/behaviors.md).

The rule-based checks of :mod:`mimesis_gym.behaviors.detect` read words. With a judge model, ``eval``
also asks it, once per episode played under a behaviour, whether the user showed the behaviour: the
judge reads the behaviour's name and definition and the numbered turns (the agent's message, then the
user's reply) and answers one JSON object ``{"enacted": true|false, "turns": [numbers]}``. Turn numbers
that name no user reply are dropped. A failed call or a reply of another shape gives ``None``: counted
apart, never read as "not enacted". The judge is an env-style
:class:`~mimesis_gym.core.roles.LLMRole` called through a :class:`~mimesis_gym.core.roles.RoleSession`
(temperature 0, the episode's seed base, ``role_max_tokens`` applied), so an unusable endpoint raises
at once like every role call. Every text is cut to ``MAX_CHARS`` in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.detect import Exchange
from mimesis_gym.behaviors.registry import behavior
from mimesis_gym.core.chat import ChatModel, ChatReply
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleSession

__all__ = ["EnactmentJudge", "JudgedEnactment", "enactment_messages", "judge_enactment", "parse_enactment"]

MAX_CHARS = 600

INSTRUCTIONS = """You check whether a simulated USER showed one behaviour in a conversation with an AGENT. \
The behaviour's definition speaks of a customer; read it as the USER. Judge only what the USER wrote, \
not the AGENT, and not whether the behaviour was reasonable.

Answer with one JSON object and nothing else: "enacted" is true when at least one USER reply clearly \
shows the behaviour, false otherwise; "turns" lists the numbers of the USER replies that show it. \
Example: {"enacted": true, "turns": [2, 3]}"""


@dataclass(frozen=True)
class JudgedEnactment:
    """The judge's reading of one episode."""

    enacted: bool
    turns: tuple[int, ...]


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def enactment_messages(behavior_id: str, exchanges: Sequence[Exchange]) -> list[dict[str, Any]]:
    """The judge's chat: the instructions, the behaviour, then each turn that reached the user."""
    entry = behavior(behavior_id)
    lines = [f"Behaviour {entry.id}, {entry.name.replace('_', ' ')}: {entry.definition}", "", "Conversation:"]
    for exchange in exchanges:
        if exchange.user_text is None:
            continue
        lines += [
            f"AGENT {exchange.turn}: {_cut(exchange.agent_text)}",
            f"USER {exchange.turn}: {_cut(exchange.user_text)}",
        ]
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "\n".join(lines)}]


def parse_enactment(parsed: dict[str, Any], turns: Sequence[int]) -> JudgedEnactment:
    """The reading in a judge's JSON object; ``ValueError`` when ``enacted`` is not a bool or ``turns``
    not a list of numbers (numbers outside ``turns`` are dropped)."""
    enacted = parsed.get("enacted")
    if not isinstance(enacted, bool):
        raise ValueError(f"'enacted' is not true or false: {enacted!r}")
    named = parsed.get("turns", [])
    if not isinstance(named, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in named):
        raise ValueError(f"'turns' is not a list of turn numbers: {named!r}")
    known = set(turns)
    return JudgedEnactment(enacted, tuple(sorted({n for n in named if n in known})))


class EnactmentJudge(LLMRole[JudgedEnactment | None]):
    """The role: ``behavior_id=`` and ``exchanges=`` in, a :class:`JudgedEnactment` out (``None`` on failure)."""

    name = "behavior_judge"
    json_keys = ("enacted",)
    max_tokens = 256

    def build_messages(self, *, behavior_id: str, exchanges: Sequence[Exchange], **_: Any) -> list[dict[str, Any]]:
        return enactment_messages(behavior_id, exchanges)

    def parse(
        self, reply: ChatReply, parsed: dict[str, Any] | None, *, exchanges: Sequence[Exchange], **_: Any
    ) -> JudgedEnactment:
        assert parsed is not None
        try:
            return parse_enactment(parsed, [e.turn for e in exchanges if e.user_text is not None])
        except ValueError as error:
            raise RoleOutputError(str(error)) from None

    def fallback(self, **_: Any) -> None:
        return None


async def judge_enactment(
    model: ChatModel,
    behavior_id: str,
    exchanges: Sequence[Exchange],
    *,
    episode_id: str,
    seed: int = 0,
    role_max_tokens: int | None = None,
) -> JudgedEnactment | None:
    """The judge's reading of one episode (``None``: no user reply to read, or the judge failed)."""
    if not any(exchange.user_text is not None for exchange in exchanges):
        return None
    session = RoleSession(episode_id=episode_id, llm_seed_base=seed, role_max_tokens=role_max_tokens)
    return (await EnactmentJudge(model)(session, behavior_id=behavior_id, exchanges=exchanges)).value
