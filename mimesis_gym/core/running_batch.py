"""The running batch of the local engine: live rows that decode together and join or leave between steps.

**Layout.** The rows' keys and values live in one preallocated buffer per decoder layer (a *slab*,
shape ``[slots, kv heads, columns, head_dim]``), and a mask buffer of ``[slots, columns]`` marks
the real tokens; slots double as rows join, up to the batch's capacity. Rows are right-aligned:
every row's real tokens end at the shared column ``end``, row ``i``'s occupy
``[end - lengths[i], end)``, and the model attends over the view ``[start, end)`` with
``start = end - max(lengths)``, so the view follows the longest live row. Explicit position ids
(``lengths[i]``) keep padding from shifting positions.

**Steps write in place.** :meth:`RunningBatch.step` feeds one token per row; each layer writes its
new keys and values at column ``end`` of its slab and hands the attention a view, so a step copies
nothing of the cache. (transformers' ``DynamicCache`` concatenates every layer's whole cache at
every step: at 8 rows of 900 tokens that copy was 18 % of a decode step of the tiny model; see
``benchmarks/local_engine.py``.) Under SDPA on CPU the step hands the model a ready 4-D boolean mask,
so transformers never drops it when no row is padded (see :meth:`RunningBatch.step`).

**Joining and leaving.** A joining row's prefilled cache (batch 1, no padding) is written into the
next free slot; a leaving row's slot takes the last row (one row copied; rows reorder, and
:attr:`RunningBatch.rows` says which is where). When the columns run out (on the right as rows
decode, or on the left for a joining row longer than the view) or a row finds every slot taken, the
live region is copied once into new buffers, with headroom of ``max(256, width // 2)`` columns and
twice the slots (at most the capacity); an empty batch frees its buffers. Invariants the tests rely
on: a slot's mask is 1 exactly on its row's real tokens, and every value in a slab is finite (zeros
or real keys and values), so masked columns add nothing.

Only full-attention caches fit this layout; :func:`check_cache_layout` rejects others at load time.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Generic, TypeVar

from mimesis_gym.core.kv_prefix_cache import KVLayers

__all__ = ["RunningBatch", "cache_keyword", "check_cache_layout", "last_logits_only"]

Row = TypeVar("Row")

MIN_HEADROOM = 256
"""Spare columns, at least, that a new slab leaves to the right of the live region."""


def cache_keyword(forward: Any) -> str:
    """The keyword ``forward`` takes its KV cache by (transformers renamed ``past_key_values`` to ``cache`` in 5.x)."""
    return "cache" if "cache" in inspect.signature(forward).parameters else "past_key_values"


def last_logits_only(forward: Any) -> dict[str, int]:
    """The keyword arguments that make ``forward`` compute the last position's logits only, or none when it
    has no such argument (a prefill needs no more; projecting every prompt token is a large part of it)."""
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(forward).parameters else {}


def check_cache_layout(config: Any, path: str) -> None:
    """Fail loudly when a model (by its config) has KV cache layers other than plain full-attention ones."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    kinds = {type(layer).__name__ for layer in DynamicCache(config=config).layers}
    if kinds - {DynamicLayer.__name__}:
        raise RuntimeError(
            f"the local engine needs a model whose KV cache is full attention only; {path} uses "
            f"{sorted(kinds)}: serve it with vLLM instead (`vllm:` or `openai:` names)"
        )


@functools.cache
def _slab_layer_class() -> type:
    """The transformers cache layer over a slab (made on first use: transformers is imported lazily)."""
    from transformers.cache_utils import DynamicLayer

    class SlabLayer(DynamicLayer):
        """One decoder layer's cache: a slab plus the window ``[:rows, :, start:end]`` the model sees.

        :meth:`update` writes the new keys and values at column ``end`` (the owner made room) and
        widens the window; ``keys``/``values`` are always views of the window, so transformers'
        mask sizes and sequence length follow it.
        """

        def __init__(self, key_slab: Any, value_slab: Any) -> None:
            super().__init__()
            self.key_slab, self.value_slab = key_slab, value_slab
            self.device = key_slab.device
            self.is_initialized = True
            self.show(0, 0, 0)

        def show(self, rows: int, start: int, end: int) -> None:
            self.rows, self.start, self.end = rows, start, end
            self.keys = self.key_slab[:rows, :, start:end]
            self.values = self.value_slab[:rows, :, start:end]

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            end = self.end + key_states.shape[2]
            self.key_slab[: self.rows, :, self.end : end] = key_states
            self.value_slab[: self.rows, :, self.end : end] = value_states
            self.show(self.rows, self.start, end)
            return self.keys, self.values

    return SlabLayer


