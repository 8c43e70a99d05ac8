"""TravelGym roles: scripted judge/classifier rules, LLM roles with test doubles, failures.

See docs/envs/travel.md, "Roles".
"""

import json
import random

import gymnasium as gym
import pytest

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from mimesis_gym.envs.travel.prompts import FEEDBACK, NATURAL_REPLIES, ROLE_PROMPTS
from mimesis_gym.envs.travel.roles import classify_utterance, extract_dates, format_history, judge_search
from mimesis_gym.envs.travel.tasks import load_original_pack
from tests.support.chat_models import ScriptedChatModel, refusal
from tests.support.fault_server import FaultServer

ENV_ID = "mimesis/TravelGym-v0"
DEMO = "travel-demo-01"
CAR_SEARCH = "[search] rental car in Lisbon from May 3 to May 7"
ELECTRIC = "[action] Would you like an electric car or a petrol one?"


def demo_task():
    return load_original_pack().get(DEMO)


def start(**kwargs):
    kwargs.setdefault("split", "demo")
    env = gym.make(ENV_ID, **kwargs)
    _, info = env.reset(seed=0, options={"task_id": DEMO})
    return env, info


# ---------------------------------------------------------------- scripted rules


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("May 3 to May 7th", {(5, 3), (5, 7)}),
        ("the 3rd of may until 7 May", {(5, 3), (5, 7)}),
        ("sept 12, Sep. 13 and september 14", {(9, 12), (9, 13), (9, 14)}),
        ("2025-05-03 to 05/07/2025", {(5, 3), (5, 7)}),
        ("5/3 and 5-7", {(5, 3), (5, 7)}),
        ("at 13/40 or in March", set()),
    ],
)
def test_dates_are_extracted_in_every_written_form(text, dates):
    assert extract_dates(text) == dates


@pytest.mark.parametrize(
    ("query", "verdict"),
    [
        ("rental car in Lisbon from May 3 to May 7", ("True", "rental_car")),
        ("Find a car in lisbon, pick up 3 May, drop off 7 May", ("True", "rental_car")),
        ("rental car in Lisbon from May 3", ("False", None)),
        ("rental car in Porto from May 3 to May 7", ("False", None)),
        ("car and restaurant in Lisbon on May 5, May 3 to May 7", ("False", None)),
        ("flights to Lisbon on May 3", ("N/A", None)),
        ("something in Lisbon", ("N/A", None)),
        ("Dinner in Lisbon on the 5th of May", ("True", "restaurant")),
    ],
)
def test_scripted_search_judge(query, verdict):
    assert judge_search(query, demo_task()) == verdict


def test_scripted_search_judge_needs_the_flight_direction():
    task = next(t for t in load_original_pack().pool("test") if "flight" in t.dimensions)
    args = task.aspects["flight"].arguments
    assert judge_search(f"flight from {args['origin']} to {args['destination']} on {args['date']}", task)[0] == "True"
    assert judge_search(f"flight to {args['destination']} from {args['origin']} on {args['date']}", task)[0] == "False"


@pytest.mark.parametrize(
    ("utterance", "expected"),
    [
        ("Would you like an electric car or a petrol one?", ("2", "P1")),
        ("what about insurance and damage protection", ("2", "P2")),  # no "?", but a question word first
        ("How highly rated should the restaurant be?", ("2", "P4")),
        ("I booked the car.", ("1", None)),
        ("Do you have any preferences for the car?", ("4", None)),
        ("Anything else in mind?", ("4", None)),
        ("Do you need GPS navigation in the car?", ("3", None)),  # a catalogue preference this traveller lacks
        ("Is there seafood you love for the car?", ("4", None)),  # car named: restaurant keywords are out of scope
        ("Tell me about the weather.", ("1", None)),
    ],
)
def test_scripted_classifier(utterance, expected):
    task = demo_task()
    assert classify_utterance(utterance, task.numbered, task) == expected


def test_scripted_classifier_ties_go_to_the_lowest_preference_number():
    task = demo_task()
    assert classify_utterance("What about the fuel or the insurance?", task.numbered, task) == ("2", "P1")


