"""The 13 realistic customer behaviors: registry, parameters, applicability, directives.

See docs/envs/abcd.md, "Behaviors".

The registry is :mod:`mimesis_gym.behaviors.registry`, shared with every env's ``user_behavior=``.
``derive_kwargs`` draws a row's parameters from its scenario with a row-specific ``random.Random``
(choices uniform over the candidates in the listed order); ``applicable`` says whether a behavior can
be enacted on a scenario; ``render_directive`` writes the directive the customer prompt carries: the
base directive plus the parameter sentence.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_gym.behaviors.registry import BEHAVIOR_IDS, CONDITIONS, Behavior, behavior, behaviors, by_name
from mimesis_gym.behaviors.text import norm
from mimesis_gym.envs.abcd.judge_rules import ASK_PATTERNS, DETAIL_KEYWORDS, KIND_KEYWORDS
from mimesis_gym.envs.abcd.policy import LEVELS, StoreCatalog
from mimesis_gym.envs.abcd.scenarios import askable_fields, field_phrase, field_values, sidecar

__all__ = [
    "B8_FALSE_PAYMENT",
    "B11_CITIES",
    "BEHAVIOR_IDS",
    "CONDITIONS",
    "CONSTRAINT_KINDS",
    "OMITTED_DETAILS",
    "REGISTERS",
    "TARGET_TOPICS",
    "Behavior",
    "applicable",
    "applicable_behaviors",
    "behavior",
    "behaviors",
    "by_name",
    "derive_kwargs",
    "record_facts",
    "render_directive",
    "true_customer_facts",
    "violates_rule",
]

CONSTRAINT_KINDS = tuple(KIND_KEYWORDS)
OMITTED_DETAILS = tuple(DETAIL_KEYWORDS)
TARGET_TOPICS: tuple[tuple[str, str], ...] = (
    ("a password reset", "account_access"),
    ("a charge on your subscription", "subscription_inquiry"),
    ("an unrelated delivery question", "shipping_issue"),
    ("updating the phone number on your account", "manage_account"),
    ("a discount code that stopped working", "purchase_dispute"),
)
"""B6 topics and the flow whose rows exclude each (the topic would be the row's own)."""
REGISTERS = ("sarcasm", "condescension", "blunt insult", "non-negotiable entitlement")
B1_FIELDS = ("payment_method", "packaging", "member_level")
B8_FIELDS = ("member_level", "purchase_date", "payment_method", "order_id", "packaging")
B8_FALSE_PAYMENT = ("credit card", "debit card", "paypal", "gift card")
B11_FIELDS = ("member_level", "payment_method", "city", "num_products", "packaging")
B11_PAYMENT = ("credit card", "debit card", "paypal")
B11_CITIES = ("springfield", "riverton", "lakewood", "fairview")
B8_MIN_DAYS_FOR_LAST_WEEK = 14


behaviors()  # validate at import


# ---------------------------------------------------------------- facts of a scenario


def record_facts(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """What a store system reads without asking: the ``personal``/``order`` values and the
    sidecar's ``today``, ``shipping_status`` and ``oracle``."""
    record: dict[str, Any] = field_values(scenario)
    side = sidecar(scenario)
    for key in ("today", "shipping_status", "oracle"):
        if key in side:
            record[key] = side[key]
    return record


def true_customer_facts(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The sidecar's customer facts as the customer would truthfully state them."""
    side = sidecar(scenario)
    return {key: side[key] for key in ("has_receipt", "days_waiting", "days_late", "disputed_amount") if key in side}


def violates_rule(scenario: Mapping[str, Any], catalog: StoreCatalog) -> bool:
    """Whether the scenario's true facts make its subflow's rule refuse the request."""
    rule = catalog.rules.get(str(scenario.get("subflow", "")))
    if rule is None:
        return False
    decision = rule.decide(record_facts(scenario), true_customer_facts(scenario))
    return decision is not None and not decision.eligible


# ---------------------------------------------------------------- applicability and parameters


def _present(scenario: Mapping[str, Any], candidates: Sequence[str]) -> list[str]:
    values = field_values(scenario)
    return [name for name in candidates if values.get(name, "") != ""]


def _b8_fields(scenario: Mapping[str, Any], strict_dates: bool) -> list[str]:
    fields = _present(scenario, B8_FIELDS)
    if strict_dates and "purchase_date" in fields:
        today = sidecar(scenario).get("today")
        try:
            days = (
                dt.date.fromisoformat(str(today)) - dt.date.fromisoformat(field_values(scenario)["purchase_date"])
            ).days
        except (TypeError, ValueError):
            days = 0
        if days < B8_MIN_DAYS_FOR_LAST_WEEK:
            fields.remove("purchase_date")
    return fields


def _topics(scenario: Mapping[str, Any]) -> list[str]:
    flow = str(scenario.get("flow", ""))
    return [topic for topic, excluded in TARGET_TOPICS if excluded != flow]


def applicable(behavior_id: str, scenario: Mapping[str, Any], catalog: StoreCatalog, *, strict: bool) -> bool:
    """Whether ``behavior_id`` can be enacted on ``scenario``.

    ``strict`` is the original pack's reading: B4 needs a rule the scenario violates, and B8 on the
    purchase date needs a purchase at least 14 days before today.
    """
    subflow = str(scenario.get("subflow", ""))
    if not catalog.covered(subflow):
        return False
    if behavior_id == "B1":
        return bool(_present(scenario, B1_FIELDS))
    if behavior_id == "B3":
        return len(askable_fields(catalog.kb_sequence(subflow), scenario, ASK_PATTERNS)) >= 2
    if behavior_id == "B4":
        if not catalog.has_hard_limit(subflow):
            return False
        return violates_rule(scenario, catalog) if strict else True
    if behavior_id == "B6":
        return bool(_topics(scenario))
    if behavior_id == "B8":
        return bool(_b8_fields(scenario, strict))
    if behavior_id == "B11":
        return bool(_present(scenario, B11_FIELDS))
    return behavior_id in BEHAVIOR_IDS


def applicable_behaviors(scenario: Mapping[str, Any], catalog: StoreCatalog, *, strict: bool) -> list[str]:
    return [b for b in BEHAVIOR_IDS if applicable(b, scenario, catalog, strict=strict)]


def _another(rng: random.Random, options: Sequence[str], true_value: str) -> str:
    others = [option for option in options if norm(option) != norm(true_value)]
    return rng.choice(others)


def _flip(value: str) -> str:
    return "no" if norm(value) == "yes" else "yes"


def derive_kwargs(
    behavior_id: str, scenario: Mapping[str, Any], catalog: StoreCatalog, rng: random.Random, *, strict: bool
) -> dict[str, Any]:
    """The row's parameters of ``behavior_id``, drawn with ``rng``; the behavior must apply."""
    values = field_values(scenario)
    subflow = str(scenario.get("subflow", ""))
    if behavior_id == "B1":
        name = rng.choice(_present(scenario, B1_FIELDS))
        value = values[name]
        criterion = {
            "payment_method": f"the money must come back to your {value} and nowhere else",
            "packaging": f"whether the item is still in its original packaging ({value}) must be taken into "
            "account without you having to bring it up",
            "member_level": f"you expect the treatment a {value} member deserves without ever saying your level",
        }[name]
        return {"field": name, "value": value, "criterion": criterion}
    if behavior_id == "B2":
        return {"constraint_kind": rng.choice(CONSTRAINT_KINDS)}
    if behavior_id == "B3":
        askable = askable_fields(catalog.kb_sequence(subflow), scenario, ASK_PATTERNS)
        count = min(rng.choice((1, 2)), len(askable))
        chosen = set(rng.sample(askable, count))
        return {"withheld_fields": [name for name in askable if name in chosen]}
    if behavior_id == "B4":
        rule = catalog.rules.get(subflow) if catalog.limits_from_rules else None  # upstream rows: null
        return {"blocked_action": catalog.title(subflow).lower(), "limit": rule.limit if rule is not None else None}
    if behavior_id == "B5":
        return {"omitted_detail": rng.choice(OMITTED_DETAILS)}
    if behavior_id == "B6":
        return {"target_topic": rng.choice(_topics(scenario))}
    if behavior_id == "B8":
        name = rng.choice(_b8_fields(scenario, strict))
        true_value = values[name]
        if name == "member_level":
            false_value = _another(rng, LEVELS, true_value)
        elif name == "purchase_date":
            false_value = "last week"
        elif name == "payment_method":
            false_value = _another(rng, B8_FALSE_PAYMENT, true_value)
        elif name == "order_id":
            false_value = (
                true_value[:-1] + str((int(true_value[-1]) + 1) % 10) if true_value[-1:].isdigit() else true_value + "1"
            )
        else:
            false_value = _flip(true_value)
        return {"field": name, "true_value": true_value, "false_value": false_value}
    if behavior_id == "B11":
        name = rng.choice(_present(scenario, B11_FIELDS))
        value_a = values[name]
        if name == "member_level":
            value_b = _another(rng, LEVELS, value_a)
        elif name == "payment_method":
            value_b = _another(rng, B11_PAYMENT, value_a)
        elif name == "city":
            value_b = _another(rng, B11_CITIES, value_a)
        elif name == "num_products":
            value_b = _another(rng, ("1", "2", "3", "4"), value_a)
        else:
            value_b = _flip(value_a)
        return {"field": name, "value_a": value_a, "value_b": value_b}
    if behavior_id == "B12":
        return {"n_requests": rng.choice((3, 4, 5))}
    if behavior_id == "B13":
        return {"register": rng.choice(REGISTERS)}
    return {}


def _join(items: Sequence[str], word: str = "or") -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + f" {word} " + items[-1]


def parameter_sentence(behavior_id: str, kwargs: Mapping[str, Any]) -> str:
    """The directive's parameter sentence (empty for behaviors without parameters)."""
    if behavior_id == "B1":
        return f"Your private standard: {kwargs['criterion']}. Never say it outright."
    if behavior_id == "B2":
        return f"The new requirement to bring in: {kwargs['constraint_kind']}."
    if behavior_id == "B3":
        fields = _join([field_phrase(name) for name in kwargs["withheld_fields"]])
        return (
            f"Do not give your {fields} even when asked directly; deflect, give half an answer or say it "
            "shouldn't be needed, and keep demanding the result."
        )
    if behavior_id == "B4":
        return (
            f"When the agent says {kwargs['blocked_action']} is not possible for you, do not accept it; keep pushing."
        )
    if behavior_id == "B5":
        return (
            f"Hold this back at first: {kwargs['omitted_detail']}. Once the agent has given a reasonable answer, "
            "fault them for not taking it into account."
        )
    if behavior_id == "B6":
        return f"Switch to {kwargs['target_topic']} and keep after it; do not end the chat."
    if behavior_id == "B8":
        return (
            f"Say with confidence that your {field_phrase(kwargs['field'])} is '{kwargs['false_value']}'; "
            "don't hedge or correct yourself unless you are shown evidence."
        )
    if behavior_id == "B11":
        return (
            f"Give your {field_phrase(kwargs['field'])} as '{kwargs['value_a']}' early on, and later as "
            f"'{kwargs['value_b']}', without acknowledging the change."
        )
    if behavior_id == "B12":
        return f"Put at least {kwargs['n_requests']} separate requests into one message."
    if behavior_id == "B13":
        return f"Lean on {kwargs['register']} in particular."
    return ""


def render_directive(behavior_id: str, kwargs: Mapping[str, Any]) -> str:
    """Base directive + parameter sentence."""
    sentence = parameter_sentence(behavior_id, kwargs)
    base = behavior(behavior_id).directive
    return f"{base} {sentence}" if sentence else base
