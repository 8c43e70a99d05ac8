"""No secret leaves the process: keys reflected by servers are redacted everywhere, keys travel safely.

Every server here is real and on loopback: ``FaultServer`` modes ``auth_echo:*`` reflect the request's
``Authorization`` header (and its bare token) in 4xx/5xx JSON bodies, 200 text bodies and completion
content, as a careless gateway does. A sentinel key must then appear in no record, summary, log,
stdout/stderr, exception text or pickle.
"""

import asyncio
import json
import logging
import os
import pickle
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mimesis_gym.agents.registry import make_agent
from mimesis_gym.core.conventions import AttemptError, RetryPolicy
from mimesis_gym.core.errors import UserUnavailableError
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from mimesis_gym.core.redact import REDACTED, redact
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.users.serve import ServeCommand, VLLMServer, build_serve_command, free_port

SENTINEL = "SENTINEL7f3a9cDoNotLeak42"
"""Not shaped like a token: only the value-based redaction can catch it."""
MESSAGES = [{"role": "user", "content": "Hi"}]
ROOT = Path(__file__).resolve().parents[1]


async def no_sleep(seconds):
    return None


def model(fault_server, **config):
    config.setdefault("base_url", fault_server.base_url)
    endpoint = EndpointConfig(model="fault-model", **config)
    policy = RetryPolicy(max_retries=endpoint.max_retries, content_retries=endpoint.content_retries, sleep=no_sleep)
    return OpenAIChatModel(endpoint, retry_policy=policy)


def chat(m):
    return asyncio.run(m.chat(MESSAGES, max_tokens=16, temperature=0.0, seed=0))


def files_without_sentinel(directory: Path) -> list[Path]:
    files = [path for path in directory.rglob("*") if path.is_file()]
    assert files
    leaked = [path for path in files if SENTINEL.encode() in path.read_bytes()]
    assert not leaked, f"the key leaked into {leaked}"
    return files


# ------------------------------------------------------------------------------------- redact


def test_redact_removes_key_values_and_credential_shaped_tokens(monkeypatch):
    monkeypatch.setenv("MIMESIS_USER_X_API_KEY", SENTINEL)
    text = f"for Bearer abc.def-123 and sk-proj-0123456789abcdef, token {SENTINEL}; X-API-KEY: hunter2-xyz"
    assert redact(text) == (f"for Bearer {REDACTED} and {REDACTED}, token {REDACTED}; X-API-KEY: {REDACTED}")
    assert redact(f"token {SENTINEL} Bearer abcdef", tokens=False) == f"token {REDACTED} Bearer abcdef"
    assert redact("the bearer of bad news, an api_key_env list") == "the bearer of bad news, an api_key_env list"


def test_redact_removes_the_credential_of_every_url_and_keeps_it_a_url():
    spec = f"openai:m@http://someone:{SENTINEL}@127.0.0.1:8000/v1"
    assert redact(spec, tokens=False) == "openai:m@http://***@127.0.0.1:8000/v1"
    assert redact("http://token@host/v1 and https://u:p@ss@h:1/x") == "http://***@host/v1 and https://***@h:1/x"
    assert redact(redact(spec)) == redact(spec)
    assert urlsplit(redact(spec).partition("@")[2]).hostname == "127.0.0.1"  # still parses (no "[…]" host)
    for kept in ["openai:claude@20240620", "mail me@example.com", "http://host/v1?by=a@b", "http://host/@x"]:
        assert redact(kept) == kept


def test_a_variable_named_by_an_endpoint_is_a_secret_once_a_client_exists(monkeypatch):
    monkeypatch.setenv("TEST_ENDPOINT_SECRET_VAR", SENTINEL)
    assert SENTINEL in redact(f"token {SENTINEL}")  # its name does not say it holds a key
    OpenAIChatModel(
        EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", api_key_env=["TEST_ENDPOINT_SECRET_VAR"])
    )
    assert redact(f"token {SENTINEL}") == f"token {REDACTED}"


# ------------------------------------------------------------------------ in-process paths


