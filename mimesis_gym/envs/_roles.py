"""Role pieces shared by several envs: yes/no answerers and the history block of their prompts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.roles import LLMRole, Role, RoleOutputError, RoleSession

__all__ = ["Answered", "LLMYesNoRole", "ask", "format_history", "lenient_yes_no_maybe"]


def lenient_yes_no_maybe(response: str) -> str:
    """Map a response starting with yes/no/maybe (any case) to "Yes"/"No"/"Maybe"; else unchanged."""
    lowered = response.strip().lower()
    for label in ("yes", "no", "maybe"):
        if lowered.startswith(label):
            return label.capitalize()
    return response


def format_history(history: Sequence[tuple[str, str]], asker: str, answerer: str) -> str:
    """Earlier question/answer pairs as ``asker: q`` / ``answerer: a`` lines (empty string if none)."""
    return "\n".join(f"{asker}: {question}\n{answerer}: {answer}" for question, answer in history)


class LLMYesNoRole(LLMRole[str]):
    """A role answering a question with a JSON ``response`` string (Turtle oracle, Telepathy answerer).

    The agent sees ``response`` as returned; ``lenient_parsing`` maps yes/no/maybe prefixes.
    """

    json_keys: ClassVar[tuple[str, ...] | None] = ("response",)
    max_tokens = 2048
    fallback_text: ClassVar[str] = ""

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **materials: Any) -> str:
        response = (parsed or {}).get("response")
        if not isinstance(response, str):
            raise RoleOutputError(f"response must be a string, got {type(response).__name__}")
        return lenient_yes_no_maybe(response) if self.lenient else response

    def fallback(self, **materials: Any) -> str:
        return self.fallback_text


class Answered(NamedTuple):
    """A question step's observation and its privileged details."""

    obs: str
    thought: str | None
    utterance: str | None
    judgement: dict[str, Any]


async def ask(
    role: Role[str],
    session: RoleSession,
    question: str,
    history: list[tuple[str, str]],
    fallback: str,
    detail_key: str,
    **materials: Any,
) -> Answered:
    """Put a question to a yes/no role; on success the pair joins ``history``, on failure ``fallback``."""
    result = await role(session, question=question, history=tuple(history), **materials)
    if result.failed:
        return Answered(fallback, result.thought, None, {"response": None, detail_key: None})
    history.append((question, result.value))
    detail = (result.parsed or {}).get(detail_key)
    return Answered(result.value, result.thought, result.value, {"response": result.value, detail_key: detail})
