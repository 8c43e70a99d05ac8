"""The HTTP path against a real vLLM server on loopback serving the tiny model (docs/users.md, "Plugging in MIMESIS").

Marker ``vllm``; run by ``make test-vllm`` (which creates ``.venv-vllm`` first). The server is
started once per session with ``serve-user tiny`` semantics. Outside CI a missing ``.venv-vllm``
skips the suite with the setup command; under ``CI=true`` it fails.
The tiny model's quality is irrelevant here: these tests check plumbing, never content.
"""

import asyncio
import json
import os
from pathlib import Path

import pytest

from mimesis_gym.core.chat import call_context
from mimesis_gym.core.conventions import reply_schema
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel

pytestmark = pytest.mark.vllm

ROOT = Path(__file__).resolve().parents[1]
VLLM_PYTHON = Path(os.environ.get("MIMESIS_VLLM_PYTHON", ROOT / ".venv-vllm" / "bin" / "python"))
MESSAGES = [{"role": "user", "content": "Say hello in five words."}]


def require_vllm_python() -> None:
    """Skip (fail under ``CI=true``) when the vLLM interpreter is missing, naming the setup command."""
    if not VLLM_PYTHON.exists():
        message = f"no vLLM interpreter at {VLLM_PYTHON}: run `make vllm-cpu` first"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def vllm_base_url(tmp_path_factory):
    if os.environ.get("MIMESIS_VLLM_TEST_BASE_URL"):  # reuse a server started by hand
        yield os.environ["MIMESIS_VLLM_TEST_BASE_URL"]
        return
    require_vllm_python()
    from mimesis_gym.users.serve import tiny_server

    log = tmp_path_factory.mktemp("vllm") / "server.log"
    server = tiny_server(str(VLLM_PYTHON), log_file=str(log))
    command = server.command
    server.start()
    try:
        server.wait_healthy(timeout_s=600)
    except Exception:
        server.stop()
        raise
    yield command.base_url
    server.stop()


def tiny(base_url, **fields) -> OpenAIChatModel:
    fields.setdefault("timeout_s", 60)
    return OpenAIChatModel(EndpointConfig(base_url=base_url, model="tiny", **fields))


def chat(model, messages=MESSAGES, **kwargs):
    kwargs.setdefault("max_tokens", 32)
    kwargs.setdefault("temperature", 0.0)
    kwargs.setdefault("seed", 0)
    return asyncio.run(model.chat(messages, **kwargs))


def test_round_trip(vllm_base_url):
    reply = chat(tiny(vllm_base_url))
    assert reply.failure is None and reply.text
    assert reply.usage.prompt_tokens > 0 and reply.usage.completion_tokens > 0 and reply.usage.attempts == 1


def test_temperature_zero_is_repeatable(vllm_base_url):
    model = tiny(vllm_base_url)
    assert chat(model).text == chat(model).text


def test_seeds_make_sampling_repeatable_and_different(vllm_base_url):
    model = tiny(vllm_base_url)
    first = chat(model, temperature=1.0, seed=123)
    assert chat(model, temperature=1.0, seed=123).text == first.text
    others = {chat(model, temperature=1.0, seed=seed).text for seed in (1, 2, 3)}
    assert others - {first.text}


def test_json_mode_returns_parseable_json(vllm_base_url):
    model = tiny(vllm_base_url)
    messages = [
        {"role": "system", "content": "Reply with a JSON object with keys answer and reason."},
        {"role": "user", "content": "Is the sky blue?"},
    ]

    async def raw():
        body = model.request_body(messages, 128, 0.0, 0, reply_schema(["answer", "reason"]))
        assert body["response_format"]["type"] == "json_schema"
        return (await model.post(body))["choices"][0]

    choice = asyncio.run(raw())
    if choice["finish_reason"] != "length":  # vLLM's structured output: every key is there
        assert set(json.loads(choice["message"]["content"])) >= {"answer", "reason"}
    reply = chat(model, messages, max_tokens=128, json_keys=["answer", "reason"])
    assert reply.failure is None or "token limit" in reply.failure.detail
    if reply.failure is None:
        assert set(reply.json(["answer", "reason"])) >= {"answer", "reason"}


def test_a_reply_cut_at_the_token_limit_is_bad_json(vllm_base_url):
    messages = [{"role": "user", "content": "Give JSON."}]
    reply = chat(tiny(vllm_base_url), messages, max_tokens=4, json_keys=["verdict"])
    assert reply.failure is not None and reply.failure.kind == "bad_json" and reply.text == ""
    assert reply.failure.attempts == 3


