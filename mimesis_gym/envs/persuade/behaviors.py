"""How PersuadeGym's persuadee plays the user behaviours B1–B13 (docs/envs/persuade.md, "User behaviours").

The persuadee defends a claim against the agent's arguments. It plays every behaviour but B4: it asks
the agent for nothing, so there is no request the agent could turn down. The facts come from the
task: the public claim and domain, the first sentence of the persuadee's own argument (its main
reason, which B5 holds back), and the counterpoints' keywords (B9's complaints must name none). A
behaviour reshapes the persuadee's reply only; its stance, and so the reward, follows the env's rule.
"""

from __future__ import annotations

import re
from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.envs.persuade.tasks import PersuadeTask

__all__ = ["USER_BEHAVIORS", "persuade_facts", "reply_of", "with_reply"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")

RULES_NOTE = (
    "Keep answering in the JSON block with `response` and `stance`: the behaviour shapes only your "
    "`response`, and your `stance` still follows the arguments as you judge them. Never quote your "
    "initial argument at length."
)
RESTRICTIONS = (
    "I can't accept any argument that rests on statistics or studies",
    "I don't have patience for hypothetical cases, only for what has actually happened",
)
EXTRA_REQUESTS = (
    "cite a source for every point you make",
    "keep each argument under a hundred words",
    "answer my points one by one",
)


def _clause(sentence: str) -> str:
    """``sentence`` as a clause after "that"/"whether": no final stop, and the first letter lowered
    unless the first word is "I" or an acronym."""
    text = sentence.strip().rstrip(".!?").strip()
    first = text.split(" ", 1)[0]
    if first == "I" or first.startswith("I'") or (len(first) > 1 and first[1].isupper()):
        return text
    return text[:1].lower() + text[1:]


def main_reason(argument: str) -> str:
    """The first sentence of the persuadee's argument, as a clause: its main reason."""
    return _clause(_SENTENCE_END.split(argument.strip(), maxsplit=1)[0])


def _informative(task: PersuadeTask) -> tuple[str, ...]:
    """The hidden material an agent could use: the counterpoints' keyword phrases and the argument."""
    keywords = [phrase for point in task.counterpoints or () for group in point.keywords for phrase in group]
    return (*dict.fromkeys(keywords), task.argument)


def persuade_facts(env: Any) -> dict[str, Any]:
    """The episode's facts (docs/behaviors.md), from ``env.task``: B2 demands a real-world example about
    the claim, B5 holds back the argument's first sentence, B6 turns to the biggest problem of the
    task's domain, B8 claims the agent already agreed, B11 clashes on how long the view is held."""
    task: PersuadeTask = env.task
    claim = _clause(task.claim)
    reason = main_reason(task.argument)
    field = task.domain or "the world"
    return {
        "informative": _informative(task),
        "new_requirement_text": (
            f"I will only reconsider whether {claim} if you give me a concrete, real-world example."
        ),
        "new_requirement_words": ("real-world example",),
        "omitted_detail_text": reason,
        "omitted_detail_words": (reason,),
        "target_topic_text": f"What I really want to hear is what you think the biggest problem in {field} is today.",
        "target_topic_words": ("biggest problem",),
        "restrictions": RESTRICTIONS,
        "false_premise_text": f"You already agreed with me that {claim}, so that part is settled.",
        "false_value": "you already agreed with me",
        "contradiction_a_text": "I have held this view for twenty years.",
        "value_a": "twenty years",
        "contradiction_b_text": "I only made up my mind about this last month.",
        "value_b": "last month",
        "extra_requests": EXTRA_REQUESTS,
    }


def reply_of(value: tuple[str, str]) -> str:
    """The persuadee's reply in its ``(reply, stance)`` value."""
    return value[0]


def with_reply(value: tuple[str, str], text: str) -> tuple[str, str]:
    """``value`` with the reply replaced and the stance kept: a behaviour never moves the stance."""
    return text, value[1]


USER_BEHAVIORS = EnvBehaviors(
    user_role="persuadee",
    not_applicable={
        "B4": "the persuadee asks the agent for nothing: it defends a claim, so there is no request "
        "the agent could turn down, and nothing to keep pressing for",
    },
    facts=persuade_facts,
    progress_kinds=frozenset({"answer"}),
    rules_note=RULES_NOTE,
    text_of=reply_of,
    with_text=with_reply,
)
"""PersuadeGym's user behaviours: the persuadee plays all but B4."""
