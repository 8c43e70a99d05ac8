"""Role calls: seeds, caps, thought records, failures and fallbacks (core/roles.py)."""

import asyncio

from mimesis_gym.core.chat import ChatFailure, ChatReply, ThoughtRecord
from mimesis_gym.core.roles import RoleModels, RoleSession
from tests.support.chat_models import ScriptedChatModel, refusal
from tests.support.echo_env import LLMListener, ScriptedListener


def run(coro):
    return asyncio.run(coro)


def session(**kwargs) -> RoleSession:
    return RoleSession(episode_id="ep-1", llm_seed_base=100, **kwargs)


def test_each_call_gets_seed_base_plus_call_index_and_the_context():
    model = ScriptedChatModel(['{"reply": "a"}'])
    s = session()
    s.begin_step(2)
    run(s.call("listener", model, [{"role": "user", "content": "x"}], max_tokens=50))
    run(s.call("listener", model, [{"role": "user", "content": "y"}], max_tokens=50))
    assert [c["seed"] for c in model.calls] == [100, 101]
    assert {(c["episode_id"], c["role"], c["turn"]) for c in model.calls} == {("ep-1", "listener", 2)}


def test_role_max_tokens_caps_every_call():
    model = ScriptedChatModel(["x"])
    run(session(role_max_tokens=128).call("r", model, [], max_tokens=2048))
    run(session(role_max_tokens=128).call("r", model, [], max_tokens=64))
    assert [c["max_tokens"] for c in model.calls] == [128, 64]


def test_thoughts_are_recorded_per_episode_and_truncated():
    model = ScriptedChatModel([ChatReply(text="hi", thought="t" * 5000)])
    s = session()
    s.begin_step(1)
    run(s.call("oracle", model, [], max_tokens=10))
    assert s.thought_records == [ThoughtRecord(1, "oracle", 0, "t" * 4000)]
    assert s.step_thoughts == {"oracle": {"reasoning": "t" * 5000}}


def test_failures_join_in_call_order_with_coarse_kinds():
    s = session()
    s.begin_step(1)
    run(s.call("persuadee", ScriptedChatModel([refusal()]), [], max_tokens=10))
    s.fail("stance_judge", ChatFailure("empty_after_think"))
    assert s.user_failure() == "persuadee:refusal;stance_judge:empty"
    s.begin_step(2)
    assert s.user_failure() is None


def test_a_chat_model_that_raises_becomes_an_exception_failure():
    s = session()
    reply = run(s.call("r", ScriptedChatModel([RuntimeError("boom")]), [], max_tokens=10))
    assert reply.failure == ChatFailure("exception", "RuntimeError: boom")
    assert s.user_failure() == "r:other"


def test_llm_role_parses_json_reply():
    role = LLMListener(ScriptedChatModel(['{"reply": "hello there"}']))
    result = run(role(session(), message="hi", secret="s"))
    assert (result.value, result.failed, result.parsed) == ("hello there", False, {"reply": "hello there"})


def test_llm_role_falls_back_on_bad_json_and_invalid_value():
    s = session()
    bad_json = run(LLMListener(ScriptedChatModel(["no json"]))(s, message="hi", secret="s"))
    invalid = run(LLMListener(ScriptedChatModel(['{"reply": ""}']))(s, message="hi", secret="s"))
    assert bad_json.value == invalid.value == "(the listener did not answer)"
    assert bad_json.failed and invalid.failed
    assert s.user_failure() == "listener:bad_json;listener:invalid_value"


def test_llm_role_falls_back_on_a_failed_call():
    s = session()
    result = run(LLMListener(ScriptedChatModel([refusal()]))(s, message="hi", secret="s"))
    assert result.failed and result.value == "(the listener did not answer)"
    assert s.user_failure() == "listener:refusal"


def test_scripted_role_is_called_like_an_llm_role():
    result = run(ScriptedListener()(session(), message="hi"))
    assert result.value == "HI" and not result.failed


def test_role_models_list_distinct_chat_models():
    model = ScriptedChatModel(["x"])
    assert RoleModels(user=model, judge=model).chat_models == (model,)
    assert RoleModels().chat_models == ()
