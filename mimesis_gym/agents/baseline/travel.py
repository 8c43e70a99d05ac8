"""Travel: search every aspect the request names, ask one concrete question each, recommend.

The request's clauses (``a flight from A to B on …``, ``an apartment … from … to …``) become the
search queries, with the trip's destination added where a clause names no city. After the searches
it asks one concrete preference question per aspect, then recommends per aspect the option whose
text shares the most words with the traveller's replies, cheapest first among equals.
"""

from __future__ import annotations

import json
import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["ASPECTS", "next_action", "search_queries"]

ASPECTS = {
    "flight": ("flight", "Do you prefer a direct flight, and which departure time, airline or on-board amenities?"),
    "hotel": ("hotel", "What hotel rating, location, breakfast or other amenities do you need?"),
    "apartment": ("apartment", "How many bedrooms, guests and which amenities such as a kitchen or parking?"),
    "car": ("rental car", "Which car type, size, transmission or fuel do you want for the rental car?"),
    "restaurant": ("restaurant", "Which cuisine, rating or features like vegetarian food do you want?"),
}
_OPTION = re.compile(r"^\{.*\}$", re.MULTILINE)
_WORD = re.compile(r"[a-z]{4,}")


def _destination(text: str) -> str:
    match = re.search(r"\bto ([A-Z][a-z]+(?: [A-Z][a-z]+)*)", text)
    return match.group(1) if match else ""


def search_queries(opening: str) -> list[tuple[str, str]]:
    """(aspect, query) for every aspect the opening request names, in the request's order."""
    destination = _destination(opening)
    clauses = [c.strip(" .") for c in re.split(r",\s*(?:and\s+)?|\s+and\s+(?=an?\s)", opening) if c.strip()]
    queries = []
    for aspect, (noun, _) in ASPECTS.items():
        clause = next((c for c in clauses if noun.split()[-1] in c.lower()), None)
        if clause is None or any(a == aspect for a, _ in queries):
            continue
        clause = re.sub(r"^.*?\b(?:need|want|like)\s+", "", clause)
        if destination and destination not in clause:
            clause = f"{clause} in {destination}"
        queries.append((aspect, clause))
    return queries


def _options(feedback: str) -> list[dict[str, object]]:
    options = []
    for line in _OPTION.findall(feedback):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "id" in value:
            options.append(value)
    return options


def _price(option: dict[str, object]) -> float:
    for key in ("cost", "price", "expectation"):
        value = option.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return float("inf")


def next_action(dialogue: Dialogue) -> Action:
    """Search each aspect, then ask each aspect's question, then recommend one option per aspect."""
    queries = search_queries(dialogue.opening)
    searched = {e.content: e.feedback for e in dialogue.of("search")}
    for _, query in queries:
        if query not in searched:
            return {"choice": "search", "content": query}
    asked = {e.content: e.feedback for e in dialogue.of("action")}
    for aspect, _ in queries:
        question = ASPECTS[aspect][1]
        if question not in asked:
            return {"choice": "action", "content": question}
    wishes = set(_WORD.findall(" ".join(asked.values()).lower()))
    recommended = {e.content.strip() for e in dialogue.of("answer")}
    for _, query in queries:
        options = _options(searched[query])
        if not options or any(str(o["id"]) in recommended for o in options):
            continue
        best = min(
            options,
            key=lambda o: (-len(wishes & set(_WORD.findall(json.dumps(o).lower()))), _price(o), str(o["id"])),
        )
        return {"choice": "answer", "content": str(best["id"])}
    return {"choice": "finish", "content": ""}