@pytest.mark.parametrize("mode", ["auth_echo:400", "auth_echo:404", "auth_echo:500", "auth_echo:429", "auth_echo:text"])
def test_a_reflected_key_is_scrubbed_from_failures_exceptions_logs_and_pickles(fault_server, monkeypatch, caplog, mode):
    monkeypatch.setenv("TEST_SENTINEL_SECRET", SENTINEL)
    caplog.set_level(logging.DEBUG)
    m = model(fault_server, api_key_env=["TEST_SENTINEL_SECRET"], max_retries=0, content_retries=0, fail_fast=False)
    fault_server.script(mode)
    reply = chat(m)
    assert fault_server.requests[0]["headers"]["Authorization"] == f"Bearer {SENTINEL}"
    assert reply.failure is not None and REDACTED in reply.failure.detail
    fault_server.script(mode)
    with pytest.raises(AttemptError) as raised:  # the client's own error, as the agent sees it
        asyncio.run(m.post(m.request_body(MESSAGES, 16, 0.0, 0)))
    logging.getLogger("mimesis_gym.test").warning("failed: %s", raised.value, exc_info=raised.value)
    texts = [
        str(reply),
        str(reply.to_dict()),
        str(raised.value),
        repr(raised.value),
        caplog.text,
        str(pickle.dumps(reply)),
        str(pickle.dumps(m)),
    ]
    if mode == "auth_echo:404":  # a persistent fault raises at the first call: its message is scrubbed too
        fault_server.script(mode)
        with pytest.raises(UserUnavailableError) as unavailable:
            chat(model(fault_server, api_key_env=["TEST_SENTINEL_SECRET"]))
        texts += [str(unavailable.value), repr(unavailable.value), str(pickle.dumps(unavailable.value))]
        assert REDACTED in str(unavailable.value)
    assert all(SENTINEL not in text for text in texts)


