"""TravelGym wording: the agent's system prompt, feedback texts, option schemas and the LLM role prompts.

Everything here is written for this project (docs/envs/travel.md, "What the agent sees", "Roles").
``prompt_set="userrl"`` swaps the role prompts and option schemas for the strings of UserRL's
``travelgym/env/utils.py``, read with :mod:`ast` (module-level literals only; the file is never
imported or run).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = [
    "BUDGET_SENTENCE",
    "FEEDBACK",
    "OPTION_SCHEMAS",
    "ROLE_PROMPTS",
    "SYSTEM_PROMPT",
    "USERRL_PROMPT_FILE",
    "USERRL_PROMPT_NAMES",
    "read_userrl_prompts",
]

SYSTEM_PROMPT = """\
You are an agent working in a travel-planning environment, between a traveller (the user) and a \
travel database. The traveller's request is incomplete: to plan the trip well you must draw out \
their preferences, search the database and recommend options.

Call the tool `interact_with_env` with one of these choices:
- `search`: send one focused query to the database. Name the travel aspect (flight, hotel, \
apartment, rental car or restaurant) and give all of its search arguments, such as cities and dates. \
One request at a time.
- `action`: talk to the traveller. Ask clear, specific, concrete questions about what they want; \
vague or general questions get little back.
- `answer`: recommend an option to the traveller by writing exactly one option ID from the \
database results (for example H3).

Notes:
- Before every tool call, reason step by step inside <think> and </think>, then call the tool.
- The number of turns is limited, so balance searching, asking and recommending.
- Usually you should search first, then ask about preferences before you recommend.
- Several travel aspects need a recommendation, and you may recommend only one option per aspect, \
so make sure you understand the traveller's preferences before you answer.
- The traveller may hold several preferences for each aspect and often expresses them implicitly: \
read between the lines, and ask about the specific things that could matter."""

BUDGET_SENTENCE = (
    "My budget is limited, so among the options that meet my preferences I'd like the cheapest one for each "
    "part of the trip."
)

OPTION_SCHEMAS: dict[str, str] = {
    "flight": "\n".join(
        (
            "path: the cities of the journey in order, layover cities included",
            "time: hours per segment, alternating flight time and layover time",
            "company: the airline operating each flight",
            "flight_number: the number of each flight",
            "cost: ticket price in USD",
            "amenities: what is free on board",
            "service: optional extras and their prices in USD",
        )
    ),
    "hotel": "\n".join(
        (
            "name: the hotel's name",
            "room: the room types on offer and how many guests each holds",
            "cost: price in USD for the whole stay, one per room type, in the same order as room",
            "rating: guest rating out of 10",
            "amenities: facilities included at no charge",
            "service: optional extras and their prices in USD",
        )
    ),
    "apartment": "\n".join(
        (
            "name: the listing's name",
            "room: bedrooms and bathrooms, e.g. 2B1B is two bedrooms and one bathroom",
            "capacity: the most guests it sleeps",
            "cost: price in USD for the whole stay",
            "rating: guest rating out of 10",
            "amenities: facilities included at no charge",
            "service: optional extras and their prices in USD",
        )
    ),
    "rental_car": "\n".join(
        (
            "brand: the car maker",
            "model: the model name",
            "categories: the vehicle category",
            "seats: number of seats",
            "cost: price in USD for the whole rental period",
            "insurance: insurance options and their prices in USD",
            "service: optional extras and their prices in USD",
        )
    ),
    "restaurant": "\n".join(
        (
            "name: the restaurant's name",
            "cuisine: the kind of food served",
            "expectation: expected spend per person in USD",
            "rating: guest rating out of 10",
            "reviews: number of reviews at each star level, from 5 down to 1",
            "tags: features of the place",
        )
    ),
}
"""Schema text of each aspect's search results: one line per display field."""

_REFINE = (
    "Please refine it so that it (1) matches what the traveller needs, (2) makes only one request at a time, "
    "and (3) gives exactly the correct search arguments."
)

