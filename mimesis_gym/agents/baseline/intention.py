"""Intention: one clarifying question per turn about the details most vague requests leave out.

The questions are fixed and generic (timing, budget, people, place, experience, goal, style,
scale, constraints, …), asked in order, the same for every task; none depends on the hidden list
of missing details.
"""

from __future__ import annotations

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["QUESTIONS", "next_action"]

QUESTIONS = (
    "What is the main goal or purpose you want to achieve with this?",
    "When do you need it, and what is your timeline or deadline?",
    "What budget do you have in mind, and how much are you willing to spend?",
    "How many people are involved, and who is it for?",
    "Where will this take place, or which location do you have in mind?",
    "What is your current experience or skill level with this?",
    "Which style, type or kind do you prefer?",
    "How long should it last, and how often will you do it?",
    "What size or scale are you thinking of?",
    "Do you plan to do it yourself or hire a professional for help?",
    "Are there any constraints, requirements or things you want to avoid?",
    "Which tools, equipment or materials do you already have?",
    "What matters most to you: quality, speed, cost or comfort?",
    "How old are the people involved, and what are their needs?",
    "What format or method would you like, such as online or in person?",
    "Is there anything else important about your preferences that I should know?",
)


def next_action(dialogue: Dialogue) -> Action:
    """The next unasked question; ``finish`` once all are asked."""
    asked = len(dialogue.of("action"))
    if asked >= len(QUESTIONS):
        return {"choice": "finish", "content": ""}
    return {"choice": "action", "content": QUESTIONS[asked]}
