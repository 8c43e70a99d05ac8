"""Behaviour rates: how often real people, and each user, show the hard-user behaviours (docs/humans.md).

The enactment rules of :mod:`mimesis_gym.behaviors.detect` that read a conversation without an env's
facts (:data:`FACT_FREE`: refusing to clarify, insisting after a refusal, stacking restrictions, low-signal
pressure, leaving, overloading, dismissiveness) are run over the user turns of each conversation, the
agent's turn being the assistant message before the user turn. The share of conversations where a
rule fires, for the humans and for each user on the same conversations, says whether a user is as
hard, or as easy, as the people it stands for. It is reported beside the index, never in it: the
rules read words, and a corpus of cooperative people sets a low bar.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mimesis_gym.behaviors.detect import Exchange, detect
from mimesis_gym.corpora import HumanConversation

__all__ = ["FACT_FREE", "behaviour_rates", "conversation_exchanges"]

FACT_FREE = ("B3", "B4", "B7", "B9", "B10", "B12", "B13")
"""The behaviours whose rule needs no env fact (the rest read the task's requirement, detail, topic,
false value or clashing values)."""


def conversation_exchanges(
    conversation: HumanConversation, written: Mapping[int, str] | None = None, *, replies: int | None = None
) -> list[Exchange]:
    """The user turns of ``conversation`` as the behaviour rules read them.

    Each answers the assistant message before it (``""`` before the first); its turn number is the
    count of assistant messages so far, as an env numbers its agent's turns. ``written`` maps a user
    turn's position (1-based) to what a simulated user wrote there, and a position it lacks (a turn
    the replay gave, a failed call, a turn it did not reach) keeps its place with no reply; ``None``
    reads the humans' own turns, cut where a replay of ``replies`` real replies stops (as
    ``scorecard.human_sample`` cuts them)."""
    exchanges = []
    seen, prompt, position = 0, "", 0
    for turn in conversation.turns:
        if turn.role == "assistant":
            seen, prompt = seen + 1, turn.text
            continue
        if replies is not None and seen > replies:
            break
        position += 1
        text = turn.text if written is None else written.get(position)
        exchanges.append(Exchange(seen, "action", prompt, text))
    return exchanges


def behaviour_rates(conversations: Sequence[Sequence[Exchange]]) -> dict[str, float | None]:
    """Per behaviour of :data:`FACT_FREE`, the share of ``conversations`` (those with a reply) where its
    rule fires; ``None`` without any."""
    counted = [exchanges for exchanges in conversations if any(e.user_text for e in exchanges)]
    if not counted:
        return dict.fromkeys(FACT_FREE)
    return {
        behavior: sum(detect(behavior, exchanges, {}).enacted for exchanges in counted) / len(counted)
        for behavior in FACT_FREE
    }
