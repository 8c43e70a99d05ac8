"""Content retries that stop when they do not help, against a loopback chat-completions server.

See docs/users.md, "What every chat model guarantees" (mimesis_gym/core/retry_ledger.py).
"""

import asyncio
import logging
import pickle
import random

from mimesis_gym.core.chat import call_context
from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel

MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "Hi"}]
KEYS = ["answer"]
GOOD = 'ok:{"answer": "yes"}'
STOP_LINE = "is no longer retried"


async def _no_sleep(seconds):
    return None


def model(server, **policy):
    """The users' HTTP client with its default retry bounds (content 2, refusal 1), no backoff sleep."""
    endpoint = EndpointConfig(base_url=server.base_url, model="fault-model", timeout_s=5)
    policy.setdefault("max_retries", endpoint.max_retries)
    policy.setdefault("content_retries", endpoint.content_retries)
    return OpenAIChatModel(endpoint, retry_policy=RetryPolicy(rng=random.Random(0), sleep=_no_sleep, **policy))


async def _calls(m, n, role="user", json_keys=KEYS):
    replies = []
    for turn in range(n):
        with call_context(f"ep-{role}", role, turn):
            replies.append(await m.chat(MESSAGES, max_tokens=32, temperature=0.0, seed=turn, json_keys=json_keys))
    return replies


def calls(m, n, **kwargs):
    return asyncio.run(_calls(m, n, **kwargs))


def stop_lines(caplog):
    return [r for r in caplog.records if STOP_LINE in r.getMessage()]


def test_retries_that_never_rescue_stop_after_the_window_and_say_so_once(fault_server, caplog):
    caplog.set_level(logging.INFO)
    fault_server.default_mode = "bad_json"
    m = model(fault_server)
    window = m.retry_policy.content_retry_window
    assert all(r.failure.kind == "bad_json" and r.usage.attempts == 3 for r in calls(m, window))
    assert len(fault_server.requests) == 3 * window  # the window: every call retried twice
    assert m.retry_ledger.stopped("user", "bad_json")
    before = len(fault_server.requests)
    later = calls(m, 64)
    sent = len(fault_server.requests) - before
    assert all(r.failure.kind == "bad_json" for r in later)
    # one request per call, plus one retry on every 32nd (the probe); retries off would send 64
    assert sent == 64 + 2 and sent <= 1.1 * 64
    assert [r.usage.attempts for r in later].count(2) == 2
    lines = stop_lines(caplog)
    assert len(lines) == 1 and lines[0].levelno == logging.WARNING
    assert "bad_json" in lines[0].getMessage() and "role user" in lines[0].getMessage()


def test_retries_that_rescue_keep_rescuing(fault_server, caplog):
    caplog.set_level(logging.INFO)
    m = model(fault_server)
    n = 4 * m.retry_policy.content_retry_window
    fault_server.script(*["bad_json", GOOD] * n)  # every first attempt fails, every second answers
    replies = calls(m, n)
    assert all(r.ok and r.json(KEYS) == {"answer": "yes"} and r.usage.attempts == 2 for r in replies)
    assert len(fault_server.requests) == 2 * n
    assert not m.retry_ledger.stopped("user", "bad_json") and stop_lines(caplog) == []


def test_a_rescue_inside_the_window_resets_it(fault_server):
    m = model(fault_server, content_retry_window=3)
    # two unrescued calls, one rescued, two unrescued: never three in a row
    fault_server.script(*["bad_json"] * 6, "bad_json", GOOD, *["bad_json"] * 6)
    assert [r.ok for r in calls(m, 5)] == [False, False, True, False, False]
    assert not m.retry_ledger.stopped("user", "bad_json")


def test_a_probe_that_rescues_resumes_the_retries(fault_server, caplog):
    caplog.set_level(logging.INFO)
    m = model(fault_server, content_retry_window=2, content_retry_probe_every=4)
    fault_server.default_mode = "bad_json"
    calls(m, 2)
    assert m.retry_ledger.stopped("user", "bad_json")
    fault_server.requests.clear()
    fault_server.default_mode = GOOD
    # three calls fail at once without a retry; the fourth is a probe, whose retry answers
    fault_server.script("bad_json", "bad_json", "bad_json", "bad_json", GOOD, "bad_json", GOOD)
    replies = calls(m, 5)
    assert [(r.ok, r.usage.attempts) for r in replies] == [(False, 1)] * 3 + [(True, 2), (True, 2)]
    assert len(fault_server.requests) == 3 + 2 + 2  # the fifth call was retried again
    assert not m.retry_ledger.stopped("user", "bad_json")
    assert any("rescued a reply of role user again" in r.getMessage() for r in caplog.records)
    assert len(stop_lines(caplog)) == 1


def test_each_role_and_each_kind_is_counted_apart(fault_server):
    m = model(fault_server, content_retry_window=2)
    fault_server.default_mode = "bad_json"
    calls(m, 2, role="user")
    assert m.retry_ledger.stopped("user", "bad_json")
    fault_server.requests.clear()
    # another role of the same endpoint still gets its retries
    assert [r.usage.attempts for r in calls(m, 1, role="judge")] == [3]
    # and so does another content fault of the stopped role
    fault_server.default_mode = "empty"
    assert [r.usage.attempts for r in calls(m, 1, role="user")] == [3]
    fault_server.default_mode = "refusal_text"
    assert [(r.failure.kind, r.usage.attempts) for r in calls(m, 1, role="user")] == [("refusal", 2)]


def test_transport_faults_are_still_retried_and_not_counted(fault_server):
    m = model(fault_server, content_retry_window=2)
    fault_server.default_mode = "bad_json"
    calls(m, 2)
    assert m.retry_ledger.stopped("user", "bad_json")
    fault_server.requests.clear()
    fault_server.script("status:503", GOOD, "reset", GOOD, "status:500", "status:500", GOOD)
    replies = calls(m, 3)
    assert [(r.ok, r.usage.attempts) for r in replies] == [(True, 2), (True, 2), (True, 3)]
    assert len(fault_server.requests) == 7
    # a call whose content retry then meets only transport faults says nothing about the retry
    m2 = model(fault_server, content_retry_window=1, max_retries=1)
    fault_server.script("bad_json", "status:500")
    [reply] = calls(m2, 1)
    assert reply.failure.kind == "server_error"
    assert not m2.retry_ledger.stopped("user", "bad_json")


def test_window_zero_always_retries_and_the_ledger_pickles(fault_server):
    endpoint = EndpointConfig(base_url=fault_server.base_url, model="fault-model", content_retry_window=0)
    m = OpenAIChatModel(endpoint)
    assert m.retry_policy.content_retry_window == 0
    fault_server.default_mode = "bad_json"
    assert [r.usage.attempts for r in calls(m, 12)] == [3] * 12
    stopped = model(fault_server, content_retry_window=1)
    calls(stopped, 1)
    copy = pickle.loads(pickle.dumps(stopped))
    assert copy.retry_ledger.stopped("user", "bad_json")


def test_the_doubled_think_budget_stops_too_when_it_never_helps(fault_server):
    m = model(fault_server, content_retry_window=1)
    fault_server.default_mode = "think_only"
    [first] = calls(m, 1, json_keys=None)
    assert (first.failure.kind, first.usage.attempts) == ("empty_after_think", 2)
    [second] = calls(m, 1, json_keys=None)
    assert (second.failure.kind, second.usage.attempts) == ("empty_after_think", 1)
    assert [r["body"]["max_tokens"] for r in fault_server.requests] == [32, 64, 32]
