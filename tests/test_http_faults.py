"""The HTTP chat model against a fault-injecting server on loopback.

See docs/users.md, "What every chat model guarantees".
"""

import asyncio
import logging
import pickle
import random

import pytest

from mimesis_gym.core.chat import call_context
from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from tests.support.fault_server import FaultServer

SENTINEL_KEY = "sk-SENTINEL-7f3a9c-do-not-leak"
MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "Hi"}]


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


class Sleeps:
    def __init__(self):
        self.delays = []

    async def __call__(self, seconds):
        self.delays.append(seconds)


def model(server, *, sleeps=None, **config):
    config.setdefault("timeout_s", 5)
    policy_fields = {k: config.pop(k) for k in ("backoff_base_s", "backoff_cap_s") if k in config}
    endpoint = EndpointConfig(base_url=server.base_url, model="fault-model", **config)
    policy = RetryPolicy(
        max_retries=endpoint.max_retries,
        content_retries=endpoint.content_retries,
        rng=random.Random(0),
        sleep=sleeps or Sleeps(),
        **policy_fields,
    )
    return OpenAIChatModel(endpoint, retry_policy=policy)


def chat(m, *, json_keys=None, max_tokens=32, seed=7):
    return asyncio.run(m.chat(MESSAGES, max_tokens=max_tokens, temperature=0.0, seed=seed, json_keys=json_keys))


def test_ok_round_trip_and_request_body(server):
    server.script("ok:Hello there")
    reply = chat(model(server))
    assert (reply.text, reply.thought, reply.failure) == ("Hello there", None, None)
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.attempts) == (11, 7, 1)
    body = server.requests[0]["body"]
    assert body == {
        "model": "fault-model",
        "messages": MESSAGES,
        "max_tokens": 32,
        "temperature": 0.0,
        "seed": 7,
        "stream": False,
        "n": 1,
    }
    assert server.requests[0]["headers"]["Authorization"] == "Bearer EMPTY"


@pytest.mark.parametrize(
    ("mode", "text", "thought"),
    [
        ("think:plan it|The answer.", "The answer.", "plan it"),
        ("prefilled:silent plan|Out loud.", "Out loud.", "silent plan"),
        ("reasoning_field", "The answer is here.", "private plan"),
    ],
)
def test_thoughts_are_split_off_in_every_shape(server, mode, text, thought):
    server.script(mode)
    reply = chat(model(server))
    assert (reply.text, reply.thought) == (text, thought)


def test_think_only_then_ok_doubles_the_token_budget_once(server):
    sleeps = Sleeps()
    server.script("think_only", "ok:finally")
    reply = chat(model(server, sleeps=sleeps), max_tokens=100)
    assert reply.text == "finally" and reply.usage.attempts == 2
    assert [r["body"]["max_tokens"] for r in server.requests] == [100, 200]
    assert sleeps.delays == []  # the think-budget retry is immediate


def test_think_only_twice_is_empty_after_think_never_raw_text(server):
    server.script("think_only", "think_only")
    reply = chat(model(server))
    assert reply.failure.kind == "empty_after_think" and reply.text == "" and reply.thought is None
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("modes", "kind", "attempts"),
    [
        (["empty"] * 3, "empty", 3),
        (["null_content"] * 3, "empty", 3),
        (["no_choices"] * 3, "bad_response", 3),
        (["malformed"] * 3, "bad_response", 3),
        (["html200"] * 3, "bad_response", 3),
        (["status:500"] * 6, "server_error", 6),
        (["status:401"], "auth", 1),
        (["status:403"], "auth", 1),
        (["status:400:This model's maximum context length is 2048 tokens"], "context_length", 1),
        (["status:404:no such route"], "client_error", 1),
        (["refusal_field"] * 2, "refusal", 2),
        (["refusal_text"] * 2, "refusal", 2),
        (["drop"] * 6, "connection", 6),
        (["reset"] * 6, "connection", 6),
    ],
)
def test_each_fault_ends_in_its_failure_kind(server, modes, kind, attempts):
    server.script(*modes)
    reply = chat(model(server, fail_fast=False))
    assert reply.failure is not None and reply.failure.kind == kind
    assert reply.failure.attempts == attempts == len(server.requests)
    assert reply.text == ""


