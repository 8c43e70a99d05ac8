"""``user_facts`` of upstream tasks, derived from the gold actions and the database (docs/envs/tau.md, "Roles").

The shipped pack stores its facts; for tau-bench's tasks they are derived once per task: names,
zip and email from the user's record, the ids, items, payment, reason, address, flights,
passengers and bags of the gold write calls. The helpers that describe items and payment methods
are shared with the pack generator, so both packs phrase facts alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mimesis_gym.envs.tau.db import Database
from mimesis_gym.envs.tau.schema import TauTask, UserFacts

__all__ = [
    "WRITE_TOOLS",
    "address_line",
    "derive_user_facts",
    "describe_item",
    "describe_payment",
]

WRITE_TOOLS = frozenset(
    {
        "cancel_pending_order",
        "modify_pending_order_address",
        "modify_pending_order_payment",
        "modify_pending_order_items",
        "return_delivered_order_items",
        "exchange_delivered_order_items",
        "modify_user_address",
        "book_reservation",
        "cancel_reservation",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
        "send_certificate",
    }
)
"""The tools that change the database (both domains)."""


def describe_item(name: str, options: Mapping[str, Any]) -> str:
    """``"Stoneware Mug (capacity: 12 oz, glaze: matte black)"``."""
    if not options:
        return name
    return f"{name} ({', '.join(f'{key}: {value}' for key, value in options.items())})"


def describe_payment(method: Mapping[str, Any] | None, method_id: str) -> str:
    """``"visa credit card ending in 1234"``, ``"PayPal"``, ``"gift card"`` or ``"travel certificate"``."""
    source = (method or {}).get("source")
    if source == "credit_card":
        return f"{method['brand']} credit card ending in {method['last_four']}"  # type: ignore[index]
    if source == "paypal":
        return "PayPal"
    if source == "gift_card":
        return "gift card"
    if source == "certificate":
        return "travel certificate"
    return method_id


def address_line(address: Mapping[str, Any]) -> str:
    """An address on one line: ``"12 Oak St, Apt 3, Austin, TX 78701, USA"``."""
    parts = [address.get("address1", ""), address.get("address2", ""), address.get("city", "")]
    parts.append(f"{address.get('state', '')} {address.get('zip', '')}".strip())
    parts.append(address.get("country", ""))
    return ", ".join(str(part) for part in parts if part)


def _first_seen(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(value for value in values if isinstance(value, str)))


def derive_user_facts(task: TauTask, database: Database) -> UserFacts:
    """The scripted user's facts for an upstream task (cached by the pack)."""
    tables = database.tables
    user = tables["users"].get(task.user_id) or {}
    name = user.get("name") or {}
    methods = user.get("payment_methods") or {}
    writes = [action for action in task.actions if action.name in WRITE_TOOLS]
    lookups = [action for action in task.actions if action.name not in WRITE_TOOLS]

    orders = _first_seen(a.kwargs.get("order_id") for a in writes) or _first_seen(
        a.kwargs.get("order_id") for a in lookups
    )
    reservations = _first_seen(a.kwargs.get("reservation_id") for a in writes) or _first_seen(
        a.kwargs.get("reservation_id") for a in lookups
    )

    items: dict[str, str] = {}
    targets: dict[str, str] = {}
    payment = reason = address = bags = None
    flights: list[str] = []
    passengers: list[str] = []
    for action in writes:
        kwargs = action.kwargs
        order_id = kwargs.get("order_id")
        order = tables["orders"].get(order_id) if "orders" in tables and isinstance(order_id, str) else None
        if order is not None and isinstance(kwargs.get("item_ids"), list):
            held = {item["item_id"]: item for item in order["items"]}
            new_ids = kwargs.get("new_item_ids") if isinstance(kwargs.get("new_item_ids"), list) else []
            for index, item_id in enumerate(kwargs["item_ids"]):
                item = held.get(item_id)
                if item is None:
                    continue
                items.setdefault(item_id, describe_item(item["name"], item["options"]))
                new_id = new_ids[index] if index < len(new_ids) else None
                variants = tables["products"].get(item["product_id"], {}).get("variants", {})
                variant = variants.get(new_id) if isinstance(new_id, str) else None
                if variant is not None:
                    targets.setdefault(new_id, describe_item(item["name"], variant["options"]))
        if payment is None:
            method_ids = [kwargs.get("payment_method_id") or kwargs.get("payment_id")]
            if isinstance(kwargs.get("payment_methods"), list):
                method_ids = [p.get("payment_id") for p in kwargs["payment_methods"] if isinstance(p, dict)]
            described = [describe_payment(methods.get(m), m) for m in method_ids if isinstance(m, str)]
            payment = " and ".join(described) or None
        if reason is None and isinstance(kwargs.get("reason"), str):
            reason = kwargs["reason"]
        if address is None and "address1" in kwargs:
            address = address_line(kwargs)
        if isinstance(kwargs.get("flights"), list):
            flights += [
                f"{f.get('flight_number')} on {f.get('date')}" for f in kwargs["flights"] if isinstance(f, dict)
            ]
        if isinstance(kwargs.get("passengers"), list):
            passengers += [
                f"{p.get('first_name')} {p.get('last_name')}, born {p.get('dob')}"
                for p in kwargs["passengers"]
                if isinstance(p, dict)
            ]
        if bags is None and "total_baggages" in kwargs:
            bags = f"{kwargs['total_baggages']} checked bags, {kwargs.get('nonfree_baggages', 0)} of them not free"

    return UserFacts(
        user_id=task.user_id,
        first_name=name.get("first_name"),
        last_name=name.get("last_name"),
        zip=(user.get("address") or {}).get("zip"),
        email=user.get("email"),
        knows_email=any(action.name == "find_user_id_by_email" for action in task.actions),
        knows_user_id=task.domain == "airline" or task.user_id in task.instruction,
        request=task.obs,
        orders=orders,
        items=items,
        targets=targets,
        payment=payment,
        reason=reason,
        address=address,
        reservations=reservations,
        flights=_first_seen(flights),
        passengers=_first_seen(passengers),
        bags=bags,
    )
