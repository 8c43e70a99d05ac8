"""ABCD (the agent plays the customer): a plain customer who answers what the support agent asks.

It reads its own facts from the system prompt (the ``- name: value`` lines the customer is given),
states why it is writing, answers each agent question with the facts whose names the question
mentions, accepts offers, and says goodbye then leaves once the agent wraps up. It enacts no
behaviour, so it is a floor for the behaviour-reward table, not a behaviour policy.
"""

from __future__ import annotations

import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["facts", "next_action"]

_FACT = re.compile(r"^- ([^:]+):\s*(.+)$", re.MULTILINE)
_WRAP_UP = ("anything else", "great day", "have a good", "goodbye")


def facts(system: str) -> dict[str, str]:
    """The customer's facts: ``- name: value`` lines of the system prompt, name lower-cased."""
    return {name.strip().lower(): value.strip() for name, value in _FACT.findall(system)}


def _reason(system: str) -> str:
    match = re.search(r"Why you are writing:\s*([^,.\n]+)", system)
    return match.group(1).strip() if match else "a problem with my order"


def next_action(dialogue: Dialogue) -> Action:
    """Answer the agent's last message from the facts; leave after a goodbye."""
    last = (dialogue.exchanges[-1].feedback if dialogue.exchanges else dialogue.opening.splitlines()[-1]).lower()
    if dialogue.exchanges and dialogue.exchanges[-1].content == "that's all, thanks!":
        return "[finish]"
    if any(mark in last for mark in _WRAP_UP):
        return "that's all, thanks!"
    if not dialogue.exchanges and "what's going on" in last:
        return f"hi, i need help with {_reason(dialogue.system)}"
    known = facts(dialogue.system)
    named = [value for name, value in known.items() if name in last or name.split()[-1] in last.split()]
    if named:
        return ", ".join(named[:3])
    if "would you like" in last or "shall i" in last:
        return "yes please"
    return f"ok. i'm still hoping to sort out {_reason(dialogue.system)}"