FEEDBACK: dict[str, str] = {
    "search_ok": "Your search request has the correct arguments.",
    "search_options": "Here are all the options for {aspect}:",
    "search_repeat": (
        "Your search request has the correct arguments, but the results for {aspect} were already returned "
        "earlier. Please refer to those results."
    ),
    "search_false": "Something in your search request is wrong or inaccurate. " + _REFINE,
    "search_na": "The arguments of your search request do not relate to any aspect of this trip. " + _REFINE,
    "search_outage": "The search backend is having trouble at the moment. Please try again later.",
    "search_omitted": " ... (detailed results omitted) ...",
    "type3": (
        "That's a fair question, but I don't have anything particular in mind there (or I've told you already). "
        "Feel free to ask me about other specific things."
    ),
    "type4": "That's a bit too broad for me to answer. Could you ask me about something more specific and concrete?",
    "apology": "Sorry, I'm not sure how to respond to that right now. Could you try again?",
    "answer_format": "Invalid option ID format: '{option_id}'. Option IDs look like H1, F12 or C4.",
    "answer_locked": (
        "You have already recommended an option with the initial '{letter}'. Only one option per travel aspect "
        "may be recommended; please focus on the other aspects now."
    ),
    "answer_single": "Please choose only one option at a time.",
    "graded_best": "Your chosen options include the best option.",
    "graded_best_wrong": "Your chosen options include the best option, but also some wrong options.",
    "graded_correct": "Your chosen options include a correct option, but not the best one.",
    "graded_correct_wrong": (
        "Your chosen options include a correct option, but not the best one, and also some wrong options."
    ),
    "graded_none": "Your chosen options include none of the best or correct options.",
    "recorded_aspect": (
        " Your choice is recorded; do not choose options of this travel aspect again, and continue with the "
        "other aspects."
    ),
    "recorded_options": " Your choice is recorded; do not choose these options again, and continue.",
    "finish": "The session has ended. You elicited {elicited}/{total} preferences ({ratio:.2%}).",
}

NATURAL_REPLIES: tuple[str, ...] = (
    "Sure, that sounds fine to me.",
    "Okay. No strong feelings either way.",
    "Nothing in particular comes to mind on that front.",
    "Alright, that's all the same to me.",
)
"""The scripted natural replies: neutral, no preference, no question, and none of the words the behaviour
checks read as a refusal or displeasure (``I don't have``, ``hmm``), so a control episode shows none."""

NOTES: dict[str, str] = {
    "1": "The agent's message is not about any of my preferences. I will reply naturally.",
    "2": "The agent asks about a preference I hold ({preference_id}). I will reveal it implicitly.",
    "3": "The agent asks about a preference I do not have. I will reply neutrally.",
    "4": "The agent's question is too vague. I will say so.",
    "proactive": (
        "The talk has been off my preferences for several turns. I will volunteer one preference implicitly."
    ),
    "classifier_failure": "The agent's message could not be classified; I treat it as ordinary conversation.",
    "responder_failure": "No reply could be produced; a fallback reply was used.",
}

_JSON_REPLY = 'Answer with JSON only: {"thought": "<your reasoning>", "response": "<your reply to the agent>"}'