def test_session_header_is_accepted(vllm_base_url):
    model = tiny(vllm_base_url)

    async def run():
        with call_context("episode-abc", "oracle", 1):
            return await model.chat(MESSAGES, max_tokens=8, temperature=0.0, seed=0)

    assert asyncio.run(run()).failure is None


def test_sixty_four_concurrent_requests_complete(vllm_base_url):
    model = tiny(vllm_base_url, max_concurrency=64)

    async def run():
        return await asyncio.gather(*[model.chat(MESSAGES, max_tokens=32, temperature=1.0, seed=i) for i in range(64)])

    replies = asyncio.run(run())
    assert len(replies) == 64 and all(r.failure is None for r in replies)


def test_think_blocks_are_stripped_from_a_real_reply(vllm_base_url):
    forced = {"structured_outputs": {"regex": "<think>[a-z ]{5,40}</think>\n[A-Za-z ,.]{5,60}"}}
    reply = chat(tiny(vllm_base_url, extra_body=forced), max_tokens=64)
    assert reply.failure is None
    assert "<think>" not in reply.text and "</think>" not in reply.text and reply.text
    assert reply.thought and all(ch.islower() or ch == " " for ch in reply.thought)


def test_an_env_with_the_tiny_user_over_http_completes_three_turns(vllm_base_url, monkeypatch):
    import gymnasium as gym

    from tests.support.echo_env import EchoEnv

    monkeypatch.setenv("MIMESIS_TINY_BASE_URL", vllm_base_url)
    env = gym.wrappers.TimeLimit(EchoEnv(user="tiny", role_max_tokens=64), max_episode_steps=3)
    env.reset(seed=0)
    steps = 0
    truncated = False
    while not truncated:
        obs, reward, terminated, truncated, info = env.step("[action] Answer in JSON with key reply.")
        steps += 1
        assert obs and info["user_failure"] in (None, "listener:bad_json", "listener:invalid_value")
    assert steps == 3
    env.close()


# ---------------------------------------------------------------- LLM-path episodes of the envs


ENV_EPISODES = {
    "mimesis/TauGym-v0": (  # the opening user call at reset, a user reply, a deterministic tool call
        "orig-retail-demo-000",
        [
            "[action] Hello! What is your email?",
            '[answer] {"name": "find_user_id_by_email", "arguments": {"email": "theo.iwasaki30@example.net"}}',
            "[action] Anything else?",
        ],
        {"user"},
    ),
    "mimesis/TravelGym-v0": (  # search judge; classifier then responder; a deterministic answer
        "travel-demo-01",
        [
            "[search] rental car in Lisbon from May 3 to May 7",
            "[action] Would you like an electric car or a petrol one?",
            "[answer] C2",
        ],
        {"search_judge", "classifier", "responder"},
    ),
    "mimesis/TurtleGym-v0": (
        "turtle-demo-01",
        ["[action] Was the clock blinking?", "[answer] The power was cut."],
        {"oracle", "rubric"},
    ),
    "mimesis/TelepathyGym-v0": (
        "telepathy-demo-01",
        ["[action] Is it an animal?", "[answer] A giraffe."],
        {"answerer", "guess_judge"},
    ),
    "mimesis/IntentionGym-v0": (
        "intention-demo-01",
        ["[action] How much space do you have?"],
        {"responder", "coverage"},
    ),
    "mimesis/PersuadeGym-v0": (
        "persuade-demo-01",
        ["[answer] Cars let elderly people reach the centre."],
        {"persuadee"},
    ),
    "mimesis/SearchGym-v0": (  # an offline BM25 search (no model call), then a mismatch the judge decides
        "search-demo-01",
        ["[search] Who designed the Harrowgate Bridge?", "[answer] Carrowmere"],
        {"answer_judge"},
    ),
}


