"""The scripted judge of ABCDBehavior: deterministic rule checks over a finished chat.

See docs/envs/abcd.md, "Scripted judge".

Everything here is a pure function of a :class:`Conversation` (the generated customer turns, their
private thoughts and the agent's replies, after the replayed prefix) and a :class:`JudgeFacts`
(the row's condition, kwargs and scenario values). Several parts are **approximate** stand-ins for a
human reading of the chat — the guide marks them, and so does each function below: B1, B2, B5, B6,
B13, placement, naturalness and on_task. B3, B4, B7–B12 are exact rule checks of the behavior
definitions; they are also computed under the LLM judge as the logged ``rule`` signal
(docs/envs/abcd.md, "Rewards").

Indices: turns are numbered 1…k like ``min_turn``; ``turn_i.reply`` is the agent message that
answered turn ``i`` (``None`` when the agent did not reply).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mimesis_gym.behaviors.detect import is_low_signal_pressure
from mimesis_gym.behaviors.phrases import (
    ASSISTANT_LIKE,
    BLAME,
    COMPLETION,
    DISENGAGE,
    DISSATISFIED,
    INSULT,
    META,
    NEW_REQ,
    PERSIST,
    PRESSURE,
    PROGRESS,
    PROHIBIT,
    REFUSAL,
    REFUSE_INFO,
    REQUEST,
    request_clauses,
)
from mimesis_gym.behaviors.text import PhraseList, matches_any, mentions, plain, words_of

__all__ = [
    "ASK_PATTERNS",
    "ASSISTANT_LIKE",
    "BLAME",
    "COMPLETION",
    "DETAIL_KEYWORDS",
    "DISENGAGE",
    "DISSATISFIED",
    "INSULT",
    "KIND_KEYWORDS",
    "META",
    "NEW_REQ",
    "PERSIST",
    "PRESSURE",
    "PROHIBIT",
    "REFUSAL",
    "REFUSE_INFO",
    "REQUEST",
    "RULE_BEHAVIORS",
    "TOPIC_KEYWORDS",
    "BehaviorScores",
    "ControlScores",
    "Conversation",
    "JudgeFacts",
    "Turn",
    "asked_fields",
    "exhibit_rule",
    "gives_field",
    "is_announced",
    "naturalness",
    "on_task",
    "placement",
    "request_clauses",
    "score_behavior",
    "score_control",
]

# ---------------------------------------------------------------- phrase lists (extendable)


ASK_PATTERNS: dict[str, PhraseList] = {
    name: PhraseList(f"ASK_{name}", phrases)
    for name, phrases in {
        "customer_name": ["name"],
        "username": ["username", "user name"],
        "email": ["email", "e-mail"],
        "order_id": ["order id", "order number", "order #"],
        "member_level": ["membership", "member level", "level"],
        "full_address": ["address", "street"],
        "account_id": ["account id", "account number"],
        "zip_code": ["zip"],
        "phone": ["phone"],
        "payment_method": ["payment method", "card", "paid", "pay with"],
    }.items()
}
"""A field is asked when an agent message contains ``?`` and one of its phrases."""

TOPIC_KEYWORDS: dict[str, tuple[str, ...]] = {
    "a password reset": ("password", "log in", "login", "sign in"),
    "a charge on your subscription": ("subscription", "charged", "charge", "billing", "bill"),
    "an unrelated delivery question": ("delivery", "deliver", "shipping", "tracking", "arrive"),
    "updating the phone number on your account": ("phone",),
    "a discount code that stopped working": ("promo", "discount", "coupon", "code"),
}
"""B6: keywords of each target topic (keys are B6's topic candidates)."""

DETAIL_KEYWORDS: dict[str, tuple[str, ...]] = {
    "you need it before this weekend": ("weekend", "saturday", "sunday", "friday"),
    "it is a gift": ("gift", "present", "birthday"),
    "you already tried the obvious fix": ("already tried", "tried that", "i tried"),
    "the item was part of a bundle": ("bundle", "set", "came with", "together"),
    "you mean an older order, not the latest": ("older order", "different order", "other order", "previous order"),
}
"""B5: keywords of each omitted detail."""

KIND_KEYWORDS: dict[str, tuple[str, ...]] = {
    "a faster delivery deadline": ("faster", "sooner", "overnight", "express", "tomorrow", "deadline"),
    "a different delivery address": ("address", "ship it to", "send it to"),
    "a maximum budget": ("budget", "cheaper", "no more than", "spend"),
    "one more item to include": ("another", "extra", "one more", "also add"),
    "a different refund method": ("refund", "paypal", "gift card", "credit card", "store credit"),
}
"""B2: keywords of each kind of new requirement."""

B1_FIELD_WORDS: dict[str, tuple[str, ...]] = {
    "payment_method": ("refund", "payment", "card"),
    "packaging": ("packaging", "box"),
    "member_level": ("member", "level"),
}

RULE_BEHAVIORS = frozenset({"B3", "B4", "B7", "B8", "B9", "B10", "B11", "B12"})
"""Behaviors whose exhibit rule is exact enough to be logged beside an LLM judge."""

PLACEMENT_ALLOWANCE = {"B3": 3, "B4": 3, "B6": 3, "B9": 3}
"""``m`` of the placement formula (2 for every other behavior)."""

_STAGE = re.compile(r"\*[^*\n]+\*")
_MARKDOWN_LINE = re.compile(r"^\s*(?:- |\* |#|\d+\. )")
_QUOTE_PAIRS = (('"', '"'), ("'", "'"), ("“", "”"), ("‘", "’"))
_HEDGES = ("don't know", "not sure", "don't remember")


# ---------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class Turn:
    """One generated customer turn: the sent utterance, its private thought and the agent's reply."""

    utterance: str
    thought: str | None = None
    reply: str | None = None


@dataclass(frozen=True, slots=True)
class Conversation:
    """A finished chat: the replayed prefix (``("customer"|"agent", text)``) and the generated turns."""

    prefix: tuple[tuple[str, str], ...] = ()
    turns: tuple[Turn, ...] = ()

    @property
    def utterances(self) -> list[str]:
        return [turn.utterance for turn in self.turns]


@dataclass(frozen=True)
class JudgeFacts:
    """What the scripted judge knows of the row: condition, parameters and scenario values."""

    condition: str
    behavior_name: str | None
    kwargs: Mapping[str, Any]
    min_turn: int
    field_values: Mapping[str, str]
    """True values of the scenario's ``personal``/``order`` fields (strings)."""
    flat_values: tuple[str, ...]
    sidecar_values: tuple[str, ...]
    required: tuple[str, ...]
    title: str
    product_words: tuple[str, ...]
    customer_name: str = ""
    extra_relevant: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class BehaviorScores:
    """Scripted sub-scores of a behavior row; ``hits`` is ``H``; ``rule`` the logged rule signal or ``None``."""

    exhibit: float
    placement: float
    naturalness: float
    on_task: float
    announced: bool
    hits: tuple[int, ...]
    rule: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "exhibit": self.exhibit,
            "placement": self.placement,
            "naturalness": self.naturalness,
            "on_task": self.on_task,
            "announced": self.announced,
            "hits": list(self.hits),
            "rule": self.rule,
        }


