"""Local agents on the in-process transformers engine: ``tiny``, ``hf:<path>``.

The engine is the one users share (``core.local_lm``), so concurrent episodes' agent turns are
batched together. The tiny model's chat template ignores tools, so the grammar note is appended to
the system prompt and actions are parsed from text (``<tool_call>`` blocks or tagged lines).
With ``constrained=True`` every turn of an env with tools is decoded under the action grammar
(:mod:`mimesis_gym.agents.constrained`), so it is always one valid tagged line.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent
from mimesis_gym.agents.constrained import action_constraint
from mimesis_gym.agents.grammar import grammar_instructions, parse_agent_text
from mimesis_gym.core.chat import ChatFailure, Usage
from mimesis_gym.core.constrained import require_llguidance
from mimesis_gym.core.local_lm import LocalLM, get_local_lm
from mimesis_gym.core.text import clean_text

__all__ = ["LocalAgent"]


class LocalAgent(TextAgent):
    """A transformers model acting through the text grammar; keeps token ids and log-probs per turn."""

    def __init__(
        self,
        path: str | None = None,
        *,
        name: str = "tiny",
        max_tokens: int = 2048,
        temperature: float = 0.0,
        constrained: bool = False,
    ) -> None:
        """``constrained``: decode turns of envs with tools under the action grammar (llguidance, extra
        ``local``; :class:`~mimesis_gym.core.errors.ConfigurationError` here when it is missing); their
        log-probs are those of the constrained distribution and :attr:`AgentTurn.constrained` is set."""
        self.path = path
        self.name = name
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.constrained = constrained
        if constrained:
            require_llguidance()
        self._engine: LocalLM | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_engine": None}

    def _load(self) -> LocalLM:
        if self._engine is None:
            path = self.path
            if path is None:
                from mimesis_gym.core.tiny import ensure_tiny_model

                path = str(ensure_tiny_model())
            self._engine = get_local_lm(path)
            self._engine.load()
        return self._engine

    def start(self, system: str, tools: list[dict[str, Any]], opening_messages: list[dict[str, Any]]) -> Conversation:
        conv = super().start(system + (grammar_instructions(tools) if tools else ""), tools, opening_messages)
        return conv

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        try:
            engine = await asyncio.to_thread(self._load)
            prompt_ids = engine.render(conv.messages)
            constraint = None
            if self.constrained and conv.tools:
                constraint = await asyncio.to_thread(action_constraint, engine.tokenizer, conv.tools)
            generation = await engine.generate(
                prompt_ids, max_tokens=self.max_tokens, temperature=self.temperature, seed=seed, constraint=constraint
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the runner records an agent_error
            return AgentTurn(
                action="",
                message={"role": "assistant", "content": ""},
                failure=ChatFailure("exception", f"{type(error).__name__}: {error}"),
            )
        text = clean_text(generation.text)
        action = text if not conv.tools else parse_agent_text(text)
        return AgentTurn(
            action=action,
            message={"role": "assistant", "content": text},
            usage=Usage(
                prompt_tokens=generation.prompt_tokens, completion_tokens=generation.completion_tokens, attempts=1
            ),
            prompt_ids=generation.prompt_ids,
            completion_ids=generation.completion_ids,
            logprobs=generation.logprobs,
            constrained=constraint is not None,
        )