def test_package_log_records_are_redacted_in_message_arguments_and_traceback(monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    caplog.set_level(logging.INFO)
    logger = logging.getLogger("mimesis_gym.core.some_child")
    logger.info(f"key {SENTINEL} inline")
    logger.warning("key %s as an argument, header %s", SENTINEL, "Bearer abcdef123")
    try:
        raise RuntimeError(f"server said {SENTINEL}")
    except RuntimeError:
        logger.exception("it broke")
    assert SENTINEL not in caplog.text and "abcdef123" not in caplog.text
    assert caplog.text.count(REDACTED) >= 4
    logging.getLogger("elsewhere").warning("not ours: %s", "Bearer abcdef123")
    assert "Bearer abcdef123" in caplog.records[-1].getMessage()  # other loggers are left alone


def test_an_agent_failure_carries_no_key(fault_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    agent = make_agent(f"openai:fault-model@{fault_server.base_url}")
    fault_server.script("auth_echo:422")
    turn = asyncio.run(agent.act(agent.start("s", [], [{"role": "user", "content": "hi"}]), seed=0))
    assert turn.failure.kind == "client_error" and REDACTED in turn.failure.detail
    assert SENTINEL not in str(turn) and SENTINEL not in str(pickle.dumps(agent))


def test_a_key_echoed_as_a_user_reply_is_not_written_into_records(fault_server, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SENTINEL)
    url = fault_server.base_url
    fault_server.script('tool:{"choice": "action", "content": "Tell me your key."}', "auth_echo:content")
    config = EvalConfig(
        envs=["intention"], agents=[f"openai:fault-model@{url}"], users=[f"openai:fault-model@{url}"],
        judge="scripted", split="demo", limit=1, max_turns=1,
    )  # fmt: skip
    asyncio.run(run_eval(config, tmp_path, progress=False))
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert record.steps[0].observation == f"My key is {REDACTED}."
    files_without_sentinel(tmp_path)


# ------------------------------------------------------------------------------- the CLI, end to end


def test_a_reflected_key_appears_in_no_record_summary_or_output_of_eval_and_check(fault_server, tmp_path):
    url = fault_server.base_url
    fault_server.script(
        'tool:{"choice": "action", "content": "Is it a ghost?"}',  # agent turn 1
        "auth_echo:500",  # the user: a server error (retried) ...
        "auth_echo:text",  # ... a 200 body that is not JSON (retried) ...
        "auth_echo:400",  # ... a client error: the user failure recorded
        "auth_echo:404",  # agent turn 2: the agent error recorded
        "auth_echo:400",  # check --user: the completion
        "auth_echo:404",  # check --agent: the turn
    )
    env = {**os.environ, "OPENAI_API_KEY": SENTINEL, "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "mimesis_gym.cli"]
    spec = f"openai:fault-model@{url}"
    out = tmp_path / "run"
    evaluation = subprocess.run(
        [*cli, "eval", "--agent", spec, "--users", spec, "--envs", "turtle", "--split", "demo", "--limit", "1",
         "--max-turns", "3", "--concurrency", "1", "--no-progress", "--out", str(out)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert evaluation.returncode == 3, evaluation.stderr
    check = subprocess.run(
        [*cli, "check", "--user", spec, "--agent", spec, "--envs", "turtle"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert check.returncode == 1 and check.stdout.count(REDACTED) >= 2, check.stdout
    assert len(fault_server.requests) == 7 and all(
        r["headers"]["Authorization"] == f"Bearer {SENTINEL}" for r in fault_server.requests
    )
    outputs = [evaluation.stdout, evaluation.stderr, check.stdout, check.stderr]
    assert all(SENTINEL not in text for text in outputs)
    files_without_sentinel(out)
    (record,) = ResultsStore(out / "episodes.jsonl").read()
    assert record.status == "agent_error" and REDACTED in record.error
    assert [f.kind for f in record.user_failures] == ["client_error"] and REDACTED in record.user_failures[0].detail


def test_a_credential_in_a_base_url_appears_in_no_file_or_output_of_eval_or_its_resume(fault_server, tmp_path):
    spec = "openai:fault-model@" + fault_server.base_url.replace("http://", f"http://someone:{SENTINEL}@")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "run"
    evaluation = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--no-progress", "--out", str(out)]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*evaluation, *args], env=env, capture_output=True, text=True, timeout=300)

    first = run("--agent", "scripted:baseline", "--users", spec, "--envs", "turtle", "--split", "demo", "--limit", "1",
                "--max-turns", "2")  # fmt: skip
    assert first.returncode in (0, 4), first.stderr
    assert fault_server.requests and all(
        r["headers"]["Authorization"].startswith("Basic ") for r in fault_server.requests
    )  # the credential did reach the server
    lost = run("--resume")  # run.json kept no credential: the resume must be given it again
    assert lost.returncode == 2 and "--resume: run.json keeps no credential from a URL" in lost.stderr
    again = run("--resume", "--users", spec)
    assert again.returncode == first.returncode, again.stderr
    for result in (first, lost, again):
        assert SENTINEL not in result.stdout + result.stderr
    assert "http://***@127.0.0.1" in first.stderr  # the pre-flight line names the endpoint, redacted
    written = {path.name for path in files_without_sentinel(out)}
    assert {"run.json", "episodes.jsonl", "summary.md", "summary.json", "summary.csv", "report.html"} <= written
    meta = json.loads((out / "run.json").read_text())
    assert meta["config"]["users"] == [redact(spec)] and len(meta["resumes"]) == 1


# ------------------------------------------------------------------------- keys travel safely


def test_no_key_goes_over_plain_http_to_a_non_loopback_host_without_the_opt_in(fault_server, monkeypatch, caplog):
    monkeypatch.setenv("TEST_SENTINEL_SECRET", SENTINEL)
    monkeypatch.delenv("MIMESIS_ALLOW_INSECURE_HTTP", raising=False)
    remote = fault_server.base_url.replace("127.0.0.1", "0.0.0.0")  # reaches this host, but is not a loopback name
    with pytest.raises(UserUnavailableError) as raised:
        chat(model(fault_server, base_url=remote, api_key_env=["TEST_SENTINEL_SECRET"]))
    assert "MIMESIS_ALLOW_INSECURE_HTTP=1" in str(raised.value) and "https" in str(raised.value)
    refused = chat(model(fault_server, base_url=remote, api_key_env=["TEST_SENTINEL_SECRET"], fail_fast=False))
    assert refused.failure.kind == "auth" and refused.failure.attempts == 1
    assert "MIMESIS_ALLOW_INSECURE_HTTP=1" in refused.failure.detail and "https" in refused.failure.detail
    assert fault_server.requests == []
    caplog.set_level(logging.WARNING)
    opted = chat(model(fault_server, base_url=remote, api_key_env=["TEST_SENTINEL_SECRET"], allow_insecure_http=True))
    assert opted.ok and fault_server.requests[-1]["headers"]["Authorization"] == f"Bearer {SENTINEL}"
    assert f"plain http to {remote.split('/')[2]} (opted in)" in caplog.text
    monkeypatch.setenv("MIMESIS_ALLOW_INSECURE_HTTP", "1")
    assert chat(model(fault_server, base_url=remote, api_key_env=["TEST_SENTINEL_SECRET"])).ok
    assert len(fault_server.requests) == 2


def test_serve_user_passes_the_key_through_the_environment_and_prints_only_its_name(monkeypatch, capsys):
    from mimesis_gym.cli import main

    monkeypatch.setenv("SERVE_KEY", SENTINEL)
    command = build_serve_command("mimesis-9b", host="0.0.0.0", api_key_env="SERVE_KEY", python="py")
    assert "--api-key" not in command.argv and SENTINEL not in " ".join(command.argv)
    assert command.shell().startswith('VLLM_API_KEY="$SERVE_KEY" py -m vllm')
    assert SENTINEL not in repr(command) and SENTINEL not in str(pickle.dumps(command))
    assert main(["serve-user", "mimesis-9b", "--host", "0.0.0.0", "--api-key-env", "SERVE_KEY", "--print"]) == 0
    out = capsys.readouterr().out
    assert "$SERVE_KEY" in out and SENTINEL not in out


def test_a_served_process_gets_the_key_from_its_environment_never_its_argv(monkeypatch, tmp_path):
    monkeypatch.setenv("SERVE_KEY", SENTINEL)
    port = free_port()
    script = ROOT / "tests" / "support" / "keyed_server.py"
    command = ServeCommand(
        [sys.executable, str(script), str(port), "tiny"], port=port, served_model_name="tiny", key_variable="SERVE_KEY"
    )
    log = tmp_path / "server.log"
    with VLLMServer(command, log_file=str(log)) as served:
        served.wait_healthy(timeout_s=30, poll_s=0.1)  # /v1/models answers only with the key
        cmdline = Path(f"/proc/{served.process.pid}/cmdline").read_bytes()
        assert SENTINEL.encode() not in cmdline and b"keyed_server.py" in cmdline
    text = log.read_text()
    assert "api key from the environment: yes" in text and f"api_key={REDACTED}" in text
    assert SENTINEL not in text and all(SENTINEL not in line for line in served.lines)


@pytest.mark.vllm
def test_a_real_vllm_server_takes_its_key_from_the_environment(monkeypatch, tmp_path):
    """vLLM itself enforces the key it got as ``VLLM_API_KEY`` (``make test-vllm``; needs ``.venv-vllm``)."""
    from tests.test_vllm_server import VLLM_PYTHON, require_vllm_python

    require_vllm_python()
    monkeypatch.setenv("SERVE_KEY", SENTINEL)
    command = build_serve_command("tiny", python=str(VLLM_PYTHON), port=free_port(), api_key_env="SERVE_KEY")
    log = tmp_path / "server.log"
    with VLLMServer(command, log_file=str(log)) as served:
        served.wait_healthy(timeout_s=600)  # its /v1/models check sends the key
        assert SENTINEL.encode() not in Path(f"/proc/{served.process.pid}/cmdline").read_bytes()
        with pytest.raises(UserUnavailableError, match=r"refused the API key \(HTTP 401\)"):
            chat(OpenAIChatModel(EndpointConfig(base_url=command.base_url, model="tiny", max_retries=0)))
        keyed = EndpointConfig(base_url=command.base_url, model="tiny", api_key_env=["SERVE_KEY"], timeout_s=120)
        assert chat(OpenAIChatModel(keyed)).ok
    assert SENTINEL not in log.read_text()


@pytest.mark.vllm
def test_serve_user_exits_2_when_the_key_variable_is_gone_at_launch(monkeypatch, capsys):
    from mimesis_gym.users.serve import serve_user_main
    from tests.test_vllm_server import VLLM_PYTHON, require_vllm_python

    require_vllm_python()  # serve_user_main launches only with an interpreter that can import vLLM
    monkeypatch.delenv("SERVE_KEY_GONE", raising=False)
    script = ROOT / "tests" / "support" / "keyed_server.py"
    command = ServeCommand([str(VLLM_PYTHON), str(script), "9", "tiny"], key_variable="SERVE_KEY_GONE")
    assert serve_user_main(command, print_only=False, wait_s=5) == 2
    assert "SERVE_KEY_GONE (the server's API key) is not set" in capsys.readouterr().err
