"""Role pieces shared by several envs: yes/no answerers, the history block of their prompts, and the
pieces of their user behaviours (docs/behaviors.md) that TurtleGym and TelepathyGym share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

from mimesis_gym.behaviors.phrases import PRESSURE
from mimesis_gym.behaviors.text import words_of
from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.roles import LLMRole, Role, RoleOutputError, RoleSession
from mimesis_gym.envs._matching import NEGATION_TOKENS, STOPWORDS

__all__ = [
    "Answered",
    "LLMYesNoRole",
    "ask",
    "format_history",
    "hidden_words",
    "host_rules_note",
    "lenient_yes_no_maybe",
    "reply_sentence",
]


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
    ``sees_history``: the native prompt also shows the earlier questions and answers
    (:meth:`question_messages`).
    """

    json_keys: ClassVar[tuple[str, ...] | None] = ("response",)
    max_tokens = 2048
    fallback_text: ClassVar[str] = ""

    def __init__(
        self,
        model: Any,
        *,
        lenient: bool = False,
        sees_history: bool = False,
        templates: dict[str, str] | None = None,
    ) -> None:
        super().__init__(model, lenient=lenient, templates=templates)
        self.sees_history = sees_history

    def question_messages(
        self, system: str, facts: Sequence[str], question: str, history: Sequence[tuple[str, str]]
    ) -> list[dict[str, Any]]:
        """The native prompt: ``system``, then the hidden ``facts``, the earlier questions and answers
        (when the role sees them) and the player's question, as one user message."""
        parts = list(facts)
        if self.sees_history and history:
            parts.append("Earlier questions and your answers:\n" + format_history(history, "Player", "You"))
        parts.append(f"The player's question: {question}")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]

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


# -- user behaviours of a yes/no host ------------------------------------------------------------


def reply_sentence(value: object) -> str | None:
    """A yes/no host's reply as the scripted behaviours read it: a bare answer gets a full stop
    (``"Yes"`` → ``"Yes."``), so a line a behaviour adds after it reads as a sentence of its own.
    The reply stands unchanged where the behaviour adds nothing; ``None`` for a value without text."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    return f"{text}." if text and text[-1].isalnum() else value


def hidden_words(hidden: str, public: str) -> tuple[str, ...]:
    """The content words (4+ letters) of ``hidden`` that ``public`` does not use, in order: what a
    host would give away by saying them (B9's ``informative``). Function words and the pressure words
    of an impatient line (``still``, ``waiting``) are left out: saying them gives nothing away."""
    common = set(words_of(public, 1)) | STOPWORDS | NEGATION_TOKENS
    kept = (word for word in words_of(hidden, 4) if word not in common and not PRESSURE.matches(word))
    return tuple(dict.fromkeys(kept))


def host_rules_note(never: str) -> str:
    """The rules note of a yes/no host's behaviour directive: it keeps answering in the JSON
    ``response``, truthfully, and never does ``never`` (tell the story, name the entity)."""
    return (
        "Keep the game's rules while you do: everything you say goes in the JSON `response`; when you "
        'answer a question, answer it truthfully with "Yes", "No" or "Maybe" (your behaviour\'s words go '
        f"around that answer); never {never}."
    )
