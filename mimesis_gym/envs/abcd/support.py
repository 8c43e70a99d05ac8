"""The scripted support agent: a deterministic state machine over the subflow.

See docs/envs/abcd.md, "Scripted support agent".

It walks the subflow's kb sequence, asks for one required field at a time, reads record facts
(the account's values, today's date, the shipping status, the system check) from the scenario as a
store system would, asks the customer for the rule's customer facts, evaluates the rule at its
decision action, refuses ineligible requests plainly and restates the refusal when pushed.
Wording is fixed templates; tests check content, not phrasing.

Template discipline (so the scripted judge reads the agent right): only messages that ask for a
field contain both a ``?`` and that field's ask phrase; no message before a refusal uses a
REFUSAL phrase unless it explains a missing field; only completion messages use COMPLETION phrases.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mimesis_gym.behaviors.text import PhraseList, matches_any, mentions, words_of
from mimesis_gym.envs.abcd.behaviors import record_facts
from mimesis_gym.envs.abcd.judge_rules import DISENGAGE, INSULT, PERSIST, PRESSURE, REFUSE_INFO, REQUEST, gives_field
from mimesis_gym.envs.abcd.policy import LEVELS, Decision, Rule, StoreCatalog, fill
from mimesis_gym.envs.abcd.scenarios import (
    ACTION_FIELDS,
    field_phrase,
    field_values,
    items_on_order,
    lead_run,
    prefix_fields,
    products,
    required_fields,
)

__all__ = [
    "CHOICES",
    "FACT_QUESTIONS",
    "FIELD_QUESTIONS",
    "AgentState",
    "Choice",
    "SupportContext",
    "read_choice",
    "read_fact",
    "scripted_reply",
]

ACCEPTANCE = PhraseList(
    "ACCEPTANCE", ["yes", "yeah", "ok", "okay", "sure", "fine", "please do", "that works", "go ahead"]
)
IT_WORKS = PhraseList(
    "IT_WORKS",
    [
        "it works",
        "its working",
        "it's working",
        "working now",
        "that worked",
        "that fixed it",
        "fixed",
        "much better",
        "better now",
    ],
)
CLOSING = PhraseList("CLOSING", ["thanks", "thank you", "that's all", "thats all", "bye"])
_NEGATIVE = ("no", "nope", "don't", "dont", "do not", "lost", "gone", "threw", "without", "haven't", "not")
_POSITIVE = ("yes", "yeah", "yep", "i do", "i have", "got it", "still have", "kept", "sure")
_NUMBER_WORDS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "twenty": 20,
    "thirty": 30,
    "a week": 7,
    "a day": 1,
    "two weeks": 14,
}
_DAYS = re.compile(r"(\d+)\s*(?:days?|d)\b")
_DOLLARS = re.compile(r"\$\s*(\d+)|(\d+)\s*(?:dollars|bucks|usd)\b")
_NUMBER = re.compile(r"\b(\d+)\b")
_ORDER_ID = re.compile(r"(?<!\d)\d{10}(?!\d)")

FIELD_QUESTIONS: dict[str, str] = {
    "customer_name": "Could I have your full name, please?",
    "username": "What is the username on your account?",
    "email": "What email address is on the account?",
    "order_id": "What is the order ID?",
    "member_level": "What is your membership level: guest, bronze, silver or gold?",
    "full_address": "What is your full address, street first, then city and state?",
    "account_id": "What is your account ID?",
    "zip_code": "What is the ZIP code on the account?",
    "phone": "What phone number should we call you on?",
    "payment_method": "Which payment method did you use for the order?",
}
_PURPOSES: dict[str, str] = {
    "customer_name": "it's how I find your account",
    "username": "it confirms the account is yours",
    "email": "it confirms the account is yours",
    "order_id": "it's how I find the order",
    "member_level": "it decides which options you have",
    "full_address": "it's where anything we send will go",
    "account_id": "it confirms who I'm talking to",
    "zip_code": "it confirms who I'm talking to",
    "phone": "it's the number the manager will call",
    "payment_method": "it tells me where the money went",
}
FACT_QUESTIONS: dict[str, str] = {
    "has_receipt": "Do you still have the receipt for this purchase?",
    "days_waiting": "How many days have you been waiting so far?",
    "days_late": "How many days late is the subscription payment?",
    "disputed_amount": "How much was the charge you're disputing, in dollars?",
}
_TROUBLESHOOT_STEPS: dict[str, str] = {
    "try-again": "Let's start simple: please reload the page and try once more. Does it work now?",
    "log-out-in": "Next, please sign out of your account and sign back in. Is it any better?",
    "instructions": "Please clear your browser cache and close any other tabs, then try again. How is it now?",
    "enter-details": "Please enter your details on the checkout page again and retry. Does that help?",
    "make-purchase": "Please try placing the order once more. Did it go through this time?",
}
_DONE = " Let me know if there's anything else."
_COMPLETIONS: dict[str, str] = {
    "refund_initiate": "All set: a refund of ${amount} has been issued {target}." + _DONE,
    "recover_password": "All set: a temporary password has been issued for your account." + _DONE,
    "reset_2fa": "All set: a reset link is on its way to your inbox." + _DONE,
    "manage_change_address": "All set: your profile now shows the new details." + _DONE,
}
_GENERIC_COMPLETION = "All set: your request about {title} has been processed." + _DONE


@dataclass(frozen=True)
class Choice:
    """A choice action: the options (name, keywords, phrase used in the completion) and the question."""

    action: str
    question: str
    options: tuple[tuple[str, tuple[str, ...], str], ...]


_RETURN_CHOICE = Choice(
    "update-order",
    "How would you like to send it back: by mail, in store, or at a drop off center?",
    (
        ("by mail", ("mail", "post"), "by mail"),
        ("in store", ("store", "shop"), "in store"),
        ("drop off center", ("drop off", "drop-off", "dropoff", "center"), "at a drop off center"),
    ),
)
_REFUND_CHOICE = Choice(
    "offer-refund",
    "Where should the refund go: a gift voucher, added value on your account, a paper check, or back to the "
    "original payment?",
    (
        ("gift card", ("gift", "voucher"), "as a gift voucher"),
        ("add value", ("added value", "account", "store credit", "credit"), "as added value on your account"),
        ("paper check", ("check", "cheque"), "as a paper check"),
        ("credit card", ("original payment", "card", "back to"), "back to the original payment"),
    ),
)
CHOICES: dict[str, Choice] = {
    "return_size": _RETURN_CHOICE,
    "return_color": _RETURN_CHOICE,
    "return_stain": _RETURN_CHOICE,
    "refund_initiate": _REFUND_CHOICE,
}
"""Subflows with a choice action (return method; refund target)."""


def read_choice(choice: Choice, message: str) -> str | None:
    """The option ``message`` picks: exact option names first, then keywords; first listed wins."""
    for name, _, _ in choice.options:
        if matches_any([name], message):
            return name
    for name, keywords, _ in choice.options:
        if matches_any(keywords, message):
            return name
    return None


def read_fact(name: str, message: str, asked: bool) -> Any:
    """A customer fact read from ``message`` (``None`` when absent): receipt yes/no, ``<n> days``,
    ``$<n>`` / ``<n> dollars``; a bare number counts when the fact was just asked."""
    lowered = message.lower()
    if name == "has_receipt":
        if not asked and "receipt" not in lowered:
            return None
        if matches_any(_NEGATIVE, message):
            return "no"
        if matches_any(_POSITIVE, message):
            return "yes"
        return None
    if name in ("days_waiting", "days_late"):
        found = _DAYS.search(lowered)
        if found:
            return int(found.group(1))
        for phrase, value in sorted(_NUMBER_WORDS.items(), key=lambda item: -len(item[0])):
            if asked and matches_any([phrase], message):
                return value
        bare = _NUMBER.search(lowered) if asked else None
        return int(bare.group(1)) if bare else None
    if name == "disputed_amount":
        found = _DOLLARS.search(lowered)
        if found:
            return int(found.group(1) or found.group(2))
        bare = _NUMBER.search(lowered) if asked else None
        return int(bare.group(1)) if bare else None
    return None


@dataclass(frozen=True)
class SupportContext:
    """What the scripted agent knows of the row: the subflow's procedure, rule and account record."""

    subflow: str
    title: str
    kb: tuple[str, ...]
    required: tuple[str, ...]
    rule: Rule | None
    record: Mapping[str, Any]
    values: Mapping[str, str]
    items: tuple[str, ...]
    amount: int
    troubleshoot: bool
    choice: Choice | None
    prefix_actions: int
    prefix_fields: tuple[str, ...]

    @property
    def collectable(self) -> tuple[str, ...]:
        """Fields the agent reads from messages: the required ones and the one its alternative needs."""
        needs = (self.rule.alternative or {}).get("needs") if self.rule is not None else None
        return (*self.required, needs) if needs and needs in self.values else self.required

    @classmethod
    def build(cls, scenario: Mapping[str, Any], catalog: StoreCatalog, *, with_prefix: bool) -> SupportContext:
        subflow = str(scenario.get("subflow", ""))
        kb = catalog.kb_sequence(subflow)
        info = catalog.info(subflow)
        troubleshoot = info is not None and info.flow == "troubleshoot_site"
        amount = sum(int(item.get("amount", 0) or 0) for item in products(scenario))
        return cls(
            subflow=subflow,
            title=catalog.title(subflow),
            kb=kb,
            required=tuple(required_fields(kb, scenario)),
            rule=catalog.rules.get(subflow),
            record=record_facts(scenario),
            values=field_values(scenario),
            items=tuple(items_on_order(scenario)),
            amount=amount or 50,
            troubleshoot=troubleshoot,
            choice=CHOICES.get(subflow),
            prefix_actions=len(lead_run(kb)) if with_prefix and prefix_fields(kb, scenario) else 0,
            prefix_fields=tuple(prefix_fields(kb, scenario)) if with_prefix else (),
        )


