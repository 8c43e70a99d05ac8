"""TauGym's one role, the customer (``user``): the LLM user and the scripted user (docs/envs/tau.md, "Roles").

The LLM user follows the MIMESIS frame: the simulated customer is the ``assistant`` of its own
chat, its system message holds the role, the task's instruction and the rules, and the agent's
messages arrive as ``user`` turns after the fixed greeting. The scripted user is a deterministic
test double: it answers keyword-matched questions from ``user_facts``, confirms, and stops once the
goal is reached (the episode database equals the gold one and every required output was said).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatFailure, ChatModel, ChatReply, ThoughtRecord
from mimesis_gym.core.conventions import has_think_tag, role_messages, split_thought
from mimesis_gym.core.http import OpenAIChatModel
from mimesis_gym.core.roles import LLMRole, RoleResult, RoleSession, ScriptedRole
from mimesis_gym.envs.tau.tasks import UserFacts

__all__ = [
    "GREETING",
    "STOP",
    "LLMUser",
    "ScriptedUser",
    "keyword_found",
    "resolve_temperature",
    "user_system_prompt",
]

STOP = "###STOP###"
GREETING = "Hi! How can I help you today?"
OMITTED_TEMPERATURE = 1.0
"""Sent instead of an omitted temperature to backends that need a number (the OpenAI default)."""

USER_SYSTEM = """\
You are a customer writing to a customer-service agent in a support chat. You play the customer; \
the agent is the other party.

Your situation and what you want:
{instruction}

