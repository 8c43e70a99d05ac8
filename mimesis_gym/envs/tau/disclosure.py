"""The Tau customer's disclosure items (docs/users-report.md, "Disclosure"), built from its user facts."""

from __future__ import annotations

from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.envs.tau.schema import UserFacts

__all__ = ["tau_disclosure_items"]

ASK_TERMS: dict[str, tuple[str, ...]] = {
    "name": ("name",),
    "zip": ("zip", "postal", "postcode"),
    "email": ("email", "e-mail"),
    "user id": ("user id", "account", "username"),
    "order": ("order",),
    "reservation": ("reservation", "booking", "confirmation"),
    "flight": ("flight",),
    "reason": ("reason", "why"),
    "payment": ("payment", "pay", "card", "refund"),
    "address": ("address",),
    "bags": ("bag", "bags", "luggage", "baggage"),
}


def tau_disclosure_items(facts: UserFacts) -> list[DisclosureItem]:
    """One item per fact the customer holds: name, zip, email and user id when known, each order,
    reservation and flight id, the reason, payment method, address and bags."""
    entries: list[tuple[str, str, tuple[str, ...]]] = []
    full_name = " ".join(part for part in (facts.first_name, facts.last_name) if part)
    if full_name:
        entries.append(("name", full_name, (full_name, *(p for p in (facts.first_name, facts.last_name) if p))))
    if facts.zip:
        entries.append(("zip", facts.zip, (facts.zip,)))
    if facts.email and facts.knows_email:
        entries.append(("email", facts.email, (facts.email,)))
    if facts.user_id and facts.knows_user_id:
        entries.append(("user id", facts.user_id, (facts.user_id,)))
    for kind, values in (("order", facts.orders), ("reservation", facts.reservations), ("flight", facts.flights)):
        for value in values:
            entries.append((kind, value, (value, value.lstrip("#"))))
    for kind, value in (
        ("reason", facts.reason),
        ("payment", facts.payment),
        ("address", facts.address),
        ("bags", facts.bags),
    ):
        if value:
            entries.append((kind, value, (value,)))
    return [
        DisclosureItem(key=f"{kind}-{index}", label=f"{kind}: {value}", values=values, ask_terms=ASK_TERMS[kind])
        for index, (kind, value, values) in enumerate(entries)
    ]
