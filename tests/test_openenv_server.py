"""The OpenEnv server (``mimesis-gym serve-env``) against OpenEnv's own clients, on loopback only.

docs/integrations.md, "OpenEnv". Every server here is a real uvicorn server on 127.0.0.1 (in a
thread, or the CLI in a subprocess); clients are OpenEnv's ``EnvClient`` subclasses
(:class:`MimesisEnvClient`, ``GenericEnvClient``) or a raw WebSocket for malformed messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core", reason="the OpenEnv server needs the extra `openenv`")

import requests
import uvicorn
from openenv.core import GenericEnvClient
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

import mimesis_gym  # noqa: F401
from mimesis_gym.cli import main as cli_main
from mimesis_gym.core.actions import ParsedAction, parse_action
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.integrations.episode import EnvRecipe
from mimesis_gym.integrations.openenv import PUBLIC_INFO_KEYS, MimesisAction, MimesisEnvClient
from mimesis_gym.integrations.openenv_server import bind_socket, build_app, check_bind, normalize_origin
from tests.support.chat_models import ScriptedChatModel

FUNCTION = "mimesis/FunctionGym-v0"
TELEPATHY = "mimesis/TelepathyGym-v0"
INFO_KEYS = {*PUBLIC_INFO_KEYS, "terminated", "truncated"}
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "openenv_client.py"
HANG_BREAKER_S = 60
"""The bound of every wait below: it only breaks a hang, since each wait ends as soon as its condition holds."""


@contextlib.contextmanager
def running(app) -> Iterator[str]:
    """Serve ``app`` with uvicorn on a free loopback port in a thread; yields ``http://127.0.0.1:PORT``."""
    sock = bind_socket("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + HANG_BREAKER_S
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


def sessions(base_url: str, **kwargs) -> int:
    return requests.get(f"{base_url}/sessions", timeout=5, **kwargs).json()["active_sessions"]


def wait_for_sessions(base_url: str, count: int) -> None:
    """Poll until the server holds ``count`` sessions."""
    deadline = time.monotonic() + HANG_BREAKER_S
    while sessions(base_url) != count:
        assert time.monotonic() < deadline, f"the server still holds {sessions(base_url)} sessions, not {count}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def function_server():
    app, server = build_app(EnvRecipe(env_id=FUNCTION, env_kwargs={"split": "test"}), max_sessions=20)
    with running(app) as base_url:
        yield base_url, server


def tool_call(action) -> dict:
    """An oracle action (grammar string or tool-call dict) as ``{"choice", "content"}``."""
    if isinstance(action, dict):
        return {"choice": action["choice"], "content": action.get("content", "")}
    parsed = parse_action(action, {"action", "search", "answer", "finish"})
    assert isinstance(parsed, ParsedAction), action
    return {"choice": parsed.tag, "content": parsed.content}


def reference_episode(env_id: str, task_id: str, seed: int) -> tuple[str, list[tuple[dict, str, float, bool, bool]]]:
    """The oracle episode in process: the opening and ``(call, obs, reward, terminated, truncated)`` per step."""
    env = gym.make(env_id, split="test", privileged=True)
    opening, _ = env.reset(seed=seed, options={"task_id": task_id})
    steps, done = [], False
    while not done:
        call = tool_call(env.unwrapped.oracle_action())
        obs, reward, terminated, truncated, info = env.step(call)
        steps.append((call, obs, reward, terminated, truncated))
        done = terminated or truncated
    env.close()
    return opening, steps


def first_task(env_id: str, index: int = 0) -> str:
    pool = gym.make(env_id).unwrapped.task_pack.pool("test")
    return pool[index % len(pool)].id


# ------------------------------------------------------------------------ episodes


@pytest.mark.parametrize("env_id", [FUNCTION, TELEPATHY, "mimesis/TravelGym-v0"])
def test_an_oracle_episode_over_openenv_equals_the_env_in_process(env_id):
    task_id = first_task(env_id)
    opening, steps = reference_episode(env_id, task_id, seed=3)
    app, server = build_app(EnvRecipe(env_id=env_id))
    with running(app) as base_url, MimesisEnvClient(base_url).sync() as client:
        result = client.reset(task_id=task_id, seed=3)
        assert (result.observation.text, result.reward, result.done) == (opening, None, False)
        assert set(result.observation.info) == INFO_KEYS and result.observation.info["task_id"] == task_id
        for turn, (call, obs, reward, terminated, truncated) in enumerate(steps, start=1):
            result = client.step(MimesisAction(**call))
            assert (result.observation.text, result.reward, result.done) == (obs, reward, terminated or truncated)
            info = result.observation.info
            assert (info["turn"], info["terminated"], info["truncated"]) == (turn, terminated, truncated)
            assert set(info) == INFO_KEYS  # never "privileged"
        state = client.state()
        assert (state.env_id, state.task_id, state.seed, state.step_count) == (env_id, task_id, 3, len(steps))
        assert state.episode_score == info["episode_score"] > 0 and state.terminated
        with pytest.raises(RuntimeError, match="the episode ended after"):
            client.step({"choice": "action", "content": "one more"})
        again = client.reset(task_id=task_id, seed=3)  # the session serves the next episode
        assert again.observation.text == opening and client.state().step_count == 0
    assert server.active_sessions == 0


def test_raw_text_actions_and_truncation_match_in_process():
    reference = gym.make(TELEPATHY, max_episode_steps=2)
    reference.reset(seed=0, options={"task_id": "telepathy-demo-01"})
    texts = ["[action] Is it an animal?", "free text without a tag"]
    expected = [reference.step(text)[:4] for text in texts]
    app, _ = build_app(EnvRecipe(env_id=TELEPATHY, max_episode_steps=2))
    with running(app) as base_url, MimesisEnvClient(base_url).sync() as client:
        client.reset(task_id="telepathy-demo-01", seed=0)
        got = []
        for text in texts:
            result = client.step({"text": text})
            info = result.observation.info
            got.append((result.observation.text, result.reward, info["terminated"], info["truncated"]))
        assert got == expected and got[-1][3] and result.done
        with pytest.raises(RuntimeError, match="ended after 2 turns"):
            client.step({"text": "[action] Is it big?"})


class HeldChatModel(ScriptedChatModel):
    """A chat model that answers only once the test releases it (a remote LLM user still thinking).

    ``asked`` is set when a reply is requested; ``answered`` once the reply goes back. The wait for
    ``release`` gives up after ``HANG_BREAKER_S``, so a server that blocks on the turn ends the test
    with a failed assertion instead of a hang.
    """

    def __init__(self, replies) -> None:
        super().__init__(replies)
        self.asked, self.release, self.answered = threading.Event(), threading.Event(), threading.Event()

    async def chat(self, messages, **kwargs):
        self.asked.set()
        await asyncio.to_thread(self.release.wait, HANG_BREAKER_S)
        self.answered.set()
        return await super().chat(messages, **kwargs)


def test_a_turn_waiting_on_an_llm_user_does_not_block_other_sessions():
    user = HeldChatModel(['{"thought": "", "response": "Yes"}'])
    recipe = EnvRecipe(env_id=TELEPATHY, user=user, env_kwargs={"judge": "scripted"})
    app, _ = build_app(recipe)
    with running(app) as base_url, MimesisEnvClient(base_url).sync() as slow:
        slow.reset(task_id="telepathy-demo-01", seed=0)
        replies: list[str] = []
        turn = threading.Thread(
            target=lambda: replies.append(slow.step({"text": "[action] Is it big?"}).observation.text)
        )
        turn.start()
        assert user.asked.wait(HANG_BREAKER_S), "the turn never asked the user"
        with MimesisEnvClient(base_url).sync() as other:
            other.reset(task_id="telepathy-demo-01", seed=1)
            assert sessions(base_url) == 2
        assert not user.answered.is_set()  # the other session was served while the turn still waited
        user.release.set()
        turn.join(HANG_BREAKER_S)
        assert replies == ["Yes"] and len(user.calls) == 1
        metadata = requests.get(f"{base_url}/metadata", timeout=5).json()
        assert metadata["description"] == f"{TELEPATHY} (mimesis_gym) with user HeldChatModel"  # not the object's repr


def test_openenvs_generic_client_plays_with_plain_dicts(function_server):
    base_url, _ = function_server
    task_id = first_task(FUNCTION)
    opening, steps = reference_episode(FUNCTION, task_id, seed=1)
    with GenericEnvClient(base_url=base_url).sync() as client:
        assert client.reset(task_id=task_id, seed=1).observation["text"] == opening
        for call, obs, reward, terminated, truncated in steps:
            result = client.step(call)
            assert (result.observation["text"], result.reward, result.done) == (obs, reward, terminated or truncated)
        assert client.state()["terminated"] is True


def test_sixteen_concurrent_sessions_each_get_their_own_episode(function_server):
    base_url, server = function_server
    episodes = [
        (first_task(FUNCTION, i), i, *reference_episode(FUNCTION, first_task(FUNCTION, i), i)) for i in range(16)
    ]
    all_open = asyncio.Barrier(16)
    seen_open: list[int] = []

    async def play(task_id: str, seed: int, opening: str, steps: list) -> None:
        async with MimesisEnvClient(base_url) as client:
            result = await client.reset(task_id=task_id, seed=seed)
            assert result.observation.text == opening
            if await all_open.wait() == 0:
                seen_open.append(await asyncio.to_thread(sessions, base_url))
            await all_open.wait()
            for call, obs, reward, _, _ in steps:
                result = await client.step(MimesisAction(**call))
                assert (result.observation.text, result.reward) == (obs, reward)
            assert result.done and (await client.state()).seed == seed

    async def play_all() -> None:
        await asyncio.wait_for(asyncio.gather(*(play(*episode) for episode in episodes)), timeout=60)

    asyncio.run(play_all())
    assert seen_open == [16]
    wait_for_sessions(base_url, 0)
    assert server.active_sessions == 0


def test_a_client_that_vanishes_mid_episode_frees_its_env(function_server, caplog):
    base_url, _ = function_server

    async def vanish() -> None:
        ws = await ws_connect(f"{base_url.replace('http', 'ws')}/ws")
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        assert json.loads(await ws.recv())["type"] == "observation"
        await ws.send(json.dumps({"type": "step", "data": {"choice": "action", "content": "1 2 3 4"}}))
        assert json.loads(await ws.recv())["type"] == "observation"
        assert await asyncio.to_thread(sessions, base_url) == 1
        ws.transport.abort()  # no close frame: the TCP connection just drops

    asyncio.run(vanish())
    wait_for_sessions(base_url, 0)
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]  # a dropped client is no error


