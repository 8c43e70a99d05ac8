"""ABCD scenarios: flattening, customer facts, required fields and the replayed identity check
(docs/envs/abcd.md, "What the customer (the policy) sees").

A scenario is ABCD's ``scenario`` object (``personal``, ``order``, ``product``, ``flow``, ``subflow``),
plus the project's sidecar ``scenario["mimesis"]`` of situation facts. Every function here is pure
and tolerates missing keys (FAQ scenarios carry only a few).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "ACTION_FIELDS",
    "CUSTOMER_FACT_LABELS",
    "FIELD_PHRASES",
    "LEAD_ACTIONS",
    "SIDECAR_KEYS",
    "askable_fields",
    "customer_facts",
    "customer_name",
    "field_phrase",
    "field_values",
    "flat",
    "items_on_order",
    "prefix_fields",
    "prefix_lines",
    "product_words",
    "products",
    "required_fields",
    "sidecar",
]

ACTION_FIELDS: dict[str, tuple[str, ...]] = {
    "pull-up-account": ("customer_name",),
    "validate-purchase": ("username", "email", "order_id"),
    "verify-identity": ("customer_name", "account_id", "zip_code"),
    "membership": ("member_level",),
    "enter-details": ("full_address",),
    "shipping-status": ("order_id",),
    "update-order": ("order_id",),
    "make-purchase": ("order_id",),
    "offer-refund": ("order_id",),
    "record-reason": ("payment_method",),
    "update-account": ("username",),
    "make-password": ("username",),
    "subscription-status": ("username",),
    "send-link": ("email",),
}
"""Fields the agent must elicit per ABCD action id; every other action needs none."""

LEAD_ACTIONS = frozenset({"pull-up-account", "validate-purchase", "verify-identity"})
"""Actions whose leading run is replayed as the identity check."""

FIELD_PHRASES: dict[str, str] = {
    "customer_name": "full name",
    "username": "username",
    "email": "email address",
    "order_id": "order ID",
    "account_id": "account ID",
    "zip_code": "ZIP code",
    "phone": "phone number",
    "member_level": "membership level",
    "full_address": "address",
}
"""Spoken names of the fields the identity check may ask for."""

_OTHER_PHRASES = {
    "payment_method": "payment method",
    "purchase_date": "purchase date",
    "packaging": "original packaging (yes or no)",
    "city": "city",
    "num_products": "number of items on the order",
    "street_address": "street address",
    "state": "state",
    "pin_number": "PIN",
}

SIDECAR_KEYS = ("today", "shipping_status", "oracle", "has_receipt", "days_waiting", "days_late", "disputed_amount")

CUSTOMER_FACT_LABELS: dict[str, str] = {
    "today": "today's date",
    "shipping_status": "shipping status shown on the order page",
    "has_receipt": "you have the receipt",
    "days_waiting": "days you have waited so far",
    "days_late": "days your subscription payment is late",
    "disputed_amount": "amount you were charged twice (dollars)",
}
"""Labels of the ``facts="extended"`` situation facts (``oracle`` is never a customer fact)."""


def field_phrase(name: str) -> str:
    """How a field is named in prompts and directives (``member_level`` → ``membership level``)."""
    return FIELD_PHRASES.get(name) or _OTHER_PHRASES.get(name) or name.replace("_", " ")


def products(scenario: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``order.products``: a Python-literal list string (parsed with ``ast.literal_eval``) or a list."""
    raw = (scenario.get("order") or {}).get("products")
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        try:
            raw = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            return []
    return [item for item in raw if isinstance(item, dict)] if isinstance(raw, list) else []