def test_history_rendering():
    assert format_history([]) == "No previous conversation."
    history = [
        {"role": "agent", "content": "Hi", "note": "ordinary"},
        {"role": "user", "content": "Hello"},
        {"role": "database", "content": "Results"},
    ]
    assert format_history(history) == "Agent: Hi\n[Note: ordinary]\n\nUser: Hello\n\nDatabase: Results"


# ---------------------------------------------------------------- LLM roles with test doubles


def judge_reply(**fields):
    return json.dumps({"thought": "checked", **fields})


def test_judge_json_boolean_is_an_outage_unless_lenient():
    judge = ScriptedChatModel([judge_reply(alignment_judgement=True, alignment_aspect="rental_car")])
    env, _ = start(judge=judge)
    obs, reward, _, _, info = env.step(CAR_SEARCH)
    assert (obs, reward, info["user_failure"]) == (FEEDBACK["search_outage"], 0.0, "search_judge:invalid_value")
    env, _ = start(judge=judge, lenient_parsing=True)
    obs, reward, _, _, info = env.step(CAR_SEARCH)
    assert reward == 0.2 and info["user_failure"] is None and obs.startswith(FEEDBACK["search_ok"])


@pytest.mark.parametrize(
    ("fields", "failure"),
    [
        ({"alignment_judgement": "True"}, "search_judge:bad_json"),
        ({"alignment_judgement": "Maybe"}, "search_judge:invalid_value"),
        ({"alignment_judgement": "True", "alignment_aspect": "flight"}, "search_judge:invalid_value"),
        ({"verdict": "True"}, "search_judge:bad_json"),
    ],
)
def test_search_judge_failures_are_outages(fields, failure):
    env, _ = start(judge=ScriptedChatModel([judge_reply(**fields)]))
    obs, reward, _, _, info = env.step(CAR_SEARCH)
    assert (obs, reward, info["user_failure"]) == (FEEDBACK["search_outage"], 0.0, failure)


def test_search_judge_verdicts_and_aspect_spelling():
    replies = [
        judge_reply(alignment_judgement="True", alignment_aspect=" Car Rental "),
        judge_reply(alignment_judgement="N/A"),
        judge_reply(alignment_judgement="False"),
    ]
    env, _ = start(judge=ScriptedChatModel(replies))
    assert env.step(CAR_SEARCH)[1] == 0.2
    assert env.step("[search] x")[0] == FEEDBACK["search_na"]
    assert env.step("[search] y")[0] == FEEDBACK["search_false"]


def test_search_judge_prompt_lists_every_aspect_and_its_arguments():
    judge = ScriptedChatModel([judge_reply(alignment_judgement="False")])
    env, _ = start(judge=judge)
    env.step(CAR_SEARCH)
    call = judge.calls[0]
    system, user = call["messages"][0]["content"], call["messages"][1]["content"]
    assert system == ROLE_PROMPTS["search_system"]
    assert "rental car in Lisbon from May 3 to May 7" in user
    assert 'Aspect Name: rental_car\n{\n    "city": "Lisbon",' in user and "Aspect Name: restaurant" in user
    assert (call["role"], call["json_keys"], call["temperature"], call["max_tokens"]) == (
        "search_judge",
        ("alignment_judgement",),
        0.0,
        2048,
    )


def test_the_fifth_search_is_an_outage_without_a_judge_call():
    judge = ScriptedChatModel([judge_reply(alignment_judgement="False")])
    env, _ = start(judge=judge)
    for _ in range(5):
        obs = env.step(CAR_SEARCH)[0]
    assert obs == FEEDBACK["search_outage"] and len(judge.calls) == 4


def test_garbage_classifier_reply_falls_back_to_a_natural_reply():
    env, _ = start(judge=ScriptedChatModel(["no json here"]), privileged=True)
    obs, reward, _, _, info = env.step(ELECTRIC)
    assert (reward, info["user_failure"]) == (0.0, "classifier:bad_json")
    assert obs in NATURAL_REPLIES  # the scripted user answers the type-1 path
    assert env.unwrapped.history[-2]["note"].startswith("The agent's message could not be classified")


