"""The store's policy: guidelines, kb sequences, subflow map and hard-limit rules (docs/envs/abcd.md, "Roles", "Data").

A :class:`StoreCatalog` is what one pack knows about the store: the guidelines (flows keyed by display
name, each subflow keyed by its title with ordered actions), the kb (subflow → ABCD action ids), the
subflow map (subflow → flow, title) and the rule table (subflow → :class:`Rule`). The original pack
reads all of it from ``data/original/``; the upstream pack reads guidelines, kb and ontology from the
ABCD directory and pairs them with the project's ``data/abcd_subflows.json`` and ``data/rules_abcd.json``.

A :class:`Rule` is one hard limit of the policy, of a fixed *kind* with parameters; ``decide``
evaluates it on the facts known so far: record facts read from the scenario, customer facts
collected in the chat. Rule texts are templates with ``{name}`` slots filled from the decision's
variables (never ``str.format``: the template text comes from a data file).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "FLOW_NAMES",
    "HARD_LIMIT_PHRASES",
    "RULE_KINDS",
    "SHIPPED_STATUSES",
    "Decision",
    "Rule",
    "StoreCatalog",
    "SubflowInfo",
    "build_catalog",
    "fill",
    "load_catalog",
    "parse_rules",
]

FLOW_NAMES: dict[str, str] = {
    "product_defect": "Product Defect",
    "order_issue": "Order Issue",
    "account_access": "Account Access",
    "troubleshoot_site": "Troubleshoot Site",
    "manage_account": "Manage Account",
    "purchase_dispute": "Purchase Dispute",
    "shipping_issue": "Shipping Issue",
    "subscription_inquiry": "Subscription Inquiry",
}
"""Scenario flow → guidelines key."""

HARD_LIMIT_PHRASES = (
    "within the last",
    "cannot",
    "can not",
    "not possible",
    "only if",
    "unable",
    "not allowed",
    "apologize and explain",
    "if the customer cannot",
    "no more than",
    "maximum of",
)
"""Real ABCD: a subflow has a hard limit when its lower-cased guidelines JSON holds one of these."""

SHIPPING_STATUSES = ("order received", "in transit", "out for delivery", "delivered")
SHIPPED_STATUSES = frozenset(SHIPPING_STATUSES[1:])
LEVELS = ("guest", "bronze", "silver", "gold")

RULE_KINDS = (
    "return_window",
    "before_shipping",
    "shipped_credit",
    "duplicate_order",
    "oracle_or_level",
    "wait_days",
    "shipping_fee",
    "extension",
    "dispute",
)
CUSTOMER_FACTS = ("has_receipt", "days_waiting", "days_late", "disputed_amount")
"""Facts the agent must ask for; every other fact is read from the record."""

_SLOT = re.compile(r"\{([a-z_]+)\}")


def fill(template: str, variables: Mapping[str, Any]) -> str:
    """Replace ``{name}`` slots with ``variables[name]``; unknown slots stay as written."""
    return _SLOT.sub(lambda m: str(variables[m.group(1)]) if m.group(1) in variables else m.group(0), template)


@dataclass(frozen=True)
class SubflowInfo:
    flow: str
    title: str


@dataclass(frozen=True)
class Decision:
    """A rule's verdict: ``eligible``, the ``outcome`` key and the template variables."""

    eligible: bool
    outcome: str
    variables: dict[str, Any]


