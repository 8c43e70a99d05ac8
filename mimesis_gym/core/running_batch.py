"""The running batch of the local engine: live rows that decode together and join or leave between steps.

All rows share one transformers ``DynamicCache``, left-padded: a row's real tokens are the last
``lengths[i]`` columns of its cache, contiguous, and the attention mask marks them. Each
:meth:`RunningBatch.step` feeds one token per row at position ``lengths[i]`` (explicit position
ids), so padding never shifts positions. A row joins with its own prefilled cache (padded on the
left to the batch width, or the batch padded to the row's); rows leave through the cache's own
``batch_select_indices``, and columns that became padding for every remaining row are cut off the
left, so the width follows the longest live row. Only full-attention ``DynamicLayer`` caches fit
this layout; :func:`check_cache_layout` rejects others at load time.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from mimesis_gym.core.kv_prefix_cache import KVLayers

__all__ = ["RunningBatch", "check_cache_layout"]

Row = TypeVar("Row")


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


class RunningBatch(Generic[Row]):
    """Rows (any payload) with one shared left-padded KV cache; see the module docstring."""

    def __init__(self, model: Any, cache_arg: str) -> None:
        self.model = model
        self.cache_arg = cache_arg
        self.rows: list[Row] = []
        self.lengths: list[int] = []
        self._cache: Any = None
        self._mask: Any = None

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def width(self) -> int:
        return 0 if self._mask is None else int(self._mask.shape[1])

    def join(self, row: Row, layers: KVLayers) -> None:
        """Add a row whose own cache (batch 1, no padding) holds ``layers[0][0].shape[2]`` tokens."""
        import torch
        from transformers import DynamicCache

        length = int(layers[0][0].shape[2])
        device = layers[0][0].device
        if self._cache is None:
            self._cache = DynamicCache(ddp_cache_data=layers)
            self._mask = torch.ones((1, length), dtype=torch.long, device=device)
        else:
            width = max(self.width, length)
            self._pad_left(width - self.width)
            for layer, (keys, values) in zip(self._cache.layers, layers, strict=True):
                layer.keys = torch.cat([layer.keys, _left_pad(keys, width - length)], dim=0)
                layer.values = torch.cat([layer.values, _left_pad(values, width - length)], dim=0)
            row_mask = torch.zeros((1, width), dtype=torch.long, device=device)
            row_mask[:, width - length :] = 1
            self._mask = torch.cat([self._mask, row_mask], dim=0)
        self.rows.append(row)
        self.lengths.append(length)

    def step(self, tokens: list[int]) -> Any:
        """Feed one token per row; returns the next-token logits, shape [rows, vocab]."""
        import torch

        device = self._mask.device
        self._mask = torch.cat([self._mask, torch.ones((len(self.rows), 1), dtype=torch.long, device=device)], dim=1)
        output = self.model(
            input_ids=torch.tensor(tokens, dtype=torch.long, device=device).unsqueeze(-1),
            attention_mask=self._mask,
            position_ids=torch.tensor(self.lengths, dtype=torch.long, device=device).unsqueeze(-1),
            use_cache=True,
            **{self.cache_arg: self._cache},
        )
        self._cache = getattr(output, self.cache_arg)
        self.lengths = [length + 1 for length in self.lengths]
        return output.logits[:, -1, :]

    def row_layers(self, index: int) -> KVLayers:
        """A copy of one row's real keys and values (no padding), batch 1, for the prefix cache."""
        start = self.width - self.lengths[index]
        return [
            (layer.keys[index : index + 1, :, start:, :].clone(), layer.values[index : index + 1, :, start:, :].clone())
            for layer in self._cache.layers
        ]

    def keep(self, indices: list[int]) -> None:
        """Keep only these rows (in this order); the rest leave the batch."""
        import torch

        if len(indices) == len(self.rows):
            return
        if not indices:
            self.rows, self.lengths, self._cache, self._mask = [], [], None, None
            return
        self.rows = [self.rows[i] for i in indices]
        self.lengths = [self.lengths[i] for i in indices]
        selected = torch.tensor(indices, dtype=torch.long, device=self._mask.device)
        self._cache.batch_select_indices(selected)
        self._mask = self._mask[selected]
        unused = self.width - max(self.lengths)
        if unused > 0:
            for layer in self._cache.layers:
                layer.keys, layer.values = layer.keys[:, :, unused:, :], layer.values[:, :, unused:, :]
            self._mask = self._mask[:, unused:]

    def _pad_left(self, columns: int) -> None:
        import torch

        if columns <= 0:
            return
        for layer in self._cache.layers:
            layer.keys, layer.values = _left_pad(layer.keys, columns), _left_pad(layer.values, columns)
        padding = torch.zeros((len(self.rows), columns), dtype=torch.long, device=self._mask.device)
        self._mask = torch.cat([padding, self._mask], dim=1)


def _left_pad(tensor: Any, columns: int) -> Any:
    """Zeros before the token axis (dim 2) of a [batch, heads, tokens, head_dim] tensor."""
    import torch

    if columns <= 0:
        return tensor
    shape = (tensor.shape[0], tensor.shape[1], columns, tensor.shape[3])
    return torch.cat([tensor.new_zeros(shape), tensor], dim=2)