def test_an_idle_session_is_closed_after_the_timeout():
    app, server = build_app(EnvRecipe(env_id=FUNCTION), idle_timeout_s=0.5)
    with running(app) as base_url, MimesisEnvClient(base_url).sync() as client:
        client.reset(seed=0)
        assert sessions(base_url) == 1
        wait_for_sessions(base_url, 0)  # OpenEnv's reaper looks every 5 s at most
        with pytest.raises(RuntimeError, match="this session's env was closed"):
            client.step({"choice": "action", "content": "1 2 3 4"})
    assert server.active_sessions == 0


def test_malformed_messages_get_error_replies_and_the_server_keeps_serving(function_server):
    base_url, _ = function_server
    bad = [
        ("not json at all", "INVALID_JSON", "Invalid JSON"),
        (json.dumps({"type": "dance"}), "UNKNOWN_TYPE", "Unknown message type"),
        (json.dumps({"type": "step", "data": {"text": "[answer] 1"}}), "EXECUTION_ERROR", "reset first"),
        (json.dumps({"type": "reset", "data": {"bogus": 1}}), "EXECUTION_ERROR", "unknown reset key"),
        (json.dumps({"type": "reset", "data": {"seed": "seven"}}), "EXECUTION_ERROR", "seed must be an int"),
        (json.dumps({"type": "reset", "data": {"task_id": "no-such-task"}}), "EXECUTION_ERROR", "no-such-task"),
        (json.dumps({"type": "step", "data": {"choice": "answer"}}), "VALIDATION_ERROR", "Invalid message"),
        (json.dumps({"type": "step", "data": {"text": "x", "choice": "a", "content": "b"}}), "VALIDATION_ERROR", ""),
        (json.dumps({"type": "step", "data": {"text": "x", "reward": 1}}), "VALIDATION_ERROR", ""),
        (json.dumps({"type": "step"}), "VALIDATION_ERROR", ""),
        (
            "[1, 2]",
            "INVALID_JSON",
            "expected a JSON object with a 'type' (reset, step, state, close) as text; got an array",
        ),
        ('"x"', "INVALID_JSON", "got a string"),
        ("7", "INVALID_JSON", "got a number"),
        (" null", "INVALID_JSON", "got null"),
        (b'{"type": "reset"}', "INVALID_JSON", "got a binary frame"),
    ]

    async def talk() -> None:
        async with ws_connect(f"{base_url.replace('http', 'ws')}/ws") as ws:
            for message, code, text in bad:
                await ws.send(message)
                reply = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert (reply["type"], reply["data"]["code"]) == ("error", code), message
                assert text in reply["data"]["message"], (message, reply)
                assert "attribute" not in reply["data"]["message"], reply  # no Python internals
            await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
            reply = json.loads(await ws.recv())
            assert reply["type"] == "observation", reply
            await ws.send(json.dumps({"type": "step", "data": {"choice": "answer", "content": "1"}}))
            reply = json.loads(await ws.recv())
            assert reply["type"] == "observation" and reply["data"]["reward"] is not None, reply

    asyncio.run(talk())
    assert requests.get(f"{base_url}/health", timeout=5).json() == {"status": "healthy"}
    wait_for_sessions(base_url, 0)


