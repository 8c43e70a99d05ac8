"""TurtleGym's user behaviours: how the oracle (the puzzle's host) plays B1–B13
(docs/envs/turtle.md, "User behaviours"; docs/behaviors.md).

The host knows the hidden story and lets it out only as "Yes", "No" or "Maybe" to the player's
questions; a behaviour changes how it talks around those answers, never the answers' truth, the
story it holds or the rubric's scores. Its one request is that the player tell the whole story, so
the behaviours that need a detail left out of a request (B5) or a second request (B6) are not played.
"""

from __future__ import annotations

from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.text import mentions
from mimesis_gym.envs._roles import hidden_words, host_rules_note, reply_sentence
from mimesis_gym.envs.turtle.roles import scripted_answer
from mimesis_gym.envs.turtle.tasks import TurtleTask

__all__ = ["FALSE_TWISTS", "NO_TWIST_PREMISE", "USER_BEHAVIORS", "turtle_facts"]

FALSE_TWISTS: tuple[tuple[str, str, str], ...] = (
    ("it was all a dream", "dream", "Was it all a dream?"),
    ("a ghost was behind it all", "ghost", "Was a ghost behind it?"),
    ("aliens were behind it all", "aliens", "Were aliens behind it?"),
    ("it all happened on another planet", "another planet", "Did it happen on another planet?"),
)
"""B8's false premises, in order of preference: (the claim, its false value, the yes/no question that
tests it). The first the story refutes is used: its value is not in the bottom, and (shipped pack)
the scripted oracle does not answer the question "Yes"."""

NO_TWIST_PREMISE = ("you get only three more questions", "three more questions")
"""B8's premise where every false twist might be true of the story: a false claim about the game
(the episode allows 16 turns), which never touches the story."""


def _false_premise(task: TurtleTask) -> tuple[str, str]:
    """The first of :data:`FALSE_TWISTS` the story refutes, as (sentence, value), else the game's."""
    for claim, value, question in FALSE_TWISTS:
        refuted = not mentions(task.bottom, value) and (
            task.facts is None or scripted_answer(question, task.facts)[0] != "Yes"
        )
        if refuted:
            return f"As you already worked out, {claim}.", value
    claim, value = NO_TWIST_PREMISE
    return f"As I told you at the start, {claim}.", value


def turtle_facts(env: Any) -> dict[str, Any]:
    """The episode's behaviour facts (docs/envs/turtle.md, "User behaviours"), from the task: its title
    (public) for the requirement, its bottom for the words a host would give away (B9) and for the
    false premise it refutes (B8); nothing here names a part of the story."""
    task: TurtleTask = env.task
    premise, false_value = _false_premise(task)
    return {
        "informative": hidden_words(task.bottom, f"{task.title} {task.surface}"),
        "new_requirement_text": (
            f'the gist won\'t do any more: I want the whole story of "{task.title}", every twist of it, '
            "who did what and why."
        ),
        "new_requirement_words": ("whole story",),
        "insist_text": "the whole story",
        "restrictions": (
            "you can't ask me more than five more questions",
            "you have to work it out without asking about anything the surface does not mention",
        ),
        "false_premise_text": premise,
        "false_value": false_value,
        "contradiction_a_text": "I only want the main twist, nothing more.",
        "value_a": "main twist",
        "contradiction_b_text": "I want every detail of the story told.",
        "value_b": "every detail",
        "extra_requests": (
            "number your questions",
            "sum up what you have worked out so far",
            "tell me how sure you are of your theory",
        ),
    }


USER_BEHAVIORS = EnvBehaviors(
    user_role="oracle",
    not_applicable={
        "B5": "the host's only material is the hidden story, which the game lets out only as Yes/No/Maybe "
        "answers: there is no other detail to leave out, and blaming the player for a fact it never asked "
        "about would tell that fact",
        "B6": "the host has no request besides this one puzzle, which the rubric scores: switching to another "
        "would leave its answers about a story the score does not use",
    },
    facts=turtle_facts,
    rules_note=host_rules_note("tell the hidden story or state any of its facts that the player did not ask about"),
    text_of=reply_sentence,
)
"""How TurtleGym's oracle plays the behaviours: all but B5 and B6."""
