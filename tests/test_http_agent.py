"""The tool-calling chat agent (docs/evaluation.md, "Agents") against a loopback server, alone and in a run."""

import asyncio
import json

import pytest

from mimesis_gym.agents.base import Conversation
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.core.actions import interact_with_env_tool
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from tests.support.fault_server import FaultServer

TOOLS = [interact_with_env_tool({"action", "search", "answer", "finish"})]


@pytest.fixture
def server():
    fault = FaultServer()
    yield fault
    fault.close()


def act(agent, conv):
    return asyncio.run(agent.act(conv, seed=3))


def conversation(tools=TOOLS):
    return Conversation(messages=[{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}], tools=tools)


def test_tool_call_arguments_become_the_action_and_the_history_uses_tool_messages(server):
    server.script('tool:{"choice": "answer", "content": "29"}')
    agent = make_agent(f"openai:fault-model@{server.base_url}")
    conv = conversation()
    turn = act(agent, conv)
    assert turn.action == {"choice": "answer", "content": "29"} and turn.failure is None
    body = server.requests[0]["body"]
    assert body["tool_choice"] == "required" and body["tools"] == TOOLS and body["seed"] == 3
    agent.observe(conv, turn, "Your answer is correct!")
    assert conv.messages[-1] == {"role": "tool", "tool_call_id": "call_1", "content": "Your answer is correct!"}
    assert conv.messages[-2]["tool_calls"][0]["function"]["arguments"] == '{"choice": "answer", "content": "29"}'


def test_arguments_that_are_not_an_object_are_passed_raw(server):
    server.script('tool:"just a string"')
    turn = act(make_agent(f"openai:fault-model@{server.base_url}"), conversation())
    assert turn.action == '"just a string"'


def test_no_tool_call_falls_back_to_the_grammar(server):
    server.script("ok:<think>hmm</think>I will ask.\n[action] Is it a cat?")
    turn = act(make_agent(f"openai:fault-model@{server.base_url}"), conversation())
    assert turn.action == "[action] Is it a cat?"


def test_transport_faults_are_retried_then_reported(server):
    server.script("status:500", 'tool:{"choice": "finish"}')
    agent = make_agent(f"openai:fault-model@{server.base_url}")
    agent.policy.sleep = _no_sleep
    assert act(agent, conversation()).action == {"choice": "finish"}
    server.script("status:401")
    assert act(agent, conversation()).failure.kind == "auth"


async def _no_sleep(seconds):
    return None


def test_released_agent_aliases_use_their_variables(monkeypatch):
    monkeypatch.setenv("MIMESIS_AGENT_CSD_AGENT_BASE_URL", "http://127.0.0.1:8199/v1")
    agent = make_agent("csd-agent")
    assert agent.client.config.base_url == "http://127.0.0.1:8199/v1" and agent.client.config.model == "csd-agent"
    with pytest.raises(ValueError, match="unknown agent alias"):
        make_agent("gpt-agent")


def test_a_run_with_the_http_agent(server, tmp_path):
    server.script(*['tool:{"choice": "search", "content": "test"}', 'tool:{"choice": "answer", "content": "29"}'])
    config = EvalConfig(
        envs=["function"], agents=[f"openai:fault-model@{server.base_url}"], split="demo", limit=1, concurrency=1
    )
    asyncio.run(run_eval(config, tmp_path, progress=False))
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert [s.action_kind for s in record.steps] == ["search", "answer"]
    assert record.episode_score == 1.0 and record.status == "ok"
    assert [m["role"] for m in record.transcript] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert json.loads((tmp_path / "run.json").read_text())["status"] == "complete"
