"""Generation with the training model itself through transformers (docs/algorithms.md, "Generation engines").

Prompts of a turn are generated as **one left-padded batch** with the KV cache
(``model.generate``); pads are never recorded. Prompts that occur more than once in a batch (the
``G`` rollouts of a group at their first turn) are prefilled once: their key/value cache is computed
for each distinct prompt and repeated for its rows before generation starts. A logits processor
does the sampling itself (inverse CDF on ``softmax(raw / T)``, several times faster on CPU than
``torch.multinomial`` over a 49k vocabulary) and records the sampler log-probs —
``log_softmax(raw / T)`` at the sampled ids, before top-p/top-k truncation — keeping one step's
log-softmax at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from mimesis_gym.algorithms.engines.base import Sample, Sampling, classify_finish
from mimesis_gym.core.running_batch import cache_keyword, last_logits_only

__all__ = ["HFEngine"]


class _Sampler:
    """A logits processor that samples each next id itself and records its sampler log-prob.

    It sees the raw next-token scores, keeps ``log_softmax(raw / T)`` of the step, draws the next id
    by inverse-CDF sampling (after optional top-k / top-p truncation; argmax when greedy) with its
    own seeded generator, and returns scores that are 0 at that id and ``-inf`` elsewhere, so the
    generation loop (run greedy) takes exactly that id. The log-prob of the id sampled at one step
    is gathered at the next call (it is the last column of ``input_ids``) or by :meth:`finish`.
    One step's log-softmax is held at a time: memory is ``O(batch × vocabulary)``.
    """

    def __init__(self, sampling: Sampling, generator: torch.Generator) -> None:
        self.sampling = sampling
        self.temperature = sampling.temperature if not sampling.greedy else 1.0
        self.generator = generator
        self.previous: torch.Tensor | None = None
        self.columns: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.previous is not None:
            self.columns.append(self.previous.gather(-1, input_ids[:, -1:]).squeeze(-1))
        log_probs = torch.log_softmax(scores.float() / self.temperature, dim=-1)
        self.previous = log_probs
        chosen = log_probs.argmax(-1) if self.sampling.greedy else self._draw(log_probs)
        out = torch.full_like(scores, float("-inf"))
        return out.scatter_(-1, chosen.unsqueeze(-1), 0.0)

    def _draw(self, log_probs: torch.Tensor) -> torch.Tensor:
        probs = log_probs.exp()
        top_k, top_p = self.sampling.top_k, self.sampling.top_p
        if top_k:
            threshold = probs.topk(min(top_k, probs.shape[-1]), dim=-1).values[:, -1:]
            probs = torch.where(probs >= threshold, probs, torch.zeros_like(probs))
        if top_p < 1.0:
            ordered, order = probs.sort(dim=-1, descending=True)
            before = ordered.cumsum(-1) - ordered  # mass ranked strictly above each id
            keep = before < top_p * ordered.sum(-1, keepdim=True)
            probs = torch.zeros_like(probs).scatter_(-1, order, torch.where(keep, ordered, torch.zeros_like(ordered)))
        cdf = probs.cumsum(-1)
        draws = torch.rand(cdf.shape[0], generator=self.generator).to(cdf.device) * cdf[:, -1]
        return torch.searchsorted(cdf, draws.unsqueeze(-1)).squeeze(-1).clamp(max=cdf.shape[-1] - 1)

    def finish(self, last_ids: torch.Tensor) -> torch.Tensor:
        if self.previous is not None:
            self.columns.append(self.previous.gather(-1, last_ids[:, None].to(self.previous.device)).squeeze(-1))
            self.previous = None
        return torch.stack(self.columns, dim=-1) if self.columns else torch.zeros((last_ids.shape[0], 0))


class HFEngine:
    """Batched sampling with a transformers causal LM (the policy's own weights, always current).

    ``stop_ids`` = the template's end-of-turn id ∪ the eos ids; ``end_of_turn_id`` tells ``stop``
    from ``eos`` finishes.
    """

    def __init__(self, model: Any, tokenizer: Any, *, stop_ids: frozenset[int], end_of_turn_id: int) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.stop_ids = frozenset(int(i) for i in stop_ids)
        self.end_of_turn_id = int(end_of_turn_id)
        pad = tokenizer.pad_token_id
        self.pad_id = int(pad if pad is not None else end_of_turn_id)
        self.calls = 0
        """Batched generate calls so far (tests count them)."""
        self.shared_prefills = 0
        """Generate calls whose repeated prompts were prefilled once (tests count them)."""
        self._cache_arg = cache_keyword(model.forward)
        self._last_logits = last_logits_only(model.forward)

    def _shared_prefill(
        self, prompts: Sequence[Sequence[int]], input_ids: torch.Tensor, attention: torch.Tensor
    ) -> dict[str, Any]:
        """``generate``'s cache argument with every column but the last prefilled, once per distinct
        prompt and repeated for its rows; empty when every prompt is distinct (nothing to share)."""
        first: dict[tuple[int, ...], int] = {}
        rows = [first.setdefault(tuple(prompt), row) for row, prompt in enumerate(prompts)]
        if len(first) == len(prompts) or input_ids.shape[1] < 2:
            return {}
        distinct = sorted(first.values())
        where = {row: k for k, row in enumerate(distinct)}
        positions = (attention.cumsum(-1) - 1).masked_fill(attention == 0, 0)  # as generate derives them
        out = self.model(
            input_ids=input_ids[distinct, :-1],
            attention_mask=attention[distinct, :-1],
            position_ids=positions[distinct, :-1],
            use_cache=True,
            **self._last_logits,
        )
        cache = getattr(out, self._cache_arg)
        cache.reorder_cache(torch.tensor([where[row] for row in rows], device=input_ids.device))
        self.shared_prefills += 1
        return {self._cache_arg: cache}

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: Sequence[int],
        sampling: Sampling,
        seed: int | None = None,
    ) -> list[Sample]:
        """One left-padded batch; each row keeps at most its own ``max_new_tokens`` ids."""
        from transformers import GenerationConfig, LogitsProcessorList

        if not prompts:
            return []
        if min(max_new_tokens) < 1:
            raise ValueError("max_new_tokens must be positive for every prompt")
        self.calls += 1
        model = self.model
        device = next(model.parameters()).device
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention[row, width - len(prompt) :] = 1
        config = GenerationConfig(
            max_new_tokens=int(max(max_new_tokens)),
            do_sample=False,  # the sampler processor has already chosen: greedy picks its id
            eos_token_id=sorted(self.stop_ids),
            pad_token_id=self.pad_id,
            use_cache=True,
        )
        generator = torch.Generator(device="cpu")
        generator.manual_seed(seed if seed is not None else int(torch.randint(0, 2**62, (1,)).item()))
        sampler = _Sampler(sampling, generator)
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                input_ids, attention = input_ids.to(device), attention.to(device)
                output = model.generate(
                    input_ids=input_ids,
                    attention_mask=attention,
                    generation_config=config,
                    logits_processor=LogitsProcessorList([sampler]),
                    **self._shared_prefill(prompts, input_ids, attention),
                )
        finally:
            model.train(was_training)
        new = output[:, width:].cpu()
        logprobs = sampler.finish(new[:, -1]).cpu() if new.shape[1] else torch.zeros((len(prompts), 0))
        samples = []
        for row, limit in enumerate(max_new_tokens):
            ids = [int(i) for i in new[row].tolist()]
            end = next((k + 1 for k, token in enumerate(ids) if token in self.stop_ids), len(ids))
            end = min(end, int(limit))
            kept = ids[:end]
            samples.append(
                Sample(
                    ids=kept,
                    logprobs=[float(x) for x in logprobs[row, :end].tolist()],
                    finish=classify_finish(kept, self.end_of_turn_id, self.stop_ids),
                )
            )
        return samples
