"""An LLM judge of user replies for ``users-report --judge`` (docs/users-report.md, "Role fidelity").

One call per dialogue. The judge reads the hidden facts the user was given and the numbered
exchanges (the other party's message, then the user's reply), and answers one JSON object with two
lists of reply numbers:

- ``assistant_like``: replies in which the user acts as the assistant (offers help, answers its own
  question, lists options for the other side), breaks character, or says it is an AI;
- ``contradictions``: replies that contradict an earlier reply of the same user or a hidden fact.

Numbers that name no reply are ignored. A reply that is not such an object (or a failed call) is a
judge failure: counted apart, its dialogue left out of the rates. The judge is an env-style
:class:`~mimesis_gym.core.roles.LLMRole` called through a :class:`~mimesis_gym.core.roles.RoleSession`
per dialogue (seed base = the dialogue's index, temperature 0, ``role_max_tokens`` applied), so it
gets the role machinery's call context, JSON coercion and failure kinds, and an unusable endpoint
raises at once. Calls run ``concurrency`` at a time. Every text is cut to ``MAX_CHARS`` in the prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.core.chat import ChatModel, ChatReply
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleSession
from mimesis_gym.evaluation.user_metrics import UserDialogue

__all__ = [
    "JUDGE_KEYS",
    "DialogueVerdict",
    "UserBehaviourJudge",
    "judge_dialogues",
    "judge_messages",
    "judged_rates",
    "parse_verdict",
]

JUDGE_KEYS = ("assistant_like", "contradictions")
MAX_CHARS = 600

INSTRUCTIONS = """You review how a simulated USER behaved in a conversation. The USER is a person with a goal \
who talks to an assistant or support agent (the OTHER side); a realistic user asks for help, answers \
questions about their own situation, and never serves the other side.

Number the USER's replies as given. Report:
- "assistant_like": the numbers of replies in which the USER acts as the assistant (offers help or \
services, answers a question on the other side's behalf, lists options or steps for it), breaks \
character, or says it is an AI or a language model;
- "contradictions": the numbers of replies that contradict an earlier USER reply or one of the \
hidden facts below.

Answer with one JSON object and nothing else, for example {"assistant_like": [2], "contradictions": []}."""


@dataclass(frozen=True)
class DialogueVerdict:
    """The judge's flags for one dialogue (reply numbers start at 1)."""

    replies: int
    assistant_like: frozenset[int]
    contradictions: frozenset[int]


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def judge_messages(dialogue: UserDialogue) -> list[dict[str, Any]]:
    """The judge's chat for one dialogue: the instructions, the hidden facts, the numbered exchanges."""
    facts = [f"- {item.label}: {', '.join(item.values) or '(no fixed wording)'}" for item in dialogue.items]
    lines = ["Hidden facts the USER holds:", *(facts or ["(none listed)"]), "", "Conversation:"]
    for number, exchange in enumerate(dialogue.exchanges, start=1):
        lines += [f"OTHER: {_cut(exchange.prompt)}", f"USER reply {number}: {_cut(exchange.reply)}"]
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "\n".join(lines)}]


def parse_verdict(parsed: dict[str, Any], replies: int) -> DialogueVerdict:
    """The verdict in a judge's JSON object; ``ValueError`` when a key is not a list of numbers."""
    flags = []
    for key in JUDGE_KEYS:
        value = parsed.get(key)
        if not isinstance(value, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in value):
            raise ValueError(f"{key!r} is not a list of reply numbers: {value!r}")
        flags.append(frozenset(n for n in value if 1 <= n <= replies))
    return DialogueVerdict(replies, *flags)


class UserBehaviourJudge(LLMRole[DialogueVerdict | None]):
    """The role: ``dialogue=`` in, a :class:`DialogueVerdict` out (``None`` when the call or its JSON fails)."""

    name = "users_report_judge"
    json_keys = JUDGE_KEYS
    max_tokens = 256

    def build_messages(self, *, dialogue: UserDialogue, **_: Any) -> list[dict[str, Any]]:
        return judge_messages(dialogue)

    def parse(
        self, reply: ChatReply, parsed: dict[str, Any] | None, *, dialogue: UserDialogue, **_: Any
    ) -> DialogueVerdict:
        assert parsed is not None
        try:
            return parse_verdict(parsed, len(dialogue.exchanges))
        except ValueError as error:
            raise RoleOutputError(str(error)) from None

    def fallback(self, **_: Any) -> None:
        return None


async def judge_dialogues(
    model: ChatModel,
    dialogues: Sequence[UserDialogue],
    *,
    concurrency: int = 8,
    role_max_tokens: int | None = None,
) -> list[DialogueVerdict | None]:
    """One verdict per dialogue, in order (``None``: the judge failed on it; dialogues without replies
    are not sent)."""
    judge = UserBehaviourJudge(model)
    gate = asyncio.Semaphore(concurrency)

    async def verdict(index: int, dialogue: UserDialogue) -> DialogueVerdict | None:
        if not dialogue.exchanges:
            return None
        session = RoleSession(episode_id=f"users-report-{index}", llm_seed_base=index, role_max_tokens=role_max_tokens)
        async with gate:
            return (await judge(session, dialogue=dialogue)).value

    return list(await asyncio.gather(*(verdict(i, d) for i, d in enumerate(dialogues))))


def judged_rates(verdicts: Sequence[DialogueVerdict | None], asked: int) -> dict[str, Any]:
    """Shares of judged replies flagged per key, the replies judged, and the judge's failures out of
    the ``asked`` dialogues (those with replies)."""
    judged = [verdict for verdict in verdicts if verdict is not None]
    replies = sum(verdict.replies for verdict in judged)
    return {
        "assistant_like": sum(len(v.assistant_like) for v in judged) / replies if replies else None,
        "contradictions": sum(len(v.contradictions) for v in judged) / replies if replies else None,
        "judged_replies": replies,
        "judge_failures": asked - len(judged),
    }