def test_mcp_frames_that_are_not_json_objects_get_json_rpc_errors(function_server):
    base_url, _ = function_server

    async def talk() -> list[dict]:
        async with ws_connect(f"{base_url.replace('http', 'ws')}/mcp") as ws:
            replies = []
            for frame in ("[1, 2]", b"\x00\x01", json.dumps({"jsonrpc": "2.0", "method": "tools/list", "id": 1})):
                await ws.send(frame)
                replies.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
            return replies

    array, binary, listed = asyncio.run(talk())
    assert array["error"]["code"] == binary["error"]["code"] == -32600
    assert array["error"]["message"].endswith("got an array") and binary["error"]["message"].endswith("binary frame")
    assert listed["id"] == 1  # the connection still answers


def test_sessions_beyond_the_cap_are_refused_with_an_error():
    app, _ = build_app(EnvRecipe(env_id=FUNCTION), max_sessions=1)
    with running(app) as base_url, MimesisEnvClient(base_url).sync() as first:
        first.reset(seed=0)

        async def second() -> dict:
            async with ws_connect(f"{base_url.replace('http', 'ws')}/ws") as ws:
                return json.loads(await asyncio.wait_for(ws.recv(), 10))

        reply = asyncio.run(second())
        assert (reply["type"], reply["data"]["code"], reply["data"]["max_sessions"]) == ("error", "CAPACITY_REACHED", 1)
        assert first.step({"choice": "answer", "content": "1"}).reward is not None
        assert sessions(base_url) == 1


