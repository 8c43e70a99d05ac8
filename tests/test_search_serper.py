"""SearchGym's Serper web backend against a loopback server speaking the Serper API.

See docs/envs/search.md, "Search backends (search_backend)".

The fake server is a stdlib ``ThreadingHTTPServer`` on 127.0.0.1: each request takes the next scripted
response (status, JSON body or raw bytes, delay) and is recorded (path, headers, body). It answers at
most ``max_requests`` requests per test, so a retry loop that runs away fails fast.
"""

import asyncio
import json
import logging
import pickle
import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import gymnasium as gym
import pytest

from mimesis_gym.envs.search import backends
from mimesis_gym.envs.search.backends import SERPER_TIMEOUT_MESSAGE

ENV_ID = "mimesis/SearchGym-v0"

KEY = "serper-SENTINEL-41c9-do-not-leak"
RESULTS = {
    "answerBox": {"title": "T", "answer": "A"},
    "organic": [{"title": "O1", "snippet": "S1"}, {"title": "O2"}, {"title": "O3", "snippet": "S3"}],
}
EMPTY = {"organic": [], "searchParameters": {"q": "x"}}


class FakeSerper:
    """Scripted responses: ``(status, body)`` or ``(status, body, delay_s)``; ``body`` a dict or bytes."""

    def __init__(self, max_requests=20):
        self.responses = deque()
        self.requests = []
        self.max_requests = max_requests
        self._stop = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": json.loads(body)})
                if len(fake.requests) > fake.max_requests:
                    status, payload, delay = 429, {"message": "request budget of the test exhausted"}, 0.0
                else:
                    status, payload, *rest = fake.responses.popleft() if fake.responses else (200, EMPTY)
                    delay = rest[0] if rest else 0.0
                if delay and fake._stop.wait(delay):
                    return
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (timeout test)
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def script(self, *responses):
        self.responses.extend(responses)

    def close(self):
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serper(monkeypatch):
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    fake = FakeSerper()
    yield fake
    fake.close()


def make(fake, **kwargs):
    kwargs.setdefault("serper_retry_sleep", 0)
    env = gym.make(ENV_ID, search_backend="serper", serper_base_url=fake.base_url, split="demo", **kwargs)
    env.reset(seed=0, options={"task_id": "search-demo-01"})
    return env


def test_request_body_headers_and_rendering(serper):
    serper.script((200, RESULTS))
    env = make(serper)
    obs, reward, terminated, _, info = env.step("[search] who designed it")
    assert obs == "Search results for 'who designed it':\n1. T\n- Answer: A\n2. O1\n- Snippet: S1\n3. O3\n- Snippet: S3"
    assert (reward, terminated, info["valid_action"]) == (0.0, False, True)
    (request,) = serper.requests
    assert request["path"] == "/search"
    assert request["body"] == {"q": "who designed it", "num": 15}
    assert request["headers"]["X-API-KEY"] == KEY
    assert request["headers"]["Content-Type"] == "application/json"
    env.close()


def test_answer_box_with_a_snippet_and_the_result_cap(serper):
    organic = [{"title": f"O{i}", "snippet": f"  S{i}  "} for i in range(1, 10)]
    serper.script((200, {"answerBox": {"title": "Box", "snippet": "boxed"}, "organic": organic}))
    obs = make(serper, max_search_results=3, serper_num=9).step("[search] q")[0]
    assert obs == "Search results for 'q':\n1. Box\n- Snippet: boxed\n2. O1\n- Snippet: S1\n3. O2\n- Snippet: S2"
    assert serper.requests[0]["body"]["num"] == 9


def test_always_empty_organic_gives_up_after_seven_requests(serper):
    obs = make(serper).step("[search] nothing here")[0]
    assert obs == f"Search results for 'nothing here':\n{SERPER_TIMEOUT_MESSAGE}"
    assert len(serper.requests) == 7


def test_retries_until_organic_results_arrive(serper):
    serper.script((200, EMPTY), (200, {"answerBox": {"title": "T", "answer": "A"}}), (200, RESULTS))
    obs = make(serper).step("[search] q")[0]
    assert obs.endswith("1. T\n- Answer: A\n2. O1\n- Snippet: S1\n3. O3\n- Snippet: S3") and len(serper.requests) == 3


def test_the_last_attempt_is_used_when_it_has_results(serper):
    serper.script(*[(200, EMPTY)] * 2, (200, RESULTS))
    obs = make(serper, serper_max_attempts=3).step("[search] q")[0]
    assert "1. T\n- Answer: A" in obs and len(serper.requests) == 3


