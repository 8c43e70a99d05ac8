"""In-process transformers engine with continuous batching and KV-cache reuse (docs/users.md, "A local model").

One :class:`LocalLM` per (path, dtype, device) per process, loaded lazily under a lock and shared
by users and agents. :meth:`LocalLM.generate` hands a request to the engine's worker thread and
awaits its result, so event loops (any number of them) keep serving other episodes.

**Continuous batching.** The worker keeps a :class:`~mimesis_gym.core.running_batch.RunningBatch`
of live rows and runs one forward pass per decoding step for all of them. Between steps, waiting
requests join (up to ``max_batch_size`` rows: 8 on CPU, 32 on CUDA) and finished rows leave and are
answered at once, so a short reply never waits for a long one. An idle worker waits up to
``batch_window_ms`` for company before its first step.

**KV-cache reuse.** A joining request is prefilled alone (batch 1, no padding). Its prompt is first
looked up in the engine's :class:`~mimesis_gym.core.kv_prefix_cache.PrefixCache`: the longest
prefix shared with a finished request's ids (its prompt plus the completion tokens it fed back) is
reused and only the rest is prefilled, so the next turn of a conversation costs its new tokens,
not the whole conversation. Finished rows store their cache there; least-recently-used entries
are evicted under ``cache_budget_mb`` (default 2048 MiB, or ``MIMESIS_LOCAL_LM_CACHE_MB`` for
:func:`get_local_lm`; ``0`` turns reuse off). Requests that join together and start with the same
prefix of at least ``SHARED_PREFILL_MIN_TOKENS`` (a system prompt, a group's identical prompts)
have it prefilled once and stored as a shared entry, which each of them (and later ones) reuses.
There is no per-episode release: entries of ended episodes age out, and :meth:`LocalLM.clear_cache` drops them all.

**Packed weights.** On CPU, an engine that loaded its model from a path packs its linear layers'
weights once for oneDNN (:mod:`mimesis_gym.core.packed_linear`, ``MIMESIS_LOCAL_LM_PACK=auto|off``);
an engine over a model handed to it never does, since those weights change.

**Records.** Each row keeps its own ``max_tokens``, stop tokens, temperature (0 → argmax) and its
own ``torch.Generator`` seeded with the request's seed, so a sampled row does not depend on which
other requests shared its batch; :func:`choose_token` is the one place where a row's logits become
its token and log-prob (of the unscaled distribution by default; a request may ask for top-p/top-k
truncation and the sampler's log-probs, as the trainer's engine does). Reuse changes only float
rounding (a prefix computed in an earlier pass), not the records beyond float tolerance (tested).

**In-memory models.** :meth:`LocalLM.from_model` runs a model the caller already holds (the
trainer's policy, ``algorithms/engines/local.py``) and :meth:`LocalLM.generate_together` is its
synchronous entry point: a list of prompts in, their generations out, all joining the batch together.

transformers' own continuous batching (``generate_batch``) was not used: it seeds one global
generator for all rows and samples every row with one generation config, so a row's tokens would
depend on its batch mates and on other rows' temperatures, and its log-probs are those of the
processed distribution. torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import random
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from mimesis_gym.core.kv_prefix_cache import KVLayers, PrefixCache, shared_prefix_lengths
from mimesis_gym.core.packed_linear import pack_linear_layers, packing_from_env
from mimesis_gym.core.running_batch import RunningBatch, cache_keyword, check_cache_layout, last_logits_only

if TYPE_CHECKING:
    from mimesis_gym.core.constrained import TokenConstraint

__all__ = [
    "CACHE_ENV",
    "EngineRequest",
    "EngineStats",
    "Generation",
    "LocalLM",
    "LogprobConvention",
    "cache_budget_from_env",
    "choose_token",
    "get_local_lm",
    "truncate",
]

CACHE_ENV = "MIMESIS_LOCAL_LM_CACHE_MB"
DEFAULT_CACHE_MB = 2048.0
SHARED_PREFILL_MIN_TOKENS = 32
"""A prefix that joining prompts share is prefilled once when it is at least this long (a forward pass at
batch 1 costs a read of every weight, more than a few tokens of prefill)."""

LogprobConvention = Literal["unscaled", "sampler"]
"""The log-prob a row records (:attr:`EngineRequest.logprobs`)."""


@dataclass(frozen=True)
class Generation:
    """One finished request: ids, per-token log-probs (as :attr:`EngineRequest.logprobs` asked), text."""

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
class EngineRequest:
    """One queued request. Optional per-request decoding options are added as fields with defaults."""

    prompt_ids: list[int]
    max_tokens: int
    temperature: float
    seed: int | None
    loop: asyncio.AbstractEventLoop = field(repr=False)
    future: asyncio.Future[Generation] = field(repr=False)
    constraint: TokenConstraint | None = None
    """Constrained decoding (:mod:`mimesis_gym.core.constrained`): the row's token is chosen from, and its
    log-prob taken of, the masked distribution, and the constraint is told every chosen token."""
    top_p: float = 1.0
    """Nucleus truncation of the distribution the token is drawn from (1: off); never of the recorded log-prob."""
    top_k: int | None = None
    """Top-k truncation of the distribution the token is drawn from (None: off); never of the recorded log-prob."""
    logprobs: LogprobConvention = "unscaled"
    """Which log-prob is recorded: ``"unscaled"`` (the evaluation's records: ``log_softmax(logits)``) or
    ``"sampler"`` (the trainer's: ``log_softmax(logits / T)``, T = 1 when greedy)."""


@dataclass
class EngineStats:
    """Counters since the engine was made; benchmarks and tests read them."""

    requests: int = 0
    prefill_tokens: int = 0
    """Prompt tokens run through the model."""
    reused_tokens: int = 0
    """Prompt tokens taken from the prefix cache instead."""
    decode_steps: int = 0
    """Forward passes of the running batch (one token for every live row)."""
    max_rows: int = 0
    """Most rows ever decoding together."""


@dataclass
class _Row:
    request: EngineRequest
    generator: Any
    completion: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: str | None = None


def choose_token(request: EngineRequest, logits: Any, generator: Any) -> tuple[int, float]:
    """The row's next token and its recorded log-prob, from its logits row (CPU).

    The token is drawn from ``softmax(logits / T)`` (argmax when ``T <= 0``), truncated to the request's
    ``top_k`` / ``top_p`` first, with the row's own ``generator``: by ``torch.multinomial`` for the
    default ``"unscaled"`` records (the evaluation's, unchanged), by inverse-CDF sampling for
    ``"sampler"`` ones (one uniform draw; about 10× cheaper over a 49k vocabulary on CPU). The log-prob
    recorded is taken before any truncation, of the unscaled distribution (``request.logprobs ==
    "unscaled"``) or of the scaled one (``"sampler"``); with a constraint, of the constrained (masked,
    renormalised) one.
    """
    import torch

    greedy = request.temperature <= 0
    scaled = request.logprobs == "sampler" and not greedy
    source = logits.float() / request.temperature if scaled else logits.float()
    constraint = request.constraint
    log_probs = torch.log_softmax(source, dim=-1) if constraint is None else constraint.log_probs(source)
    if greedy:
        token = int(torch.argmax(log_probs))
    elif scaled:
        token = _inverse_cdf(truncate(log_probs.exp(), top_p=request.top_p, top_k=request.top_k), generator)
    else:
        probs = torch.softmax(log_probs / request.temperature, dim=-1)
        probs = truncate(probs, top_p=request.top_p, top_k=request.top_k)
        token = int(torch.multinomial(probs, 1, generator=generator))
    if constraint is not None:
        constraint.accept(token)
    return token, float(log_probs[token])


def _inverse_cdf(probs: Any, generator: Any) -> int:
    """One id drawn from the (unnormalised) 1-D ``probs``: the first whose cumulative mass exceeds a uniform
    draw scaled to the total, so an id of probability 0 is never drawn."""
    import torch

    cdf = torch.cumsum(probs, dim=-1)
    draw = torch.rand((), generator=generator) * cdf[-1]
    return min(int(torch.searchsorted(cdf, draw, right=True)), int(cdf.shape[-1]) - 1)


def truncate(probs: Any, *, top_p: float = 1.0, top_k: int | None = None) -> Any:
    """``probs`` (1-D) with every id outside the top ``top_k`` and outside the nucleus ``top_p`` set to 0
    (not renormalised: the draw only needs the ratios). The nucleus keeps each id whose higher-ranked
    mass is below ``top_p`` of the total, so the most likely id always stays; ids tied at the k-th
    probability stay. The nucleus is searched among the top 256 ids first (a full sort of a 49k
    vocabulary costs more than the whole draw), widening until it is inside."""
    import torch

    vocabulary = int(probs.shape[-1])
    if top_k is not None and top_k < vocabulary:
        threshold = torch.topk(probs, top_k).values[-1]
        probs = torch.where(probs >= threshold, probs, torch.zeros_like(probs))
    if top_p < 1.0:
        bound = top_p * probs.sum()
        width = min(256, vocabulary)
        ordered, order = torch.topk(probs, width)
        while width < vocabulary and ordered.sum() < bound:
            width = min(vocabulary, width * 8)
            ordered, order = torch.topk(probs, width)
        above = torch.cumsum(ordered, dim=-1) - ordered
        kept = torch.where(above < bound, ordered, torch.zeros_like(ordered))
        probs = torch.zeros_like(probs).scatter_(-1, order, kept)
    return probs


class LocalLM:
    """A causal LM loaded in this process, generating for many concurrent requests in one running batch."""

    def __init__(
        self,
        path: str,
        *,
        dtype: str | None = None,
        device: str | None = None,
        max_batch_size: int | None = None,
        batch_window_ms: float = 5.0,
        cache_budget_mb: float = DEFAULT_CACHE_MB,
    ) -> None:
        if max_batch_size is not None and max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
        self.path = str(path)
        self.requested_dtype = dtype
        self.requested_device = device
        self.max_batch_size = max_batch_size
        self.batch_window_ms = batch_window_ms
        self.prefix_cache = PrefixCache(int(cache_budget_mb * 2**20))
        self.stats = EngineStats()
        self._load_lock = threading.Lock()
        self._model: Any = None
        self.packed_layers = 0
        """Linear layers packed for oneDNN at load (:mod:`mimesis_gym.core.packed_linear`; 0 on GPU or when off)."""
        self._tokenizer: Any = None
        self._device: Any = None
        self._cache_arg = "past_key_values"
        self._last_logits: dict[str, int] = {}
        self._stop_ids: frozenset[int] = frozenset()
        self._inbox: queue.SimpleQueue[EngineRequest] = queue.SimpleQueue()
        self._worker: threading.Thread | None = None

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
            if packing_from_env():  # the engine alone runs what it loaded, so the packed weights never go stale
                self.packed_layers = pack_linear_layers(model)
            check_cache_layout(model.config, self.path)
            stop = {tokenizer.eos_token_id}
            im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
            if isinstance(im_end, int) and im_end != tokenizer.unk_token_id:
                stop.add(im_end)
            self._adopt(model, tokenizer, torch.device(device), stop)

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        stop_ids: Iterable[int],
        max_batch_size: int | None = None,
        cache_budget_mb: float = DEFAULT_CACHE_MB,
    ) -> LocalLM:
        """An engine over a model already in memory (the trainer's policy): nothing is loaded or copied.

        It runs ``model`` itself on the device of its parameters, in their dtype, so it always sees the
        current weights; its prefix cache, though, holds keys and values computed with the weights of the
        time: call :meth:`clear_cache` whenever they change. ``stop_ids`` end a row (the chat template's
        end-of-turn id and the eos ids). The engine never changes the model's training flag: the caller
        puts it in eval mode around generation (the worker runs under ``torch.inference_mode``).
        """
        name = getattr(model, "name_or_path", None) or type(model).__name__
        engine = cls(str(name), max_batch_size=max_batch_size, cache_budget_mb=cache_budget_mb)
        check_cache_layout(model.config, engine.path)
        engine._adopt(model, tokenizer, next(model.parameters()).device, stop_ids)
        return engine

    def _adopt(self, model: Any, tokenizer: Any, device: Any, stop_ids: Iterable[int | None]) -> None:
        """Make ``model`` (on ``device``, its cache layout checked) the engine's model."""
        self._stop_ids = frozenset(int(i) for i in stop_ids if i is not None)
        self._tokenizer = tokenizer
        self._device = device
        self._cache_arg = cache_keyword(model.forward)
        # A prefill needs only its last token's logits (the vocabulary projection of every token was a fifth of it).
        self._last_logits = last_logits_only(model.forward)
        if self.max_batch_size is None:
            self.max_batch_size = 32 if device.type == "cuda" else 8
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

    def clear_cache(self) -> None:
        """Forget every stored KV prefix (live rows keep theirs)."""
        self.prefix_cache.clear()

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
        """Hand one request to the worker thread and wait for its result (cancelling drops its row).

        With a ``constraint`` (:mod:`mimesis_gym.core.constrained`), the row's tokens are chosen from, and its
        log-probs taken of, the constrained distribution; the constraint is told every chosen token.
        """
        _check_request(prompt_ids, max_tokens)
        await asyncio.to_thread(self.load)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Generation] = loop.create_future()
        self._inbox.put(EngineRequest(list(prompt_ids), max_tokens, float(temperature), seed, loop, future, constraint))
        self._ensure_worker()
        return await future

    def generate_together(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_tokens: Sequence[int],
        temperature: float,
        seeds: Sequence[int | None],
        top_p: float = 1.0,
        top_k: int | None = None,
        logprobs: LogprobConvention = "unscaled",
    ) -> list[Generation]:
        """Generate for every prompt at once and block until all are done; results in prompt order.

        The synchronous entry point (the trainer's engine): the requests are queued together, so they
        join the running batch together, each with its own ``max_tokens``, its own generator seeded with
        its ``seeds`` entry (``None``: random) and the shared sampling options (see :func:`choose_token`).
        A failing request raises here and the others are cancelled (their rows leave the batch). Callable
        from any thread, also one running an event loop (the wait then happens on a helper thread).
        """
        if not prompts:
            return []
        if len(max_tokens) != len(prompts) or len(seeds) != len(prompts):
            raise ValueError(
                f"{len(prompts)} prompts need as many max_tokens and seeds, got {len(max_tokens)} and {len(seeds)}"
            )
        for prompt, limit in zip(prompts, max_tokens, strict=True):
            _check_request(prompt, limit)
        options = {"top_p": float(top_p), "top_k": top_k, "logprobs": logprobs}
        self.load()

        def wait() -> list[Generation]:
            loop = asyncio.new_event_loop()
            futures: list[asyncio.Future[Generation]] = [loop.create_future() for _ in prompts]
            try:
                for prompt, limit, seed, future in zip(prompts, max_tokens, seeds, futures, strict=True):
                    request = EngineRequest(list(prompt), int(limit), float(temperature), seed, loop, future, **options)
                    self._inbox.put(request)
                self._ensure_worker()
                return loop.run_until_complete(asyncio.gather(*futures))
            finally:
                for future in futures:
                    future.cancel()  # a no-op once answered; otherwise the worker drops the row
                loop.close()

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return wait()
        with ThreadPoolExecutor(max_workers=1) as helper:
            return helper.submit(wait).result()

    def _ensure_worker(self) -> None:
        with self._load_lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._serve, name="mimesis-local-lm", daemon=True)
                self._worker.start()

    def _serve(self) -> None:
        """The worker: admit waiting requests between steps, step the running batch, answer finished rows."""
        import torch

        limit = self.max_batch_size or 8
        batch: RunningBatch[_Row] = RunningBatch(self._model, self._cache_arg, limit)
        waiting: deque[EngineRequest] = deque()
        with torch.inference_mode():
            while True:
                if not batch and not waiting:
                    waiting.append(self._inbox.get())
                    deadline = time.monotonic() + self.batch_window_ms / 1000
                    while len(waiting) < limit and (left := deadline - time.monotonic()) > 0:
                        try:
                            waiting.append(self._inbox.get(timeout=left))
                        except queue.Empty:
                            break
                while True:
                    try:
                        waiting.append(self._inbox.get_nowait())
                    except queue.Empty:
                        break
                joining = [waiting.popleft() for _ in range(min(len(waiting), limit - len(batch)))]
                self._share_prefixes([request for request in joining if not request.future.done()])
                for request in joining:
                    self._admit(request, batch)
                if batch:
                    self._step(batch)

    def _admit(self, request: EngineRequest, batch: RunningBatch[_Row]) -> None:
        """Prefill one request (reusing a cached prefix) and choose its first token; it joins unless done."""
        import torch

        if request.future.done():
            return
        self.stats.requests += 1
        generator = torch.Generator(device="cpu")
        generator.manual_seed(request.seed if request.seed is not None else random.getrandbits(63))
        row = _Row(request, generator)
        try:
            layers, logits = self._prefill(request.prompt_ids)
            if self._record(row, logits.float().cpu()):
                batch.join(row, layers)
                self.stats.max_rows = max(self.stats.max_rows, len(batch))
            else:
                self._finish(row, layers)
        except Exception as error:  # answered to this request only
            _settle(request, error=error)

    def _share_prefixes(self, requests: list[EngineRequest]) -> None:
        """Prefill once, and keep in the prefix cache as shared, each prefix that joining prompts start with
        (a system prompt, a group's identical prompts) beyond what the cache already holds; each request's
        own prefill then reuses it. A failure here is left to the requests' own prefills to report."""
        if len(requests) < 2 or self.prefix_cache.budget_bytes == 0:
            return
        prompts = [request.prompt_ids for request in requests]
        for prompt, length in zip(prompts, shared_prefix_lengths(prompts), strict=True):
            if length >= SHARED_PREFILL_MIN_TOKENS and length > self.prefix_cache.match(prompt):
                try:
                    layers, _ = self._prefill(prompt[:length])
                except Exception:  # the same prefill, per request, answers the error
                    return
                self.prefix_cache.put(prompt[:length], layers, shared=True)

    def _prefill(self, prompt_ids: list[int]) -> tuple[KVLayers, Any]:
        """(the prompt's keys and values, last-token logits), prefilling only what the cache lacks."""
        import torch
        from transformers import DynamicCache

        reused, prefix = self.prefix_cache.take(prompt_ids)
        suffix = prompt_ids[reused:]
        device = self._device
        output = self._model(
            input_ids=torch.tensor([suffix], dtype=torch.long, device=device),
            attention_mask=torch.ones((1, len(prompt_ids)), dtype=torch.long, device=device),
            position_ids=torch.arange(reused, len(prompt_ids), device=device).unsqueeze(0),
            use_cache=True,
            **{self._cache_arg: DynamicCache(ddp_cache_data=prefix) if prefix else None},
            **self._last_logits,
        )
        self.stats.reused_tokens += reused
        self.stats.prefill_tokens += len(suffix)
        cache = getattr(output, self._cache_arg)
        return [(keys, values) for keys, values, *_ in cache], output.logits[0, -1, :]

    def _record(self, row: _Row, logits: Any) -> bool:
        """Choose and record the row's next token; whether the row goes on decoding."""
        token, logprob = choose_token(row.request, logits, row.generator)
        row.completion.append(token)
        row.logprobs.append(logprob)
        if token in self._stop_ids:
            row.finish = "stop"
        elif len(row.completion) >= row.request.max_tokens:
            row.finish = "length"
        return row.finish is None

    def _step(self, batch: RunningBatch[_Row]) -> None:
        """One decoding step for every live row; finished and cancelled rows leave."""
        try:
            logits = batch.step([row.completion[-1] for row in batch.rows]).float().cpu()
        except Exception as error:  # answered to every live row
            for row in batch.rows:
                _settle(row.request, error=error)
            batch.clear()
            return
        self.stats.decode_steps += 1
        leaving = []
        for index, row in enumerate(batch.rows):
            if row.request.future.done():
                leaving.append(index)
            elif not self._record(row, logits[index]):
                self._finish(row, batch.row_layers(index))
                leaving.append(index)
        batch.leave(leaving)

    def _finish(self, row: _Row, layers: KVLayers) -> None:
        """Store the row's cache (prompt plus every completion token fed back) for reuse, then answer it
        (in that order: an answered caller may clear the cache at once, as the trainer does when its weights change)."""
        ids = row.completion
        visible = ids[:-1] if row.finish == "stop" else ids
        text = self._tokenizer.decode(visible, skip_special_tokens=True)
        prompt = row.request.prompt_ids
        self.prefix_cache.put(prompt + ids[:-1], layers)
        _settle(row.request, Generation(prompt, ids, row.logprobs, text, row.finish or "length"))


