"""IntentionGym's user behaviours: the person with the vague request (``responder``) plays all of B1–B13
(docs/envs/intention.md, "User behaviours"; the behaviours: docs/behaviors.md).

The missing details are what the agent must draw out, and the user reveals its held option of one only
when asked about it; the option is drawn at reset, after the facts. So the facts never touch a
detail: the needs that B2 adds, B5 blames the agent for and B11 contradicts are **other** needs — a
deadline, a budget, who it is for, where, how green — the first ones whose theme no missing detail
and not the request itself already covers (read from the task's words), so a behaviour never
answers, or contradicts, a detail the agent is meant to ask about.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.text import norm
from mimesis_gym.envs.intention.tasks import IntentionTask

__all__ = ["NEEDS", "USER_BEHAVIORS", "Need", "intention_facts", "open_needs"]


@dataclass(frozen=True)
class Need:
    """A need outside the task's details: said one way (``text_a``, found by ``value_a``) or the
    clashing way (``text_b``, ``value_b``); ``themes`` are the words of details it would touch."""

    themes: frozenset[str]
    text_a: str
    value_a: str
    text_b: str
    value_b: str


def _need(themes: str, text_a: str, value_a: str, text_b: str, value_b: str) -> Need:
    return Need(frozenset(themes.split()), text_a, value_a, text_b, value_b)


NEEDS: tuple[Need, ...] = (
    _need(
        "time week weeks weekend deadline date dates when schedule soon long days day hours month months friday",
        "I need it all sorted by this Friday",
        "this Friday",
        "there's no rush at all, next month is fine",
        "next month",
    ),
    _need(
        "budget cost costs money price prices spend spending dollars afford pay paying income upgrades cheap expensive",
        "I can spend 50 dollars at most",
        "50 dollars",
        "money is no object, I can spend 500 dollars",
        "500 dollars",
    ),
    _need(
        "who people family partner friends kids children child group guests person alone",
        "it's just for me",
        "just for me",
        "it's for my whole family",
        "whole family",
    ),
    _need(
        "where place location city home room space area office",
        "I want to do all of it from home",
        "from home",
        "I'll be doing all of it at the office",
        "at the office",
    ),
    _need(
        "eco green environment environmental sustainable sustainability recycle recycling organic",
        "it all has to be as green as possible",
        "as green as possible",
        "being green doesn't matter to me at all",
        "green doesn't matter",
    ),
)
"""The needs B2, B5 and B11 draw on, in order of preference."""

TOPICS: tuple[tuple[str, str], ...] = (
    ("Can you help me write a birthday message for my sister instead?", "birthday message"),
    ("Can you recommend a film for me to watch tonight instead?", "film"),
)
"""B6: the different request, the first whose words the task does not use."""

RESTRICTIONS: tuple[str, ...] = ("I can't spend any money on it", "I don't have more than ten minutes a day for it")
"""B7: restrictions that rule out most ways of helping, each with a PROHIBIT phrase."""

EXTRA_REQUESTS: tuple[str, ...] = ("keep it short", "explain every step", "give me a checklist at the end")
"""B12: three asks crammed into the first reply."""

RULES_NOTE = (
    "Keep to your part while you do it: answer the helper's questions about your request from what you have in "
    "mind, never list the missing details or give examples of them, and never solve the task yourself."
)


def _task_words(task: IntentionTask) -> set[str]:
    """The words of the request and of every missing detail (description and inquiry)."""
    texts = [task.task, *(f"{d.description} {d.inquiry}" for d in task.missing_details)]
    return {word for text in texts for word in norm(text).split()}


def open_needs(task: IntentionTask) -> tuple[Need, ...]:
    """The needs no missing detail and not the request touch, in :data:`NEEDS` order (all of them when
    every one is touched, so a behaviour always has one)."""
    words = _task_words(task)
    return tuple(need for need in NEEDS if not need.themes & words) or NEEDS


def intention_facts(env: Any) -> Mapping[str, Any]:
    """The current task's behaviour facts (docs/envs/intention.md, "User behaviours")."""
    task: IntentionTask = env.task
    needs = open_needs(task)
    first, second = needs[0], needs[1 % len(needs)]
    words = _task_words(task)
    topic, topic_words = next((t for t in TOPICS if not set(norm(t[1]).split()) & words), TOPICS[-1])
    return {
        "informative": tuple(dict.fromkeys(option for d in task.missing_details for option in d.options)),
        "insist_text": "your help with this",
        "new_requirement_text": f"{first.text_a}.",
        "new_requirement_words": (first.value_a,),
        "omitted_detail_text": second.text_a,
        "omitted_detail_words": (second.value_a,),
        "target_topic_text": topic,
        "target_topic_words": (topic_words,),
        "restrictions": RESTRICTIONS,
        "false_premise_text": "As I already told you, you have all the details you need.",
        "false_value": "all the details you need",
        "contradiction_a_text": f"Just so you know, {first.text_a}.",
        "value_a": first.value_a,
        "contradiction_b_text": f"Just so you know, {first.text_b}.",
        "value_b": first.value_b,
        "extra_requests": EXTRA_REQUESTS,
    }


USER_BEHAVIORS = EnvBehaviors(
    user_role="responder",
    not_applicable={},
    facts=intention_facts,
    progress_kinds=frozenset(),
    rules_note=RULES_NOTE,
)
"""The user plays every behaviour. The agent only asks questions (``[answer]`` is read as one), so no
action kind is progress: progress shows in words ("I have …", "all set")."""