@pytest.mark.parametrize("env_id", list(ENV_EPISODES))
def test_env_episode_with_the_tiny_model_as_user_and_judge(vllm_base_url, env_id):
    import gymnasium as gym

    from mimesis_gym.evaluation.contract import check_step_result
    from tests.support.chat_models import RecordingChatModel

    task_id, actions, roles = ENV_EPISODES[env_id]
    model = RecordingChatModel(tiny(vllm_base_url))
    env = gym.make(env_id, user=model, split="demo", max_episode_steps=3, role_max_tokens=64, privileged=True)
    check_step_result(env, env.reset(seed=0, options={"task_id": task_id}), after_reset=True)
    done = False
    step = 0
    while not done:
        result = env.step(actions[step % len(actions)])
        check_step_result(env, result)
        failure = result[4]["user_failure"]
        assert failure is None or all(part.split(":")[0] in roles for part in failure.split(";"))
        done = result[2] or result[3]
        step += 1
    assert {call["role"] for call in model.calls} <= roles and model.calls
    assert all(call["max_tokens"] <= 64 for call in model.calls)
    assert all(call["messages"][0]["role"] == "system" for call in model.calls)
    env.close()


def test_the_tiny_user_over_http_plays_a_behaviour_in_taugym(vllm_base_url):
    """The directive reaches the served model in every user call, and the episode reports the condition
    and whether the check saw it (the tiny model's wording decides which: content is not checked)."""
    import gymnasium as gym

    from mimesis_gym.evaluation.contract import check_step_result
    from tests.support.chat_models import RecordingChatModel

    model = RecordingChatModel(tiny(vllm_base_url))
    env = gym.make("mimesis/TauGym-v0", user=model, split="demo", role_max_tokens=48, user_behavior="B9")
    obs, info = env.reset(seed=0, options={"task_id": "orig-retail-demo-000"})
    check_step_result(env, (obs, info), after_reset=True)
    result = (obs, 0.0, False, False, info)
    for action in ("[action] Hello! What is your email?", "[action] Which order is it?", "[action] Anything else?"):
        result = env.step(action)
        check_step_result(env, result)
        if result[2] or result[3]:
            break
    reported = result[4]["user_behavior"]
    assert reported["id"] == "B9" and isinstance(reported["enacted"], bool)
    assert model.calls and all(
        "How you behave in this conversation: Push the agent with short, impatient messages"
        in call["messages"][0]["content"]
        for call in model.calls
    )
    opening = env.unwrapped.user_exchanges[0]
    assert opening.turn == 0 and opening.user_text == obs  # the served customer's own first message
    env.close()


def test_eval_of_two_envs_with_the_tiny_agent_over_http(vllm_base_url, tmp_path, monkeypatch):
    from mimesis_gym.evaluation.runner import EvalConfig, run_eval
    from mimesis_gym.evaluation.store import ResultsStore

    monkeypatch.setenv("MIMESIS_TINY_BASE_URL", vllm_base_url)
    config = EvalConfig(
        envs=["turtle", "function"],
        agents=[f"openai:tiny@{vllm_base_url}"],
        users=["tiny"],
        split="demo",
        limit=1,
        max_turns=3,
        agent_max_tokens=64,
        role_max_tokens=64,
    )
    sections, counts = asyncio.run(run_eval(config, tmp_path, progress=False))
    assert set(counts) <= {"ok", "user_failure"} and sum(counts.values()) == 2
    for record in ResultsStore(tmp_path / "episodes.jsonl").read():
        assert 1 <= record.n_turns <= 3 and record.transcript[0]["role"] == "system"
    assert (tmp_path / "summary.md").read_text().startswith("## SmolLM2-135M")


def test_abcd_episode_with_the_tiny_model_as_customer_and_support_agent(vllm_base_url):
    import gymnasium as gym

    from mimesis_gym.envs.abcd.env import BEHAVIOR_PARTS
    from mimesis_gym.evaluation.contract import check_step_result
    from tests.support.chat_models import RecordingChatModel

    support = RecordingChatModel(tiny(vllm_base_url))  # the support agent, and the judge (J-self)
    env = gym.make(
        "mimesis/ABCDBehavior-v0", support_agent=support, split="demo", turn_budget=2, max_episode_steps=3,
        role_max_tokens=64, privileged=True,
    )  # fmt: skip
    obs, info = env.reset(seed=0, options={"task_id": "abcd-orig-demo-08"})
    check_step_result(env, (obs, info), after_reset=True)
    customer = tiny(vllm_base_url)  # the policy under test
    base = env.unwrapped
    messages = [{"role": "system", "content": base.system_prompt}, *base.opening_messages]
    done, steps = False, 0
    while not done:
        reply = asyncio.run(customer.chat(messages, max_tokens=64, temperature=0.0, seed=steps))
        messages.append({"role": "assistant", "content": reply.text})
        result = env.step(reply.text)
        check_step_result(env, result)
        obs, reward, terminated, truncated, info = result
        messages.append({"role": "user", "content": obs})
        done, steps = terminated or truncated, steps + 1
    assert terminated and steps <= 2
    failure = info["user_failure"]
    assert failure is None or all(part.split(":")[0] in {"support_agent", "judge"} for part in failure.split(";"))
    if info["valid_action"]:
        assert set(info["reward_parts"]) == set(BEHAVIOR_PARTS) and 0.0 <= reward <= 1.0
        if info["reward_parts"]["judge_failed"] == 1:
            assert reward == 0.0
    assert {call["role"] for call in support.calls} <= {"support_agent", "judge"}
    assert all(call["max_tokens"] <= 64 for call in support.calls)
    assert all(c["messages"][0]["role"] == "system" for c in support.calls if c["role"] == "support_agent")
    env.close()