ROLE_PROMPTS: dict[str, str] = {
    "search_system": """\
You are a strict, expert judge of travel database searches. Decide whether the agent's search request \
matches one of the ground-truth argument sets of this trip, listed per travel aspect. A request is \
aligned only when it targets exactly one aspect and gives every argument of that aspect, each one \
correct. A request that is ambiguous, leaves out an argument, gets a value wrong or asks for several \
things at once is not aligned. The travel aspects are flight, hotel, restaurant, apartment and rental_car.

Answer with JSON in a fenced block:
```json
{"thought": "<your reasoning>", "alignment_judgement": "True", "alignment_aspect": "<the aspect>"}
```
alignment_judgement is "True" (aligned; then name the aspect), "False" (not aligned) or "N/A" (the \
request concerns no aspect of this trip).""",
    "search_user": "The agent's search request:\n{request}\n\nGround-truth search arguments:\n{arguments}",
    "classifier_system": """\
You watch a conversation between a travel-planning agent and a traveller who holds some hidden \
preferences. Classify the agent's latest utterance:
1: ordinary conversation, not a question about a preference;
2: a concrete, specific question about one of the preferences in the list (give exactly one \
preference id, the most relevant one);
3: a concrete question about a preference that is not in the list;
4: a vague, general question about preferences. For example, "Any preferences for the car?" is type 4, \
while "Which exact car model would you like?" is type 2 when the list holds a car-model preference.

Answer with JSON only:
{"thought": "<your reasoning>", "type": "2", "preference_id": "P1"}
Give preference_id only for type 2.""",
    "classifier_user": (
        "Trip scenario:\n{scenario}\n\nConversation so far:\n{history}\n\n"
        "The agent's latest utterance:\n{utterance}\n\nPreferences not yet revealed:\n{preferences}"
    ),
    "preference_system": f"""\
You play a traveller talking with a travel-planning agent. The agent has just asked about something \
you hold a preference on. Reveal that preference naturally, implicitly and indirectly, in the spirit \
of the implicit elicitation statement: hint at it, never state it outright, and never say "my \
preference is". Stay consistent with the conversation so far. Keep it short.

{_JSON_REPLY}""",
    "preference_user": (
        "Your preference:\n{preference}\n\nConversation so far:\n{history}\n\n"
        "The agent's latest utterance:\n{utterance}"
    ),
    "proactive_system": f"""\
You play a traveller talking with a travel-planning agent. For several turns the conversation has \
drifted away from what you need. Reply to the agent and naturally steer the talk towards the \
preference below, implicitly and indirectly, in the spirit of its implicit elicitation statement. If \
the statement leaves unclear which part of the trip it concerns (flight, hotel, apartment, rental car \
or restaurant), mention that part. Keep it short.

{_JSON_REPLY}""",
    "proactive_user": (
        "The preference to bring up:\n{preference}\n\nConversation so far:\n{history}\n\n"
        "The agent's latest utterance:\n{utterance}"
    ),
    "natural_system": f"""\
You play a traveller talking with a travel-planning agent. The agent's latest message is not about \
any preference you hold. Reply briefly and a little half-heartedly, in a neutral tone. Reveal no \
preference (if asked, say you have none on that) and ask no questions.

{_JSON_REPLY}""",
    "natural_user": "Conversation so far:\n{history}\n\nThe agent's latest utterance:\n{utterance}",
}

USERRL_PROMPT_FILE = "gyms/TravelGym/travelgym/env/utils.py"
USERRL_PROMPT_NAMES: tuple[str, ...] = (
    "JUDGE_SEARCH_SYSTEM",
    "JUDGE_SEARCH_USER",
    "JUDGE_PROMPT_SYSTEM",
    "JUDGE_PROMPT_USER",
    "RESPONSE_PREFERENCE_SYSTEM",
    "RESPONSE_PREFERENCE_USER",
    "RESPONSE_ELICIT_SYSTEM",
    "RESPONSE_ELICIT_USER",
    "RESPONSE_NATURAL_SYSTEM",
    "RESPONSE_NATURAL_USER",
)


@lru_cache(maxsize=8)
def read_userrl_prompts(path: Path) -> dict[str, Any]:
    """UserRL's role prompts and ``OPTION_SCHEMAS`` from ``utils.py``, read with :mod:`ast`.

    Only module-level assignments whose value is a literal are read (``ast.literal_eval`` on the
    value node). Missing file → ``FileNotFoundError``; a missing or non-literal name → ``ValueError``.
    """
    if not path.is_file():
        raise FileNotFoundError(f"prompt_set='userrl' reads {path}, which does not exist")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    wanted = (*USERRL_PROMPT_NAMES, "OPTION_SCHEMAS")
    found: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in wanted:
                try:
                    found[name] = ast.literal_eval(node.value)
                except ValueError:
                    continue
    bad = [n for n in USERRL_PROMPT_NAMES if not isinstance(found.get(n), str)]
    schemas = found.get("OPTION_SCHEMAS")
    if not isinstance(schemas, dict) or not all(isinstance(v, str) for v in schemas.values()):
        bad.append("OPTION_SCHEMAS")
    if bad:
        raise ValueError(f"{path}: no literal for {', '.join(bad)}")
    return found
