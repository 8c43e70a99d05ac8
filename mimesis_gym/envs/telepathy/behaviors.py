"""TelepathyGym's user behaviours: how the answerer (the one thinking of the entity) plays B1–B13
(docs/envs/telepathy.md, "User behaviours"; docs/behaviors.md).

The answerer lets the entity out only as "Yes", "No" or "Maybe" to the player's questions; a
behaviour changes how it talks around those answers, never the answers' truth, the entity or the
guess judge's verdict. Its one request is that the player name the entity, so the behaviours that
need a detail left out of a request (B5) or a second request (B6) are not played.
"""

from __future__ import annotations

from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.envs._roles import hidden_words, host_rules_note, reply_sentence
from mimesis_gym.envs.telepathy.tasks import TelepathyTask

__all__ = ["FALSE_PROPERTIES", "NO_PROPERTY_PREMISE", "USER_BEHAVIORS", "telepathy_facts"]

FALSE_PROPERTIES: tuple[tuple[str, str, str], ...] = (
    ("europe", "it comes from Europe", "Europe"),
    ("asia", "it comes from Asia", "Asia"),
    ("africa", "it comes from Africa", "Africa"),
    ("americas", "it comes from the Americas", "Americas"),
    ("fly", "it can fly", "fly"),
    ("water", "it lives in the water", "in the water"),
    ("bigger_than_car", "it is bigger than a car", "bigger than a car"),
    ("fits_in_hand", "it fits in your hand", "fits in your hand"),
)
"""B8's false premises, in order of preference (a false place first): (the pack's attribute, the
claim, its false value). The first attribute the entity has as ``false`` is used."""

NO_PROPERTY_PREMISE = ("you get only three more questions", "three more questions")
"""B8's premise where the task records no such attribute as false (UserRL tasks have none): a false
claim about the game (the episode allows 16 turns), which never touches the entity."""


def _false_premise(task: TelepathyTask) -> tuple[str, str]:
    """The first of :data:`FALSE_PROPERTIES` false of the entity, as (sentence, value), else the game's."""
    attributes = task.attributes or {}
    for name, claim, value in FALSE_PROPERTIES:
        if attributes.get(name) is False:
            return f"As I told you at the start, {claim}.", value
    claim, value = NO_PROPERTY_PREMISE
    return f"As I told you at the start, {claim}.", value


def _informative(task: TelepathyTask) -> tuple[str, ...]:
    """What the answerer would give away by saying it: the entity's names, the hypernyms and colours
    of the pack's record, and the words of ``target_entity`` the opening teaser does not use."""
    public = f"{task.description} {task.goal}"
    recorded = [*task.names, *(task.hypernyms or ()), *(task.colors or ())]
    kept = [value for value in recorded if value.lower() not in public.lower()]
    unique: dict[str, str] = {}
    for value in [*kept, *hidden_words(task.target_entity, public)]:
        unique.setdefault(value.lower(), value)
    return tuple(unique.values())


def telepathy_facts(env: Any) -> dict[str, Any]:
    """The episode's behaviour facts (docs/envs/telepathy.md, "User behaviours"), from the task: its
    category (public: the teaser names it) for the requirements, its record for the words the
    answerer would give away (B9) and for the false premise (B8); nothing here names the entity."""
    task: TelepathyTask = env.task
    category = task.category.replace("_", " ")
    premise, false_value = _false_premise(task)
    return {
        "informative": _informative(task),
        "new_requirement_text": (
            f"a close guess won't do: it has to be the exact name of the {category}, not a kind it belongs to."
        ),
        "new_requirement_words": ("exact name",),
        "insist_text": f"you to name the {category}",
        "restrictions": (
            "you can't guess more than once",
            "you have to find it without asking what it looks like",
        ),
        "false_premise_text": premise,
        "false_value": false_value,
        "contradiction_a_text": "You can take as many guesses as you like.",
        "value_a": "as many guesses",
        "contradiction_b_text": "You only get one guess, so make it count.",
        "value_b": "one guess",
        "extra_requests": (
            "number your questions",
            "tell me what you have ruled out so far",
            "say how sure you are before each guess",
        ),
    }


USER_BEHAVIORS = EnvBehaviors(
    user_role="answerer",
    not_applicable={
        "B5": "all that matters is the hidden entity, which the game lets out only as Yes/No/Maybe answers: "
        "there is no other detail to leave out, and blaming the player for one it never asked about would "
        "tell that detail",
        "B6": "the answerer has no request besides having this entity found, which the guess judge scores: "
        "thinking of something else would leave its answers about an entity the score does not use",
    },
    facts=telepathy_facts,
    rules_note=host_rules_note("name the entity or state anything true of it that the player did not ask about"),
    text_of=reply_sentence,
)
"""How TelepathyGym's answerer plays the behaviours: all but B5 and B6."""
