"""Role pieces shared by several envs: yes/no answerers and the history block of their prompts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.roles import LLMRole, RoleOutputError

__all__ = ["LLMYesNoRole", "format_history", "lenient_yes_no_maybe"]


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