def test_the_stateless_http_endpoints_are_left_out_and_no_privileged_schema(function_server):
    base_url, _ = function_server
    assert requests.post(f"{base_url}/reset", json={}, timeout=5).status_code in (404, 405)
    assert requests.post(f"{base_url}/step", json={"action": {"text": "x"}}, timeout=5).status_code in (404, 405)
    schema = requests.get(f"{base_url}/schema", timeout=5).json()
    assert {"choice", "content", "text"} <= set(schema["action"]["properties"])
    assert requests.get(f"{base_url}/metadata", timeout=5).json()["name"] == FUNCTION


# ------------------------------------------------------------------------ auth and binding


def test_with_a_token_every_request_and_handshake_needs_it():
    app, server = build_app(EnvRecipe(env_id=FUNCTION), token="s3cret-token")
    with running(app) as base_url:
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "s3cret-token"}):
            for path in ("/health", "/sessions", "/schema"):
                assert requests.get(f"{base_url}{path}", headers=headers, timeout=5).status_code == 401
        assert sessions(base_url, headers={"Authorization": "Bearer s3cret-token"}) == 0
        for client in (MimesisEnvClient(base_url), MimesisEnvClient(base_url, token="wrong")):
            with pytest.raises(ConnectionError, match="403"), client.sync() as refused:
                refused.reset(seed=0)
        assert server.active_sessions == 0  # a refused handshake never made an env
        with MimesisEnvClient(base_url, token="s3cret-token").sync() as client:
            assert client.reset(seed=0).observation.info["turn"] == 0


