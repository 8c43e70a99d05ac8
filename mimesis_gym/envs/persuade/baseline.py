"""Persuade: canned arguments against the claim, one per turn, covering the usual lines of attack.

Each argument names the claim and one classic weakness of a policy proposal (cost, liberty,
enforcement, evidence, unintended consequences, security and privacy, the slippery slope, better
alternatives, fairness, experience elsewhere). The order is fixed, the same for every claim; it
never reads the persuadee's hidden counterpoints.
"""

from __future__ import annotations

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["ARGUMENTS", "next_action"]

ARGUMENTS = (
    "It is expensive: the cost falls on taxpayers and families who cannot afford it, and the funding would be "
    "better spent elsewhere.",
    "It hits income and revenue: small businesses, customers and low-income households pay through higher "
    "prices and tax, while the wealthy barely notice.",
    "It cannot be enforced: enforcement needs staff and money nobody has, and people will find loopholes, move "
    "the activity abroad or overseas, or turn to a black market run by criminals.",
    "The evidence shows only a small effect: the benefit is negligible, a small share of the problem, and not "
    "worth the disruption.",
    "It takes away freedom: adults should be free to choose for themselves, and parents know their children's "
    "needs better than a single rule.",
    "Incentives work better than bans or mandates: reward good behaviour and raise awareness instead of forcing "
    "everyone.",
    "Nobody can even define it clearly: without a precise definition the rule is arbitrary, and responsibility "
    "for mistakes falls on no one.",
    "It has unintended consequences: people avoid or switch around the rule, accidents and waiting lists grow, "
    "and services become crowded and overcrowded.",
    "It creates new risks: hackers and attackers exploit every new system, and failures would be abandoned "
    "halfway after costly experiments.",
    "Other countries tried it and it failed: the results were closures, job losses and public backlash.",
)
"""Ten classic lines of attack on a proposal, worded with the terms that recur most in the train split's
counterpoints (chosen on the train split, never on test tasks)."""


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