@pytest.mark.parametrize(
    "first",
    ["status:500", "status:502", "status:503", "status:429", "drop", "reset", "empty", "malformed", "refusal_text"],
)
def test_a_fault_then_ok_succeeds_after_one_retry(server, first):
    server.script(first, "ok:recovered")
    reply = chat(model(server))
    assert reply.text == "recovered" and reply.failure is None and reply.usage.attempts == 2


def test_backoff_is_full_jitter_within_the_cap(server):
    sleeps = Sleeps()
    server.script(*["status:500"] * 6)
    chat(model(server, sleeps=sleeps, backoff_base_s=1.0, backoff_cap_s=4.0, fail_fast=False))
    assert len(sleeps.delays) == 5
    for k, delay in enumerate(sleeps.delays, start=1):
        assert 0.0 <= delay <= min(4.0, 1.0 * 2 ** (k - 1))


def test_retry_after_is_honoured(server):
    sleeps = Sleeps()
    server.script("status:429", "ok:fine")
    chat(model(server, sleeps=sleeps, backoff_base_s=0.01))
    assert sleeps.delays == [1.0]  # Retry-After: 1 beats the tiny jittered delay


def test_a_refusal_is_retried_exactly_once(server):
    server.script("refusal_text", "refusal_text", "ok:never reached")
    reply = chat(model(server))
    assert reply.failure.kind == "refusal" and len(server.requests) == 2


@pytest.mark.parametrize("mode", ["timeout", "slow_body"])
def test_stalled_servers_end_as_timeout_within_the_deadline(server, mode):
    """``slow_body`` sends a byte every 0.5 s for over a minute, so no read timeout fires: only the
    attempt's total deadline turns it into a timeout (without it the reply would arrive, complete)."""
    server.script(mode)
    m = model(server, timeout_s=2, max_retries=0, fail_fast=False)
    reply = chat(m)
    assert reply.failure.kind == "timeout" and "within 2s" in reply.failure.detail


def test_json_mode_and_coercion(server):
    server.script("fenced_json", "sloppy_json")
    m = model(server)
    assert chat(m, json_keys=["answer"]).json(["answer"])["answer"] == "yes"
    assert server.requests[0]["body"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "reply",
            "schema": {"type": "object", "properties": {"answer": {}}, "required": ["answer"]},
        },
    }
    assert chat(m, json_keys=["answer", "reason"]).json(["answer", "reason"]) == {
        "answer": "yes",
        "reason": 'he said "hi" to me',
    }


def test_bad_json_is_retried_then_fails(server):
    server.script("bad_json", "bad_json", "bad_json")
    reply = chat(model(server), json_keys=["answer"])
    assert reply.failure.kind == "bad_json" and reply.failure.attempts == 3


def test_thinking_models_are_asked_for_json_by_prompt_only(server):
    server.script('ok:{"answer": "yes"}')
    chat(model(server, thinking=True), json_keys=["answer"])
    assert "response_format" not in server.requests[0]["body"]


@pytest.mark.parametrize(
    ("message", "field"),
    [
        ("Unsupported parameter: 'seed' is not supported with this model.", "seed"),
        ("response_format is not supported by this model", "response_format"),
        ("Unsupported value: 'temperature' does not support 0 with this model.", "temperature"),
    ],
)
def test_adaptation_drops_a_rejected_field_once_and_records_it(server, message, field):
    server.script(f"status:400:{message}", 'ok:{"answer": "yes"}', 'ok:{"answer": "yes"}')
    m = model(server)
    first = chat(m, json_keys=["answer"])
    second = chat(m, json_keys=["answer"])
    assert first.failure is None and first.usage.dropped_params == (field,)
    assert field in server.requests[0]["body"]
    assert all(field not in r["body"] for r in server.requests[1:])
    assert second.usage.attempts == 1 and len(server.requests) == 3