Rules:
- Write one line per message, as a person typing in a chat would.
- Reveal only what the current step of the conversation needs; do not tell the whole situation at once.
- Never make up details that your situation does not give you (ids, names, addresses, emails, \
payment details, dates). If the agent asks for one you do not have, say you do not remember it or \
do not have it.
- When your goal has been met, reply with {stop} alone, and nothing else.
- Say things in your own words rather than repeating your situation word for word.
- Keep to the personality your situation describes."""


def user_system_prompt(instruction: str) -> str:
    """The LLM user's system message for a task's instruction."""
    return USER_SYSTEM.format(instruction=instruction, stop=STOP)


def resolve_temperature(model: ChatModel, user_temperature: float | None) -> float | None:
    """The temperature of the user's calls: the given one; when omitted (``None``), ``None`` for an
    OpenAI-compatible HTTP client (sent as JSON ``null``, which the server treats as absent: its own
    default, as tau-bench) and :data:`OMITTED_TEMPERATURE` for backends that need a number."""
    if user_temperature is not None:
        return float(user_temperature)
    return None if isinstance(model, OpenAIChatModel) else OMITTED_TEMPERATURE


class LLMUser(LLMRole[str]):
    """The customer answered by a chat model: plain text replies, ``###STOP###`` ends the episode.

    Materials: ``instruction`` and ``history`` (``(speaker, text)`` pairs after the greeting,
    ``"self"`` for the customer, ``"other"`` for the agent).
    """

    name: ClassVar[str] = "user"
    json_keys: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, model: ChatModel, *, max_tokens: int = 2048, temperature: float | None = None) -> None:
        super().__init__(model)
        self.max_tokens = max_tokens
        self.temperature = resolve_temperature(model, temperature)  # type: ignore[assignment]

    def build_messages(
        self, *, instruction: str, history: Sequence[tuple[str, str]] = (), **_: Any
    ) -> list[dict[str, Any]]:
        return role_messages(user_system_prompt(instruction), [("other", GREETING), *history])

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> str:
        return reply.text

    def fallback(self, **_: Any) -> str:
        return ""

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[str]:
        result = await super().__call__(session, **materials)
        if result.failed or not has_think_tag(result.value):
            return result
        # A chat model strips think blocks itself (docs/users.md, "What every chat model guarantees"); this
        # covers one that did not.
        text, thought = split_thought(result.value)
        session.step_thoughts.setdefault(self.name, {})["reasoning"] = thought
        if thought:
            session.thought_records.append(ThoughtRecord(session.turn, self.name, session.call_index - 1, thought))
        if not text:
            session.fail(self.name, ChatFailure("empty_after_think", "only a thought came back"))
            return RoleResult("", failed=True, thought=thought)
        return RoleResult(text, thought=thought, utterance=text)


# ---------------------------------------------------------------------------------------------
# The scripted user

CONFIRM_KEYWORDS = (
    "confirm",
    "proceed",
    "shall i",
    "should i",
    "would you like me to",
    "do you want me to",
    "is that correct",
    "yes or no",
    "(yes/no)",
)
SLOT_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("email", ("email",)),
    ("name_zip", ("name", "zip", "postal")),
    ("user_id", ("user id", "userid")),
    ("order", ("order id", "order number", "which order")),
    ("items", ("which item", "which product", "what item")),
    ("choice", ("option", "prefer", "color", "size", "variant", "which one")),
    ("payment", ("payment", "pay", "card", "refund to", "gift card", "paypal", "method")),
    ("reason", ("reason", "why")),
    ("address", ("address",)),
    ("reservation", ("reservation", "booking")),
    ("flight", ("flight",)),
    ("passenger", ("passenger",)),
    ("bag", ("bag",)),
)
"""Slot intents in answer order with their keywords (the scripted user's step 3 in docs/envs/tau.md, "Roles")."""


def _pattern(keywords: Sequence[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(keyword) for keyword in keywords)
    return re.compile(rf"(?<![a-z0-9])(?:{alternatives})(?![a-z0-9])")


_SLOT_PATTERNS = tuple((slot, _pattern(keywords)) for slot, keywords in SLOT_KEYWORDS)
_CONFIRM_PATTERN = _pattern(CONFIRM_KEYWORDS)


def keyword_found(keyword: str, message: str) -> bool:
    """Whether ``keyword`` occurs in the lower-cased message, not next to a letter or digit."""
    return _pattern([keyword]).search(message.lower()) is not None


def _listed(values: Sequence[str]) -> str:
    if len(values) <= 2:
        return " and ".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def _slot_answer(slot: str, facts: UserFacts) -> str:
    name = f"{facts.first_name} {facts.last_name}"
    if slot == "email":
        if facts.knows_email and facts.email:
            return f"My email is {facts.email}."
        return f"I don't remember my email, but my name is {name} and my zip code is {facts.zip}."
    if slot == "name_zip":
        return f"My name is {name} and my zip code is {facts.zip}."
    if slot == "user_id":
        return f"My user id is {facts.user_id}." if facts.knows_user_id else "I don't have my user id at hand."
    if slot == "order":
        if not facts.orders:
            return "I don't have an order number with me."
        noun = "order id is" if len(facts.orders) == 1 else "order ids are"
        return f"The {noun} {_listed(facts.orders)}."
    if slot == "items":
        items = list(facts.items.values())
        return f"It's about: {'; '.join(items)}." if items else "I'm not sure which items exactly."
    if slot == "choice":
        targets = list(facts.targets.values())
        return f"I'd like: {'; '.join(targets)}." if targets else "Any option is fine with me."
    if slot == "payment":
        return f"Please use my {facts.payment}." if facts.payment else "Any payment method is fine with me."
    if slot == "reason":
        return f"The reason is: {facts.reason}." if facts.reason else "I'd rather not go into the reason."
    if slot == "address":
        return f"The address is {facts.address}." if facts.address else "I don't want to change any address."
    if slot == "reservation":
        if not facts.reservations:
            return "I don't have the reservation number with me."
        noun = "reservation id is" if len(facts.reservations) == 1 else "reservation ids are"
        return f"The {noun} {_listed(facts.reservations)}."
    if slot == "flight":
        return f"The flights are: {'; '.join(facts.flights)}." if facts.flights else "I don't know the flight details."
    if slot == "passenger":
        if not facts.passengers:
            return "I don't have passenger details to give."
        return f"The passengers are: {'; '.join(facts.passengers)}."
    if slot == "bag":
        return f"I have {facts.bags}." if facts.bags else "I don't know about bags."
    raise ValueError(f"unknown slot {slot!r}")  # pragma: no cover


class ScriptedUser(ScriptedRole[str]):
    """The deterministic customer of docs/envs/tau.md, "Roles".

    Materials: ``message`` (the agent's message), ``facts`` (:class:`UserFacts`), ``goal_reached``
    (computed by the env for the database and messages so far, this one included),
    ``message_count`` (agent messages so far, this one included) and ``patience``.
    """

    name: ClassVar[str] = "user"

    def decide(
        self,
        *,
        message: str,
        facts: UserFacts,
        goal_reached: bool,
        message_count: int,
        patience: int,
        **_: Any,
    ) -> RoleResult[str]:
        if goal_reached:
            return self._said(STOP, "goal_reached")
        if message_count >= patience:
            return self._said(STOP, "patience")
        lowered = message.lower()
        slots = [slot for slot, pattern in _SLOT_PATTERNS if pattern.search(lowered)]
        confirm = _CONFIRM_PATTERN.search(lowered) is not None
        if slots:
            answers = [_slot_answer(slot, facts) for slot in slots]
            if confirm:
                answers.append("Yes.")
            return self._said(" ".join(answers), "slots", slots)
        if confirm:
            return self._said("Yes, please go ahead.", "confirm")
        return self._said(facts.request, "restate")

    @staticmethod
    def _said(reply: str, rule: str, slots: Sequence[str] = ()) -> RoleResult[str]:
        return RoleResult(reply, utterance=reply, parsed={"rule": rule, "slots": list(slots)})
