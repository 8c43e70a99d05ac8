"""Constrained actions (docs/evaluation.md, "Constrained actions"): the tiny model decoding under the action
grammar of every env's tool, the log-probs it records, the records' flag, the defaults, and the HTTP option."""

import asyncio
import json
import sys

import gymnasium as gym
import pytest

pytest.importorskip("transformers", reason="the local stack is installed by `make test`")
pytest.importorskip("llguidance", reason="the extra `local` is installed by `make test`")

import torch
from transformers import AutoModelForCausalLM

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym.agents.base import Conversation
from mimesis_gym.agents.constrained import action_constraint, action_json_schema, action_lark
from mimesis_gym.agents.grammar import allowed_choices, parse_agent_text
from mimesis_gym.agents.local import LocalAgent
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.cli import main
from mimesis_gym.core.actions import ParsedAction, interact_with_env_tool, parse_action
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.local_lm import get_local_lm
from mimesis_gym.core.tiny import ensure_tiny_model
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore

SEEDS = (0, 1, 2)
PROMPT = [{"role": "user", "content": "Tell me a short story about a cat."}]
"""A prompt that never mentions tags: whatever the model writes comes from the constraint."""


@pytest.fixture(scope="module")
def engine():
    lm = get_local_lm(str(ensure_tiny_model()))
    lm.load()
    return lm


def env_tools():
    """``(env id, accepted, tolerated kinds, tools)`` of every conversation env in the table that has tools."""
    found = []
    for env_id in ENV_TABLE.ids():
        env = gym.make(env_id, user="scripted").unwrapped
        if env.tools:  # an env without tools takes plain text: nothing to constrain
            found.append((env_id, env.accepted_kinds, env.tolerated_kinds, list(env.tools)))
        env.close()
    return found


def test_every_envs_tool_gets_only_well_formed_actions(engine):
    """One generation per distinct grammar (the constraint reads only the tools' choices), each read by
    every env whose tools give that grammar; the seeds rotate over the grammars, so all of them decode."""
    grammars: dict[tuple[str, ...], list[tuple[str, frozenset[str], dict[str, str], list[dict]]]] = {}
    for env_id, accepted, tolerated, tools in env_tools():
        grammars.setdefault(tuple(sorted(allowed_choices(tools))), []).append((env_id, accepted, tolerated, tools))
    cases = [(envs, SEEDS[index % len(SEEDS)]) for index, envs in enumerate(grammars.values())]
    prompt = engine.render(PROMPT)

    async def run():
        return await asyncio.gather(
            *[
                engine.generate(
                    prompt,
                    max_tokens=12,
                    temperature=1.0,
                    seed=seed,
                    constraint=action_constraint(engine.tokenizer, envs[0][3]),
                )
                for envs, seed in cases
            ]
        )

    generations = asyncio.run(run())
    assert sum(len(envs) for envs, _ in cases) >= 8 and {seed for _, seed in cases} == set(SEEDS)
    for (envs, seed), generation in zip(cases, generations, strict=True):
        action = parse_agent_text(generation.text)
        for env_id, accepted, tolerated, tools in envs:
            parsed = parse_action(action, accepted, tolerated)
            assert isinstance(parsed, ParsedAction), (env_id, seed, generation.text, parsed)
            assert parsed.tag in allowed_choices(tools), (env_id, generation.text)
    free = asyncio.run(engine.generate(prompt, max_tokens=16, temperature=0.0, seed=0))
    assert not free.text.lstrip().startswith("["), "the prompt alone already yields a tag: the test proves nothing"


def test_the_env_accepts_the_constrained_agents_actions(engine):
    agent = LocalAgent(None, max_tokens=12, temperature=1.0, constrained=True)
    env = gym.make("mimesis/TelepathyGym-v0", user="scripted").unwrapped

    async def run():
        await env.areset(seed=0)
        conv = agent.start("You are a helpful assistant.", env.tools, PROMPT)
        turns = [await agent.act(conv, seed=seed) for seed in SEEDS]
        steps = [await env.astep(turn.action) for turn in turns]
        return turns, steps

    turns, steps = asyncio.run(run())
    env.close()
    assert all(turn.constrained and turn.failure is None for turn in turns)
    assert all(info["action_kind"] != "invalid" for *_, info in steps), [t.message["content"] for t in turns]


def test_recorded_logprobs_are_the_masked_distributions(engine):
    tools = [interact_with_env_tool({"action", "answer", "finish"})]
    prompt = engine.render(PROMPT)
    generation = asyncio.run(
        engine.generate(
            prompt, max_tokens=10, temperature=1.0, seed=7, constraint=action_constraint(engine.tokenizer, tools)
        )
    )
    ids = prompt + generation.completion_ids
    model = AutoModelForCausalLM.from_pretrained(ensure_tiny_model(), dtype=torch.float32).eval()
    with torch.inference_mode():  # one forward pass of its own over prompt + completion
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    replay = action_constraint(engine.tokenizer, tools)  # a fresh matcher: the allowed sets, step by step
    unconstrained = []
    for step, token in enumerate(generation.completion_ids):
        row = logits[len(prompt) - 1 + step]
        expected = replay.log_probs(row)
        assert float(expected[token]) == pytest.approx(generation.logprobs[step], abs=2e-4)
        unconstrained.append(float(torch.log_softmax(row, -1)[token]))
        replay.accept(token)
    # the first token is forced ("["): probability 1 under the constraint, not under the model
    assert generation.logprobs[0] == pytest.approx(0.0, abs=1e-6) and unconstrained[0] < -0.01
    assert sum(generation.logprobs) > sum(unconstrained)