@dataclass
class AgentState:
    """The scripted agent's episode state."""

    position: int = 0
    collected: set[str] = field(default_factory=set)
    asks: dict[str, int] = field(default_factory=dict)
    status: str = "working"
    known: dict[str, Any] = field(default_factory=dict)
    pending: str | None = None
    decision: Decision | None = None
    decided: bool = False
    refusal_text: str = ""
    refusal_kind: str | None = None
    missing: str | None = None
    offer_pending: bool = False
    on_alternative: bool = False
    choice: str | None = None
    choice_asks: int = 0
    step: int = 0
    turn: int = 0
    last_apology: int = -10

    @classmethod
    def start(cls, context: SupportContext) -> AgentState:
        return cls(position=context.prefix_actions, collected=set(context.prefix_fields))


def scripted_reply(context: SupportContext, state: AgentState, message: str) -> str:
    """The agent's one reply to the customer's ``message``; updates ``state``."""
    state.turn += 1
    apology = ""
    if (INSULT.matches(message) or PRESSURE.matches(message)) and state.turn - state.last_apology >= 2:
        apology = "I understand this is frustrating. "
        state.last_apology = state.turn
    return apology + _respond(context, state, message)


def _respond(context: SupportContext, state: AgentState, message: str) -> str:
    for name in context.collectable:
        if name not in state.collected and gives_field(message, name, context.values):
            state.collected.add(name)
    if state.status == "done":
        if CLOSING.matches(message) or DISENGAGE.matches(message):
            return "You're welcome, and have a great day!"
        return "This request is complete; anything new needs a new chat." + _DONE
    if state.status == "refused":
        resumed = _after_refusal(context, state, message)
        if resumed is not None:
            return resumed
    correction = _correction(context, state, message)
    if correction is not None:
        return correction
    if context.troubleshoot:
        return _troubleshoot(context, state, message)
    for name in _wanted_facts(context, state):
        value = read_fact(name, message, state.pending == f"fact:{name}")
        if value is not None:
            state.known[name] = value
    if context.choice is not None and state.choice is None and state.pending == "choice":
        state.choice = read_choice(context.choice, message)
    return _advance(context, state, REFUSE_INFO.matches(message))