async def open_session(base_url: str, origin: str | None) -> str:
    """A WebSocket handshake with ``Origin: origin`` (none: no header) and a reset; the reply's type."""
    async with ws_connect(f"{base_url.replace('http', 'ws')}/ws", origin=origin, open_timeout=10) as ws:
        await ws.send(json.dumps({"type": "reset", "data": {"seed": 0}}))
        return json.loads(await asyncio.wait_for(ws.recv(), 10))["type"]


def refused(base_url: str, origin: str) -> bool:
    """Whether a WebSocket handshake from ``origin`` is refused with 403."""
    try:
        asyncio.run(open_session(base_url, origin))
    except InvalidStatus as error:
        return error.response.status_code == 403
    return False


def test_web_pages_of_other_origins_are_refused(caplog):
    app, server = build_app(EnvRecipe(env_id=FUNCTION))
    with running(app) as base_url:
        port = base_url.rsplit(":", 1)[1]
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", "http://10.0.0.7", "file://"):
            assert refused(base_url, origin), origin
            response = requests.get(f"{base_url}/health", headers={"Origin": origin}, timeout=5)
            assert response.status_code == 403 and "--allow-origin" in response.json()["detail"]
        posted = requests.post(f"{base_url}/mcp", data="{}", headers={"Origin": "http://evil.example"}, timeout=5)
        assert posted.status_code == 403
        assert server.active_sessions == 0  # a refused handshake never made an env
        assert "refused a request from the web page origin 'http://evil.example'" in caplog.text
        for origin in (None, base_url, f"http://localhost:{port}", "http://localhost:5173", "https://[::1]"):
            assert asyncio.run(open_session(base_url, origin)) == "observation", origin
        assert requests.get(f"{base_url}/health", headers={"Origin": base_url}, timeout=5).status_code == 200
        with MimesisEnvClient(base_url).sync() as client:  # OpenEnv's client sends no Origin
            assert client.reset(seed=0).observation.info["turn"] == 0


def test_allow_origin_widens_to_exactly_the_origins_named():
    app, _ = build_app(
        EnvRecipe(env_id=FUNCTION), allowed_origins=["https://Notebook.example:8443, http://tools.example"]
    )
    with running(app) as base_url:
        for origin in ("https://notebook.example:8443", "http://tools.example", "http://tools.example:80"):
            assert asyncio.run(open_session(base_url, origin)) == "observation", origin
        for origin in ("https://notebook.example", "http://notebook.example:8443", "https://tools.example"):
            assert refused(base_url, origin), origin


@pytest.mark.parametrize(
    ("text", "origin"),
    [("http://LocalHost:3000", "http://localhost:3000"), ("https://a.example:443/", "https://a.example"),
     ("http://[::1]:80", "http://[::1]"), ("null", None), ("localhost:3000", None), ("http://a.example/path", None),
     ("http://u@a.example", None), ("ftp://a.example", None)],
)  # fmt: skip
def test_normalize_origin(text, origin):
    assert normalize_origin(text) == origin