@pytest.mark.parametrize(
    ("fields", "failure"),
    [
        ({"type": "7"}, "classifier:invalid_value"),
        ({"type": 2}, "classifier:bad_json"),
        ({"type": "2", "preference_id": "P9"}, "classifier:invalid_value"),
        ({"type": "2", "preference_id": 1}, "classifier:invalid_value"),
    ],
)
def test_classifier_failures_become_type_1(fields, failure):
    env, _ = start(judge=ScriptedChatModel([json.dumps(fields)]))
    obs, reward, _, _, info = env.step(ELECTRIC)
    assert (reward, info["user_failure"]) == (0.0, failure) and obs in NATURAL_REPLIES


def test_llm_classifier_and_responder_reveal_a_preference():
    judge = ScriptedChatModel([json.dumps({"thought": "asks about fuel", "type": " 2 ", "preference_id": " P1 "})])
    user = ScriptedChatModel(
        [
            ChatReply(
                text=json.dumps({"thought": "hint", "response": "  No more fuel stops for me.  "}), thought="secret"
            )
        ]
    )
    env, _ = start(judge=judge, user=user, privileged=True)
    obs, reward, _, _, info = env.step(ELECTRIC)
    assert (obs, reward, info["user_failure"]) == ("No more fuel stops for me.", 0.6, None)
    privileged = info["privileged"]
    assert privileged["user_thought"] == "secret" and privileged["user_utterance"] == obs
    assert privileged["thoughts"]["classifier"]["thought"] == "asks about fuel"
    assert privileged["thoughts"]["responder"] == {"reasoning": "secret", "thought": "hint"}
    assert privileged["hidden"]["elicited"] == ["P1"]
    classifier_user = judge.calls[0]["messages"][1]["content"]
    assert "Preference ID: P1\tAspect: rental_car\nPreference: Wants an electric car." in classifier_user
    assert "No previous conversation." in classifier_user and "Marta" in classifier_user
    responder_user = user.calls[0]["messages"][1]["content"]
    assert "Implicit Elicitation Statement: Honestly, I'd love to skip petrol stations" in responder_user
    assert user.calls[0]["messages"][0]["content"] == ROLE_PROMPTS["preference_system"]
    assert (judge.calls[0]["json_keys"], user.calls[0]["json_keys"]) == (("type",), ("response",))


def test_role_call_seeds_count_from_the_seed_base():
    judge = ScriptedChatModel([json.dumps({"type": "1"})])
    user = ScriptedChatModel([json.dumps({"response": "Fine."})])
    env, _ = start(judge=judge, user=user)
    env.step("[action] Hello!")
    env.step("[action] Nice weather.")
    base = env.unwrapped._session.llm_seed_base
    seeds = [c["seed"] for c in sorted(judge.calls + user.calls, key=lambda c: c["seed"])]
    assert seeds == [base, base + 1, base + 2, base + 3]
    assert [c["role"] for c in judge.calls] == ["classifier", "classifier"]
    assert [c["turn"] for c in user.calls] == [1, 2]
    again, _ = start(judge=ScriptedChatModel([json.dumps({"type": "1"})]), user=user)
    assert again.unwrapped._session.llm_seed_base == 0  # drawn on the first step, not at reset
    again.step("[action] Hello!")
    assert again.unwrapped._session.llm_seed_base == base


def test_role_max_tokens_caps_every_call():
    judge = ScriptedChatModel([json.dumps({"type": "1"})])
    user = ScriptedChatModel([json.dumps({"response": "Fine."})])
    env, _ = start(judge=judge, user=user, role_max_tokens=96)
    env.step("[action] Hello!")
    assert [c["max_tokens"] for c in judge.calls + user.calls] == [96, 96]


def test_responder_failure_gives_the_apology_and_elicits_nothing():
    user = ScriptedChatModel([json.dumps({"thought": "x"})])
    env, _ = start(user=user, judge="scripted", privileged=True)
    obs, reward, _, _, info = env.step(ELECTRIC)
    assert (obs, reward, info["user_failure"]) == (FEEDBACK["apology"], 0.0, "responder:bad_json")
    assert info["privileged"]["hidden"]["elicited"] == [] and info["privileged"]["user_utterance"] is None
    assert env.unwrapped.history[-2]["note"] == "No reply could be produced; a fallback reply was used."


