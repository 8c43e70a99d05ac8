"""The policy the trainer updates: loading it, and the checks made on it at start.

:func:`load_policy` resolves a policy argument to ``(model, tokenizer)``; :func:`check_no_dropout`
refuses a model whose forwards are random (learners that compare two forwards of the same weights);
:func:`frozen_reference` copies it for the KL penalty; :func:`packing_supported` probes whether
packed rows score like padded ones, :func:`prefix_sharing_supported` whether rows with a shared prefix
run once score like the full rows.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import torch

from mimesis_gym.algorithms.batching import collate
from mimesis_gym.algorithms.logprobs import PolicyScorer

__all__ = [
    "DropoutError",
    "check_no_dropout",
    "frozen_reference",
    "fused_adamw",
    "load_policy",
    "packing_supported",
    "policy_path",
    "prefix_sharing_supported",
    "update_precision_problem",
]

TYPICAL_WEIGHT = 0.02
"""A typical magnitude of a transformer weight (the usual initialisation std) for the precision check."""


class DropoutError(ValueError):
    """CSD and InfoPO compare forwards of the same weights: every dropout probability must be 0."""


def policy_path(policy: Any) -> str:
    """The checkpoint path or hub id of a ``"tiny"``, ``"hf:<path>"`` or path policy (``ValueError`` otherwise)."""
    if policy == "tiny":
        from mimesis_gym.core.tiny import ensure_tiny_model

        return str(ensure_tiny_model())
    if isinstance(policy, str) and policy.startswith("hf:"):
        return policy[3:]
    if isinstance(policy, (str, Path)):
        return str(policy)
    raise ValueError(f"policy must be 'tiny', 'hf:<path>', a path or a (model, tokenizer) pair; got {policy!r}")


def load_policy(policy: Any, dtype: str = "float32") -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``"tiny"``, ``"hf:<path>"``, a path, or a ``(model, tokenizer)`` pair.

    The parameters are in ``dtype`` (a torch dtype name, ``model.dtype`` resolved): checkpoints are
    loaded in it, and a given model with floating-point parameters of another dtype is cast to it.
    ``"tiny"`` is always the converted safetensors cache, never the GGUF-loaded object.
    """
    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype) or not torch_dtype.is_floating_point:
        raise ValueError(
            f"model.dtype must name a floating-point torch dtype (float32, bfloat16, float16); got {dtype!r}"
        )
    if isinstance(policy, (tuple, list)) and len(policy) == 2:
        model, tokenizer = policy
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = policy_path(policy)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
    if any(p.is_floating_point() and p.dtype != torch_dtype for p in model.parameters()):
        model.to(torch_dtype)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def fused_adamw(mode: str, device: Any) -> bool | None:
    """AdamW's ``fused`` argument for ``optim.fused`` on ``device``.

    ``auto`` takes torch's fused kernel where torch has one (CPU and CUDA parameters): one pass over
    all parameters instead of a loop of small ops per tensor (AdamW over the tiny model's 135M
    parameters on one CPU thread: 0.6–0.75 s a step as a loop, 0.09–0.12 s fused). The results differ
    from the loop's by float rounding only. ``off`` gives ``None`` (torch's default implementation).
    """
    if mode == "off":
        return None
    if mode == "on":
        return True
    return True if torch.device(device).type in ("cpu", "cuda") else None


def update_precision_problem(dtype: str, lr: float) -> str | None:
    """Why AdamW at ``lr`` mostly cannot move ``dtype`` parameters, or ``None`` when it can.

    AdamW moves a weight by about ``lr`` per step; a weight of magnitude ``TYPICAL_WEIGHT`` stored
    in ``dtype`` only changes when the move is at least half its spacing, ``TYPICAL_WEIGHT · eps / 2``.
    """
    torch_dtype = getattr(torch, dtype)
    if torch_dtype == torch.float32 or torch_dtype == torch.float64:
        return None
    smallest = TYPICAL_WEIGHT * torch.finfo(torch_dtype).eps / 2
    if lr >= smallest:
        return None
    return (
        f"model.dtype={dtype} with optim.lr={lr:g}: a {dtype} weight of magnitude {TYPICAL_WEIGHT} only "
        f"changes by steps of at least {smallest:.2g}, so most AdamW updates round away; use model.dtype=float32 "
        "(fp32 parameters, bf16 compute through run.dtype) or a larger learning rate"
    )


def check_no_dropout(model: Any, reason: str = "CSD and InfoPO compare forwards of the same weights") -> None:
    """Raise :class:`DropoutError` (led by ``reason``) when a dropout module or config probability is non-zero."""
    offenders = [
        name for name, module in model.named_modules() if isinstance(module, torch.nn.Dropout) and module.p > 0
    ]
    config = getattr(model, "config", None)
    if config is not None:
        for key, value in config.to_dict().items():
            if "dropout" in key and isinstance(value, (int, float)) and value > 0:
                offenders.append(f"config.{key}={value}")
    if offenders:
        raise DropoutError(
            f"{reason}: every dropout probability must be 0 (set them to 0 in the model config); "
            f"found: {', '.join(offenders[:8])}"
        )


def frozen_reference(model: Any) -> PolicyScorer:
    """A frozen copy of ``model`` (eval mode, no gradients) for the KL penalty."""
    reference = copy.deepcopy(model).eval()
    for parameter in reference.parameters():
        parameter.requires_grad_(False)
    return PolicyScorer(reference)


def packing_supported(scorer: Any, pad_id: int, device: Any) -> bool:
    """Whether two random rows score the same packed (restarting position ids) as padded (within 1e-3)."""
    rows = [[int(i) for i in torch.randint(3, 1000, (9,), generator=torch.Generator().manual_seed(s))] for s in (0, 1)]
    with torch.no_grad():
        results = []
        for packing in (True, False):
            batch = collate(rows, packing=packing, pad_id=pad_id, device=device)
            mask = batch.place([[0] + [1] * (len(row) - 1) for row in rows], dtype=torch.bool)
            logprobs, _ = scorer(batch.input_ids, mask, batch.position_ids, batch.attention_mask)
            results.append(batch.take(logprobs))
    packed, padded = results
    return all(abs(a - b) < 1e-3 for x, y in zip(packed, padded, strict=True) for a, b in zip(x, y, strict=True))


def prefix_sharing_supported(scorer: Any, pad_id: int, device: Any) -> bool:
    """Whether three rows with a common 12-token prefix score the same with that prefix run once (within 1e-3).

    False when the model's forward cannot take a key/value cache (the shared path needs one).
    """
    generator = torch.Generator().manual_seed(2)
    prefix = [int(i) for i in torch.randint(3, 1000, (12,), generator=generator)]
    rows = [prefix + [int(i) for i in torch.randint(3, 1000, (n,), generator=generator)] for n in (3, 5, 1)]
    batch = collate(rows, packing=False, pad_id=pad_id, device=device)
    mask = batch.place([[0] + [1] * (len(row) - 1) for row in rows], dtype=torch.bool)
    results = []
    with torch.no_grad():
        for shared in (0, len(prefix)):
            try:
                ids, positions, attention = batch.input_ids, batch.position_ids, batch.attention_mask
                logprobs, _ = scorer(ids, mask, positions, attention, 1.0, False, shared)
            except (AttributeError, TypeError, ValueError, RuntimeError):  # no cache, or a cache it cannot repeat
                return False
            results.append(batch.take(logprobs))
    full, shared_rows = results
    return all(abs(a - b) < 1e-3 for x, y in zip(full, shared_rows, strict=True) for a, b in zip(x, y, strict=True))
