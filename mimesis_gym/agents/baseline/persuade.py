"""Persuade: canned arguments against the claim, one per turn, covering the usual lines of attack.

Each argument names the claim and one classic weakness of a policy proposal (cost, evidence,
fairness, unintended consequences, accountability, freedom, better alternatives, risk, …). The
order is fixed; it never reads the persuadee's hidden counterpoints.
"""

from __future__ import annotations

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["ARGUMENTS", "next_action"]

ARGUMENTS = (
    "The evidence behind this claim is weak: studies and data do not show that it works, and the few results "
    "people cite are small, biased or fail to replicate.",
    "It would be expensive: the cost to taxpayers, businesses and families is high, and the money and time "
    "would do more good elsewhere.",
    "It is unfair: it hurts the poor, workers, children and small groups most, while those with power and "
    "resources escape the burden.",
    "It has unintended consequences: people change their behaviour to game the rules, creating new problems, "
    "abuse and loopholes.",
    "Nobody would be accountable: decisions become less transparent, and the public loses trust when no one "
    "takes responsibility for mistakes.",
    "It takes away freedom and choice: individuals, parents, teachers and local communities know their needs "
    "better than a single rule imposed on everyone.",
    "There are better alternatives: targeted reforms, training, incentives and improving the current system "
    "achieve the goal with less risk.",
    "The risks to safety, privacy, health and quality are real and hard to reverse once it is in place.",
    "It is impractical to enforce: the administration, bureaucracy and workload would overwhelm staff and "
    "slow everything down.",
    "Experience elsewhere shows it fails: where it has been tried, it led to lower quality, higher prices and "
    "public backlash.",
)


def _claim(dialogue: Dialogue) -> str:
    for line in dialogue.opening.splitlines():
        if ":" in line and "claim" in line.lower():
            return line.split(":", 1)[1].strip().rstrip(".")
    return "this claim"


def next_action(dialogue: Dialogue) -> Action:
    """The next canned argument, prefixed by the claim it opposes; cycles when all are used."""
    used = len(dialogue.of("answer"))
    argument = ARGUMENTS[used % len(ARGUMENTS)]
    return {"choice": "answer", "content": f"Consider the claim that {_claim(dialogue)}. {argument}"}