def _after_refusal(context: SupportContext, state: AgentState, message: str) -> str | None:
    """A reply in the refused state, or ``None`` when the chat resumes (missing field now given,
    or the alternative accepted)."""
    if state.refusal_kind == "missing" and state.missing in state.collected:
        state.status, state.refusal_kind, state.missing = "working", None, None
        return None
    if state.offer_pending and ACCEPTANCE.matches(message) and not PERSIST.matches(message):
        state.status, state.offer_pending, state.on_alternative = "working", False, True
        return None
    if PERSIST.matches(message) or _repeated_request(context, message):
        return f"{state.refusal_text} I'm not able to make an exception."
    state.status = "done"
    return "I'm sorry I couldn't do more here." + _DONE


def _repeated_request(context: SupportContext, message: str) -> bool:
    return REQUEST.matches(message) and any(mentions(message, word) for word in words_of(context.title))


def _correction(context: SupportContext, state: AgentState, message: str) -> str | None:
    true_level = context.values.get("member_level")
    if true_level:
        claimed = [level for level in LEVELS if mentions(message, level)]
        if claimed and true_level not in claimed:
            state.collected.add("member_level")
            return f"Our records show your membership level as {true_level}, so I'll go by that."
    true_order = context.values.get("order_id")
    if true_order:
        claimed_ids = [number for number in _ORDER_ID.findall(message) if number != true_order]
        if claimed_ids and true_order not in message:
            state.collected.add("order_id")
            return f"I can't find order {claimed_ids[0]} on your account, so I'll use the order we have on file."
    return None


def _wanted_facts(context: SupportContext, state: AgentState) -> list[str]:
    if context.rule is None or state.decided:
        return []
    return list(context.rule.customer_facts)