def _check_request(prompt_ids: Sequence[int], max_tokens: int) -> None:
    """A request the engine can serve: at least one prompt token and one token to generate."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be positive")
    if not prompt_ids:
        raise ValueError("the prompt has no tokens")


def _settle(request: EngineRequest, result: Generation | None = None, *, error: BaseException | None = None) -> None:
    """Resolve the request's future on its own event loop (ignored if cancelled or the loop is gone)."""

    def settle() -> None:
        if request.future.done():
            return
        if error is not None:
            request.future.set_exception(error)
        else:
            request.future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop closed before the answer
        request.loop.call_soon_threadsafe(settle)


def cache_budget_from_env() -> float:
    """``MIMESIS_LOCAL_LM_CACHE_MB`` as MiB (default 2048); a bad value raises naming it."""
    raw = os.environ.get(CACHE_ENV, "").strip()
    if not raw:
        return DEFAULT_CACHE_MB
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise ValueError(
            f"{CACHE_ENV}={raw!r} is not a size: give the KV prefix cache budget in MiB, 0 to turn reuse off"
        )
    return value


_ENGINES: dict[tuple[str, str | None, str | None], LocalLM] = {}
_ENGINES_LOCK = threading.Lock()


def get_local_lm(path: str, *, dtype: str | None = None, device: str | None = None) -> LocalLM:
    """The process-wide engine for (path, dtype, device), shared by every user, judge and agent.

    Its KV prefix cache budget comes from ``MIMESIS_LOCAL_LM_CACHE_MB`` (read when the engine is made).
    """
    key = (str(path), dtype, device)
    with _ENGINES_LOCK:
        engine = _ENGINES.get(key)
        if engine is None:
            engine = _ENGINES[key] = LocalLM(
                str(path), dtype=dtype, device=device, cache_budget_mb=cache_budget_from_env()
            )
        return engine