def test_adaptation_switches_to_max_completion_tokens(server):
    server.script("status:400:Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead.", "ok:ok")
    reply = chat(model(server))
    assert reply.text == "ok" and server.requests[1]["body"]["max_completion_tokens"] == 32
    assert "max_tokens" not in server.requests[1]["body"]


def test_session_header_is_stable_per_episode_and_differs_between_episodes(server):
    server.script("status:500", "ok:a", "ok:b", "ok:c")
    m = model(server)

    async def episode(episode_id, turns):
        for turn in turns:
            with call_context(episode_id, "oracle", turn):
                await m.chat(MESSAGES, max_tokens=8, temperature=0.0, seed=1)

    asyncio.run(episode("ep-1", [1, 2]))
    asyncio.run(episode("ep-2", [1]))
    sessions = [r["headers"]["X-Session-ID"] for r in server.requests]
    assert sessions == ["ep-1", "ep-1", "ep-1", "ep-2"]
    assert [r["headers"]["X-Request-ID"] for r in server.requests] == [
        "ep-1-1-oracle-1",
        "ep-1-1-oracle-1",
        "ep-1-2-oracle-1",
        "ep-2-1-oracle-1",
    ]


def test_api_key_never_leaks(server, monkeypatch, caplog):
    monkeypatch.setenv("TEST_SENTINEL_KEY", SENTINEL_KEY)
    caplog.set_level(logging.DEBUG)
    server.script("status:401", "status:500", "status:500", "ok:fine")
    m = model(server, api_key_env=["TEST_SENTINEL_KEY"], max_retries=1, fail_fast=False)
    failed = chat(m)
    partly = chat(m)
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SENTINEL_KEY}"
    texts = [
        caplog.text,
        repr(m),
        repr(m.config),
        str(failed),
        str(partly),
        str(failed.to_dict()),
        m.config.model_dump_json(),
        str(pickle.dumps(m)),
    ]
    assert all(SENTINEL_KEY not in text for text in texts)


def test_missing_key_for_a_remote_endpoint_fails_as_auth_without_sending():
    endpoint = EndpointConfig(
        base_url="https://api.example.invalid/v1", model="m", api_key_env=["NO_SUCH_VAR_XYZ"], fail_fast=False
    )
    reply = chat(OpenAIChatModel(endpoint))
    assert reply.failure.kind == "auth" and "NO_SUCH_VAR_XYZ" in reply.failure.detail


def test_concurrent_requests_respect_the_semaphore(server):
    m = model(server, max_concurrency=4)

    async def many():
        return await asyncio.gather(*[m.chat(MESSAGES, max_tokens=8, temperature=0.0, seed=i) for i in range(16)])

    replies = asyncio.run(many())
    assert all(r.text == "hello" for r in replies) and len(server.requests) == 16


def test_model_pickles_without_its_clients(server):
    m = model(server)
    server.script("ok:one", "ok:two")
    chat(m)
    copy = pickle.loads(pickle.dumps(m))
    assert chat(copy).text == "two"


def test_an_env_against_an_always_refusing_server_falls_back_on_every_step(server):
    from tests.support.echo_env import EchoEnv

    server.script(*["refusal_text"] * 20)
    env = EchoEnv(user=model(server), role_max_tokens=64)
    env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("[action] Will you help me?")
        assert (obs, reward, terminated) == ("(the listener did not answer)", 0.0, False)
        assert info["user_failure"] == "listener:refusal"
    assert all(r["body"]["max_tokens"] == 64 for r in server.requests)  # role_max_tokens caps 512
    assert len(server.requests) == 6  # each step: the call and its one refusal retry
    env.close()


REFUSING_USER_EPISODES = {
    "mimesis/TravelGym-v0": (
        "travel-demo-01",
        "[action] Hello there.",
        "responder",
        "Sorry, I'm not sure how to respond to that right now. Could you try again?",
    ),
    "mimesis/TurtleGym-v0": (
        "turtle-demo-01",
        "[action] Is it a ghost?",
        "oracle",
        "Feedback is not available right now. Please try again.",
    ),
    "mimesis/TelepathyGym-v0": (
        "telepathy-demo-01",
        "[action] Is it big?",
        "answerer",
        "I can't answer that question right now. Please ask another one.",
    ),
    "mimesis/IntentionGym-v0": ("intention-demo-01", "[action] What is the weather like?", "responder", None),
    "mimesis/PersuadeGym-v0": (
        "persuade-demo-01",
        "[answer] Cars pollute.",
        "persuadee",
        "I'm having trouble understanding your argument right now.",
    ),
}


