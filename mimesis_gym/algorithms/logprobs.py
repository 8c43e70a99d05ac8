"""Log-probs of chosen ids without a full-vocabulary logits tensor (docs/algorithms.md, "Micro-batches and packing").

:class:`PolicyScorer` wraps a causal LM so that the trainer's forward (the one ``accelerate``
prepares and DDP/FSDP wrap) returns, for the positions it is asked about, ``log softmax(logits / T)``
at the id found there, computed in fp32 over chunks of at most ``chunk_size`` positions: the output
head runs on the selected hidden states only. The log-prob of the id at position ``k`` comes from
the logits at ``k − 1`` (every per-token array is indexed by the predicted position).

A packed row (position ids, no attention mask) longer than ``span_tokens`` runs through the model in
spans of whole sequences (:func:`~mimesis_gym.algorithms.batching.packed_spans`), so attention
costs time linear, not quadratic, in the row's tokens; the sequences never attend to each other
either way, so the result is the same up to float rounding.

With ``shared_prefix=P`` the rows' first ``P`` tokens are identical (a group's prompt): they run
once, as one row whose key/value cache every row then attends to. Gradients flow through that
cache, so the result and its gradients are those of the full rows (up to float rounding) for
about ``P × (rows − 1)`` fewer tokens through the model.
"""

from __future__ import annotations

from typing import Any

import torch

from mimesis_gym.algorithms.batching import PACKED_SPAN_TOKENS, packed_spans
from mimesis_gym.core.running_batch import cache_keyword

__all__ = ["PolicyScorer", "selective_log_softmax"]


def selective_log_softmax(
    logits: torch.Tensor, ids: torch.Tensor, *, temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``log_softmax(logits / T)[ids]`` in fp32 (and the entropy of that distribution when asked)."""
    scaled = logits.float() / (temperature if temperature > 0 else 1.0)
    log_probs = torch.log_softmax(scaled, dim=-1)
    chosen = log_probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)
    entropy = -(log_probs.exp() * log_probs).sum(-1) if with_entropy else None
    return chosen, entropy


class PolicyScorer(torch.nn.Module):
    """A causal LM whose forward returns per-position log-probs of the ids at selected positions.

    ``forward(input_ids, score_mask, position_ids=None, attention_mask=None, temperature=1.0,
    with_entropy=False, shared_prefix=0)`` returns ``(logprobs, entropy)``, both ``(B, T)`` fp32
    with 0 where ``score_mask`` is 0 (``entropy`` is ``None`` unless asked). Packed rows pass
    ``position_ids`` that restart at 0 for every sequence and no ``attention_mask``. Padded rows
    whose first ``shared_prefix`` tokens are the same (and which have at least one more) may say
    so: that prefix then runs once.
    """

    def __init__(self, model: Any, *, chunk_size: int = 1024, span_tokens: int = PACKED_SPAN_TOKENS) -> None:
        super().__init__()
        self.model = model
        self.chunk_size = chunk_size
        self.span_tokens = span_tokens
        config = getattr(model, "config", None)
        self.softcap = getattr(config, "final_logit_softcapping", None)
        self.cache_arg = cache_keyword(getattr(model, model.base_model_prefix).forward)

    def forward(
        self,
        input_ids: torch.Tensor,
        score_mask: torch.Tensor,
        position_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temperature: float = 1.0,
        with_entropy: bool = False,
        shared_prefix: int = 0,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        hidden = self.hidden_states(input_ids, position_ids, attention_mask, shared_prefix)
        head = self.model.get_output_embeddings()
        where = score_mask[:, 1:].nonzero(as_tuple=False)  # (n, 2): row, position − 1
        rows, previous = where[:, 0], where[:, 1]
        targets = input_ids[rows, previous + 1]
        selected = hidden[rows, previous]
        chosen_parts, entropy_parts = [], []
        for start in range(0, selected.shape[0], self.chunk_size):
            logits = head(selected[start : start + self.chunk_size])
            if self.softcap:
                logits = torch.tanh(logits.float() / self.softcap) * self.softcap
            chosen, entropy = selective_log_softmax(
                logits, targets[start : start + self.chunk_size], temperature=temperature, with_entropy=with_entropy
            )
            chosen_parts.append(chosen)
            if entropy is not None:
                entropy_parts.append(entropy)
        shape = input_ids.shape
        logprobs = torch.zeros(shape, dtype=torch.float32, device=input_ids.device)
        entropy_out = torch.zeros(shape, dtype=torch.float32, device=input_ids.device) if with_entropy else None
        if chosen_parts:
            logprobs = logprobs.index_put((rows, previous + 1), torch.cat(chosen_parts))
            if entropy_out is not None:
                entropy_out = entropy_out.index_put((rows, previous + 1), torch.cat(entropy_parts))
        elif torch.is_grad_enabled():
            # keep a graph through every parameter (DDP expects a gradient for each one)
            logprobs = logprobs + 0.0 * (hidden.sum() + sum(p.sum() for p in head.parameters()))
        return logprobs, entropy_out

    def hidden_states(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor | None,
        attention_mask: torch.Tensor | None,
        shared_prefix: int,
    ) -> torch.Tensor:
        """The base model's last hidden states ``(B, T, H)``; the shared prefix, if any, runs once."""
        base = getattr(self.model, self.model.base_model_prefix)
        if not shared_prefix:
            spans = [(0, input_ids.shape[1])]
            if attention_mask is None and position_ids is not None and input_ids.shape[0] == 1:
                spans = packed_spans(position_ids[0].tolist(), self.span_tokens)
            parts = [
                base(
                    input_ids=input_ids[:, start:end],
                    position_ids=None if position_ids is None else position_ids[:, start:end],
                    attention_mask=attention_mask,
                    use_cache=False,
                ).last_hidden_state
                for start, end in spans
            ]
            return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)
        rows, p = input_ids.shape[0], shared_prefix
        if not 0 < p < input_ids.shape[1]:
            raise ValueError(f"shared_prefix {p} must leave at least one token of rows {tuple(input_ids.shape)}")
        positions = position_ids if position_ids is not None else torch.arange(input_ids.shape[1]).expand(rows, -1)
        positions = positions.to(input_ids.device)
        head = base(input_ids=input_ids[:1, :p], position_ids=positions[:1, :p], use_cache=True)
        cache = getattr(head, self.cache_arg)
        cache.batch_repeat_interleave(rows)  # every row attends to the one prefix (differentiable copies)
        tail = base(
            input_ids=input_ids[:, p:],
            position_ids=positions[:, p:],
            attention_mask=attention_mask,
            use_cache=True,
            **{self.cache_arg: cache},
        )
        return torch.cat([head.last_hidden_state.expand(rows, -1, -1), tail.last_hidden_state], dim=1)
