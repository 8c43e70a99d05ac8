"""Telepathy: a 20-questions player that halves its candidate list, then guesses.

Its world knowledge is the entity catalogue the package ships (``envs/telepathy/data/entities.tsv``:
names, categories, hypernyms, colours and yes/no properties): the same encyclopedia for every task,
read as data, never the current task. It keeps the entities of the category named in the opening,
asks the yes/no question (property, hypernym or colour) that splits the candidates most evenly,
drops candidates that disagree with the answers, and guesses the best one once a single candidate
is left or after five questions (then it alternates guesses and questions, dropping wrong guesses).
With another task pack (upstream data) targets outside the catalogue are never guessed right.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["next_action"]

DATA = Path(__file__).resolve().parent / "data"
MAX_QUESTIONS_BEFORE_GUESS = 5

QUESTIONS = {
    "alive": "Is it alive?",
    "real": "Is it real?",
    "fictional": "Is it fictional?",
    "man_made": "Is it man made?",
    "natural": "Is it natural?",
    "bigger_than_person": "Is it bigger than a person?",
    "bigger_than_car": "Is it bigger than a car?",
    "fits_in_hand": "Can it fit in your hand?",
    "edible": "Can you eat it?",
    "electronic": "Is it electronic?",
    "indoors": "Is it found indoors?",
    "fly": "Can it fly?",
    "water": "Does it live or work in water?",
    "legs": "Does it have legs?",
    "four_legs": "Does it have four legs?",
    "wheels": "Does it have a wheel?",
    "europe": "Is it from Europe?",
    "asia": "Is it from Asia?",
    "africa": "Is it from Africa?",
    "americas": "Is it from America?",
    "old": "Is it more than 100 years old?",
    "modern": "Is it modern?",
    "transport": "Is it used for transport?",
    "music": "Is it related to music?",
    "sport_related": "Is it athletic or related to sport?",
    "female": "Is it female?",
    "male": "Is it male?",
    "dangerous": "Is it dangerous?",
    "fur": "Does it have fur?",
    "meat_eater": "Does it eat meat?",
    "in_space": "Is it in space?",
    "sweet": "Is it sweet?",
    "famous": "Is it famous?",
}
"""One question per catalogue property, worded with the property's own phrase."""


@dataclass(frozen=True)
class Entity:
    title: str
    category: str
    features: dict[str, str]
    """question -> expected reply ("Yes", "No" or "Maybe")."""


@lru_cache(maxsize=1)
def catalogue() -> tuple[Entity, ...]:
    """The shipped entity catalogue as candidates with the expected reply to every question."""
    names = [p["name"] for p in json.loads((DATA / "attributes.json").read_text(encoding="utf-8"))["properties"]]
    reply = {"y": "Yes", "n": "No", "?": "Maybe"}
    hypernyms: set[str] = set()
    colours: set[str] = set()
    rows = list(csv.DictReader((DATA / "entities.tsv").open(encoding="utf-8"), delimiter="\t"))
    for row in rows:
        hypernyms.update(h for h in row["hypernyms"].split("|") if h)
        colours.update(c for c in row["colours"].split("|") if c)
    entities = []
    for row in rows:
        features = {QUESTIONS[name]: reply[flag] for name, flag in zip(names, row["props"], strict=False)}
        own = set(row["hypernyms"].split("|"))
        for hypernym in sorted(hypernyms):
            features[f"Is it a kind of {hypernym}?"] = "Yes" if hypernym in own else "No"
        own_colours = set(row["colours"].split("|"))
        for colour in sorted(colours):
            features[f"Is it {colour}?"] = "Yes" if colour in own_colours else "No"
        entities.append(Entity(row["title"], row["category"], features))
    return tuple(entities)


def _reply(feedback: str) -> str:
    word = feedback.strip().split()[0].strip(".,!").capitalize() if feedback.strip() else ""
    return word if word in ("Yes", "No") else "Maybe"


def ranked_candidates(dialogue: Dialogue) -> list[tuple[int, Entity]]:
    """(disagreements, entity) for the opening's category, fewest disagreements first; wrong guesses dropped."""
    opening = dialogue.opening.lower()
    pool = [e for e in catalogue() if f" {e.category.replace('_', ' ')}" in opening] or list(catalogue())
    wrong = {e.content.strip().lower() for e in dialogue.of("answer")}
    asked = [(e.content, _reply(e.feedback)) for e in dialogue.of("action")]
    scored = [
        (sum(1 for question, answer in asked if entity.features.get(question, "Maybe") != answer), entity)
        for entity in pool
        if entity.title.lower() not in wrong
    ]
    return sorted(scored, key=lambda item: item[0])


def _best_question(pool: list[Entity], asked: set[str]) -> str | None:
    """The unasked question whose largest answer group is smallest (None when no question splits the pool)."""
    best, best_size = None, len(pool)
    for question in pool[0].features if pool else ():
        if question in asked:
            continue
        groups: dict[str, int] = {}
        for entity in pool:
            groups[entity.features[question]] = groups.get(entity.features[question], 0) + 1
        if max(groups.values()) < best_size:
            best, best_size = question, max(groups.values())
    return best


def next_action(dialogue: Dialogue) -> Action:
    """Ask the most even split among the best-fitting candidates, or guess the best one."""
    ranked = ranked_candidates(dialogue)
    if not ranked:
        return {"choice": "answer", "content": "I do not know"}
    best = [entity for misses, entity in ranked if misses == ranked[0][0]]
    asked = [e.content for e in dialogue.of("action")]
    just_guessed = bool(dialogue.exchanges) and dialogue.exchanges[-1].choice == "answer"
    question = _best_question(best, set(asked))
    if question is None or len(best) == 1 or (len(asked) >= MAX_QUESTIONS_BEFORE_GUESS and not just_guessed):
        return {"choice": "answer", "content": best[0].title}
    return {"choice": "action", "content": question}
