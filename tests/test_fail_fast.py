"""A misconfigured endpoint raises on its first call; a healthy one that falters falls back (real loopback HTTP)."""

import asyncio
import pickle
import random

import gymnasium as gym
import pytest

from mimesis_gym.agents.registry import make_agent
from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.errors import (
    AgentUnavailableError,
    ConfigurationError,
    EndpointUnavailableError,
    MimesisGymError,
    UserUnavailableError,
)
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel
from mimesis_gym.users.serve import free_port
from tests.support.echo_env import EchoEnv
from tests.support.fault_server import FaultServer

MESSAGES = [{"role": "system", "content": "You are a user."}, {"role": "user", "content": "Hi"}]


class Sleeps:
    def __init__(self):
        self.delays = []

    async def __call__(self, seconds):
        self.delays.append(seconds)


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


def model(base_url, *, sleeps=None, **config):
    endpoint = EndpointConfig(base_url=base_url, model="fault-model", timeout_s=5, **config)
    policy = RetryPolicy(max_retries=endpoint.max_retries, rng=random.Random(0), sleep=sleeps or Sleeps())
    return OpenAIChatModel(endpoint, name="my-user", retry_policy=policy)


def chat(m):
    return asyncio.run(m.chat(MESSAGES, max_tokens=16, temperature=0.0, seed=1))


def test_nothing_listening_raises_at_once_with_url_model_cause_and_fix():
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    sleeps = Sleeps()
    with pytest.raises(UserUnavailableError) as raised:
        chat(model(base_url, sleeps=sleeps))
    error = raised.value
    assert isinstance(error, MimesisGymError) and isinstance(error, EndpointUnavailableError)
    assert (error.alias, error.base_url, error.model) == ("my-user", base_url, "fault-model")
    assert "cannot connect" in error.cause and "server is running" in error.fix
    assert base_url in str(error) and "'fault-model'" in str(error) and "Fix:" in str(error)
    assert sleeps.delays == []  # no retry, no backoff: the first call decides
    assert pickle.loads(pickle.dumps(error)).args == error.args


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("status:401", "the server refused the API key (HTTP 401)"),
        ("status:403", "the server refused the API key (HTTP 403)"),
        ("status:404:The model `fault-model` does not exist.", "HTTP 404: The model `fault-model` does not exist."),
    ],
)
def test_refused_key_or_unknown_model_raises_on_the_first_call(server, mode, cause):
    server.script(mode, "ok:never reached")
    with pytest.raises(UserUnavailableError, match="is unavailable") as raised:
        chat(model(server.base_url))
    assert raised.value.cause == cause
    assert len(server.requests) == 1


@pytest.mark.parametrize("mode", ["status:401", "status:404:gone", "status:500", "reset"])
def test_after_the_endpoint_has_answered_faults_fall_back_as_before(server, mode):
    m = model(server.base_url, max_retries=0)
    server.script("ok:fine", mode)
    assert chat(m).text == "fine"
    reply = chat(m)
    assert reply.failure is not None and reply.text == ""


def test_fail_fast_false_keeps_the_fallback(server):
    server.script("status:401")
    reply = chat(model(server.base_url, fail_fast=False))
    assert reply.failure.kind == "auth"
    reply = chat(model(f"http://127.0.0.1:{free_port()}/v1", fail_fast=False, max_retries=1))
    assert reply.failure.kind == "connection"


def test_transient_faults_of_a_healthy_user_become_user_failures(server):
    user = model(server.base_url, max_retries=1)
    server.script('ok:{"reply": "hello"}', *["status:503"] * 4)
    env = EchoEnv(user=user)
    env.reset(seed=0)
    _, _, _, _, info = env.step("[action] hi")
    assert info["user_failure"] is None
    _, reward, _, _, info = env.step("[action] again")
    assert info["user_failure"] == "listener:http" and reward == 0.0
    env.close()


