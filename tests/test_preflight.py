"""`mimesis-gym eval` probes every endpoint before episode 1 and exits 2 naming the unusable one."""

import json

import pytest

from mimesis_gym.cli import main
from mimesis_gym.users import register_user
from mimesis_gym.users.builtin import alias_variable
from mimesis_gym.users.registry import endpoint_hints, resolve_user
from mimesis_gym.users.serve import free_port
from tests.support.chat_models import ScriptedChatModel, refusal
from tests.support.fault_server import FaultServer


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


def eval_args(out, *extra):
    return ["eval", "--envs", "function", "--agent", "oracle", "--limit", "1", "--max-turns", "2", "--out", str(out),
            "--no-progress", *extra]  # fmt: skip


def one_line(capsys):
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_a_dead_user_stops_eval_before_anything_is_written(tmp_path, monkeypatch, capsys):
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", base_url)
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) == 2
    line = one_line(capsys)
    assert line.startswith("mimesis-gym eval: user 'mimesis-9b' is unavailable: cannot connect")
    assert base_url in line and "mimesis-gym serve-user mimesis-9b" in line
    assert not (tmp_path / "run").exists()  # nothing written, not even the directory


def test_a_dead_open_evaluation_user_says_first_which_checkpoint_to_set(tmp_path, monkeypatch, capsys):
    """`eval --paper`'s open users have no hub id the release names: `serve-user` alone would fail."""
    monkeypatch.setenv("MIMESIS_USER_DITTO_8B_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    monkeypatch.delenv("MIMESIS_USER_DITTO_8B_HUB_ID", raising=False)
    assert main(eval_args(tmp_path / "run", "--users", "ditto-8b")) == 2
    line = one_line(capsys)
    assert "user 'ditto-8b' is unavailable: cannot connect" in line
    assert "Fix: set MIMESIS_USER_DITTO_8B_HUB_ID to its checkpoint (hub id or local path) and start it with " \
        "`mimesis-gym serve-user ditto-8b`" in line  # fmt: skip


@pytest.mark.parametrize("alias", ["ditto-8b", "osim-8b", "humanlm-8b", "sotopia-7b"])
def test_the_connect_hint_of_an_unpinned_checkpoint_names_its_variable_until_it_is_set(alias, monkeypatch):
    variable = alias_variable(alias, "HUB_ID")
    monkeypatch.delenv(variable, raising=False)
    assert endpoint_hints(resolve_user(alias)).connect.startswith(f"set {variable} to its checkpoint")
    monkeypatch.setenv(variable, "lab/some-checkpoint")
    assert endpoint_hints(resolve_user(alias)).connect.startswith(f"start it with `mimesis-gym serve-user {alias}`")


def test_a_server_that_does_not_serve_the_model_fails_the_preflight(tmp_path, monkeypatch, server, capsys):
    server.models = ["some-other-model"]
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) == 2
    line = one_line(capsys)
    assert "does not serve 'mimesis-9b' (it serves: some-other-model)" in line
    assert "MIMESIS_USER_MIMESIS_9B_MODEL" in line
    assert server.requests == []  # the probe is a GET /models, no completion was asked for


def test_a_refused_key_fails_the_preflight_of_an_agent(tmp_path, monkeypatch, server, capsys):
    server.models_status = 401
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-preflight")
    assert main(eval_args(tmp_path / "run", "--agent", f"openai:fault-model@{server.base_url}")) == 2
    line = one_line(capsys)
    assert "agent 'openai:fault-model@" in line and "refused the API key (HTTP 401)" in line
    assert "set OPENAI_API_KEY" in line


def test_a_server_without_a_models_route_is_probed_with_one_token(tmp_path, monkeypatch, server, capsys):
    server.models_status = 404
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    server.script("status:404:The model `fault-model` does not exist.")
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) == 2
    assert "HTTP 404: The model `fault-model` does not exist." in one_line(capsys)
    assert server.requests[0]["body"]["max_tokens"] == 1


