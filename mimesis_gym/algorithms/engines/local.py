"""The trainer's ``hf`` engine: the policy's own weights on the local engine (docs/algorithms.md, "Generation engines").

Training rollouts run on the same decode path as the evaluation's local users and agents
(:class:`~mimesis_gym.core.local_lm.LocalLM`): a running batch of rows that join and leave between
decoding steps, an in-place slab cache, and cross-turn prefix reuse, so the next turn of an episode
prefills only its new ids (its previous turn's keys and values are still in the prefix cache).
The engine wraps the trainer's model object itself (no copy, no loading); because the prefix cache
holds keys and values of the weights of its time, :meth:`LocalEngine.sync_weights` drops it when the
weight version changes (the trainer calls it before every rollout and evaluation), and
:meth:`LocalEngine.sleep` drops it after a rollout (the trainer calls it before the update).

Records. Each row samples with its own ``torch.Generator`` seeded from ``(seed, row)`` — the call's
seed and the row's index in the call (:func:`row_seed`) — so its ids depend on its own logits only,
not on which rows shared its batch, and the same seed reproduces the same rollouts on one machine.
The log-probs are the sampler's: ``log_softmax(logits / T)`` at the sampled ids, before top-p/top-k
truncation (T = 1 when greedy).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Sequence
from typing import Any

from mimesis_gym.algorithms.engines.base import Sample, Sampling, classify_finish
from mimesis_gym.core.local_lm import LocalLM, cache_budget_from_env

__all__ = ["LocalEngine", "row_seed"]


def row_seed(seed: int, row: int) -> int:
    """The generator seed of row ``row`` of a call seeded ``seed``: 63 bits of BLAKE2b of ``"seed:row"``
    (distinct calls and rows get unrelated streams, with no arithmetic collisions between them)."""
    digest = hashlib.blake2b(f"{seed}:{row}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


class LocalEngine:
    """:class:`~mimesis_gym.algorithms.engines.base.GenerationEngine` over a :class:`LocalLM` of the policy.

    ``stop_ids`` = the template's end-of-turn id ∪ the eos ids (``renderer.stop_ids``);
    ``end_of_turn_id`` tells ``stop`` from ``eos`` finishes. ``max_batch_size`` rows decode together
    (default: the local engine's, 8 on CPU and 32 on CUDA); ``cache_budget_mb`` bounds the prefix cache
    (default ``MIMESIS_LOCAL_LM_CACHE_MB``, else 2048 MiB).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        stop_ids: Iterable[int],
        end_of_turn_id: int,
        max_batch_size: int | None = None,
        cache_budget_mb: float | None = None,
    ) -> None:
        self.model = model
        self.stop_ids = frozenset(int(i) for i in stop_ids)
        self.end_of_turn_id = int(end_of_turn_id)
        if self.end_of_turn_id not in self.stop_ids:
            raise ValueError(f"end_of_turn_id {self.end_of_turn_id} is not one of the stop ids {sorted(self.stop_ids)}")
        budget = cache_budget_from_env() if cache_budget_mb is None else cache_budget_mb
        self.lm = LocalLM.from_model(
            model, tokenizer, stop_ids=self.stop_ids, max_batch_size=max_batch_size, cache_budget_mb=budget
        )
        self.synced_version: int | None = None

    def sync_weights(self, model: Any, *, version: int | None = None) -> None:
        """The policy's weights may have changed: drop the prefix cache unless ``version`` is the last one seen.

        The engine runs ``model`` itself, so nothing is copied; ``model`` must be the object it was made with.
        """
        if model is not self.model:
            raise ValueError("the hf engine generates with the model it was made with; make a new engine for another")
        if version is not None and version == self.synced_version:
            return
        self.lm.clear_cache()
        self.synced_version = version

    def sleep(self) -> None:
        """Drop the prefix cache after a rollout (the trainer calls this before its update): its keys and
        values are of the weights the update is about to change, and on a GPU they hold memory it can use."""
        self.lm.clear_cache()

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: Sequence[int],
        sampling: Sampling,
        seed: int | None = None,
    ) -> list[Sample]:
        """One call per turn: every prompt joins the running batch; each row keeps its own ``max_new_tokens``.

        Runs in eval mode (restored afterwards) and without autograd; ``seed=None`` draws a random base seed.
        """
        if not prompts:
            return []
        base = seed if seed is not None else random.getrandbits(62)
        was_training = self.model.training
        self.model.eval()
        try:
            generations = self.lm.generate_together(
                prompts,
                max_tokens=list(max_new_tokens),
                temperature=0.0 if sampling.greedy else sampling.temperature,
                seeds=[row_seed(base, row) for row in range(len(prompts))],
                top_p=sampling.top_p,
                top_k=sampling.top_k,
                logprobs="sampler",
            )
        finally:
            self.model.train(was_training)
        return [
            Sample(
                ids=list(g.completion_ids),
                logprobs=list(g.logprobs),
                finish=classify_finish(g.completion_ids, self.end_of_turn_id, self.stop_ids),
            )
            for g in generations
        ]
