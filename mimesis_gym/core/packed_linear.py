"""Linear layers packed once for oneDNN, for a model the local engine owns on CPU (docs/users.md, "A local model").

``torch.nn.functional.linear`` on CPU lays the weight out for the kernel again at every call; oneDNN
can take it pre-arranged (``torch.ops.mkldnn._reorder_linear_weight``, the op torch.compile's
freezing uses). On the tiny model (2 cores) a 576×1536 layer at 8 rows took 550 → 180 µs in
float32 and 170 → 110-140 µs in bfloat16 (identical outputs in bfloat16, differences of ~1e-4 in
float32 from another summation order); see ``benchmarks/local_engine.py``.

:func:`pack_linear_layers` swaps every ``torch.nn.Linear`` of a model for a ``PackedLinear``
holding the packed weight; the original weight is freed unless something else holds it (a tied
embedding). The packed copy never follows later changes of the weights, so only a model that is
loaded for inference alone is packed (the engine packs what it loaded from a path, never a model
handed to it). ``MIMESIS_LOCAL_LM_PACK`` chooses: ``auto`` (default: pack on CPU when oneDNN
answers a probe layer like ``linear`` does) or ``off``. torch is imported inside functions only.

**Sibling layers packed as one.** Layers of one module that read the same input (:data:`SIBLINGS`:
attention's query, key and value projections; the gated MLP's gate and up halves) are packed as one
weight: the first of them called with an input computes every sibling's output in one product and
the others take their slices of it. A oneDNN call has a fixed cost of some 20 µs, which dominates a
decode step's small products: one row, float32, q/k/v 86 → 51 µs and gate/up 121 → 96 µs a layer
(2 cores; outputs identical to the separate packed layers').
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PACK_ENV", "SIBLINGS", "pack_linear_layers", "packing_from_env"]

PACK_ENV = "MIMESIS_LOCAL_LM_PACK"
PROBE_TOLERANCE = 1e-2
"""Largest difference, relative to the output's scale, the probe accepts between packed and plain outputs."""


SIBLINGS = (("q_proj", "k_proj", "v_proj"), ("gate_proj", "up_proj"))
"""Names of a module's linear layers that its forward applies to one same input (Llama, Qwen2, Mistral, ...)."""


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


class _SiblingProduct:
    """One packed weight for sibling layers; :meth:`output` serves each sibling its slice of one product.

    The product of the latest input is kept until every sibling has taken its slice (the input is
    recognised by identity); a sibling asking again, or for another input, starts a new product.
    """

    def __init__(self, linears: list[Any]) -> None:
        import torch

        weight = torch.cat([linear.weight.detach() for linear in linears])
        self.weight = torch.ops.mkldnn._reorder_linear_weight(weight)
        biases = [linear.bias for linear in linears]
        self.bias = None if biases[0] is None else torch.cat([bias.detach() for bias in biases])
        self.sizes = [linear.out_features for linear in linears]
        self._input: Any = None
        self._parts: tuple[Any, ...] = ()
        self._taken: set[int] = set()

    def output(self, inputs: Any, index: int) -> Any:
        import torch

        if inputs is not self._input or index in self._taken:
            product = torch.ops.mkldnn._linear_pointwise(inputs, self.weight, self.bias, "none", [], "")
            self._input, self._parts, self._taken = inputs, product.split(self.sizes, dim=-1), set()
        self._taken.add(index)
        part = self._parts[index]
        if len(self._taken) == len(self.sizes):  # every sibling served: hold no activation between calls
            self._input, self._parts = None, ()
        return part


def _sibling_module_class() -> type:
    import torch

    class PackedSibling(torch.nn.Module):
        """One of several sibling layers packed together (see :class:`_SiblingProduct`)."""

        def __init__(self, linear: Any, product: _SiblingProduct, index: int) -> None:
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            self.product, self.index = product, index

        def forward(self, inputs: Any) -> Any:
            return self.product.output(inputs, self.index)

    return PackedSibling


def _sibling_groups(model: Any, packable: set[int]) -> list[tuple[Any, tuple[str, ...]]]:
    """(module, names) for each :data:`SIBLINGS` group whose layers are all packable, of one input width,
    dtype, and either all with or all without a bias."""
    groups = []
    for module in model.modules():
        for names in SIBLINGS:
            linears = [getattr(module, name, None) for name in names]
            if not all(id(linear) in packable for linear in linears):
                continue
            if len({(lin.in_features, lin.weight.dtype, lin.bias is None) for lin in linears}) == 1:
                groups.append((module, names))
    return groups


def _probe_siblings(linears: list[Any], product: _SiblingProduct) -> bool:
    """Whether each sibling's slice answers a random input as its plain layer does."""
    import torch

    first = linears[0]
    inputs = torch.randn((3, first.in_features), dtype=first.weight.dtype, generator=torch.Generator().manual_seed(0))
    return all(_answers_like(linear, inputs, product.output(inputs, index)) for index, linear in enumerate(linears))


def _answers_like(linear: Any, inputs: Any, got: Any) -> bool:
    """Whether ``got`` is finite and within :data:`PROBE_TOLERANCE` of the plain ``linear`` on ``inputs``."""
    import torch

    want = torch.nn.functional.linear(inputs, linear.weight, linear.bias).float()
    got = got.float()
    return bool(torch.isfinite(got).all()) and float((got - want).abs().max()) <= PROBE_TOLERANCE * (
        float(want.abs().max()) + 1.0
    )


def _probe(linear: Any, packed: Any) -> bool:
    """Whether the packed layer answers a random input as the plain one does (within :data:`PROBE_TOLERANCE`)."""
    import torch

    inputs = torch.randn((3, linear.in_features), dtype=linear.weight.dtype, generator=torch.Generator().manual_seed(0))
    return _answers_like(linear, inputs, packed(inputs))


def pack_linear_layers(model: Any) -> int:
    """Swap, in place, every ``torch.nn.Linear`` of a CPU model for a packed one; how many were swapped.

    :data:`SIBLINGS` groups share one packed weight (``PackedSibling`` layers), every other layer gets
    its own (``PackedLinear``). Nothing changes (0) where the weights are not on the CPU, oneDNN is
    missing, or the probe of the first layer (and of the first group) fails or raises. Call it under no
    autograd: the packed layers do not train.
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
    packed_class, sibling_class = _packed_module_class(), _sibling_module_class()
    groups = _sibling_groups(model, {id(child) for _, _, child in parents})
    grouped = {id(getattr(module, name)) for module, names in groups for name in names}
    try:
        with torch.inference_mode():
            first = packed_class(parents[0][2])
            if not _probe(parents[0][2], first):
                return 0
            swaps = [
                (parent, name, first if child is parents[0][2] else packed_class(child))
                for parent, name, child in parents
                if id(child) not in grouped
            ]
            for number, (module, names) in enumerate(groups):
                linears = [getattr(module, name) for name in names]
                product = _SiblingProduct(linears)
                if number == 0 and not _probe_siblings(linears, product):
                    return 0
                swaps += [
                    (module, name, sibling_class(linear, product, index))
                    for index, (name, linear) in enumerate(zip(names, linears, strict=True))
                ]
    except (RuntimeError, NotImplementedError, AttributeError):  # no such op, or no kernel for this CPU/dtype
        return 0
    for parent, name, packed in swaps:
        setattr(parent, name, packed)
    return len(swaps)