def test_a_healthy_endpoint_passes_and_the_run_goes_on(tmp_path, monkeypatch, server, capsys):
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    code = main(eval_args(tmp_path / "run", "--users", "mimesis-9b", "--user-arg", "max_retries=0"))
    err = capsys.readouterr().err
    assert f"pre-flight: user mimesis-9b: {server.base_url} serves 'fault-model'" in err
    assert code in (0, 4)
    assert (tmp_path / "run" / "run.json").exists()


def test_no_preflight_then_a_dead_user_stops_the_run_as_failed(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    out = tmp_path / "run"
    assert main(eval_args(out, "--users", "mimesis-9b", "--envs", "turtle", "--no-preflight")) == 2
    assert "user 'mimesis-9b' is unavailable" in one_line(capsys)
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "failed" and "is unavailable" in meta["error"]
    assert not (out / "episodes.jsonl").exists() or (out / "episodes.jsonl").read_text() == ""


def test_a_run_whose_cell_is_all_user_failures_exits_4(tmp_path, clean_user_registry, capsys):
    register_user("always-refuses", lambda **_: ScriptedChatModel([refusal()], suspend=False))
    args = eval_args(tmp_path / "run", "--users", "always-refuses,scripted")
    args[args.index("function")] = "persuade"
    assert main(args) == 4
    err = capsys.readouterr().err
    assert "every episode of agent oracle, user always-refuses, env persuade is a user failure" in err


def test_abcd_with_a_user_alias_as_the_customer_policy(tmp_path, monkeypatch, server):
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    server.script(*["ok:Hi, I want to return a shirt."] * 3, "ok:[finish]")
    out = tmp_path / "run"
    code = main(["eval", "--envs", "abcd", "--agent", "mimesis-9b", "--limit", "1", "--out", str(out), "--no-progress"])
    assert code == 0
    (record,) = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert record["agent"] == "mimesis-9b" and record["status"] == "ok"
    assert record["steps"][0]["content"] == "Hi, I want to return a shirt."
    assert all("tools" not in request["body"] for request in server.requests)  # ABCD's policy has no tool


def test_worker_processes_report_a_dead_user_instead_of_hanging(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", f"http://127.0.0.1:{free_port()}/v1")
    out = tmp_path / "run"
    args = eval_args(out, "--users", "mimesis-9b", "--envs", "turtle", "--limit", "2", "--workers", "2",
                     "--no-preflight")  # fmt: skip
    assert main(args) == 2
    assert "user 'mimesis-9b' is unavailable" in one_line(capsys)
    assert json.loads((out / "run.json").read_text())["status"] == "failed"


@pytest.mark.parametrize(("code", "fix"), [(503, "fails every request: check its log"), (429, "rate limit or quota")])
def test_an_endpoint_that_answers_5xx_or_429_to_every_probe_fails_the_preflight(
    tmp_path, monkeypatch, server, capsys, code, fix
):
    server.models_status = code
    server.default_mode = f"status:{code}"
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) == 2
    line = one_line(capsys)
    assert line.startswith("mimesis-gym eval: user 'mimesis-9b' is unavailable: no request succeeded; last fault: ")
    assert f"HTTP {code}" in line and server.base_url in line and fix in line
    assert line.endswith("or skip the pre-flight with --no-preflight")
    assert len(server.gets) == 1 and len(server.requests) == 1  # GET /models, then one one-token completion
    assert not (tmp_path / "run").exists()


def test_a_probe_that_succeeds_after_a_transient_fault_passes(tmp_path, monkeypatch, server, capsys):
    server.models_status = 503  # /models fails, the one-token completion answers
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) in (0, 4)
    assert f"pre-flight: user mimesis-9b: {server.base_url} answers" in capsys.readouterr().err


def test_a_server_that_resets_every_connection_fails_the_preflight(tmp_path, monkeypatch, server, capsys):
    server.models_reset = True
    server.default_mode = "reset"
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    assert main(eval_args(tmp_path / "run", "--users", "mimesis-9b")) == 2
    line = one_line(capsys)
    assert "is unavailable: no request succeeded; last fault: the connection was reset or closed" in line
    assert "mimesis-gym serve-user mimesis-9b" in line and line.endswith("--no-preflight")