def test_llm_proactive_reply_and_the_unpatched_path():
    def run(fix):
        judge = ScriptedChatModel([json.dumps({"type": "1"})])
        user = ScriptedChatModel([json.dumps({"response": "ok"})] * 3 + [json.dumps({"response": "By the way..."})])
        env, _ = start(judge=judge, user=user, elicitation_fix=fix, privileged=True)
        for action in ("[action] Hello!", "[action] Nice.", "[action] Great."):
            env.step(action)
        obs, _, _, _, info = env.step("[action] Thanks.")
        return obs, info, user

    obs, info, user = run(True)
    assert obs == "By the way..." and len(info["privileged"]["hidden"]["elicited"]) == 1
    assert user.calls[3]["messages"][0]["content"] == ROLE_PROMPTS["proactive_system"]
    assert "[Note: The agent's message is not about any of my preferences." in user.calls[3]["messages"][1]["content"]
    obs, info, user = run(False)
    assert obs == FEEDBACK["apology"] and info["privileged"]["hidden"]["elicited"] == []
    assert len(user.calls) == 4  # the responder is still called


def test_natural_replies_use_the_llm_without_drawing():
    user = ScriptedChatModel([json.dumps({"response": "Sure thing."})])
    env, _ = start(user=user, judge="scripted")
    assert env.step("[action] Hello!")[0] == "Sure thing."
    assert user.calls[0]["messages"][0]["content"] == ROLE_PROMPTS["natural_system"]


def test_refusing_models_fall_back_on_every_role():
    env, _ = start(user=ScriptedChatModel([refusal()]))
    obs, reward, _, _, info = env.step(CAR_SEARCH)
    assert (obs, reward, info["user_failure"]) == (FEEDBACK["search_outage"], 0.0, "search_judge:refusal")
    obs, reward, _, _, info = env.step(ELECTRIC)
    assert (obs, reward, info["user_failure"]) == (FEEDBACK["apology"], 0.0, "classifier:refusal;responder:refusal")


def test_upstream_pack_without_a_directory_names_both_sources(monkeypatch):
    monkeypatch.delenv("MIMESIS_GYM_USERRL_DIR", raising=False)
    with pytest.raises(ValueError, match=r"data_dir=.*MIMESIS_GYM_USERRL_DIR"):
        gym.make(ENV_ID, pack="upstream", user=ScriptedChatModel(["x"]))


# ---------------------------------------------------------------- a refusing user over real loopback HTTP


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


async def _no_sleep(_seconds):
    return None


def http_model(server):
    endpoint = EndpointConfig(base_url=server.base_url, model="fault-model", timeout_s=5)
    policy = RetryPolicy(
        max_retries=endpoint.max_retries,
        content_retries=endpoint.content_retries,
        rng=random.Random(0),
        sleep=_no_sleep,
    )
    return OpenAIChatModel(endpoint, retry_policy=policy)


def test_a_refusing_user_server_gives_every_turn_the_fallback(server):
    server.script(*["refusal_text"] * 40)
    env = gym.make(ENV_ID, user=http_model(server), judge="scripted", split="demo", role_max_tokens=64)
    env.reset(seed=0, options={"task_id": DEMO})
    for action in ("[action] Hello there.", ELECTRIC, "[action] Nice weather."):
        obs, reward, terminated, _, info = env.step(action)
        assert (obs, reward, terminated) == (FEEDBACK["apology"], 0.0, False)
        assert info["user_failure"] == "responder:refusal"
    assert all(r["body"]["max_tokens"] == 64 for r in server.requests)
    assert len(server.requests) == 6  # each step: one call and its one refusal retry
    _, reward, _, _, info = env.step(CAR_SEARCH)  # scripted judges still work
    assert reward == 0.2 and info["user_failure"] is None
    env.close()