@pytest.mark.parametrize(
    ("host", "allow_remote", "token", "message"),
    [
        ("0.0.0.0", False, None, "not a loopback address"),
        ("192.168.1.5", False, "t", "not a loopback address"),
        ("0.0.0.0", True, None, "needs an auth token"),
        ("127.0.0.1", True, None, "needs an auth token"),
    ],
)
def test_binding_beyond_loopback_needs_the_flag_and_a_token(host, allow_remote, token, message):
    with pytest.raises(ConfigurationError, match=message):
        check_bind(host, allow_remote=allow_remote, token=token)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_binds_without_flags(host):
    check_bind(host, allow_remote=False, token=None)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--host", "0.0.0.0"], "not a loopback address"),
        (["--host", "0.0.0.0", "--allow-remote"], "needs an auth token"),
        (["--token-env", "MIMESIS_TEST_UNSET_TOKEN"], "MIMESIS_TEST_UNSET_TOKEN: that environment variable is not set"),
        (["--user", "no-such-user"], "unknown user alias 'no-such-user'"),
        (["--env-arg", "bogus=1"], "mimesis/FunctionGym-v0 takes no 'bogus'; it takes correct_answer_reward"),
        (["--env-arg", "bogus"], "--env-arg wants KEY=VALUE"),
        (["--port", "70000"], "must be a port number"),
        (["--allow-origin", "http://ok.example,localhost:3000"], "--allow-origin 'localhost:3000' is not a web origin"),
    ],
)
def test_cli_user_errors_are_one_line_and_exit_2(argv, message, capsys, monkeypatch):
    monkeypatch.delenv("MIMESIS_TEST_UNSET_TOKEN", raising=False)
    try:
        code = cli_main(["serve-env", "function", *argv])
    except SystemExit as exit_:  # argparse's own errors
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("env", "message"), [("nosuch", "nosuch"), ("no_such_module:x/Y-v0", "cannot import module 'no_such_module'")]
)
def test_cli_unknown_envs_are_one_line_and_exit_2(env, message, capsys):
    assert cli_main(["serve-env", env]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_port_in_use_is_one_line_and_exit_2(capsys):
    taken = bind_socket("127.0.0.1", 0)
    try:
        assert cli_main(["serve-env", "function", "--port", str(taken.getsockname()[1])]) == 2
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert "cannot listen on 127.0.0.1:" in err and "pick another --port" in err and len(err.strip().splitlines()) == 1


def test_the_cli_serves_with_a_token_it_never_prints():
    token = "cli-token-7f3a"
    process = subprocess.Popen(
        [sys.executable, "-m", "mimesis_gym.cli", "serve-env", "telepathy", "--port", "0", "--token-env", "TOK"],
        env={**os.environ, "TOK": token},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stderr.readline()
        match = re.search(r"ws://127\.0\.0\.1:(\d+)", line)
        assert match, line
        base_url = f"http://127.0.0.1:{match.group(1)}"
        with MimesisEnvClient(base_url, token=token).sync() as client:
            result = client.reset(task_id="telepathy-demo-01", seed=0)
            assert "bearer token required" in line and result.observation.info["task_id"] == "telepathy-demo-01"
            assert client.step({"choice": "action", "content": "Is it an animal?"}).observation.text == "Yes"
        assert requests.get(f"{base_url}/health", timeout=5).status_code == 401
    finally:
        process.send_signal(signal.SIGTERM)  # (Ctrl-C, SIGINT, takes the same way out)
        out, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    assert token not in line + out + err


def test_the_cli_refuses_foreign_origins_unless_allowed():
    process = subprocess.Popen(
        [sys.executable, "-m", "mimesis_gym.cli", "serve-env", "function", "--port", "0",
         "--allow-origin", "http://a.example,http://b.example:8080", "--allow-origin", "https://c.example"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        line = process.stderr.readline()
        match = re.search(r"ws://127\.0\.0\.1:(\d+)", line)
        assert match, line
        base_url = f"http://127.0.0.1:{match.group(1)}"
        assert refused(base_url, "http://evil.example")
        for origin in (None, base_url, "http://a.example", "http://b.example:8080", "https://c.example"):
            assert asyncio.run(open_session(base_url, origin)) == "observation", origin
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=15)
    assert process.returncode == 0 and "Traceback" not in err, err
    assert "refused a request from the web page origin 'http://evil.example'" in err


def test_the_example_plays_an_episode_to_the_right_answer():
    app, _ = build_app(EnvRecipe(env_id=TELEPATHY))
    with running(app) as base_url:
        done = subprocess.run([sys.executable, str(EXAMPLE), base_url], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "answer giraffe -> 'Yes! You read my mind. Well done!' (reward 1.0, done True)" in done.stdout
