"""The chat-model protocol types and the call context (docs/users.md, "Your own chat model", "Failure kinds")."""

import asyncio

import pytest

from mimesis_gym.core.chat import (
    ChatFailure,
    ChatModel,
    ChatReply,
    Usage,
    call_context,
    current_call_context,
    info_kind,
)
from mimesis_gym.core.jsonfix import JSONCoercionError
from tests.support.chat_models import ScriptedChatModel


@pytest.mark.parametrize(
    ("fine", "coarse"),
    [
        ("timeout", "timeout"),
        ("step_timeout", "timeout"),
        ("connection", "http"),
        ("rate_limited", "http"),
        ("server_error", "http"),
        ("client_error", "http"),
        ("auth", "http"),
        ("context_length", "http"),
        ("bad_response", "http"),
        ("refusal", "refusal"),
        ("empty", "empty"),
        ("empty_after_think", "empty"),
        ("bad_json", "bad_json"),
        ("invalid_value", "invalid_value"),
        ("human_quit", "other"),
        ("exception", "other"),
    ],
)
def test_fine_kinds_map_to_coarse_kinds(fine, coarse):
    assert info_kind(fine) == coarse
    assert ChatFailure(fine).info_kind == coarse


def test_reply_to_dict_and_defaults():
    reply = ChatReply(text="hi", thought="t", usage=Usage(prompt_tokens=3, dropped_params=("seed",)))
    assert reply.ok
    assert reply.to_dict() == {
        "text": "hi",
        "thought": "t",
        "failure": None,
        "usage": {
            "prompt_tokens": 3,
            "completion_tokens": 0,
            "reasoning_tokens": 0,
            "attempts": 0,
            "latency_s": 0.0,
            "dropped_params": ["seed"],
        },
    }
    failed = ChatReply(failure=ChatFailure("refusal", "no", attempts=2))
    assert not failed.ok and failed.to_dict()["failure"]["info_kind"] == "refusal"


def test_reply_json_is_coerced_and_cached():
    reply = ChatReply(text='```json\n{"Answer": "yes"}\n```')
    assert reply.json(["answer"]) == {"answer": "yes"}
    first = reply.json(["answer"])
    first["answer"] = "mutated"
    assert reply.json(["answer"]) == {"answer": "yes"}
    with pytest.raises(JSONCoercionError):
        ChatReply(text="nope").json(["answer"])


def test_scripted_model_satisfies_the_protocol():
    assert isinstance(ScriptedChatModel(["x"]), ChatModel)


def test_call_context_outside_any_call():
    context = current_call_context()
    assert context.episode_id is None and context.role is None


def test_call_context_follows_concurrent_tasks():
    async def one(episode: str, delay: float) -> tuple[str, str | None]:
        with call_context(episode, "oracle", 3):
            await asyncio.sleep(delay)
            return episode, current_call_context().episode_id

    async def main():
        return await asyncio.gather(one("ep-a", 0.02), one("ep-b", 0.0))

    assert asyncio.run(main()) == [("ep-a", "ep-a"), ("ep-b", "ep-b")]
    assert current_call_context().episode_id is None
