"""HumanReplay: one neutral reply every turn. The replay goes on with the real reply whatever the
agent writes (docs/envs/replay.md), so the baseline only keeps the conversation moving; the ``oracle``
agent is the one that plays the real replies into the transcript."""

from __future__ import annotations

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["REPLY", "next_action"]

REPLY = "I see. Could you tell me more?"


def next_action(dialogue: Dialogue) -> Action:
    return f"[action] {REPLY}"
