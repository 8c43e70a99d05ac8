"""Turtle: fixed yes/no probes about the surface story, then a story built from what was confirmed.

The probes are generic lateral-thinking questions (was something broken, money, illness or an
accident, a thief, a job, family, a mistake, …) plus one about each of the surface's four
longest words, asked after the first four generic ones. After four probes it tells a story: the
surface, then every probe answered "Yes" as a statement and every "No" as its denial; then it
probes again and retells after every two further probes.
"""

from __future__ import annotations

import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["PROBES", "next_action"]

PROBES = (
    ("Was something broken or faulty?", "something was broken or faulty"),
    ("Is money involved, was someone paid?", "money was involved and someone was paid"),
    ("Was someone sick, ill, injured or in an accident?", "someone was sick, ill, injured or in an accident"),
    ("Was a thief or criminal trying to steal something?", "a thief or criminal was trying to steal something"),
    ("Was it part of someone's job or work?", "it was part of someone's job or work"),
    ("Is a family member, a wife, a mother or a child involved?", "a family member was involved"),
    ("Did someone forget something or make a mistake?", "someone forgot something or made a mistake"),
    ("Was it done on purpose, deliberately?", "it was done on purpose, deliberately"),
    ("Is a dog, a pet or another animal involved?", "a dog, a pet or another animal was involved"),
    ("Did someone die, or is someone dead?", "someone died"),
    ("Was something hidden, fake or a trick?", "something was hidden, fake or a trick"),
    ("Was someone afraid or scared?", "someone was afraid or scared"),
)
"""Generic probes worded with the terms that recur most in the train split's facts (never test tasks)."""
FIRST_STORY_AFTER = 4
_WORD = re.compile(r"[A-Za-z][a-z]{5,}")


def _surface(dialogue: Dialogue) -> str:
    for line in dialogue.opening.splitlines():
        if line.lower().startswith("surface:"):
            return line.split(":", 1)[1].strip()
    return dialogue.opening.splitlines()[0] if dialogue.opening else ""


def _probes(surface: str) -> list[tuple[str, str]]:
    words = sorted(dict.fromkeys(w.lower() for w in _WORD.findall(surface)), key=lambda w: (-len(w), w))[:4]
    about = [(f"Is the {w} important to the hidden story?", f"the {w} was important") for w in words]
    return [*PROBES[:4], *about, *PROBES[4:]]


def _story(dialogue: Dialogue, surface: str) -> str:
    facts = []
    statements = {question: statement for question, statement in _probes(surface)}
    for exchange in dialogue.of("action"):
        statement = statements.get(exchange.content)
        if statement is None:
            continue
        reply = exchange.feedback.strip().lower()
        if reply.startswith("yes"):
            facts.append(statement[0].upper() + statement[1:] + ".")
        elif reply.startswith("no"):
            facts.append(f"It is not true that {statement}.")
    return " ".join([surface, "What really happened:", *facts]).strip()


def next_action(dialogue: Dialogue) -> Action:
    """Probe until four are asked, then tell the story, and retell after every two further probes."""
    surface = _surface(dialogue)
    probes = _probes(surface)
    asked = len(dialogue.of("action"))
    told = len(dialogue.of("answer"))
    due = asked >= FIRST_STORY_AFTER and told <= (asked - FIRST_STORY_AFTER) // 2
    if due or asked >= len(probes):
        return {"choice": "answer", "content": _story(dialogue, surface)}
    return {"choice": "action", "content": probes[asked][0]}