@pytest.mark.parametrize(
    ("mode", "cause"),
    [
        ("reset", "no request succeeded; last fault: the connection was reset or closed (ReadError"),
        ("drop", "no request succeeded; last fault: the connection was reset or closed (RemoteProtocolError"),
        ("status:503", "no request succeeded; last fault: HTTP 503: status 503"),
        ("status:429", "no request succeeded; last fault: HTTP 429: status 429"),
    ],
)
def test_a_transient_fault_that_outlasts_the_retries_of_a_new_endpoint_raises_from_step(
    server, monkeypatch, mode, cause
):
    server.default_mode = mode
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", server.base_url)
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_MODEL", "fault-model")
    user_kwargs = {"max_retries": 2, "backoff_base_s": 0.0, "backoff_cap_s": 0.0}
    env = gym.make("mimesis/TurtleGym-v0", user="mimesis-9b", split="demo", user_kwargs=user_kwargs)
    env.reset(seed=0)
    with pytest.raises(UserUnavailableError) as raised:
        env.step("[action] Is it a ghost?")
    assert raised.value.cause.startswith(cause), raised.value.cause
    assert len(server.requests) == 3  # retried first: one reset or 5xx may be a blip
    env.close()


def test_preflight_and_step_classify_a_reset_alike(server):
    from mimesis_gym.evaluation.preflight import run_preflight

    server.models_reset = True
    server.default_mode = "reset"
    with pytest.raises(UserUnavailableError) as probed:
        asyncio.run(run_preflight([("user", "my-user", model(server.base_url))]))
    with pytest.raises(UserUnavailableError) as stepped:
        chat(model(server.base_url, max_retries=1))
    assert probed.value.cause == stepped.value.cause
    assert probed.value.cause.startswith("no request succeeded; last fault: the connection was reset or closed")


def test_mimesis_alias_without_a_server_raises_from_step_naming_the_fix(monkeypatch):
    base_url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("MIMESIS_USER_MIMESIS_9B_BASE_URL", base_url)
    env = gym.make("mimesis/TravelGym-v0", user="mimesis-9b", split="demo")
    env.reset(seed=0)
    with pytest.raises(UserUnavailableError) as raised:
        env.step("[action] What kind of hotel do you like?")
    message = str(raised.value)
    assert "'mimesis-9b'" in message and base_url in message
    assert "mimesis-gym serve-user mimesis-9b" in message and "MIMESIS_USER_MIMESIS_9B_BASE_URL" in message
    env.close()


def test_api_alias_without_a_key_raises_naming_the_variables(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("MIMESIS_USER_GPT_5_5_API_KEY", raising=False)
    env = gym.make("mimesis/TurtleGym-v0", user="gpt-5.5", split="demo")
    env.reset(seed=0)
    with pytest.raises(UserUnavailableError, match="no API key is set") as raised:
        env.step("[action] Is it a ghost?")
    assert "set MIMESIS_USER_GPT_5_5_API_KEY or OPENAI_API_KEY" in raised.value.fix
    env.close()


def test_a_judge_endpoint_reports_itself_as_the_judge(monkeypatch):
    from mimesis_gym.users.registry import resolve_role_models

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    models = resolve_role_models("scripted", judge="openai:some-model")
    with pytest.raises(UserUnavailableError, match=r"^judge 'openai:some-model' is unavailable"):
        asyncio.run(models.judge.chat(MESSAGES, max_tokens=8, temperature=0.0, seed=0))


def test_released_agent_without_a_server_raises_agent_unavailable(monkeypatch):
    from mimesis_gym.agents.base import Conversation

    base_url = f"http://127.0.0.1:{free_port()}/v1"
    monkeypatch.setenv("MIMESIS_AGENT_CSD_AGENT_BASE_URL", base_url)
    agent = make_agent("csd-agent")
    conv = Conversation(messages=[{"role": "user", "content": "hello"}], tools=[])
    with pytest.raises(AgentUnavailableError) as raised:
        asyncio.run(agent.act(conv, seed=0))
    assert raised.value.party == "agent" and "phanviethoang1512/Qwen3-8B-CSD-Agent" in raised.value.fix
    assert str(raised.value).startswith("agent 'csd-agent' is unavailable")


def test_user_aliases_also_name_agents():
    agent = make_agent("mimesis-9b")
    assert agent.client.config.base_url == "http://127.0.0.1:8000/v1" and agent.client.party == "agent"
    with pytest.raises(ConfigurationError, match="unknown agent alias 'no-such-agent'"):
        make_agent("no-such-agent")


def test_rejected_bad_base_urls_in_the_endpoint_config():
    for bad, reason in [
        ("127.0.0.1:8000/v1", "no scheme"),
        ("ftp://host/v1", "must use http"),
        ("http://", "names no host"),
        ("http://host:port/v1", "invalid port"),
    ]:
        with pytest.raises(ValueError, match=reason):
            EndpointConfig(base_url=bad, model="m")
    assert EndpointConfig(base_url="HTTP://Host:1/v1", model="m").base_url == "http://Host:1/v1"