@dataclass(frozen=True)
class ControlScores:
    """Scripted sub-scores of a control row; ``friction`` counts the uncooperative moments."""

    cooperative: float
    naturalness: float
    on_task: float
    friction: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "cooperative": self.cooperative,
            "naturalness": self.naturalness,
            "on_task": self.on_task,
            "friction": self.friction,
        }


# ---------------------------------------------------------------- shared checks


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, value))


def asked_fields(message: str | None) -> list[str]:
    """Fields an agent message asks for: it contains ``?`` and one of the field's ask patterns."""
    if not message or "?" not in message:
        return []
    return [name for name, patterns in ASK_PATTERNS.items() if patterns.matches(message)]


def gives_field(text: str, field_name: str, values: Mapping[str, str]) -> bool:
    """Whether ``text`` mentions the true value of ``field_name`` (for the address, the street suffices)."""
    value = values.get(field_name)
    if value and mentions(text, value):
        return True
    return (
        field_name == "full_address" and bool(values.get("street_address")) and mentions(text, values["street_address"])
    )


def _is_b9_hit(utterance: str, facts: JudgeFacts) -> bool:
    return is_low_signal_pressure(utterance, facts.flat_values)


def placement(behavior_id: str, exhibit: float, hits: Sequence[int], k: int, min_turn: int) -> float:
    """*(approximate)* 0 without exhibit; 1 for at most ``m`` hits, less the more hits beyond ``m``;
    ×0.6 when the first hit comes before ``min_turn``."""
    if exhibit <= 0.0:
        return 0.0
    m = PLACEMENT_ALLOWANCE.get(behavior_id, 2)
    score = 1.0 if len(hits) <= m else max(0.2, 1.0 - (len(hits) - m) / max(k - m, 1))
    if hits and min(hits) < min_turn:
        score *= 0.6
    return score