@dataclass(frozen=True)
class Rule:
    """One hard limit of the policy (rules.json entry).

    ``facts``: what it needs; ``customer_facts``: those the agent asks for (in this order);
    ``decision_action``: the kb action at which it is evaluated; ``refusal``: the refusal sentence
    template; ``alternative``: ``{"offer", "outcome"}`` texts of what the agent can offer instead, or
    ``None``; ``outcomes``: completion texts per outcome key; ``limit``: the rule in policy prose (also
    written in the guidelines entry).
    """

    subflow: str
    kind: str
    params: Mapping[str, Any]
    facts: tuple[str, ...]
    customer_facts: tuple[str, ...]
    decision_action: str
    refusal: str
    limit: str
    outcomes: Mapping[str, str] = field(default_factory=dict)
    alternative: Mapping[str, str] | None = None

    # ------------------------------------------------------------ evaluation

    def needed(self, record: Mapping[str, Any], known: Mapping[str, Any]) -> list[str]:
        """Customer facts still needed to decide, given the record and the facts known so far."""
        return [name for name in self._wanted(record) if name not in known]

    def decide(self, record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision | None:
        """The verdict, or ``None`` while a needed customer fact is unknown."""
        if self.needed(record, known):
            return None
        return _EVALUATORS[self.kind](self.params, record, known)

    def refusal_text(self, decision: Decision) -> str:
        return fill(self.refusal, decision.variables)

    def outcome_text(self, decision: Decision) -> str:
        return fill(self.outcomes.get(decision.outcome, ""), decision.variables)

    def _wanted(self, record: Mapping[str, Any]) -> list[str]:
        level = str(record.get("member_level", ""))
        params = self.params
        if self.kind == "return_window":
            verdict = _return_window(params, record, {})
            return [] if verdict.eligible or level not in params.get("receipt_levels", LEVELS) else ["has_receipt"]
        if self.kind == "wait_days":
            return [] if level in params.get("levels", ()) else ["days_waiting"]
        if self.kind == "extension":
            return ["days_late"] if level in params.get("limited", {}) else []
        if self.kind == "dispute":
            return ["disputed_amount"] if level in params.get("limited", {}) else []
        return []


def _days_between(start: Any, end: Any) -> int:
    try:
        return (dt.date.fromisoformat(str(end)) - dt.date.fromisoformat(str(start))).days
    except ValueError:
        return 0


def _return_window(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    window = params.get("windows", {}).get(level)
    days = _days_between(record.get("purchase_date"), record.get("today"))
    variables = {
        "member_level": level,
        "window": window if window is not None else "unlimited",
        "purchase_date": record.get("purchase_date", ""),
        "days_since": days,
    }
    in_window = window is None or days <= int(window)
    packaged = str(record.get("packaging", "")) == "yes" and level in params.get("packaging_levels", ())
    receipt = str(known.get("has_receipt", "")) == "yes" and level in params.get("receipt_levels", LEVELS)
    return Decision(in_window or packaged or receipt, "return", variables)


def _before_shipping(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    status = str(record.get("shipping_status", ""))
    fee = params.get("fees", {}).get(level, 0)
    variables = {"shipping_status": status, "fee": fee, "member_level": level}
    return Decision(status in params.get("eligible_statuses", ()), "upgrade" if fee else "upgrade_free", variables)


def _shipped_credit(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    status = str(record.get("shipping_status", ""))
    variables = {"shipping_status": status, "credit": params.get("credit", 0), "member_level": level}
    if status in params.get("eligible_statuses", ()):
        return Decision(True, "downgrade", variables)
    return Decision(level in params.get("credit_levels", ()), "credit", variables)


def _duplicate_order(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    status = str(record.get("shipping_status", ""))
    variables = {"shipping_status": status, "member_level": level}
    if status in params.get("eligible_statuses", ()):
        return Decision(True, "cancel", variables)
    return Decision(level in params.get("refund_levels", ()), "refund", variables)


def _oracle_or_level(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    variables = {"member_level": level, "oracle": record.get("oracle", "")}
    if str(record.get("oracle", "")) == "yes":
        return Decision(True, "confirmed", variables)
    return Decision(level in params.get("levels", ()), "courtesy", variables)


def _wait_days(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    waited = known.get("days_waiting")
    variables = {"member_level": level, "min_days": params.get("min_days", 0), "days_waiting": waited}
    if level in params.get("levels", ()):
        return Decision(True, "act", variables)
    return Decision(int(waited or 0) >= int(params.get("min_days", 0)), "act", variables)


def _shipping_fee(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    status = str(record.get("shipping_status", ""))
    variables = {"shipping_status": status, "refund": params.get("refund", 0)}
    return Decision(status in params.get("waiver_statuses", ()), "waive", variables)


def _extension(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    limited = params.get("limited", {})
    late = known.get("days_late")
    variables = {"member_level": level, "days_late": late, "limit": limited.get(level, 0)}
    if level in params.get("always_levels", ()):
        return Decision(True, "extend", variables)
    if level in limited:
        return Decision(int(late or 0) <= int(limited[level]), "extend", variables)
    return Decision(False, "extend", variables)


def _dispute(params: Mapping[str, Any], record: Mapping[str, Any], known: Mapping[str, Any]) -> Decision:
    level = str(record.get("member_level", ""))
    limited = params.get("limited", {})
    amount = known.get("disputed_amount")
    variables = {"member_level": level, "disputed_amount": amount, "limit": limited.get(level, 0)}
    if level in params.get("always_levels", ()):
        return Decision(True, "refund", variables)
    if level in limited:
        return Decision(int(amount or 0) < int(limited[level]), "refund", variables)
    return Decision(str(record.get("oracle", "")) == "yes", "refund", variables)


_EVALUATORS = {
    "return_window": _return_window,
    "before_shipping": _before_shipping,
    "shipped_credit": _shipped_credit,
    "duplicate_order": _duplicate_order,
    "oracle_or_level": _oracle_or_level,
    "wait_days": _wait_days,
    "shipping_fee": _shipping_fee,
    "extension": _extension,
    "dispute": _dispute,
}


def parse_rules(data: Mapping[str, Any], source: str) -> dict[str, Rule]:
    """Rules from a rules.json mapping (subflow → entry); an unknown kind or fact is an error."""
    rules: dict[str, Rule] = {}
    for subflow, entry in data.items():
        kind = entry.get("kind")
        if kind not in _EVALUATORS:
            raise ValueError(f"{source}: rule of {subflow!r} has unknown kind {kind!r}; known: {', '.join(RULE_KINDS)}")
        customer = tuple(entry.get("customer_facts", ()))
        unknown = [name for name in customer if name not in CUSTOMER_FACTS]
        if unknown:
            raise ValueError(f"{source}: rule of {subflow!r} asks for unknown customer facts {unknown}")
        rules[subflow] = Rule(
            subflow=subflow,
            kind=kind,
            params=entry.get("params", {}),
            facts=tuple(entry.get("facts", ())),
            customer_facts=customer,
            decision_action=str(entry["decision_action"]),
            refusal=str(entry["refusal"]),
            limit=str(entry.get("limit", "")),
            outcomes=dict(entry.get("outcomes", {})),
            alternative=entry.get("alternative"),
        )
    return rules


@dataclass(frozen=True)
class StoreCatalog:
    """What a pack knows about the store's policy (see the module docstring)."""

    name: str
    guidelines: Mapping[str, Any]
    kb: Mapping[str, tuple[str, ...]]
    subflows: Mapping[str, SubflowInfo]
    rules: Mapping[str, Rule]
    limits_from_rules: bool
    """Original pack: a hard limit is a rule; upstream: the guidelines' hard-limit phrases."""
    system_info: bool
    """Whether the LLM agent sees today's date and the oracle result (original pack only)."""

    def info(self, subflow: str) -> SubflowInfo | None:
        return self.subflows.get(subflow)

    def covered(self, subflow: str) -> bool:
        return subflow in self.subflows and subflow in self.kb

    def kb_sequence(self, subflow: str) -> tuple[str, ...]:
        return self.kb.get(subflow, ())

    def title(self, subflow: str) -> str:
        info = self.info(subflow)
        return info.title if info else subflow.replace("_", " ").title()

    def flow_entry(self, subflow: str) -> Mapping[str, Any] | None:
        info = self.info(subflow)
        if info is None:
            return None
        return self.guidelines.get(FLOW_NAMES.get(info.flow, ""))

    def entry(self, subflow: str) -> Mapping[str, Any] | None:
        """The subflow's guidelines entry (``actions``, ``instructions``), or ``None``."""
        flow = self.flow_entry(subflow)
        if not flow:
            return None
        return (flow.get("subflows") or {}).get(self.title(subflow))

    def flow_description(self, subflow: str) -> str:
        flow = self.flow_entry(subflow)
        return str((flow or {}).get("description") or "").strip()

    def goal(self, subflow: str) -> str:
        """``<title lower-cased>, which the store handles under <flow description>``."""
        title = self.title(subflow).lower()
        description = self.flow_description(subflow)
        return f"{title}, which the store handles under {description}" if description else title

    def has_hard_limit(self, subflow: str) -> bool:
        if self.limits_from_rules:
            return subflow in self.rules
        entry = self.entry(subflow)
        text = json.dumps(entry).lower() if entry else ""
        return any(phrase in text for phrase in HARD_LIMIT_PHRASES)

    def procedure(self, subflow: str) -> str:
        """The rendered procedure: ``i. [<button>] <text>`` (or ``i. <text>``) with ``   - <subtext>``."""
        entry = self.entry(subflow)
        if not entry or not entry.get("actions"):
            return "Help the customer as best you can."
        lines: list[str] = []
        for index, action in enumerate(entry["actions"], start=1):
            button = str(action.get("button") or "").strip()
            text = str(action.get("text") or "").strip()
            lines.append(f"{index}. [{button}] {text}" if button else f"{index}. {text}")
            lines.extend(f"   - {str(sub).strip()}" for sub in action.get("subtext") or ())
        return "\n".join(lines)


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _ontology_actions(ontology: Mapping[str, Any]) -> set[str]:
    actions: set[str] = set()
    for group in (ontology.get("actions") or {}).values():
        if isinstance(group, Mapping):
            actions.update(group)
    return actions


def load_catalog(
    directory: Path,
    subflow_map: Mapping[str, Mapping[str, str]],
    rules: Mapping[str, Rule],
    *,
    name: str,
    limits_from_rules: bool,
    system_info: bool,
) -> StoreCatalog:
    """Read ``guidelines.json``, ``kb.json`` and ``ontology.json`` from ``directory``.

    Raises ``FileNotFoundError`` listing the missing files, and ``ValueError`` when a kb action id is
    not listed in the ontology's ``actions`` (any group).
    """
    paths = {key: directory / f"{key}.json" for key in ("guidelines", "kb", "ontology")}
    missing = [str(path) for path in paths.values() if not path.is_file()]
    if missing:
        raise FileNotFoundError(f"ABCD policy files not found: {', '.join(missing)}")
    return build_catalog(
        _read_json(paths["guidelines"]),
        _read_json(paths["kb"]),
        _read_json(paths["ontology"]),
        subflow_map,
        rules,
        name=name,
        limits_from_rules=limits_from_rules,
        system_info=system_info,
        source=str(paths["kb"]),
    )


def build_catalog(
    guidelines: Mapping[str, Any],
    kb_raw: Mapping[str, Sequence[str]],
    ontology: Mapping[str, Any],
    subflow_map: Mapping[str, Mapping[str, str]],
    rules: Mapping[str, Rule],
    *,
    name: str,
    limits_from_rules: bool,
    system_info: bool,
    source: str = "kb.json",
) -> StoreCatalog:
    """A catalog from already-read policy data; a kb action missing from the ontology is an error."""
    known_actions = _ontology_actions(ontology)
    kb: dict[str, tuple[str, ...]] = {}
    for subflow, sequence in kb_raw.items():
        unknown = [action for action in sequence if action not in known_actions]
        if unknown:
            raise ValueError(f"{source}: subflow {subflow!r} uses actions {unknown} not listed in ontology.json")
        kb[subflow] = tuple(sequence)
    subflows = {
        subflow: SubflowInfo(flow=str(entry["flow"]), title=str(entry["title"]))
        for subflow, entry in subflow_map.items()
    }
    return StoreCatalog(
        name=name,
        guidelines=guidelines,
        kb=kb,
        subflows=subflows,
        rules=dict(rules),
        limits_from_rules=limits_from_rules,
        system_info=system_info,
    )
