"""A bounded LRU of finished sequences' KV caches, keyed by token ids (docs/users.md, "A local model").

The local engine stores, for each finished request, the keys and values it computed (prompt plus
every completion token it fed back) under those token ids. A later prompt that starts with the
same ids (the next turn of the same conversation, or another conversation with the same system
prompt) reuses the longest matching prefix and prefills only the rest.

Contract:

* :meth:`PrefixCache.take` returns the longest common prefix of the prompt and any entry, capped
  at ``len(prompt) - 1`` so the engine always prefills at least one token (it needs that token's
  logits). An entry the prompt *fully* extends is removed (its conversation moved on and will be
  stored again, longer), unless it was stored as ``shared`` (a prefix that several prompts start
  with, such as a system prompt); an entry matched only in part stays for other requests.
* :meth:`PrefixCache.match` is the length :meth:`PrefixCache.take` would reuse, with no side effects.
* :meth:`PrefixCache.put` evicts least-recently-used entries until the new one fits in
  ``budget_bytes``; an entry larger than the whole budget is not stored, and a budget of ``0``
  stores nothing (reuse off). Entries that are a prefix of the new one are dropped as redundant.
* Layers are tuples ``(keys, values)`` of shape ``[1, heads, tokens, head_dim]``; stored tensors
  are never modified in place (callers get views and build new tensors from them).

Thread-safe (one lock); torch is imported inside functions only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["KVLayers", "PrefixCache", "shared_prefix_lengths"]

KVLayers = list[tuple[Any, Any]]
"""Per decoder layer, (keys, values) tensors of shape [1, heads, tokens, head_dim]."""


@dataclass
class _Entry:
    ids: Any  # 1-D long tensor on CPU
    layers: KVLayers
    nbytes: int
    shared: bool = False


def _common_prefix(entry_ids: Any, prompt: Any) -> int:
    """Length of the longest common prefix of two 1-D tensors."""
    import torch

    n = min(int(entry_ids.numel()), int(prompt.numel()))
    if n == 0:
        return 0
    differs = torch.nonzero(entry_ids[:n] != prompt[:n])
    return int(differs[0, 0]) if differs.numel() else n


def shared_prefix_lengths(prompts: Sequence[Sequence[int]]) -> list[int]:
    """Per prompt, the longest prefix it shares with another prompt of the list, at most its length - 1 (so
    a prompt that reuses it still prefills a token); 0 for a prompt that shares nothing."""
    import torch

    tensors = [torch.tensor(list(prompt), dtype=torch.long) for prompt in prompts]
    lengths = [0] * len(tensors)
    for i, first in enumerate(tensors):
        for j in range(i + 1, len(tensors)):
            n = _common_prefix(first, tensors[j])
            lengths[i], lengths[j] = max(lengths[i], n), max(lengths[j], n)
    return [min(n, len(prompt) - 1) if n else 0 for n, prompt in zip(lengths, prompts, strict=True)]


class PrefixCache:
    """LRU of KV caches under a byte budget; see the module docstring for the contract."""

    def __init__(self, budget_bytes: int) -> None:
        if budget_bytes < 0:
            raise ValueError(f"the KV prefix cache budget must be >= 0 bytes (0 turns reuse off), got {budget_bytes}")
        self.budget_bytes = int(budget_bytes)
        self.bytes_used = 0
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._next_key = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Drop every entry (frees their memory once no running row holds a view)."""
        with self._lock:
            self._entries.clear()
            self.bytes_used = 0

    def match(self, prompt_ids: Sequence[int]) -> int:
        """How many prompt tokens :meth:`PrefixCache.take` would reuse now (nothing changes)."""
        import torch

        if not self._entries or len(prompt_ids) < 2:
            return 0
        prompt = torch.tensor(list(prompt_ids), dtype=torch.long)
        with self._lock:
            _, best_n = self._best(prompt)
        return min(best_n, len(prompt_ids) - 1)

    def take(self, prompt_ids: Sequence[int]) -> tuple[int, KVLayers | None]:
        """(n, layers holding the first n prompt tokens) for the longest reusable prefix, or (0, None)."""
        import torch

        if not self._entries or len(prompt_ids) < 2:
            return 0, None
        prompt = torch.tensor(list(prompt_ids), dtype=torch.long)
        with self._lock:
            best_key, best_n = self._best(prompt)
            if best_key is None:
                return 0, None
            entry = self._entries[best_key]
            if best_n == int(entry.ids.numel()) and not entry.shared:
                self._drop(best_key)
            else:
                self._entries.move_to_end(best_key)
        n = min(best_n, len(prompt_ids) - 1)
        return n, [(keys[:, :, :n, :], values[:, :, :n, :]) for keys, values in entry.layers]

    def _best(self, prompt: Any) -> tuple[int | None, int]:
        """(key, length) of the entry sharing the longest prefix with ``prompt`` (the latest among equals)."""
        best_key, best_n = None, 0
        for key, entry in self._entries.items():
            n = _common_prefix(entry.ids, prompt)
            if n >= best_n and n > 0:
                best_key, best_n = key, n
        return best_key, best_n

    def put(self, ids: Sequence[int], layers: KVLayers, *, shared: bool = False) -> bool:
        """Store ``layers`` (owned from now on) for ``ids``; returns whether it was kept. A ``shared`` entry
        stays when a prompt fully extends it (only eviction, or a longer entry that extends it, drops it)."""
        import torch

        nbytes = sum(keys.nbytes + values.nbytes for keys, values in layers)
        if not ids or nbytes > self.budget_bytes:
            return False
        tokens = torch.tensor(list(ids), dtype=torch.long)
        with self._lock:
            for key in [k for k, e in self._entries.items() if _common_prefix(e.ids, tokens) == e.ids.numel()]:
                self._drop(key)
            while self._entries and self.bytes_used + nbytes > self.budget_bytes:
                self._drop(next(iter(self._entries)))
            self._entries[self._next_key] = _Entry(tokens, layers, nbytes, shared)
            self._next_key += 1
            self.bytes_used += nbytes
        return True

    def _drop(self, key: int) -> None:
        self.bytes_used -= self._entries.pop(key).nbytes
