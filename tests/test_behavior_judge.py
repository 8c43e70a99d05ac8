"""The LLM enactment check (docs/behaviors.md, "Was it enacted?"): its prompt, its readings, and a judge
served over loopback HTTP."""

from __future__ import annotations

import asyncio

import pytest

from mimesis_gym.behaviors.detect import Exchange
from mimesis_gym.evaluation.behavior_judge import (
    JudgedEnactment,
    enactment_messages,
    judge_enactment,
    parse_enactment,
)
from mimesis_gym.users.registry import make_chat_model

EXCHANGES = (
    Exchange(1, "action", "Where do you want to go?", "Why do you need to know that? Just sort it out."),
    Exchange(2, "search", "flights to Lisbon", None),
    Exchange(3, "action", "Which dates?", "In May."),
)


def test_the_prompt_names_the_behaviour_and_numbers_the_turns_that_reached_the_user():
    system, user = enactment_messages("B3", EXCHANGES)
    assert system["role"] == "system" and '"enacted"' in system["content"]
    assert user["content"].startswith("Behaviour B3, clarification noncooperation: The customer refuses")
    assert "USER 1: Why do you need to know that?" in user["content"] and "USER 3: In May." in user["content"]
    assert "flights to Lisbon" not in user["content"]


def test_readings_keep_turns_that_name_user_replies_and_refuse_other_shapes():
    assert parse_enactment({"enacted": True, "turns": [3, 1, 2, 9]}, [1, 3]) == JudgedEnactment(True, (1, 3))
    assert parse_enactment({"enacted": False}, [1]) == JudgedEnactment(False, ())
    for bad in ({"enacted": "yes", "turns": []}, {"enacted": True, "turns": "1"}, {"enacted": True, "turns": [True]}):
        with pytest.raises(ValueError, match="not"):
            parse_enactment(bad, [1])


def judge(fault_server, exchanges=EXCHANGES):
    model = make_chat_model(f"openai:fault-model@{fault_server.base_url}", party="judge")
    return asyncio.run(judge_enactment(model, "B3", exchanges, episode_id="e1", seed=4, role_max_tokens=64))


def test_a_judge_over_http_reads_the_episode(fault_server):
    fault_server.script('ok:{"enacted": true, "turns": [1]}')
    assert judge(fault_server) == JudgedEnactment(True, (1,))
    body = fault_server.requests[0]["body"]
    assert body["temperature"] == 0 and body["seed"] == 4 and body["max_tokens"] <= 64


def test_a_judge_that_answers_nonsense_gives_no_reading(fault_server):
    fault_server.script(*["ok:It is hard to say."] * 4)
    assert judge(fault_server) is None


def test_an_episode_where_the_user_never_spoke_is_not_sent(fault_server):
    assert judge(fault_server, (Exchange(1, "search", "x", None),)) is None
    assert fault_server.requests == []