def test_retry_sleeps_between_attempts(serper, monkeypatch):
    sleeps = []

    async def record(seconds):
        sleeps.append(seconds)

    monkeypatch.setattr(backends, "retry_pause", record)
    make(serper, serper_max_attempts=3, serper_retry_sleep=2.5).step("[search] q")
    assert sleeps == [2.5, 2.5] and len(serper.requests) == 3


@pytest.mark.parametrize(("status", "message"), [(500, "HTTP 500"), (403, "HTTP 403"), (429, "HTTP 429")])
def test_http_errors_become_search_failed(serper, status, message):
    serper.script((status, {"message": "nope"}))
    obs = make(serper).step("[search] q")[0]
    assert obs == f"Search results for 'q':\nSearch failed: {message}" and len(serper.requests) == 1


def test_a_timeout_becomes_search_failed(serper):
    serper.script((200, RESULTS, 5.0))
    obs = make(serper, search_timeout=0.3).step("[search] slow")[0]
    assert obs == "Search results for 'slow':\nSearch failed: ReadTimeout"


def test_a_refused_connection_becomes_search_failed(serper):
    closed = FakeSerper()
    closed.close()  # nothing listens on this port any more
    obs = make(closed).step("[search] q")[0]
    assert obs == "Search results for 'q':\nSearch failed: ConnectError"


def test_a_non_json_body_becomes_search_failed(serper):
    serper.script((200, b"<html>gateway</html>"))
    assert make(serper).step("[search] q")[0].endswith("Search failed: the response is not JSON")


def test_selecting_serper_without_the_key_is_refused(monkeypatch):
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    with pytest.raises(ValueError, match=r"\$SERPER_API_KEY"):
        gym.make(ENV_ID, search_backend="serper")


def test_a_key_removed_after_construction_fails_the_search_without_a_request(serper, monkeypatch):
    env = make(serper)
    monkeypatch.delenv("SERPER_API_KEY")
    assert env.step("[search] q")[0].endswith("Search failed: $SERPER_API_KEY is not set")
    assert serper.requests == []


def test_the_native_async_step_uses_the_callers_loop(serper):
    serper.script((200, RESULTS))

    async def run():
        env = gym.make(ENV_ID, search_backend="serper", serper_base_url=serper.base_url, split="demo").unwrapped
        await env.areset(seed=0, options={"task_id": "search-demo-01"})
        return await env.astep("[search] q")

    assert asyncio.run(run())[0].endswith("3. O3\n- Snippet: S3")


def test_the_key_never_leaks(serper, caplog):
    caplog.set_level(logging.DEBUG)
    serper.script((200, RESULTS), (500, {"message": "boom"}), (200, RESULTS, 5.0))
    env = make(serper, search_timeout=0.3, privileged=True, render_mode="ansi")
    texts = []
    for query in ("ok", "error", "slow", "empty"):
        obs, _, _, _, info = env.step(f"[search] {query}")
        texts += [obs, json.dumps(info, default=str)]
    assert all(request["headers"]["X-API-KEY"] == KEY for request in serper.requests)
    texts += [
        caplog.text,
        repr(env),
        repr(env.unwrapped.__dict__),
        repr(env.unwrapped._backend),
        env.render(),
        str(pickle.dumps(env)),
    ]
    assert all(KEY not in text for text in texts)
    assert "HTTP Request: POST" in caplog.text  # the requests were logged, without the key
    env.close()


def test_the_env_pickles_and_searches_again(serper):
    serper.script((200, RESULTS), (200, RESULTS))
    env = make(serper)
    env.step("[search] first")
    copy = pickle.loads(pickle.dumps(env))
    assert copy.step("[search] again")[0].endswith("3. O3\n- Snippet: S3")
    copy.close()
    env.close()
    env.close()  # idempotent


def test_the_key_goes_over_plain_http_only_to_loopback_or_with_the_opt_in(serper, monkeypatch):
    monkeypatch.delenv("MIMESIS_ALLOW_INSECURE_HTTP", raising=False)
    remote = serper.base_url.replace("127.0.0.1", "0.0.0.0")  # this host, but not a loopback name
    env = gym.make(ENV_ID, search_backend="serper", serper_base_url=remote, serper_retry_sleep=0, split="demo")
    env.reset(seed=0, options={"task_id": "search-demo-01"})
    obs = env.step("[search] q")[0]
    assert "Search failed: refusing to send an API key over plain http to 0.0.0.0" in obs and serper.requests == []
    monkeypatch.setenv("MIMESIS_ALLOW_INSECURE_HTTP", "1")
    serper.script((200, RESULTS))
    assert "1. T" in env.step("[search] q")[0] and serper.requests[0]["headers"]["X-API-KEY"] == KEY
    env.close()
