"""Tau: a generic support routine — identify the customer, read their records, report, ask again.

It asks for the customer's email (or name and zip code, or user id), looks the user up with the
lookup tool the domain lists, reads the user's details and every order or reservation they hold,
tells the customer what it found and asks what else they need. It changes no records, so tasks
that need a write (a return, an exchange, a booking) stay unsolved: a floor, not a solver.
"""

from __future__ import annotations

import json
import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["next_action"]

ASK_IDENTITY = "Could you give me your email address, or your first name, last name and zip code, or your user id?"
ASK_MORE = "Thank you. What exactly would you like me to do, and is there anything else I can help you with?"
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+")
_ZIP = re.compile(r"\b\d{5}\b")
_NAME = re.compile(r"\b([A-Z][a-z]+)\s+([A-Z][a-z]+)\b")
_USER_ID = re.compile(r"\b[a-z]+_[a-z]+_\d{3,5}\b")


def _call(name: str, **arguments: str) -> Action:
    return {"choice": "answer", "content": json.dumps({"name": name, "arguments": arguments})}


def _lookup(reply: str) -> Action | None:
    if user := _USER_ID.search(reply):
        return _call("get_user_details", user_id=user.group(0))
    if email := _EMAIL.search(reply):
        return _call("find_user_id_by_email", email=email.group(0).rstrip("."))
    name, zip_code = _NAME.search(reply), _ZIP.search(reply)
    if name and zip_code:
        return _call(
            "find_user_id_by_name_zip", first_name=name.group(1), last_name=name.group(2), zip=zip_code.group(0)
        )
    return None


def next_action(dialogue: Dialogue) -> Action:
    """The next step of the routine; the same calls are never made twice."""
    made = {e.content for e in dialogue.of("answer")}
    said = [e for e in dialogue.of("action")]
    if not said:
        return {"choice": "action", "content": ASK_IDENTITY}
    results = [e.feedback for e in dialogue.of("answer")]
    user_ids = [m.group(0) for text in results for m in _USER_ID.finditer(text)]
    steps: list[Action] = []
    if not user_ids:
        for exchange in said:
            if (lookup := _lookup(exchange.feedback)) is not None:
                steps.append(lookup)
    for user_id in dict.fromkeys(user_ids):
        steps.append(_call("get_user_details", user_id=user_id))
    for text in results:
        for order in re.findall(r'"(#W\d+|#R\d+)"', text):
            steps.append(_call("get_order_details", order_id=order))
        for reservation in re.findall(r'"reservations":\s*\[([^\]]*)\]', text):
            for code in re.findall(r'"([A-Z0-9]{6})"', reservation):
                steps.append(_call("get_reservation_details", reservation_id=code))
    for step in steps:
        if step["content"] not in made:  # type: ignore[index]
            return step
    if len(said) == 1 or said[-1].content != ASK_MORE:
        return {"choice": "action", "content": ASK_MORE}
    return {"choice": "action", "content": "I have checked your records; is there anything else I can do for you?"}