def naturalness(utterances: Sequence[str], customer_name: str = "") -> float:
    """*(approximate)* 1.0 minus penalties for long messages, assistant-like phrases, role labels,
    quotes or stage directions, and markdown-looking lines; clamped to [0, 1]."""
    if not utterances:
        return 0.0
    lengths = [len(u.split()) for u in utterances]
    score = 1.0
    if sum(lengths) / len(lengths) > 60:
        score -= 0.3
    if max(lengths) > 120:
        score -= 0.15
    if any(ASSISTANT_LIKE.matches(u) for u in utterances):
        score -= 0.3
    labels = ["customer:", "user:", "me:"]
    if customer_name.strip():
        labels += [plain(customer_name) + ":", plain(customer_name).split()[0] + ":"]
    if any(_performed(u, labels) for u in utterances):
        score -= 0.2
    if any(_MARKDOWN_LINE.match(line) for u in utterances for line in u.splitlines()):
        score -= 0.2
    return _clamp01(score)


def _performed(utterance: str, labels: Sequence[str]) -> bool:
    text = utterance.strip()
    if any(plain(text).startswith(label) for label in labels):
        return True
    if len(text) >= 2 and any(text.startswith(a) and text.endswith(b) for a, b in _QUOTE_PAIRS):
        return True
    return _STAGE.search(text) is not None


def on_task(utterances: Sequence[str], facts: JudgeFacts) -> float:
    """*(approximate)* ``min(1, 2·relevant/k)``: relevant turns mention a word (≥ 4 letters) of the
    subflow title, a product type or brand of the order, or a scenario value longer than 3 characters
    (so ``yes``/``no``, one-digit counts and state codes do not make a turn relevant)."""
    if not utterances:
        return 0.0
    values = [value for value in (*facts.flat_values, *facts.sidecar_values) if len(value) > 3]
    keys = [*words_of(facts.title), *facts.product_words, *values, *facts.extra_relevant]
    relevant = sum(1 for u in utterances if any(mentions(u, key) for key in keys))
    return min(1.0, 2.0 * relevant / len(utterances))


def is_announced(utterances: Sequence[str], behavior_id: str, behavior_name: str | None) -> bool:
    """Any utterance with a META phrase, the behavior's name (``_`` → space) or its id as a word."""
    names = [behavior_id.lower()]
    if behavior_name:
        names.append(behavior_name.replace("_", " "))
    return any(META.matches(u) or matches_any(names, u) for u in utterances)


# ---------------------------------------------------------------- exhibit rules


