"""`mimesis-gym check --user/--agent`: health checks against a loopback chat-completions server."""

import json

import gymnasium as gym
import pytest

from mimesis_gym.cli import main
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from mimesis_gym.evaluation.health import check_agent, check_user
from mimesis_gym.users.registry import register_user
from tests.support.fault_server import FaultServer


@pytest.fixture
def server():
    server = FaultServer()
    yield server
    server.close()


@pytest.fixture
def fault_alias(server, clean_user_registry):
    def factory(**_):
        return OpenAIChatModel(
            EndpointConfig(base_url=server.base_url, model="fault-model", max_retries=0, content_retries=0)
        )

    register_user("fault-user", factory)
    return "fault-user"


def _turtle_demo_rubric_reply() -> str:
    env = gym.make("mimesis/TurtleGym-v0", split="demo")
    env.reset(seed=0)
    scores = [{"score": 1.0} for _ in env.unwrapped.task.criteria]
    env.close()
    return "ok:" + json.dumps({"scores": scores})


def test_user_check_reports_endpoint_completion_and_each_role_call(server, fault_alias):
    server.script("ok:Fine, thanks.", _turtle_demo_rubric_reply())
    results = check_user(fault_alias, ["mimesis/TurtleGym-v0"])
    by_check = {r.check: r for r in results}
    assert by_check["health"].ok and by_check["models"].ok and "fault-model" in by_check["models"].detail
    assert by_check["completion"].ok
    role_lines = [r for r in results if r.env_id == "mimesis/TurtleGym-v0"]
    assert role_lines and all(r.ok for r in role_lines)
    assert any("JSON tier 0" in r.detail for r in role_lines)
    assert all(r.ok for r in results)


def test_user_check_fails_on_a_refusing_user(server, fault_alias, capsys):
    server.script("ok:Fine, thanks.", *["refusal_text"] * 8)
    assert main(["check", "--user", fault_alias, "--envs", "turtle"]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "refusal" in out


def test_user_check_fails_when_the_server_is_down(clean_user_registry):
    def factory(**_):
        return OpenAIChatModel(EndpointConfig(base_url="http://127.0.0.1:9/v1", model="m", max_retries=0))

    register_user("down-user", factory)
    results = check_user("down-user", ["mimesis/TurtleGym-v0"], health_timeout_s=0)
    assert not next(r for r in results if r.check == "health").ok
    assert not all(r.ok for r in results)
    assert next(r for r in results if r.check == "completion").ok is False


def test_scripted_user_needs_no_endpoint():
    (line,) = check_user("scripted", ["mimesis/TurtleGym-v0"])
    assert line.ok and "no model" in line.detail


def test_agent_check_round_trips_a_tool_call(server):
    server.script('tool:{"choice": "answer", "content": "42"}')
    (line,) = check_agent(f"openai:fault-model@{server.base_url}")
    assert line.ok and "tool call 'interact_with_env'" in line.detail


def test_agent_check_reports_a_failing_agent(server):
    server.script("status:400:bad request")  # not retried
    (line,) = check_agent(f"openai:fault-model@{server.base_url}")
    assert not line.ok
