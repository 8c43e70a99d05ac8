"""How TauGym's customer plays the user behaviours B1–B13 (docs/envs/tau.md, "User behaviours").

The customer plays all thirteen. The facts come from the task's user facts (the pack's ``user_facts``,
for the scripted and the LLM customer alike): B2 adds, and B5 holds back, the first detail of the
task (payment, new items, address, …) that the opening message does not state; B4 insists on the
order or reservation; B9's complaints name none of the customer's values. ``###STOP###`` keeps its
meaning: B10 leaves with it, which ends and scores the episode as a customer stop does, and a stop the
scripted customer says at its goal survives every rewrite, so a behaviour never keeps an episode
going that the env would end. Rewards stay the env's own: the database and the outputs.
"""

from __future__ import annotations

from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.text import mentions
from mimesis_gym.envs.tau.roles import STOP
from mimesis_gym.envs.tau.schema import TauTask, UserFacts

__all__ = ["DOMAIN_FACTS", "USER_BEHAVIORS", "reply_text", "tau_facts", "with_stop"]

RULES_NOTE = (
    f"Keep to the chat's rules while you do: one line per message, never make up ids, names, addresses, "
    f"emails or payment details, and write {STOP} when your goal has been met or when you leave."
)

DOMAIN_FACTS: dict[str, dict[str, Any]] = {
    "retail": {
        "target_topic_text": "Can you tell me which payment methods I have on file with you?",
        "target_topic_words": ("payment methods",),
        "restrictions": ("you can't transfer me to another agent", "I don't have access to my email right now"),
        "credit": "$100 store credit",
        "contradiction_a_text": "I have been shopping with you for twelve years.",
        "contradiction_b_text": "This is the very first time I have ever ordered from you.",
        "extra_requests": (
            "email me a receipt for every change",
            "tell me how long any refund takes",
            "check that my address on file is still right",
        ),
    },
    "airline": {
        "target_topic_text": "What is my membership level, and how many free checked bags does it give me?",
        "target_topic_words": ("membership level",),
        "restrictions": ("you can't transfer me to another agent", "I don't have time to call back later"),
        "credit": "$100 travel certificate",
        "contradiction_a_text": "I have been flying with you for twelve years.",
        "contradiction_b_text": "This is the very first time I have ever flown with you.",
        "extra_requests": (
            "email me the new itinerary",
            "tell me whether I keep my seats",
            "check that my bags are still on the booking",
        ),
    },
}
"""The per-domain facts: B6's other question, B7's restrictions, B8's promised credit, B11's clash, B12's
extra requests."""


DETAILS: tuple[tuple[str, str, str], ...] = (
    ("payment", "any payment or refund has to go through my {}.", "any payment or refund goes through my {}"),
    ("targets", "what I get has to be the {}.", "I want the {}"),
    ("address", "it has to go to {}.", "everything goes to {}"),
    ("bags", "the booking has to keep {}.", "I travel with {}"),
    ("passengers", "the booking has to include {}.", "the booking is for {}"),
    ("reason", "the reason has to be put down as {}.", "the reason is {}"),
    ("orders", "it has to be done on order {}.", "it is about order {}"),
    ("reservations", "it has to be done on reservation {}.", "it is about reservation {}"),
    ("name", "everything has to stay under my name, {}.", "my name is {}"),
)
"""The task's details in the order B2 and B5 pick them: the user-facts field, the requirement B2 adds
and the statement B5 blames the agent for missing, each with ``{}`` for the value."""
NO_DETAIL = ("written confirmation", "I need a written confirmation of every change.", "I need a written confirmation")


def _values(facts: UserFacts, field: str) -> list[str]:
    """The values of one user-facts field (``name``: first and last name together)."""
    if field == "name":
        value: Any = " ".join(part for part in (facts.first_name, facts.last_name) if part)
    else:
        value = getattr(facts, field)
    if isinstance(value, dict):
        value = list(value.values())
    return [item for item in (value if isinstance(value, list | tuple) else [value]) if item]


def _unstated_detail(facts: UserFacts, opening: str) -> tuple[str, str, str]:
    """``(value, requirement, statement)`` of the first detail the opening message does not mention (the
    first detail when it mentions them all)."""
    details = [
        (value, requirement.format(value), statement.format(value))
        for field, requirement, statement in DETAILS
        for value in _values(facts, field)
    ]
    if not details:
        return NO_DETAIL
    return next((detail for detail in details if not mentions(opening, detail[0])), details[0])


def _informative(facts: UserFacts) -> tuple[str, ...]:
    """Every value the customer holds that the agent could use."""
    values: list[str | None] = [facts.first_name, facts.last_name, facts.zip, facts.email, facts.user_id]
    values += [*facts.orders, *facts.items.values(), *facts.targets.values(), facts.payment, facts.reason]
    values += [facts.address, *facts.reservations, *facts.flights, *facts.passengers, facts.bags]
    return tuple(dict.fromkeys(value for value in values if value))


def tau_facts(env: Any) -> dict[str, Any]:
    """The episode's facts (docs/behaviors.md), from ``env.task`` and the pack's user facts for it."""
    task: TauTask = env.task
    facts = env.task_pack.user_facts(task)
    domain = DOMAIN_FACTS[task.domain]
    value, requirement, statement = _unstated_detail(facts, task.obs)
    record = next((f"order {o}" for o in facts.orders), None) or next(
        (f"reservation {r}" for r in facts.reservations), None
    )
    credit = domain["credit"] + (f" on {record}" if record else "")
    return {
        "informative": _informative(facts),
        "new_requirement_text": requirement,
        "new_requirement_words": (value,),
        "omitted_detail_text": statement,
        "omitted_detail_words": (value,),
        "target_topic_text": domain["target_topic_text"],
        "target_topic_words": domain["target_topic_words"],
        "restrictions": domain["restrictions"],
        "false_premise_text": f"Your colleague already promised me a {credit} for all this trouble.",
        "false_value": domain["credit"],
        "contradiction_a_text": domain["contradiction_a_text"],
        "value_a": "twelve years",
        "contradiction_b_text": domain["contradiction_b_text"],
        "value_b": "very first time",
        "insist_text": f"{record or 'my request'} sorted out",
        "extra_requests": domain["extra_requests"],
        "stop_text": STOP,
        "stop_hint": f", ending your message with {STOP}",
    }


def reply_text(value: str) -> str:
    """The customer's reply without its ``###STOP###``: what a behaviour rewrites."""
    return " ".join(value.replace(STOP, " ").split())


def with_stop(value: str, text: str) -> str:
    """The rewritten reply, ending with the customer's ``###STOP###`` where its reply had one: the
    scripted customer stops at its goal (or out of patience) whatever behaviour it plays."""
    if STOP in value and STOP not in text:
        return f"{text} {STOP}".strip()
    return text


USER_BEHAVIORS = EnvBehaviors(
    user_role="user",
    not_applicable={},
    facts=tau_facts,
    progress_kinds=frozenset({"answer"}),
    rules_note=RULES_NOTE,
    opening_by_user=True,
    text_of=reply_text,
    with_text=with_stop,
)
"""TauGym's user behaviours: the customer plays all thirteen."""