def flat(scenario: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every ``personal`` and ``order`` entry whose value is a string or number, as strings, in
    file order, except ``products``."""
    entries: list[tuple[str, str]] = []
    for section in ("personal", "order"):
        for key, value in (scenario.get(section) or {}).items():
            if key == "products" or isinstance(value, bool) or not isinstance(value, (str, int, float)):
                continue
            entries.append((key, str(value)))
    return entries


def field_values(scenario: Mapping[str, Any]) -> dict[str, str]:
    """``flat`` as a dict (field → true value)."""
    return dict(flat(scenario))


def items_on_order(scenario: Mapping[str, Any]) -> list[str]:
    """``product.names`` with ``_`` → space (``michael_kors jeans`` → ``michael kors jeans``)."""
    names = (scenario.get("product") or {}).get("names") or []
    return [str(name).replace("_", " ") for name in names]


def product_words(scenario: Mapping[str, Any]) -> list[str]:
    """Product types and brands of the order (brands with ``_`` → space), for on-task checks."""
    words: list[str] = []
    for item in products(scenario):
        for key in ("product_type", "brand"):
            value = item.get(key)
            if isinstance(value, str) and value:
                words.append(value.replace("_", " "))
    for name in items_on_order(scenario):
        words.append(name)
    return list(dict.fromkeys(words))


def sidecar(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """The project's situation facts ``scenario["mimesis"]`` (``{}`` when absent)."""
    value = scenario.get("mimesis")
    return dict(value) if isinstance(value, Mapping) else {}


def customer_name(scenario: Mapping[str, Any]) -> str:
    return str((scenario.get("personal") or {}).get("customer_name") or "")


def customer_facts(scenario: Mapping[str, Any], mode: str) -> list[tuple[str, str]]:
    """The customer's facts as ``(label, value)``: ``flat`` minus ``customer_name``, the items
    on the order, then with ``mode="extended"`` the sidecar's situation facts (never ``oracle``)."""
    facts = [(key.replace("_", " "), value) for key, value in flat(scenario) if key != "customer_name"]
    items = items_on_order(scenario)
    if items:
        facts.append(("items on the order", ", ".join(items)))
    if mode == "extended":
        side = sidecar(scenario)
        for key, label in CUSTOMER_FACT_LABELS.items():
            if key in side and side[key] is not None:
                value = side[key]
                facts.append((label, f"${value}" if key == "disputed_amount" else str(value)))
    return facts


def required_fields(kb_sequence: Sequence[str], scenario: Mapping[str, Any]) -> list[str]:
    """The union of the kb actions' fields, first-seen order, restricted to fields the scenario has."""
    present = field_values(scenario)
    fields: list[str] = []
    for action in kb_sequence:
        for name in ACTION_FIELDS.get(action, ()):
            if name in present and name not in fields:
                fields.append(name)
    return fields


def lead_run(kb_sequence: Sequence[str]) -> list[str]:
    """The leading run of the kb sequence made of pull-up-account, validate-purchase, verify-identity."""
    run: list[str] = []
    for action in kb_sequence:
        if action not in LEAD_ACTIONS:
            break
        run.append(action)
    return run


def prefix_fields(kb_sequence: Sequence[str], scenario: Mapping[str, Any]) -> list[str]:
    """Fields the replayed identity check supplies: the lead run's fields that the scenario has and
    that have a phrase, first-seen order."""
    return [name for name in required_fields(lead_run(kb_sequence), scenario) if name in FIELD_PHRASES]


def prefix_lines(title: str, kb_sequence: Sequence[str], scenario: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The replayed identity check as ``("customer"|"agent", text)`` lines; ``[]`` when none."""
    fields = prefix_fields(kb_sequence, scenario)
    if not fields:
        return []
    values = field_values(scenario)
    lines = [
        ("customer", f"hi, i'm writing about {title.lower()}"),
        ("agent", f"Happy to help. First, what is your {FIELD_PHRASES[fields[0]]}?"),
        ("customer", values[fields[0]]),
    ]
    if len(fields) > 1:
        lines.append(("agent", f"Thanks. Please also send your {', '.join(FIELD_PHRASES[f] for f in fields[1:])}."))
        lines.append(("customer", ", ".join(values[f] for f in fields[1:])))
    lines.append(("agent", "All verified, and your account is open on my side. So, what's going on with your request?"))
    return lines


def askable_fields(
    kb_sequence: Sequence[str], scenario: Mapping[str, Any], ask_patterns: Mapping[str, Any]
) -> list[str]:
    """B3 candidates: required fields not supplied by the replayed prefix that have an ask pattern."""
    supplied = set(prefix_fields(kb_sequence, scenario))
    return [name for name in required_fields(kb_sequence, scenario) if name not in supplied and name in ask_patterns]