def test_eval_of_abcd_with_the_tiny_customer_reports_the_abcd_table(vllm_base_url, tmp_path, monkeypatch):
    from mimesis_gym.evaluation.runner import EvalConfig, run_eval

    monkeypatch.setenv("MIMESIS_TINY_BASE_URL", vllm_base_url)
    config = EvalConfig(
        envs=["abcd"], agents=[f"openai:tiny@{vllm_base_url}"], users=["tiny"], split="demo", limit=1,
        max_turns=3, env_args={"abcd": {"turn_budget": 2}}, agent_max_tokens=64, role_max_tokens=64,
    )  # fmt: skip
    _, counts = asyncio.run(run_eval(config, tmp_path, progress=False))
    assert set(counts) <= {"ok", "user_failure"} and sum(counts.values()) == 1
    summary = (tmp_path / "summary.md").read_text()
    assert "## ABCD realistic behaviors" in summary and "| Agent | Travel" not in summary


def test_users_report_of_the_tiny_model_over_http_beside_the_scripted_user(vllm_base_url, tmp_path):
    from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report

    tiny_user = f"openai:tiny@{vllm_base_url}"
    config = UsersReportConfig(
        users=["scripted", tiny_user], agent="scripted:noop", envs=["intention", "telepathy", "abcd"], limit=1,
        max_turns=2, agent_max_tokens=48, role_max_tokens=48,
    )  # fmt: skip
    report = asyncio.run(run_users_report(config, tmp_path, progress=False))
    assert set(report["users"]) == {"scripted", tiny_user}
    for metrics in report["users"].values():
        assert metrics["replies"] > 0 and len(metrics["disclosure_curve"]) == report["horizon"]
        assert set(metrics["role_faults"]) == {"assistant", "ai", "character", "any"}
    assert report["users"][tiny_user]["envs"]["abcd"]["replies"] > 0  # the tiny model as the customer
    assert f"| {tiny_user} |" in (tmp_path / "users_report.md").read_text().splitlines()[2]


def test_a_constrained_agent_gets_schema_valid_actions_from_vllm(vllm_base_url):
    """vLLM's structured outputs hold the tiny model to ``{"choice", "content"}``.

    See docs/evaluation.md, "Constrained actions". A reply cut at the token limit is the only excuse,
    and not for every seed.
    """
    from mimesis_gym.agents.base import Conversation
    from mimesis_gym.agents.registry import make_agent
    from mimesis_gym.core.actions import ParsedAction, interact_with_env_tool, parse_action

    accepted = {"action", "answer", "finish"}
    agent = make_agent(f"openai:tiny@{vllm_base_url}", max_tokens=96, temperature=1.0, constrained=True)
    parsed = []
    for seed in (0, 1, 2):
        conv = Conversation(messages=[*MESSAGES], tools=[interact_with_env_tool(accepted)])
        turn = asyncio.run(agent.act(conv, seed=seed))
        assert turn.failure is None and turn.constrained
        result = parse_action(turn.action, accepted)
        if isinstance(result, ParsedAction):
            parsed.append(result)
        else:  # only a reply cut mid-JSON may fail to parse
            assert not turn.action.rstrip().endswith("}"), (turn.action, result)
    if not parsed:  # whether a sampled reply closes its JSON within 96 tokens is sampling's (and the CPU's) choice
        pytest.skip("all three sampled replies ran past 96 tokens mid-JSON; each was checked to be cut, not malformed")
    assert all(action.kind in accepted for action in parsed)