class RunningBatch(Generic[Row]):
    """Rows (any payload) sharing one right-aligned slab cache; see the module docstring."""

    def __init__(self, model: Any, cache_arg: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"a running batch needs room for at least one row, got {capacity}")
        self.model = model
        self.cache_arg = cache_arg
        self.capacity = capacity
        self.rows: list[Row] = []
        self.lengths: list[int] = []
        self.start = self.end = 0
        self._layers: list[Any] = []
        self._mask: Any = None
        self._cache: Any = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        """Columns of the view the model attends over (the longest live row)."""
        return self.end - self.start

    @property
    def slots(self) -> int:
        """Rows the slabs hold (0 when the batch is empty)."""
        return 0 if self._mask is None else int(self._mask.shape[0])

    @property
    def columns(self) -> int:
        """Columns the slabs hold (0 when the batch is empty)."""
        return 0 if self._mask is None else int(self._mask.shape[1])

    def join(self, row: Row, layers: KVLayers) -> None:
        """Add a row whose own cache (batch 1, no padding) holds ``layers[0][0].shape[2]`` tokens."""
        if len(self.rows) >= self.capacity:
            raise ValueError(f"the running batch is full ({self.capacity} rows)")
        length = int(layers[0][0].shape[2])
        if not self._layers:
            self._allocate(layers[0][0], len(layers), length)
        elif length > self.end or len(self.rows) >= self.slots:
            self._relayout(length, slots=min(self.capacity, 2 * self.slots))
        slot, end = len(self.rows), self.end
        for layer, (keys, values) in zip(self._layers, layers, strict=True):
            layer.key_slab[slot, :, end - length : end] = keys[0]
            layer.value_slab[slot, :, end - length : end] = values[0]
        self._mask[slot].zero_()
        self._mask[slot, end - length : end] = 1
        self.rows.append(row)
        self.lengths.append(length)
        self.start = min(self.start, end - length)

    def step(self, tokens: list[int]) -> Any:
        """Feed one token per row; returns the next-token logits, shape [rows, vocab]."""
        import torch

        if self.end >= self.columns:
            self._relayout(self.width)
        rows, device = len(self.rows), self._mask.device
        self._mask[:rows, self.end] = 1
        for layer in self._layers:
            layer.show(rows, self.start, self.end)
        mask = self._mask[:rows, self.start : self.end + 1]
        if device.type == "cpu" and getattr(self.model.config, "_attn_implementation", None) == "sdpa":
            # Given a 2-D mask with no padding (rows of equal length, a lone row), transformers drops it and
            # SDPA on CPU then repeats keys per head group (enable_gqa): 2x a bf16 decode step of the tiny model.
            # A ready 4-D mask is used as is, and a masked single-token query is grouped per KV head instead.
            mask = mask.bool()[:, None, None, :]
        output = self.model(
            input_ids=torch.tensor(tokens, dtype=torch.long, device=device).unsqueeze(-1),
            attention_mask=mask,
            position_ids=torch.tensor(self.lengths, dtype=torch.long, device=device).unsqueeze(-1),
            use_cache=True,
            **{self.cache_arg: self._cache},
        )
        self.end += 1
        self.lengths = [length + 1 for length in self.lengths]
        return output.logits[:, -1, :]

    def row_layers(self, index: int) -> KVLayers:
        """A copy of one row's real keys and values (no padding), batch 1, for the prefix cache."""
        first = self.end - self.lengths[index]
        return [
            (
                layer.key_slab[index : index + 1, :, first : self.end].clone(),
                layer.value_slab[index : index + 1, :, first : self.end].clone(),
            )
            for layer in self._layers
        ]

    def leave(self, indices: list[int]) -> None:
        """These rows leave; the last row moves into each freed slot (so later rows change index)."""
        for index in sorted(set(indices), reverse=True):  # every higher index has already gone
            last = len(self.rows) - 1
            if index != last:
                first = self.end - self.lengths[last]
                for layer in self._layers:
                    layer.key_slab[index, :, first : self.end] = layer.key_slab[last, :, first : self.end]
                    layer.value_slab[index, :, first : self.end] = layer.value_slab[last, :, first : self.end]
                self._mask[index] = self._mask[last]
                self.rows[index], self.lengths[index] = self.rows[last], self.lengths[last]
            self.rows.pop()
            self.lengths.pop()
        if not self.rows:
            self.clear()
        else:
            self.start = self.end - max(self.lengths)

    def clear(self) -> None:
        """Every row leaves and the buffers are freed."""
        self.rows, self.lengths = [], []
        self.start = self.end = 0
        self._layers, self._mask, self._cache = [], None, None

    def _allocate(self, like: Any, layer_count: int, width: int) -> None:
        """First slabs, shaped after ``like`` ([1, heads, tokens, head_dim]), with ``width`` columns live."""
        import torch

        shape = (1, like.shape[1], width + _headroom(width), like.shape[3])
        layer_class = _slab_layer_class()
        self._layers = [layer_class(like.new_zeros(shape), like.new_zeros(shape)) for _ in range(layer_count)]
        self._mask = torch.zeros((1, shape[2]), dtype=torch.long, device=like.device)
        self._cache = _cache_of(self._layers)
        self.start = self.end = width

    def _relayout(self, width: int, slots: int | None = None) -> None:
        """Copy the live region into new slabs (``slots`` rows, default as many as now) where it ends at
        column ``width`` (at least the view's), with headroom on the right."""
        import torch

        rows, old_start, old_end = len(self.rows), self.start, self.end
        end = max(width, self.width)
        start = end - self.width
        columns = end + _headroom(end)
        slots = max(slots or self.slots, rows)
        layer_class = _slab_layer_class()
        layers = []
        for old in self._layers:
            shape = (slots, old.key_slab.shape[1], columns, old.key_slab.shape[3])
            keys, values = old.key_slab.new_zeros(shape), old.value_slab.new_zeros(shape)
            keys[:rows, :, start:end] = old.key_slab[:rows, :, old_start:old_end]
            values[:rows, :, start:end] = old.value_slab[:rows, :, old_start:old_end]
            layers.append(layer_class(keys, values))
        mask = torch.zeros((slots, columns), dtype=torch.long, device=self._mask.device)
        mask[:rows, start:end] = self._mask[:rows, old_start:old_end]
        self._layers, self._mask, self._cache = layers, mask, _cache_of(layers)
        self.start, self.end = start, end


def _headroom(width: int) -> int:
    return max(MIN_HEADROOM, width // 2)


def _cache_of(layers: list[Any]) -> Any:
    from transformers.cache_utils import Cache

    return Cache(layers=layers)
