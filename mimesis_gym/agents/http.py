"""The tool-calling chat agent for OpenAI-compatible endpoints (evaluation.md §3.2).

It sends the env's ``interact_with_env`` tool with ``tool_choice`` (``required`` by default) and
takes ``tool_calls[0]`` as the action: its arguments coerced to ``{"choice", "content"}``, or the
raw arguments string when they are not an object (the env then rejects it and the turn is spent).
Without a tool call, ``on_no_tool_call="grammar"`` reads a tagged line from the content (§3.3) and
``"end"`` ends the episode, as the paper's harness did. Transport, timeouts, adaptation and keys
are the users' HTTP client's; retries follow its policy with ``max_retries`` 9.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent
from mimesis_gym.agents.grammar import parse_agent_text
from mimesis_gym.core.chat import ChatFailure, Usage
from mimesis_gym.core.conventions import TRANSPORT_KINDS, AttemptError, RetryPolicy, reinline_reasoning
from mimesis_gym.core.http import EndpointConfig, EndpointHints, OpenAIChatModel, is_loopback
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json

__all__ = ["ToolCallingAgent"]


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
    ) -> None:
        """``hints``: what :class:`~mimesis_gym.core.errors.AgentUnavailableError` tells the person to do."""
        self.name = name
        self.client = OpenAIChatModel(
            config.model_copy(update={"max_retries": 9, "json_mode": "off"}), name=name, party="agent", hints=hints
        )
        self.policy: RetryPolicy = self.client.retry_policy
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.tool_choice = tool_choice
        self.on_no_tool_call = on_no_tool_call
        self.reinline = reinline == "on" or (reinline == "auto" and is_loopback(config.base_url))

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        body = self.client.request_body(conv.messages, self.max_tokens, self.temperature, seed, False)
        if conv.tools:
            body["tools"] = conv.tools
            body["tool_choice"] = self.tool_choice
        attempts = 0
        while True:
            attempts += 1
            try:
                data = await self.client.post(body, attempt=attempts)
                message = data["choices"][0]["message"]
                break
            except (KeyError, IndexError, TypeError):
                failure = AttemptError("bad_response", "no choices[0].message in the response")
            except AttemptError as error:
                failure = error
            if failure.kind not in TRANSPORT_KINDS or attempts > self.policy.max_retries:
                return AgentTurn(
                    action="",
                    message={"role": "assistant", "content": ""},
                    failure=ChatFailure(failure.kind, failure.detail, attempts, failure.status),
                )
            await self.policy.sleep(self.policy.delay(attempts, failure.retry_after))
        usage_data = data.get("usage") or {}
        usage = Usage(
            prompt_tokens=int(usage_data.get("prompt_tokens") or 0),
            completion_tokens=int(usage_data.get("completion_tokens") or 0),
            attempts=attempts,
            dropped_params=tuple(self.client.dropped),
        )
        content = message.get("content") or ""
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        shown = reinline_reasoning(content, reasoning) if self.reinline else content
        calls = message.get("tool_calls") or []
        if not conv.tools:
            return AgentTurn(
                action=reinline_reasoning(content, reasoning),
                usage=usage,
                message={"role": "assistant", "content": shown},
            )
        if calls:
            call = calls[0]
            call_id = call.get("id") or f"call_{conv.turn}"
            arguments = call.get("function", {}).get("arguments", "")
            action: str | dict[str, Any]
            try:
                text = arguments if isinstance(arguments, str) else json.dumps(arguments)
                action = coerce_json(text, ["choice"]).data
            except JSONCoercionError:
                action = arguments if isinstance(arguments, str) else json.dumps(arguments)
            assistant = {
                "role": "assistant",
                "content": shown,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "interact_with_env", "arguments": arguments},
                    }
                ],
            }
            return AgentTurn(action=action, message=assistant, usage=usage)
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
