"""Turtle: fixed yes/no probes about the surface story, then a story built from what was confirmed.

The probes are generic lateral-thinking questions (did weight or temperature matter, was someone
hurt, was it deliberate, a misunderstanding, a lie, …) plus one about each of the surface's four
longest words, asked after the first four generic ones. After four probes it tells a story: the
surface, then every probe answered "Yes" as a statement and every "No" as its denial; then it
probes again and retells after every two further probes.
"""

from __future__ import annotations

import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["PROBES", "next_action"]

PROBES = (
    ("Was weight or balance important?", "weight and balance were important"),
    ("Did the temperature, heat or cold matter?", "the temperature, the heat or the cold mattered"),
    ("Did someone die or get hurt?", "someone died or got hurt"),
    ("Was there a misunderstanding or a mistake?", "there was a misunderstanding or a mistake"),
    ("Was it done on purpose to help or protect someone?", "it was done on purpose to help or protect someone"),
    ("Did someone lie, pretend or hide the truth?", "someone lied, pretended or hid the truth"),
    ("Could someone not see or hear, being blind or deaf?", "someone could not see or hear"),
    ("Was it part of a job, a test or a game?", "it was part of a job, a test or a game"),
    ("Was it a dream, a reflection or a picture?", "it was a dream, a reflection or a picture"),
    ("Is an animal involved?", "an animal was involved"),
    ("Is a family member, a child or a twin involved?", "a family member, a child or a twin was involved"),
    ("Did it happen because of science or a physical effect?", "it happened because of science or a physical effect"),
)
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
