"""In-process transformers chat model (docs/users.md, "A local model"): aliases ``hf:<path>`` and ``tiny``.

Every request goes through the process-wide :class:`~mimesis_gym.core.local_lm.LocalLM` of its
model, which decodes concurrent requests of many episodes in one running batch and reuses each
conversation's KV cache between turns. There is no JSON mode: the prompt asks for JSON and
:func:`~mimesis_gym.core.jsonfix.coerce_json` coerces the reply.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mimesis_gym.core.conventions import BaseChatModel, RawCompletion, RetryPolicy
from mimesis_gym.core.local_lm import LocalLM, get_local_lm

__all__ = ["HFChatModel"]


class HFChatModel(BaseChatModel):
    """A local transformers model; ``path=None`` means the embedded tiny model (converted on first use)."""

    def __init__(
        self,
        path: str | None = None,
        *,
        name: str | None = None,
        dtype: str | None = None,
        device: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        refusal_check: bool = True,
        retry_policy: RetryPolicy | None = None,
    ) -> None:
        super().__init__(name=name or (path or "tiny"), refusal_check=refusal_check, retry_policy=retry_policy)
        self.path = path
        self.dtype = dtype
        self.device = device
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._engine: LocalLM | None = None

    def __repr__(self) -> str:
        return f"HFChatModel(name={self.name!r}, path={self.path!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_engine"] = None
        return state

    def engine(self) -> LocalLM:
        """The shared engine for this model (resolving the tiny cache on first use)."""
        if self._engine is None:
            path = self.path
            if path is None:
                from mimesis_gym.core.tiny import ensure_tiny_model

                path = str(ensure_tiny_model())
            self._engine = get_local_lm(path, dtype=self.dtype, device=self.device)
        return self._engine

    async def _attempt(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_schema: dict[str, Any] | None,
    ) -> RawCompletion:
        engine = await asyncio.to_thread(self.engine)
        await asyncio.to_thread(engine.load)
        prompt_ids = engine.render(messages, **self.chat_template_kwargs)
        generation = await engine.generate(prompt_ids, max_tokens=max_tokens, temperature=temperature, seed=seed)
        return RawCompletion(
            text=generation.text,
            finish_reason=generation.finish_reason,
            prompt_tokens=generation.prompt_tokens,
            completion_tokens=generation.completion_tokens,
        )
