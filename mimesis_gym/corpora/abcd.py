"""ABCD, the Action-Based Conversations Dataset (MIT): customers and agents of an online clothing store.

Read from ``abcd_sample.json`` (the three sample dialogues shipped with ABCD: a JSON list) or the full
``abcd_v1.1.json`` (an object of ``train``/``dev``/``test`` lists; ``.gz`` is read too). Each
conversation has a ``convo_id``, a ``scenario`` (the customer's ``personal`` and ``order`` details,
the ``flow`` and ``subflow`` of their issue) and ``original``: ``[speaker, text]`` pairs where the
speaker is ``customer`` (the user), ``agent`` (the assistant) or ``action`` (a button the agent
pressed, not said: skipped as ``"action line"``). The goal restates the scenario in two sentences:
who the customer is and what their issue is, then the account details they can give when asked.
"""

from __future__ import annotations

import re
from pathlib import Path

from mimesis_gym.corpora.assemble import Assembler, CorpusLoad, Message, read_json, text_or_none

__all__ = ["SOURCE", "load"]

SOURCE = "abcd"
_ROLES = {"customer": "user", "agent": "assistant"}
_SPLITS = ("train", "dev", "test")


def load(path: Path) -> CorpusLoad:
    """The conversations of an ABCD file at ``path``, in file order (splits train, dev, test)."""
    data = read_json(path)
    if isinstance(data, dict):
        data = [record for split in _SPLITS for record in data.get(split) or []]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected ABCD's JSON list of conversations (or an object of splits)")
    assembler = Assembler(SOURCE, path)
    for number, record in enumerate(data, start=1):
        lines = _lines(record)
        if lines is None:
            assembler.drop("malformed record", f"record {number}")
            continue
        conv_id = str(record["convo_id"])
        messages = []
        for speaker, text in lines:
            if speaker == "action":
                assembler.skip("action line", f"conversation {conv_id}")
            else:
                messages.append(Message(_ROLES[speaker], text))
        assembler.add(conv_id, messages, goal(record.get("scenario")))
    return assembler.result()


def _lines(record: object) -> list[tuple[str, object]] | None:
    """The ``[speaker, text]`` pairs, or ``None`` when the record is not of ABCD's shape."""
    if not isinstance(record, dict) or not isinstance(record.get("convo_id"), (int, str)):
        return None
    original = record.get("original")
    if not isinstance(original, list) or not all(
        isinstance(line, list) and len(line) == 2 and line[0] in (*_ROLES, "action") for line in original
    ):
        return None
    return [(line[0], line[1]) for line in original]


def goal(scenario: object) -> str | None:
    """The customer's scenario in plain words; ``None`` without a flow (the first message is then the goal)."""
    if not isinstance(scenario, dict) or text_or_none(scenario.get("flow")) is None:
        return None
    personal, order = _mapping(scenario.get("personal")), _mapping(scenario.get("order"))
    name = _plain(personal.get("customer_name")).title() or "A customer"
    level = _plain(personal.get("member_level"))
    who = f"{name} ({level} member)" if level else name
    issue = _words(scenario["flow"])
    subflow = _words(re.sub(r"_\d+$", "", str(scenario.get("subflow") or "")))
    products = _products(scenario.get("product"))
    first = f"{who} contacts the customer support of an online clothing store about a {issue}" + (
        f": {subflow}" if subflow else ""
    )
    first += f", concerning {products}." if products else "."
    details = [
        f"{label} {value}"
        for label, value in (
            ("username", _plain(personal.get("username"))),
            ("email", _plain(personal.get("email"))),
            ("phone", _plain(personal.get("phone"))),
            ("order id", _plain(order.get("order_id"))),
            ("purchased on", _plain(order.get("purchase_date"))),
            ("paid by", _plain(order.get("payment_method"))),
            ("address", _plain(order.get("full_address"))),
        )
        if value
    ]
    return first + (f" Details they can give when asked: {'; '.join(details)}." if details else "")


def _mapping(value: object) -> dict:
    return value if isinstance(value, dict) else {}


def _plain(value: object) -> str:
    """A scenario field as one line of text (runs of spaces collapsed); empty when absent."""
    return " ".join(str(value).split()) if isinstance(value, (str, int, float)) else ""


def _words(name: str) -> str:
    return name.replace("_", " ").strip()


def _products(product: object) -> str:
    names = _mapping(product).get("names")
    if not isinstance(names, list):
        return ""
    return " and ".join(_plain(name).replace("_", " ") for name in names if _plain(name))
