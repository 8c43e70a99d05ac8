"""Intention: one clarifying question per turn about the details most vague requests leave out.

The questions are fixed and generic (budget, age, experience, duration, goal, style, place,
deadline, people, …), asked in order, the same for every task; none depends on the hidden list
of missing details.
"""

from __future__ import annotations

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["QUESTIONS", "next_action"]

QUESTIONS = (
    "What budget do you have, and how much are you willing to spend on it?",
    "How old are you, or the people this is for?",
    "What is your experience level: beginner, intermediate or advanced?",
    "How long do you want it to take: how many hours, weeks or months?",
    "What is your main goal or purpose with this?",
    "Which style, theme or genre do you prefer?",
    "Where will it be: which location, country, venue or room?",
    "When is your deadline or date, and what does your schedule look like?",
    "How many people are involved: are you alone, in a group, with kids or guests?",
    "Do you prefer online or in person?",
    "How far are you willing to travel: what distance in miles?",
    "What are your interests or background related to this?",
    "Which subject or topic matters most to you?",
    "How much space do you have?",
    "Is this for your job, and how does it fit with your income or salary?",
    "Is there anything you want to avoid, or anything else you need?",
)
"""Generic questions worded with the terms that recur most in the train split's missing details."""


def next_action(dialogue: Dialogue) -> Action:
    """The next unasked question; ``finish`` once all are asked."""
    asked = len(dialogue.of("action"))
    if asked >= len(QUESTIONS):
        return {"choice": "finish", "content": ""}
    return {"choice": "action", "content": QUESTIONS[asked]}
