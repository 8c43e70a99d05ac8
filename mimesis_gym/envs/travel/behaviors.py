"""TravelGym's user behaviours: the traveller (``responder``) plays all of B1–B13.

See docs/envs/travel.md, "User behaviours" (the behaviours themselves: docs/behaviors.md).

The episode's facts come from the task alone (the env's constants and the chosen task; never the
episode's draws), so ``env.user_behavior_facts()`` gives the same facts after the episode:

- B2 brings in the task's **last** hidden preference as a new requirement, B5 blames the agent for the
  **first** one, each in its own implicit statement — the words the traveller reveals it with anyway
  (the env volunteers a preference after three off-target turns), never the preference's text;
- B8 states a false date: the first date of the trip moved by one to three days (to a day the trip
  does not use); B11 says the party size, then one more;
- B6 switches to the weather at the destination, B7 adds a restriction per aspect, B12 three checks
  of the whole trip, B4 insists on the first aspect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.envs.travel.tasks import ASPECT_LABELS, DATE_ARGUMENTS, MONTHS, TravelTask, parse_date

__all__ = ["USER_BEHAVIORS", "travel_facts"]

RESTRICTIONS: dict[str, str] = {
    "flight": "I can't take a flight that leaves before 9 in the morning",
    "hotel": "we can't stay anywhere without a lift",
    "apartment": "we can't stay anywhere without a lift",
    "rental_car": "I don't have a credit card, so nothing that needs a deposit",
    "restaurant": "we can't eat anywhere without outdoor seating",
}
"""B7: one artificial restriction per aspect, each with a PROHIBIT phrase (``can't``, ``without``, …)."""

FALSE_DATE_CLAUSES: dict[str, str] = {
    "flight": "my flight is on {date}",
    "hotel": "we check in on {date}",
    "apartment": "we check in on {date}",
    "rental_car": "I pick up the car on {date}",
    "restaurant": "the meal is on {date}",
}
"""B8: the first aspect's first date, said as settled (``As I said, …``)."""

EXTRA_REQUESTS: tuple[str, ...] = (
    "check the cancellation policy of everything",
    "tell me the total cost of the whole trip",
    "make sure everything is close to the city centre",
)
"""B12: three checks of the whole trip, crammed into the first reply."""

RULES_NOTE = (
    "Keep the traveller's rules while you do it: reply in the format your instructions ask for, hint at your "
    "preferences only implicitly, and never state the trip scenario or a preference outright."
)


def _clause(statement: str) -> str:
    """An implicit statement written to follow ``that`` or a comma: its first letter in lower case
    (``I`` kept), without its final stop."""
    text = statement.strip().rstrip(" .!")
    if text[:2] in ("I ", "I'"):
        return text
    return text[:1].lower() + text[1:]


def _preference_facts(task: TravelTask) -> dict[str, Any]:
    """B2 (the last preference, a sentence after ``Actually,``) and B5 (the first, a clause after ``that``):
    the preference's implicit statement for its aspect, found again by the statement itself or the
    preference's pack keywords."""
    facts: dict[str, Any] = {}
    for prefix, numbered, stop in (
        ("new_requirement", task.numbered[-1], "."),
        ("omitted_detail", task.numbered[0], ""),
    ):
        pref = numbered.pref
        label = ASPECT_LABELS.get(pref.aspect, pref.aspect)
        keywords = pref.meta.keywords if pref.meta is not None else ()
        facts[f"{prefix}_text"] = f"for the {label}, {_clause(pref.implicit_elicitation)}{stop}"
        facts[f"{prefix}_words"] = (_clause(pref.implicit_elicitation), *keywords)
    return facts


def _first_date(task: TravelTask) -> tuple[int, int] | None:
    """The first aspect's first ``<Month> <day>`` argument as ``(month, day)``."""
    arguments = task.aspects[task.dimensions[0]].arguments
    return next((d for k, v in arguments.items() if k in DATE_ARGUMENTS and (d := parse_date(v))), None)


def _trip_dates(task: TravelTask) -> set[tuple[int, int]]:
    dates = set()
    for aspect in task.aspects.values():
        for key, value in aspect.arguments.items():
            parsed = parse_date(value) if key in DATE_ARGUMENTS else None
            if parsed is not None:
                dates.add(parsed)
    return dates


def _false_date_facts(task: TravelTask) -> dict[str, Any]:
    """B8: the first aspect's first date moved to a day the trip does not use (a false year when the task
    writes no ``<Month> <day>`` date)."""
    truth = _first_date(task)
    if truth is None:
        return {"false_premise_text": "As I said, I booked all of this for next year.", "false_value": "next year"}
    month, day = truth
    used = _trip_dates(task)
    shifts = (1, 2, 3) if day < 25 else (-1, -2, -3)
    moved = next((day + s for s in shifts if (month, day + s) not in used), day + shifts[0])
    date = f"{MONTHS[month - 1]} {moved}"
    clause = FALSE_DATE_CLAUSES[task.dimensions[0]].format(date=date)
    return {"false_premise_text": f"As I said, {clause}.", "false_value": date}


def _contradiction_facts(task: TravelTask) -> dict[str, Any]:
    """B11: the party size, then one more; without a party size (UserRL records), cheapest first, then
    price not mattering."""
    if task.party_size is None:
        value_a, value_b = "the cheapest options", "price doesn't matter"
        text_a, text_b = f"Just so you know, I want {value_a}.", f"Just so you know, {value_b}; I want the best."
    else:
        value_a, value_b = f"party of {task.party_size}", f"party of {task.party_size + 1}"
        text_a, text_b = f"Just so you know, the booking is for a {value_a}.", f"Just so you know, it's a {value_b}."
    return {"contradiction_a_text": text_a, "value_a": value_a, "contradiction_b_text": text_b, "value_b": value_b}


def _destination(task: TravelTask) -> tuple[str, str]:
    """The trip's city and month, from the first aspect's arguments (``there``/``then`` when absent)."""
    arguments = task.aspects[task.dimensions[0]].arguments
    city = arguments.get("destination") or arguments.get("city") or "there"
    date = _first_date(task)
    return city, f"in {MONTHS[date[0] - 1]}" if date is not None else "then"


def travel_facts(env: Any) -> Mapping[str, Any]:
    """The current task's behaviour facts (docs/envs/travel.md, "User behaviours")."""
    task: TravelTask = env.task
    first = ASPECT_LABELS.get(task.dimensions[0], task.dimensions[0])
    city, when = _destination(task)
    informative = [p.pref.implicit_elicitation for p in task.numbered]
    informative += [k for p in task.numbered if p.pref.meta is not None for k in p.pref.meta.keywords]
    return {
        "informative": tuple(dict.fromkeys(informative)),
        "insist_text": f"the {first} I asked for",
        "target_topic_text": f"Can you tell me what the weather is usually like in {city} {when}?",
        "target_topic_words": ("weather",),
        "restrictions": tuple(dict.fromkeys(RESTRICTIONS[d] for d in task.dimensions))[:2],
        "extra_requests": EXTRA_REQUESTS,
        **_preference_facts(task),
        **_false_date_facts(task),
        **_contradiction_facts(task),
    }


USER_BEHAVIORS = EnvBehaviors(
    user_role="responder",
    not_applicable={},
    facts=travel_facts,
    progress_kinds=frozenset({"answer"}),
    rules_note=RULES_NOTE,
)
"""The traveller plays every behaviour; a recommendation (``[answer]``) is the agent's real progress."""