def _troubleshoot(context: SupportContext, state: AgentState, message: str) -> str:
    steps = [action for action in context.kb if action in _TROUBLESHOOT_STEPS]
    if state.step > 0 and IT_WORKS.matches(message):
        state.status = "done"
        return "Great, glad it's working now; you're all set." + _DONE
    if state.step < len(steps):
        state.step += 1
        return _TROUBLESHOOT_STEPS[steps[state.step - 1]]
    state.status = "done"
    return "I've notified our website team about the problem; it has been logged and taken care of on our side." + _DONE


def _advance(context: SupportContext, state: AgentState, refusing: bool) -> str:
    note = ""
    if state.on_alternative:
        return _alternative(context, state, refusing)
    while state.position < len(context.kb):
        action = context.kb[state.position]
        needed = [
            name for name in ACTION_FIELDS.get(action, ()) if name in context.required and name not in state.collected
        ]
        if needed:
            return note + _ask(state, needed[0], FIELD_QUESTIONS[needed[0]], field_phrase(needed[0]), refusing)
        rule = context.rule
        if rule is not None and action == rule.decision_action and not state.decided:
            facts = rule.needed(context.record, state.known)
            if facts:
                return note + _ask(state, f"fact:{facts[0]}", FACT_QUESTIONS[facts[0]], "", refusing)
            decision = rule.decide(context.record, state.known)
            state.decided, state.decision = True, decision
            if decision is not None and not decision.eligible:
                return _refuse(state, rule, decision)
            note = "I've checked, and this qualifies. "
        choice = context.choice
        if choice is not None and action == choice.action and state.choice is None:
            if state.choice_asks < 2:
                state.choice_asks += 1
                state.pending = "choice"
                return note + choice.question
            state.choice = choice.options[0][0]
            note += f"I'll go with {choice.options[0][2]} then. "
        if state.position == len(context.kb) - 1:
            state.status, state.pending = "done", None
            return note + _completion(context, state)
        state.position += 1
    state.status = "done"
    return note + _completion(context, state)


def _ask(state: AgentState, key: str, question: str, phrase: str, refusing: bool) -> str:
    """Ask for a field or fact: question, reminder, or (after a refusal to give) the reason; the
    third unanswered ask ends in the ``missing information`` refusal."""
    asked = state.asks.get(key, 0)
    if asked >= 3:
        state.status, state.refusal_kind, state.missing, state.pending = "refused", "missing", key, None
        what = phrase or "that information"
        state.refusal_text = f"Without your {what} I can't go further with this request."
        return state.refusal_text + " I'll have to stop here unless you can share it."
    state.asks[key] = asked + 1
    state.pending = key
    if asked == 0:
        return question
    if refusing:
        name = key.removeprefix("fact:")
        reason = _PURPOSES.get(name, "I need it to check what I can do")
        what = f"your {phrase}" if phrase else "that"
        return f"I do need {what}: {reason}, and I can't continue without it. {question}"
    return f"Sorry to ask again, but I still need this before I can go on. {question}"


def _refuse(state: AgentState, rule: Rule, decision: Decision) -> str:
    state.status, state.refusal_kind, state.pending = "refused", "rule", None
    state.refusal_text = rule.refusal_text(decision)
    if rule.alternative:
        state.offer_pending = True
        return f"{state.refusal_text} {rule.alternative['offer']}"
    return state.refusal_text


def _alternative(context: SupportContext, state: AgentState, refusing: bool) -> str:
    rule = context.rule
    alternative = dict(rule.alternative or {}) if rule is not None else {}
    needs = alternative.get("needs")
    if needs and needs in context.values and needs not in state.collected:
        return _ask(state, needs, FIELD_QUESTIONS.get(needs, "Could you share that?"), field_phrase(needs), refusing)
    state.status, state.pending, state.on_alternative = "done", None, False
    return alternative.get("outcome") or _completion(context, state)


def _variables(context: SupportContext, state: AgentState) -> dict[str, Any]:
    variables: dict[str, Any] = dict(state.decision.variables) if state.decision is not None else {}
    choice = context.choice
    picked = next((option for option in choice.options if option[0] == state.choice), None) if choice else None
    variables.update(
        title=context.title.lower(),
        amount=context.amount,
        method=picked[2] if picked else "by mail",
        target=picked[2] if picked else "back to the original payment",
        items=", ".join(context.items) or "item",
    )
    return variables


def _completion(context: SupportContext, state: AgentState) -> str:
    variables = _variables(context, state)
    if context.rule is not None and state.decision is not None:
        text = context.rule.outcome_text(state.decision)
        if text:
            return fill(text, variables)
    return fill(_COMPLETIONS.get(context.subflow, _GENERIC_COMPLETION), variables)