@pytest.mark.parametrize("env_id", list(REFUSING_USER_EPISODES))
def test_a_refusing_user_server_gives_every_turn_the_fallback(server, env_id):
    import gymnasium as gym

    from mimesis_gym.envs.intention.roles import CANNED_REPLIES

    task_id, action, role, fallback = REFUSING_USER_EPISODES[env_id]
    server.script(*["refusal_text"] * 40)
    env = gym.make(env_id, user=model(server), judge="scripted", split="demo")
    env.reset(seed=0, options={"task_id": task_id})
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["user_failure"] == f"{role}:refusal"
        assert obs == fallback if fallback else obs in CANNED_REPLIES
        assert (reward, terminated) == (0.0, False)
    env.close()


# ---------------------------------------------------------------- content retries change the request


def test_a_bad_json_retry_quotes_the_reply_back_with_another_seed_and_no_sleep(server):
    sleeps = Sleeps()
    server.script("bad_json", 'ok:{"answer": "yes"}')
    reply = chat(model(server, sleeps=sleeps), json_keys=["answer"], seed=7)
    assert reply.json(["answer"]) == {"answer": "yes"} and reply.usage.attempts == 2
    first, second = (request["body"] for request in server.requests)
    assert first["messages"] == MESSAGES and first["seed"] == 7
    assert second["messages"][:-2] == MESSAGES
    assert second["messages"][-2] == {"role": "assistant", "content": "I think the answer is yes, definitely."}
    assert second["messages"][-1]["role"] == "user" and '"answer"' in second["messages"][-1]["content"]
    assert second["seed"] != 7
    assert sleeps.delays == []


def test_a_refusal_retry_asks_to_stay_in_character(server):
    sleeps = Sleeps()
    server.script("refusal_text", "ok:Fine, it was a ghost.")
    reply = chat(model(server, sleeps=sleeps))
    assert reply.text == "Fine, it was a ghost."
    repaired = server.requests[1]["body"]["messages"]
    assert repaired[-2]["content"] == "I'm sorry, but I can't help with that."
    assert "Stay in character" in repaired[-1]["content"]
    assert sleeps.delays == []


def test_repairs_do_not_pile_up_and_a_chat_ending_with_the_model_gets_only_a_new_seed(server):
    server.script("bad_json", "bad_json", 'ok:{"answer": "no"}')
    chat(model(server), json_keys=["answer"], seed=3)
    bodies = [request["body"] for request in server.requests]
    assert [len(body["messages"]) for body in bodies] == [2, 4, 4]
    assert len({body["seed"] for body in bodies}) == 3
    server.requests.clear()
    server.script("empty", "ok:done")
    ending = [*MESSAGES, {"role": "assistant", "content": "Let me"}]
    asyncio.run(model(server).chat(ending, max_tokens=8, temperature=0.0, seed=5))
    assert [request["body"]["messages"] for request in server.requests] == [ending, ending]
    assert server.requests[0]["body"]["seed"] != server.requests[1]["body"]["seed"]


def test_a_server_refusing_json_schemas_gets_any_json_object_then_nothing(server):
    server.script(
        "status:400:response_format json_schema is not supported",
        "status:400:response_format is not supported by this model",
        'ok:{"answer": "yes"}',
        'ok:{"answer": "no"}',
    )
    m = model(server)
    assert chat(m, json_keys=["answer"]).json(["answer"]) == {"answer": "yes"}
    assert chat(m, json_keys=["answer"]).usage.dropped_params == ("json_schema", "response_format")
    formats = [request["body"].get("response_format", {}).get("type") for request in server.requests]
    assert formats == ["json_schema", "json_object", None, None]
