"""The ABCD customer's disclosure items (docs/users-report.md, "Disclosure"): the scenario's account and
order fields a support agent asks for. Shared by the env and the human reference (ABCD's own dialogues)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.envs.abcd.scenarios import field_values

__all__ = ["ASK_TERMS", "abcd_disclosure_items"]

ASK_TERMS: dict[str, tuple[str, ...]] = {
    "customer_name": ("name",),
    "email": ("email", "e-mail"),
    "phone": ("phone", "number"),
    "username": ("username", "user name"),
    "account_id": ("account id", "account"),
    "pin_number": ("pin",),
    "member_level": ("membership", "member", "level"),
    "order_id": ("order id", "order number", "order"),
    "zip_code": ("zip", "postal"),
    "street_address": ("address",),
    "full_address": ("address",),
    "payment_method": ("payment", "pay", "card"),
    "purchase_date": ("purchase", "bought", "when", "date"),
}
"""The fields counted (values such as ``packaging: yes`` or ``state: nc`` are too common to match)
and the words that mean the agent asked for each."""


def abcd_disclosure_items(scenario: Mapping[str, Any]) -> list[DisclosureItem]:
    """One item per counted field the scenario has; the name counts when either part is written."""
    values = field_values(scenario)
    items = []
    for key, terms in ASK_TERMS.items():
        value = values.get(key)
        if not value:
            continue
        phrasings = (value, *value.split()) if key == "customer_name" else (value,)
        items.append(DisclosureItem(key=key, label=key.replace("_", " "), values=phrasings, ask_terms=terms))
    return items
