"""Travel: per aspect the request names — search it, ask about the features shown, recommend one.

The request's clauses (``a flight from A to B on …``, ``an apartment … from … to …``) become the
search queries, with the trip's destination added where a clause names no city. Aspect by aspect,
it searches, asks which of the features listed in the results (amenities and paid extras, the
most common first) matter to the traveller, and recommends the option whose text shares the most
words with the reply, cheapest among equals. Aspects are finished one at a time, so a short turn
budget still ends with recommendations.
"""

from __future__ import annotations

import json
import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["ASPECTS", "next_action", "search_queries"]

ASPECTS = {
    "flight": "flight",
    "hotel": "hotel",
    "apartment": "apartment",
    "car": "rental car",
    "restaurant": "restaurant",
}
"""Aspect -> the noun a request uses for it."""
MAX_FEATURES = 8
HINTS = {
    "dog": "pet",
    "cat": "pet",
    "pets": "pet",
    "stairs": "wheelchair elevator accessible",
    "ramp": "wheelchair accessible",
    "level": "wheelchair accessible",
    "wheelchair": "wheelchair accessible",
    "baby": "crib",
    "infant": "crib",
    "laptop": "workspace",
    "work": "workspace",
    "cook": "kitchen",
    "cooking": "kitchen",
    "heat": "air conditioning",
    "hot": "air conditioning",
    "internet": "wi-fi",
    "emails": "wi-fi",
    "online": "wi-fi",
    "movies": "entertainment",
    "hungry": "meal",
    "eat": "meal",
    "legs": "legroom",
    "luggage": "bag",
    "suitcase": "bag",
    "meat": "vegetarian",
    "gluten": "gluten-free",
    "late": "late",
    "early": "early",
    "quiet": "quiet",
    "noise": "quiet",
    "view": "view",
    "wine": "wine",
    "washing": "washer",
    "laundry": "washer",
    "clothes": "washer",
    "parking": "parking",
    "drive": "parking",
}
"""Words a traveller uses for a need -> the feature words options list (read between the lines)."""
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}
_OPTION = re.compile(r"^\{.*\}$", re.MULTILINE)
_WORD = re.compile(r"[a-z]{4,}")


def _destination(text: str) -> str:
    match = re.search(r"\bto ([A-Z][a-z]+(?: [A-Z][a-z]+)*)", text)
    return match.group(1) if match else ""


def search_queries(opening: str) -> list[tuple[str, str]]:
    """(aspect, query) for every aspect the opening request names, in the request's order."""
    opening = opening.splitlines()[0] if opening else ""
    destination = _destination(opening)
    clauses = [c.strip(" .") for c in re.split(r",\s*(?:and\s+)?|\s+and\s+(?=an?\s)", opening) if c.strip()]
    queries = []
    for aspect, noun in ASPECTS.items():
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


def _features(options: list[dict[str, object]]) -> list[str]:
    """The amenities, tags and paid extras of ``options``, most common first."""
    counts: dict[str, int] = {}
    for option in options:
        for key in ("amenities", "tags", "service"):
            value = option.get(key)
            for feature in value if isinstance(value, (list, dict)) else ():
                counts[str(feature)] = counts.get(str(feature), 0) + 1
    return sorted(counts, key=lambda feature: (-counts[feature], feature))[:MAX_FEATURES]


def _question(aspect: str, options: list[dict[str, object]]) -> str:
    features = _features(options)
    listed = f": {', '.join(features)}" if features else ""
    return f"For the {ASPECTS[aspect]}, which of these matter to you{listed}? Anything else you need?"


def party_size(opening: str) -> int:
    """The number of travellers the request states (``family of six``, ``four friends``), else 1."""
    match = re.search(
        r"\b(two|three|four|five|six|seven|eight|nine|ten|\d+)\b(?= (?:friends|people|of us|adults))", opening
    )
    match = match or re.search(r"\bof (two|three|four|five|six|seven|eight|nine|ten|\d+)\b", opening)
    if match is None:
        return 1
    word = match.group(1)
    return int(word) if word.isdigit() else NUMBERS[word]


def _wanted(reply: str) -> set[str]:
    words = set(_WORD.findall(reply.lower())) | set(re.findall(r"[a-z]+", reply.lower())) & set(HINTS)
    return {term for word in words for term in (word, *HINTS.get(word, "").split())}


def _fits(option: dict[str, object], wanted: set[str]) -> int:
    text = json.dumps(option).lower()
    return sum(1 for term in wanted if term in text)


def next_action(dialogue: Dialogue) -> Action:
    """For each aspect in turn: search it, ask about its features, recommend; then finish."""
    searched = {e.content: e.feedback for e in dialogue.of("search")}
    asked = {e.content: e.feedback for e in dialogue.of("action")}
    recommended = {e.content.strip() for e in dialogue.of("answer")}
    for aspect, query in search_queries(dialogue.opening):
        if query not in searched:
            return {"choice": "search", "content": query}
        options = _options(searched[query])
        if not options or any(str(o["id"]) in recommended for o in options):
            continue
        question = _question(aspect, options)
        if question not in asked:
            return {"choice": "action", "content": question}
        wanted = _wanted(asked[question])
        size = party_size(dialogue.opening)
        roomy = [o for o in options if not isinstance(o.get("capacity"), int) or o["capacity"] >= size] or options
        best = min(roomy, key=lambda o: (-_fits(o, wanted), _price(o), str(o["id"])))
        return {"choice": "answer", "content": str(best["id"])}
    return {"choice": "finish", "content": ""}
