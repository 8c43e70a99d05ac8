"""In-process transformers engine with request batching (docs/users.md, "A local model"), shared by users and agents.

One :class:`LocalLM` per (path, dtype, device) per process, loaded lazily under a lock. Requests
from many episodes queue up on a per-event-loop batcher that takes the first request, collects
more for up to ``batch_window_ms`` or until ``max_batch_size``, and runs them as **one batch**:
left-padded, with an attention mask and explicit position ids, through our own decode loop with
the KV cache (one forward pass per decoding step for all rows), in ``asyncio.to_thread`` so the
event loop keeps serving other episodes.

Each row keeps its own ``max_tokens``, stop tokens, temperature (0 → argmax) and its own
``torch.Generator`` seeded with the request's seed, so a sampled row does not depend on which
other requests shared its batch. torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mimesis_gym.core.constrained import TokenConstraint

__all__ = ["Generation", "LocalLM", "get_local_lm"]


@dataclass(frozen=True)
class Generation:
    """One finished request: ids, per-token log-probs (of the unscaled distribution), text."""

    prompt_ids: list[int]
    completion_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str  # "stop" | "length"

    @property
    def prompt_tokens(self) -> int:
        return len(self.prompt_ids)

    @property
    def completion_tokens(self) -> int:
        return len(self.completion_ids)


@dataclass
class _Request:
    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    seed: int | None
    future: asyncio.Future[Generation] = field(repr=False)
    constraint: TokenConstraint | None = None


class LocalLM:
    """A causal LM loaded in this process, generating for many concurrent requests in batches."""

    def __init__(
        self,
        path: str,
        *,
        dtype: str | None = None,
        device: str | None = None,
        max_batch_size: int | None = None,
        batch_window_ms: float = 5.0,
    ) -> None:
        self.path = str(path)
        self.requested_dtype = dtype
        self.requested_device = device
        self.max_batch_size = max_batch_size
        self.batch_window_ms = batch_window_ms
        self.forward_batches = 0
        """Batches run so far (one decode loop each); tests count them."""
        self._load_lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None
        self._device: Any = None
        self._stop_ids: frozenset[int] = frozenset()
        self._batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Queue[_Request]] = (
            weakref.WeakKeyDictionary()
        )
        self._tasks: set[asyncio.Task[None]] = set()

    # -- loading ---------------------------------------------------------------------------------

    def load(self) -> None:
        """Load tokenizer and weights once (thread-safe)."""
        if self._model is not None:
            return
        with self._load_lock:
            if self._model is not None:
                return
            try:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer
            except ImportError as error:
                raise RuntimeError(
                    f"local models need the local stack ({error.name} is missing): pip install 'mimesis-gym[local]'"
                ) from None
            device = self.requested_device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype_name = self.requested_dtype or ("bfloat16" if device.startswith("cuda") else "float32")
            tokenizer = AutoTokenizer.from_pretrained(self.path)
            model = AutoModelForCausalLM.from_pretrained(self.path, dtype=getattr(torch, dtype_name))
            model.to(device).eval()
            stop = {tokenizer.eos_token_id}
            im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
            if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
                stop.add(im_end)
            self._stop_ids = frozenset(i for i in stop if i is not None)
            self._tokenizer = tokenizer
            self._device = torch.device(device)
            if self.max_batch_size is None:
                self.max_batch_size = 32 if device.startswith("cuda") else 8
            self._model = model

    @property
    def tokenizer(self) -> Any:
        self.load()
        return self._tokenizer

    @property
    def stop_ids(self) -> frozenset[int]:
        self.load()
        return self._stop_ids

    def render(self, messages: Sequence[dict[str, Any]], **chat_template_kwargs: Any) -> list[int]:
        """Prompt ids of a chat, with the generation prompt appended."""
        rendered = self.tokenizer.apply_chat_template(
            list(messages), add_generation_prompt=True, tokenize=True, **chat_template_kwargs
        )
        if isinstance(rendered, dict) or hasattr(rendered, "keys"):
            rendered = rendered["input_ids"]
        return [int(token) for token in rendered]

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("a LocalLM holds loaded weights and is never pickled; pickle the chat model that names it")

    # -- generation ------------------------------------------------------------------------------

    async def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        constraint: TokenConstraint | None = None,
    ) -> Generation:
        """Queue one request on this event loop's batcher and wait for its result.

        With a ``constraint`` (:mod:`mimesis_gym.core.constrained`), the row's tokens are chosen from, and its
        log-probs taken of, the constrained distribution; the constraint is told every chosen token.
        """
        if max_tokens < 1:
            raise ValueError("max_tokens must be positive")
        await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        queue = self._batchers.get(loop)
        if queue is None:
            queue = asyncio.Queue()
            self._batchers[loop] = queue
            task = loop.create_task(self._batch_forever(queue), name="mimesis-local-lm-batcher")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        future: asyncio.Future[Generation] = loop.create_future()
        await queue.put(_Request(list(prompt_ids), max_tokens, float(temperature), seed, future, constraint))
        return await future

    async def _batch_forever(self, queue: asyncio.Queue[_Request]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = [await queue.get()]
            deadline = loop.time() + self.batch_window_ms / 1000
            while len(batch) < (self.max_batch_size or 8):
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(queue.get(), remaining))
                except asyncio.TimeoutError:
                    break
            live = [request for request in batch if not request.future.done()]
            if not live:
                continue
            try:
                results = await asyncio.to_thread(self.generate_batch, live)
            except Exception as error:  # delivered to every waiting request
                for request in live:
                    if not request.future.done():
                        request.future.set_exception(error)
                continue
            for request, result in zip(live, results, strict=True):
                if not request.future.done():
                    request.future.set_result(result)

    def generate_batch(self, requests: Sequence[_Request]) -> list[Generation]:
        """Run one left-padded batch through the decode loop (blocking; called in a thread)."""
        import torch

        self.load()
        model, device = self._model, self._device
        self.forward_batches += 1
        rows = len(requests)
        pad_id = self._tokenizer.pad_token_id
        if pad_id is None:
            pad_id = self._tokenizer.eos_token_id
        width = max(len(request.prompt_ids) for request in requests)
        input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
        attention = torch.zeros((rows, width), dtype=torch.long)
        for row, request in enumerate(requests):
            n = len(request.prompt_ids)
            input_ids[row, width - n :] = torch.tensor(request.prompt_ids, dtype=torch.long)
            attention[row, width - n :] = 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        generators = []
        for request in requests:
            generator = torch.Generator(device="cpu")
            generator.manual_seed(request.seed if request.seed is not None else random.getrandbits(63))
            generators.append(generator)
        completions: list[list[int]] = [[] for _ in requests]
        logprobs: list[list[float]] = [[] for _ in requests]
        finish: list[str | None] = [None] * rows
        # transformers renamed past_key_values to cache during 5.x: use whichever this version has.
        cache_arg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        with torch.inference_mode():
            output = model(input_ids=input_ids, attention_mask=attention, position_ids=positions, use_cache=True)
            past, logits = getattr(output, cache_arg), output.logits[:, -1, :]
            next_positions = positions[:, -1:] + 1
            for _ in range(max(request.max_tokens for request in requests)):
                log_probs = torch.log_softmax(logits.float(), dim=-1).cpu()
                chosen = []
                for row, request in enumerate(requests):
                    if finish[row] is not None:
                        chosen.append(pad_id)
                        continue
                    row_log_probs = (
                        log_probs[row] if request.constraint is None else request.constraint.log_probs(logits[row])
                    )
                    if request.temperature <= 0:
                        token = int(torch.argmax(row_log_probs))
                    else:
                        probs = torch.softmax(row_log_probs / request.temperature, dim=-1)
                        token = int(torch.multinomial(probs, 1, generator=generators[row]))
                    if request.constraint is not None:
                        request.constraint.accept(token)
                    completions[row].append(token)
                    logprobs[row].append(float(row_log_probs[token]))
                    if token in self._stop_ids:
                        finish[row] = "stop"
                    elif len(completions[row]) >= request.max_tokens:
                        finish[row] = "length"
                    chosen.append(token)
                if all(reason is not None for reason in finish):
                    break
                step_ids = torch.tensor(chosen, dtype=torch.long, device=device).unsqueeze(-1)
                attention = torch.cat([attention, torch.ones((rows, 1), dtype=torch.long, device=device)], dim=-1)
                output = model(
                    input_ids=step_ids,
                    attention_mask=attention,
                    position_ids=next_positions,
                    use_cache=True,
                    **{cache_arg: past},
                )
                past, logits = getattr(output, cache_arg), output.logits[:, -1, :]
                next_positions = next_positions + 1
        results = []
        for row, request in enumerate(requests):
            ids = completions[row]
            visible = ids[:-1] if finish[row] == "stop" else ids
            text = self._tokenizer.decode(visible, skip_special_tokens=True)
            results.append(Generation(request.prompt_ids, ids, logprobs[row], text, finish[row] or "length"))
        return results


_ENGINES: dict[tuple[str, str | None, str | None], LocalLM] = {}
_ENGINES_LOCK = threading.Lock()


def get_local_lm(path: str, *, dtype: str | None = None, device: str | None = None) -> LocalLM:
    """The process-wide engine for (path, dtype, device), shared by every user, judge and agent."""
    key = (str(path), dtype, device)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = LocalLM(str(path), dtype=dtype, device=device)
        return engine
