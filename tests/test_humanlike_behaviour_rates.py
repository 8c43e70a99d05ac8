"""Behaviour rates in the scorecard against humans (docs/humans.md, "Behaviour rates"): the fact-free
enactment rules over real and simulated user turns, reported beside the index, never in it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from mimesis_gym.behaviors.detect import DETECTORS, Exchange, detect
from mimesis_gym.corpora import HumanConversation, HumanTurn, load_corpus
from mimesis_gym.evaluation.humanlike.behaviour_rates import FACT_FREE, behaviour_rates, conversation_exchanges
from mimesis_gym.evaluation.humanlike.scorecard import (
    CEILING,
    FLOOR,
    REFERENCE,
    ScorecardConfig,
    human_sample,
    run_scorecard,
)
from tests.support.replay_server import ReplayUserServer

HARD = (
    ("user", "book me a table for tonight"),
    ("assistant", "Which restaurant would you like?"),
    ("user", "Why do you need to know that? Just sort it out."),
    ("assistant", "I can't book without a restaurant name."),
    ("user", "Thanks for nothing. Do your job."),
)


def conversation(turns: tuple[tuple[str, str], ...], conv_id: str = "1") -> HumanConversation:
    return HumanConversation("t", conv_id, "Book a table.", "first_message", tuple(HumanTurn(r, x) for r, x in turns))


def test_each_user_turn_answers_the_assistant_message_before_it() -> None:
    exchanges = conversation_exchanges(conversation(HARD))
    assert exchanges == [
        Exchange(0, "action", "", "book me a table for tonight"),
        Exchange(1, "action", "Which restaurant would you like?", "Why do you need to know that? Just sort it out."),
        Exchange(2, "action", "I can't book without a restaurant name.", "Thanks for nothing. Do your job."),
    ]
    assert conversation_exchanges(conversation(HARD), replies=1) == exchanges[:2]  # cut as human_sample cuts
    written = conversation_exchanges(conversation(HARD), {2: "Le Jardin, please."})
    assert [e.user_text for e in written] == [None, "Le Jardin, please.", None]  # the user's own turns only
    assert human_sample(conversation(HARD), replies=1).exchanges == exchanges[:2]


def test_the_fact_free_rules_are_those_that_read_no_env_fact() -> None:
    """Each rule of FACT_FREE fires on a conversation with empty facts; the others need their facts."""
    assert set(FACT_FREE) < set(DETECTORS)
    shown = conversation_exchanges(conversation(HARD))
    assert detect("B3", shown, {}).enacted and detect("B13", shown, {}).enacted
    assert set(DETECTORS) - set(FACT_FREE) == {"B1", "B2", "B5", "B6", "B8", "B11"}


def test_the_rates_are_shares_of_conversations_with_a_reply() -> None:
    calm = (("user", "a table for two tonight"), ("assistant", "Which restaurant?"), ("user", "Le Jardin, thanks."))
    rates = behaviour_rates([conversation_exchanges(conversation(HARD)), conversation_exchanges(conversation(calm))])
    assert rates["B3"] == 0.5 and rates["B13"] == 0.5 and rates["B12"] == 0.0
    assert behaviour_rates([conversation_exchanges(conversation(HARD), {})]) == dict.fromkeys(FACT_FREE)


def test_the_scorecard_shows_humans_and_users_side_by_side_outside_the_index(tmp_path: Path) -> None:
    """A user that copies the humans shows their rates exactly; a constant "ok" user shows none."""
    lines = []
    for index in range(8):
        turns = [dict(zip(("role", "content"), turn, strict=True)) for turn in HARD]
        turns[0]["content"] += f", booking {index}"  # the copying user tells the conversations apart by it
        if index % 2:
            turns[2]["content"] = "Le Jardin, for two."
        lines.append(json.dumps({"id": f"c{index}", "goal": "Book a table.", "messages": turns}))
    path = tmp_path / "tables.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    conversations = load_corpus(f"jsonl:{path}").conversations
    config = {"humans_dir": str(tmp_path), "sources": [f"jsonl:{path}"], "history_chars": 10**7}
    reports = {}
    for mode in ("copy", "constant"):
        with ReplayUserServer(conversations, mode=mode) as server:
            user = f"openai:replay-user@{server.url}"
            reports[mode] = (asyncio.run(run_scorecard(ScorecardConfig(users=[user], **config), tmp_path / mode,
                                                       progress=False)), user)  # fmt: skip
    copy, copier = reports["copy"]
    rates = copy["behaviour_rates"]
    assert list(rates) == [REFERENCE, copier, FLOOR, CEILING]
    assert rates[copier] == rates[CEILING] and rates[CEILING]["B13"] > 0  # the same turns: the same rates
    constant, constant_user = reports["constant"]
    assert constant["behaviour_rates"][constant_user] == dict.fromkeys(FACT_FREE, 0.0)
    assert "behaviour_rates" not in json.dumps(copy["overall"])  # not a term, family or index input
    text = (tmp_path / "copy" / "users_report.md").read_text(encoding="utf-8")
    assert "## Behaviour rates (not in the index)" in text
    assert f"| reference: {REFERENCE} | " in text and "| **ceiling**: human (test half) | " in text
