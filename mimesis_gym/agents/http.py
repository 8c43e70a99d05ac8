"""The tool-calling chat agent for OpenAI-compatible endpoints (docs/evaluation.md, "Agents").

It sends the env's ``interact_with_env`` tool with ``tool_choice`` (``required`` by default) and
takes ``tool_calls[0]`` as the action: its arguments coerced to ``{"choice", "content"}``, or the
raw arguments string when they are not an object (the env then rejects it and the turn is spent).
Without a tool call, ``on_no_tool_call="grammar"`` reads a tagged line from the content and
``"end"`` ends the episode, as the paper's harness did. Transport, timeouts, adaptation and keys
are the users' HTTP client's; retries follow its policy with ``max_retries`` 9.

With ``constrained=True`` (docs/evaluation.md, "Constrained actions") the tools are not sent; the
request asks for structured outputs instead (``response_format`` of type ``json_schema`` with
:func:`~mimesis_gym.agents.constrained.action_json_schema`, which vLLM's OpenAI server enforces while
decoding), and the reply's content, ``{"choice": …, "content": …}``, is the action (the env reads such
JSON text as a tool call). A server that refuses schemas gets a JSON object request instead (the
client's adaptation) and those turns are not recorded as constrained.

The response is read by :func:`read_agent_reply`: a body of the wrong shape (``choices`` null, a
``message`` that is not an object, ``tool_calls`` that are not a list of objects) is a
``bad_response`` failure naming the field, and every string is made encodable first.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent
from mimesis_gym.agents.constrained import action_json_schema
from mimesis_gym.agents.grammar import parse_agent_text
from mimesis_gym.core.chat import ChatFailure, Usage
from mimesis_gym.core.conventions import TRANSPORT_KINDS, AttemptError, RetryPolicy, reinline_reasoning
from mimesis_gym.core.http import EndpointConfig, EndpointHints, OpenAIChatModel, is_loopback
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json
from mimesis_gym.core.text import clean_json

__all__ = ["AgentReply", "ToolCallingAgent", "read_agent_reply"]


@dataclass(frozen=True, slots=True)
class AgentReply:
    """What the agent needs from one chat-completions body, checked and encodable."""

    content: str
    reasoning: str | None
    call_id: str | None
    """``tool_calls[0].id`` (``None`` without a tool call or without an id)."""
    arguments: str | None
    """``tool_calls[0].function.arguments`` as text (``None`` without a tool call)."""
    prompt_tokens: int = 0
    completion_tokens: int = 0


def _shape(value: Any) -> str:
    if value is None:
        return "null"
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number", float: "a number"}
    return names.get(type(value), type(value).__name__)


def _bad(field: str, value: Any, wanted: str) -> AttemptError:
    return AttemptError("bad_response", f"{field} is {_shape(value)}, not {wanted}")


def _count(value: Any) -> int:
    """A token count, or 0 for anything that is not a non-negative number."""
    if value is None or isinstance(value, (bool, str)):
        return 0
    try:
        return max(0, int(value))
    except (TypeError, ValueError, OverflowError):
        return 0


def read_agent_reply(data: dict[str, Any]) -> AgentReply:
    """Read ``choices[0].message`` and usage of a body; :class:`AttemptError` (``bad_response``)
    naming the first field of the wrong shape. Usage of the wrong shape counts as zero."""
    data = clean_json(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _bad("choices", choices, "a non-empty list")
    if not isinstance(choices[0], dict):
        raise _bad("choices[0]", choices[0], "an object")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise _bad("choices[0].message", message, "an object")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    elif content is None:
        content = ""
    elif not isinstance(content, str):
        raise _bad("choices[0].message.content", content, "text")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    calls = message.get("tool_calls")
    call_id = arguments = None
    if calls is not None and not isinstance(calls, list):
        raise _bad("choices[0].message.tool_calls", calls, "a list")
    if calls:
        call = calls[0]
        if not isinstance(call, dict):
            raise _bad("tool_calls[0]", call, "an object")
        function = call.get("function")
        if not isinstance(function, dict):
            raise _bad("tool_calls[0].function", function, "an object")
        raw = function.get("arguments", "")
        arguments = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    return AgentReply(
        content=content,
        reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        call_id=call_id,
        arguments=arguments,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
    )


class ToolCallingAgent(TextAgent):
    """An agent behind ``POST {base_url}/chat/completions`` that acts through tool calls."""

    def __init__(
        self,
        config: EndpointConfig,
        *,
        name: str,
        max_tokens: int = 2048,
        temperature: float = 0.0,
        tool_choice: Literal["required", "auto", "none"] = "required",
        on_no_tool_call: Literal["grammar", "end"] = "grammar",
        reinline: Literal["auto", "on", "off"] = "auto",
        hints: EndpointHints | None = None,
        constrained: bool = False,
    ) -> None:
        """``hints``: what :class:`~mimesis_gym.core.errors.AgentUnavailableError` tells the person to do;
        ``constrained``: ask for the action as structured output instead of a tool call."""
        self.name = name
        self.client = OpenAIChatModel(
            config.model_copy(update={"max_retries": 9, "json_mode": "off"}), name=name, party="agent", hints=hints
        )
        self.policy: RetryPolicy = self.client.retry_policy
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tool_choice = tool_choice
        self.on_no_tool_call = on_no_tool_call
        self.constrained = constrained
        self.reinline = reinline == "on" or (reinline == "auto" and is_loopback(config.base_url))

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        structured = self.constrained and bool(conv.tools)
        schema = action_json_schema(conv.tools) if structured else None
        body = self.client.request_body(conv.messages, self.max_tokens, self.temperature, seed, json_schema=schema)
        if conv.tools and not structured:
            body["tools"] = conv.tools
            body["tool_choice"] = self.tool_choice
        attempts = 0
        while True:
            attempts += 1
            try:
                reply = read_agent_reply(await self.client.post(body, attempt=attempts))
                break
            except AttemptError as error:
                failure = error
            if failure.kind not in TRANSPORT_KINDS or attempts > self.policy.max_retries:
                self.client.gave_up(failure)
                return AgentTurn(
                    action="",
                    message={"role": "assistant", "content": ""},
                    failure=ChatFailure(failure.kind, failure.detail, attempts, failure.status),
                )
            await self.policy.sleep(self.policy.delay(attempts, failure.retry_after))
        usage = Usage(
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            attempts=attempts,
            dropped_params=tuple(self.client.dropped),
        )
        content = reply.content
        shown = reinline_reasoning(content, reply.reasoning) if self.reinline else content
        if not conv.tools:
            return AgentTurn(
                action=reinline_reasoning(content, reply.reasoning),
                usage=usage,
                message={"role": "assistant", "content": shown},
            )
        if reply.arguments is not None:
            action: str | dict[str, Any]
            try:
                action = coerce_json(reply.arguments, ["choice"]).data
            except JSONCoercionError:
                action = reply.arguments
            assistant = {
                "role": "assistant",
                "content": shown,
                "tool_calls": [
                    {
                        "id": reply.call_id or f"call_{conv.turn}",
                        "type": "function",
                        "function": {"name": "interact_with_env", "arguments": reply.arguments},
                    }
                ],
            }
            return AgentTurn(action=action, message=assistant, usage=usage)
        if structured:  # constrained only while the server still takes the schema (adaptation may drop it)
            constrained = (body.get("response_format") or {}).get("type") == "json_schema"
            message = {"role": "assistant", "content": shown}
            return AgentTurn(action=content.strip(), message=message, usage=usage, constrained=constrained)
        if self.on_no_tool_call == "end":
            return AgentTurn(action="", message={"role": "assistant", "content": shown}, usage=usage, end=True)
        return AgentTurn(action=parse_agent_text(content), message={"role": "assistant", "content": shown}, usage=usage)

    def observe(self, conv: Conversation, turn: AgentTurn, feedback: str) -> None:
        conv.messages.append(turn.message)
        calls = turn.message.get("tool_calls")
        if calls:
            conv.messages.append({"role": "tool", "tool_call_id": calls[0]["id"], "content": feedback})
        else:
            conv.messages.append({"role": "user", "content": feedback})
        conv.turn += 1

    async def aclose(self) -> None:
        await self.client.aclose()
