"""Linear layers packed once for oneDNN, for a model the local engine owns on CPU (docs/users.md, "A local model").

``torch.nn.functional.linear`` on CPU lays the weight out for the kernel again at every call; oneDNN
can take it pre-arranged (``torch.ops.mkldnn._reorder_linear_weight``, the op torch.compile's
freezing uses). On the tiny model (2 cores) a 576×1536 layer at 8 rows took 550 → 180 µs in
float32 and 170 → 110-140 µs in bfloat16 (identical outputs in bfloat16, differences of ~1e-4 in
float32 from another summation order); see ``benchmarks/local_engine.py``.

:func:`pack_linear_layers` swaps every ``torch.nn.Linear`` of a model for a :class:`PackedLinear`
holding the packed weight; the original weight is freed unless something else holds it (a tied
embedding). The packed copy never follows later changes of the weights, so only a model that is
loaded for inference alone is packed (the engine packs what it loaded from a path, never a model
handed to it). ``MIMESIS_LOCAL_LM_PACK`` chooses: ``auto`` (default: pack on CPU when oneDNN
answers a probe layer like ``linear`` does) or ``off``. torch is imported inside functions only.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PACK_ENV", "pack_linear_layers", "packing_from_env"]

PACK_ENV = "MIMESIS_LOCAL_LM_PACK"
PROBE_TOLERANCE = 1e-2
"""Largest difference, relative to the output's scale, the probe accepts between packed and plain outputs."""


def packing_from_env() -> bool:
    """Whether ``MIMESIS_LOCAL_LM_PACK`` (``auto``, the default, or ``off``) asks for packing; a bad value raises."""
    raw = os.environ.get(PACK_ENV, "").strip().lower() or "auto"
    if raw not in ("auto", "off"):
        raise ValueError(f"{PACK_ENV}={raw!r} is not a choice: give auto (pack on CPU) or off")
    return raw == "auto"


def _packed_module_class() -> type:
    import torch

    class PackedLinear(torch.nn.Module):
        """``torch.nn.Linear``'s inference forward over a weight packed once for oneDNN."""

        def __init__(self, linear: Any) -> None:
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            self.register_buffer("packed_weight", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach()))
            bias = None if linear.bias is None else linear.bias.detach()
            self.register_buffer("bias", bias)

        def forward(self, inputs: Any) -> Any:
            return torch.ops.mkldnn._linear_pointwise(inputs, self.packed_weight, self.bias, "none", [], "")

    return PackedLinear


def _probe(linear: Any, packed: Any) -> bool:
    """Whether the packed layer answers a random input as the plain one does (within :data:`PROBE_TOLERANCE`)."""
    import torch

    inputs = torch.randn((3, linear.in_features), dtype=linear.weight.dtype, generator=torch.Generator().manual_seed(0))
    want = torch.nn.functional.linear(inputs, linear.weight, linear.bias).float()
    got = packed(inputs).float()
    return bool(torch.isfinite(got).all()) and float((got - want).abs().max()) <= PROBE_TOLERANCE * (
        float(want.abs().max()) + 1.0
    )


def pack_linear_layers(model: Any) -> int:
    """Swap, in place, every ``torch.nn.Linear`` of a CPU model for a :class:`PackedLinear`; how many were swapped.

    Nothing changes (0) where the weights are not on the CPU, oneDNN is missing, or the first layer's
    probe fails or raises. Call it under no autograd: the packed layers do not train.
    """
    import torch

    if not torch.backends.mkldnn.is_available():
        return 0
    parents = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is torch.nn.Linear and child.weight.device.type == "cpu"
    ]
    if not parents:
        return 0
    packed_class = _packed_module_class()
    try:
        with torch.inference_mode():
            first = packed_class(parents[0][2])
            if not _probe(parents[0][2], first):
                return 0
            swaps = [(*parents[0][:2], first)] + [
                (parent, name, packed_class(child)) for parent, name, child in parents[1:]
            ]
    except (RuntimeError, NotImplementedError, AttributeError):  # no such op, or no kernel for this CPU/dtype
        return 0
    for parent, name, packed in swaps:
        setattr(parent, name, packed)
    return len(swaps)