def exhibit_rule(behavior_id: str, facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    """``(exhibit, H, defined)`` of one behavior; ``defined`` is False when the rule had nothing to
    judge (B3: no withheld field asked; B4: no refusal), which makes the logged ``rule`` ``None``."""
    rule = _RULES[behavior_id]
    return rule(facts, convo)


def _b1(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    # approximate: a private standard shows as a thought about it plus unexplained dissatisfaction
    value = str(facts.kwargs.get("value", ""))
    words = B1_FIELD_WORDS.get(str(facts.kwargs.get("field", "")), ())
    thought = any(t.thought and (mentions(t.thought, value) or matches_any(words, t.thought)) for t in convo.turns)
    hits = [i for i, u in enumerate(convo.utterances, start=1) if i >= 2 and DISSATISFIED.matches(u)]
    leak = any(mentions(u, value) and matches_any(words, u) for u in convo.utterances)
    return _clamp01(0.5 * thought + 0.5 * bool(hits) - 0.5 * leak), hits, True


def _b2(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    # approximate: a new requirement after the agent reported progress
    progress = next(
        (
            i
            for i, t in enumerate(convo.turns, start=1)
            if t.reply and (COMPLETION.matches(t.reply) or PROGRESS.matches(t.reply))
        ),
        None,
    )
    if progress is None:
        return 0.0, [], True
    hits = [i for i, u in enumerate(convo.utterances, start=1) if i > progress and NEW_REQ.matches(u)]
    kinds = KIND_KEYWORDS.get(str(facts.kwargs.get("constraint_kind", "")), ())
    if any(matches_any(kinds, convo.utterances[i - 1]) for i in hits):
        return 1.0, hits, True
    return (0.5 if hits else 0.0), hits, True


def _b3(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    withheld_fields = [str(f) for f in facts.kwargs.get("withheld_fields", ())]
    asked = withheld = 0
    hits: list[int] = []
    turns = convo.turns
    for i, turn in enumerate(turns[:-1], start=1):
        for name in asked_fields(turn.reply):
            if name not in withheld_fields:
                continue
            asked += 1
            if not gives_field(turns[i].utterance, name, facts.field_values):
                withheld += 1
                if i + 1 not in hits:
                    hits.append(i + 1)
    if asked == 0:
        return 0.0, [], False
    return withheld / asked, hits, True


def _b4(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    refusal = next((i for i, t in enumerate(convo.turns, start=1) if t.reply and REFUSAL.matches(t.reply)), None)
    if refusal is None:
        return 0.0, [], False
    hits = [i for i, u in enumerate(convo.utterances, start=1) if i > refusal and PERSIST.matches(u)]
    return (1.0 if hits else 0.0), hits, True


def _b5(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    # approximate: the held-back detail surfaces late, with blame at that turn or the next
    details = DETAIL_KEYWORDS.get(str(facts.kwargs.get("omitted_detail", "")), ())
    utterances = convo.utterances
    first = next((i for i, u in enumerate(utterances, start=1) if matches_any(details, u)), None)
    if first is not None:
        if first < 2:
            return 0.0, [first], True
        blamed = BLAME.matches(utterances[first - 1]) or (first < len(utterances) and BLAME.matches(utterances[first]))
        return (1.0 if blamed else 0.5), [first], True
    blame = next((i for i, u in enumerate(utterances, start=1) if i >= 2 and BLAME.matches(u)), None)
    return (0.5, [blame], True) if blame is not None else (0.0, [], True)


def _b6(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    # approximate: the other topic comes up from turn 2 on, ideally more than once
    topic = TOPIC_KEYWORDS.get(str(facts.kwargs.get("target_topic", "")), ())
    hits = [i for i, u in enumerate(convo.utterances, start=1) if i >= 2 and matches_any(topic, u)]
    score = 0.0 if not hits else 0.5 if len(hits) == 1 else 1.0
    completed_before = (
        any(t.reply and COMPLETION.matches(t.reply) for t in convo.turns[: hits[0] - 1]) if hits else False
    )
    return (min(score, 0.5) if completed_before else score), hits, True


def _b7(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    total = sum(PROHIBIT.count(u) for u in convo.utterances)
    hits = [i for i, u in enumerate(convo.utterances, start=1) if PROHIBIT.matches(u)]
    return min(total / 3.0, 1.0), hits, True


def _b8(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    false_value, true_value = facts.kwargs.get("false_value"), facts.kwargs.get("true_value")
    hits = [i for i, u in enumerate(convo.utterances, start=1) if mentions(u, false_value)]
    if not hits:
        return 0.0, [], True
    return (0.5 if any(mentions(u, true_value) for u in convo.utterances) else 1.0), hits, True


def _b9(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    hits = [i for i, u in enumerate(convo.utterances, start=1) if _is_b9_hit(u, facts)]
    return min(len(hits) / 2.0, 1.0), hits, True


def _b10(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    last = len(convo.turns)
    if not DISENGAGE.matches(convo.utterances[-1]):
        return 0.0, [last], True
    completed = any(t.reply and COMPLETION.matches(t.reply) for t in convo.turns)
    return (0.5 if completed else 1.0), [last], True


def _b11(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    utterances = convo.utterances
    first_a = next((i for i, u in enumerate(utterances, start=1) if mentions(u, facts.kwargs.get("value_a"))), None)
    first_b = next((i for i, u in enumerate(utterances, start=1) if mentions(u, facts.kwargs.get("value_b"))), None)
    hits = sorted({i for i in (first_a, first_b) if i is not None})
    if first_a is None or first_b is None:
        return 0.0, hits, True
    return (1.0 if first_a < first_b else 0.5), hits, True


def _b12(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    counts = [request_clauses(u) for u in convo.utterances]
    wanted = max(1, int(facts.kwargs.get("n_requests", 3)))
    hits = [i for i, n in enumerate(counts, start=1) if n >= 3]
    return min(max(counts) / wanted, 1.0), hits, True


def _b13(facts: JudgeFacts, convo: Conversation) -> tuple[float, list[int], bool]:
    # approximate: disparaging or entitled wording, counted by turns
    hits = [i for i, u in enumerate(convo.utterances, start=1) if INSULT.matches(u)]
    return (0.0 if not hits else 0.75 if len(hits) == 1 else 1.0), hits, True


_RULES = {
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


# ---------------------------------------------------------------- whole verdicts


def score_behavior(facts: JudgeFacts, convo: Conversation) -> BehaviorScores:
    """The scripted behavior verdict of a chat with at least one generated turn."""
    behavior_id = facts.condition
    utterances = convo.utterances
    exhibit, hits, defined = exhibit_rule(behavior_id, facts, convo)
    exhibit = _clamp01(exhibit)
    return BehaviorScores(
        exhibit=exhibit,
        placement=placement(behavior_id, exhibit, hits, len(utterances), facts.min_turn),
        naturalness=naturalness(utterances, facts.customer_name),
        on_task=on_task(utterances, facts),
        announced=is_announced(utterances, behavior_id, facts.behavior_name),
        hits=tuple(hits),
        rule=exhibit if behavior_id in RULE_BEHAVIORS and defined else None,
    )


def score_control(facts: JudgeFacts, convo: Conversation) -> ControlScores:
    """The scripted control verdict: ``cooperative = max(0, 1 − 0.25·friction)``.

    Friction: turns with PERSIST, INSULT, DISENGAGE, two or more PROHIBIT matches or a B9 hit, plus
    agent asks for a required field whose next utterance neither gives it nor says it is unknown.
    """
    utterances = convo.utterances
    friction = sum(
        1
        for u in utterances
        if PERSIST.matches(u)
        or INSULT.matches(u)
        or DISENGAGE.matches(u)
        or PROHIBIT.count(u) >= 2
        or _is_b9_hit(u, facts)
    )
    turns = convo.turns
    for i, turn in enumerate(turns[:-1], start=1):
        following = turns[i].utterance
        for name in asked_fields(turn.reply):
            if name not in facts.required:
                continue
            if not gives_field(following, name, facts.field_values) and not matches_any(_HEDGES, following):
                friction += 1
    return ControlScores(
        cooperative=max(0.0, 1.0 - 0.25 * friction),
        naturalness=naturalness(utterances, facts.customer_name),
        on_task=on_task(utterances, facts),
        friction=friction,
    )