def test_unconstrained_turns_are_not_flagged_and_tool_less_envs_are_not_constrained(engine):
    tools = [interact_with_env_tool({"action", "finish"})]

    async def run(agent, tools):
        conv = agent.start("You are a helpful assistant.", tools, PROMPT)
        return await agent.act(conv, seed=0)

    free = asyncio.run(run(LocalAgent(None, max_tokens=4), tools))
    plain = asyncio.run(run(LocalAgent(None, max_tokens=4, constrained=True), []))
    assert not free.constrained and not plain.constrained


def test_the_grammar_follows_the_tools_choices():
    only_answer = action_lark([interact_with_env_tool({"answer"})])
    assert '"[answer] "' in only_answer and "[finish]" not in only_answer and "[action]" not in only_answer
    finish_only = action_lark([interact_with_env_tool({"finish"})])
    assert "CONTENT" in finish_only and '"[finish]"' in finish_only and "[action]" not in finish_only
    with pytest.raises(ValueError, match="no choices"):
        action_lark([])
    schema = action_json_schema([interact_with_env_tool({"search", "answer"})])
    assert schema["properties"]["choice"]["enum"] == ["search", "answer"] and schema["additionalProperties"] is False


def test_a_missing_llguidance_fails_at_construction_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "llguidance", None)
    with pytest.raises(ConfigurationError, match=r"mimesis-gym\[local\].*--no-constrained-actions"):
        make_agent("tiny", constrained=True)
    assert make_agent("tiny").constrained is False  # unconstrained agents do not need it


def test_constraints_are_off_unless_asked():
    assert EvalConfig().constrained_actions is False
    assert make_agent("tiny").constrained is False and make_agent("hf:" + str(ensure_tiny_model())).constrained is False
    assert make_agent("tiny", constrained=True).constrained is True
    assert make_agent("openai:m@http://127.0.0.1:9/v1").constrained is False


@pytest.mark.slow  # two whole CLI runs of the tiny agent
@pytest.mark.parametrize("flags", [[], ["--no-constrained-actions"]])
def test_the_embedded_demo_constrains_the_tiny_agent_unless_told_not_to(flags, tmp_path):
    # the demo branch (no agent flags, no --limit): one env, one turn of 6 tokens to keep it short
    argv = ["eval", "--out", str(tmp_path), "--envs", "function", "--max-turns", "1", "--agent-max-tokens", "6"]
    assert main([*argv, "--no-progress", *flags]) == 0
    stored = json.loads((tmp_path / "run.json").read_text())["config"]
    records = [record for record in ResultsStore(tmp_path / "episodes.jsonl").read() if record.agent == "tiny"]
    assert stored["constrained_actions"] is not bool(flags) and len(records) == 2  # tiny beside the scripted agents
    assert all(step.constrained is not bool(flags) for record in records for step in record.steps)
    if not flags:
        assert all(step.action_kind != "invalid" for record in records for step in record.steps)


def test_http_agents_ask_for_the_action_schema_and_runs_record_constrained_steps(fault_server, tmp_path):
    fault_server.script('ok:{"choice": "search", "content": "test"}', 'ok:{"choice": "answer", "content": "29"}')
    config = EvalConfig(
        envs=["function"],
        agents=[f"openai:fault-model@{fault_server.base_url}"],
        split="demo",
        limit=1,
        concurrency=1,
        constrained_actions=True,
    )
    asyncio.run(run_eval(config, tmp_path, progress=False, preflight=False))
    (record,) = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert [(s.action_kind, s.constrained) for s in record.steps] == [("search", True), ("answer", True)]
    assert record.episode_score == 1.0
    body = fault_server.requests[-1]["body"]
    assert "tools" not in body and "tool_choice" not in body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"]["properties"]["choice"]["enum"] == [
        "action",
        "search",
        "answer",
        "finish",
    ]


def test_http_turns_are_not_flagged_once_the_server_refuses_schemas(fault_server):
    fault_server.script("status:400:json_schema is not supported", 'ok:{"choice": "finish", "content": ""}')
    agent = make_agent(f"openai:fault-model@{fault_server.base_url}", constrained=True)
    conv = Conversation(messages=[{"role": "user", "content": "hi"}], tools=[interact_with_env_tool({"finish"})])
    turn = asyncio.run(agent.act(conv, seed=0))
    assert turn.action == '{"choice": "finish", "content": ""}' and not turn.constrained
    assert fault_server.requests[-1]["body"]["response_format"] == {"type": "json_object"}
