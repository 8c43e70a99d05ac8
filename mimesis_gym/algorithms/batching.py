"""Rank balancing, micro-batch planning and collation (docs/algorithms.md, "Micro-batches and packing").

* :func:`balance` gives each rank an equal-count, token-balanced share (longest first, greedy).
* :func:`plan_micro_batches` groups rows under a token budget: **packed** (first-fit decreasing,
  rows concatenated with restarting position ids, no padding) or **padded** (sorted by length; a
  micro-batch closes before its padded size would exceed the budget or 1.25 × its real tokens).
* :func:`collate` builds the tensors of one micro-batch and remembers where each row landed, so
  per-token values can be laid out (:meth:`Collated.place`) and read back (:meth:`Collated.take`).
* :class:`Row` is one training sequence of a rollout batch; :func:`training_rows`,
  :func:`minibatches` and :func:`rank_share` cut a batch into mini-batches and each rank's share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mimesis_gym.algorithms.records import Episode

__all__ = [
    "PAD_SLACK",
    "Collated",
    "Row",
    "balance",
    "collate",
    "minibatches",
    "padding_fraction",
    "plan_micro_batches",
    "rank_share",
    "training_rows",
]

PAD_SLACK = 1.25
"""A padded micro-batch holds at most this many times its real tokens."""


def balance(lengths: Sequence[int], ranks: int) -> list[list[int]]:
    """Row indices per rank: counts differ by at most one, tokens balanced greedily (longest first).

    Deterministic: ties go to the lower rank and rows keep ascending order within a share.
    """
    capacity = -(-len(lengths) // ranks) if lengths else 0
    floor = len(lengths) // ranks
    shares: list[list[int]] = [[] for _ in range(ranks)]
    tokens = [0] * ranks
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    for placed, index in enumerate(order):
        left = len(order) - placed - 1
        # a rank may take the row if, afterwards, the rows left still bring every other rank up to ``floor``
        eligible = [
            r
            for r in range(ranks)
            if len(shares[r]) < capacity and left >= sum(max(0, floor - len(shares[o])) for o in range(ranks) if o != r)
        ]
        rank = min(eligible, key=lambda r: (tokens[r], r))
        shares[rank].append(index)
        tokens[rank] += lengths[index]
    return [sorted(share) for share in shares]


def plan_micro_batches(lengths: Sequence[int], token_budget: int, *, packing: bool) -> list[list[int]]:
    """Groups of row indices, each fitting ``token_budget`` (a longer row gets a group of its own)."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    if packing:
        bins: list[list[int]] = []
        loads: list[int] = []
        for index in order:
            for b, load in enumerate(loads):
                if load + lengths[index] <= token_budget:
                    bins[b].append(index)
                    loads[b] += lengths[index]
                    break
            else:
                bins.append([index])
                loads.append(lengths[index])
        return bins
    groups: list[list[int]] = []
    current: list[int] = []
    for index in order:
        if current:
            width = lengths[current[0]]  # sorted: the first row is the longest
            rows = len(current) + 1
            real = sum(lengths[i] for i in current) + lengths[index]
            if rows * width > token_budget or rows * width > PAD_SLACK * real:
                groups.append(current)
                current = []
        current.append(index)
    if current:
        groups.append(current)
    return groups


def padding_fraction(lengths: Sequence[int], groups: Sequence[Sequence[int]], *, packing: bool) -> float:
    """Pad tokens over real tokens for a plan (0 when packed)."""
    real = sum(lengths)
    if packing or not real:
        return 0.0
    padded = sum(len(group) * max(lengths[i] for i in group) for group in groups if group)
    return (padded - real) / real


@dataclass
class Collated:
    """One micro-batch: tensors plus each row's place ``(batch row, offset, length)``."""

    input_ids: torch.Tensor
    position_ids: torch.Tensor
    attention_mask: torch.Tensor | None
    places: list[tuple[int, int, int]]
    real_tokens: int

    @property
    def padded_tokens(self) -> int:
        return int(self.input_ids.numel())

    def place(self, values: Sequence[Sequence[float]], *, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """A tensor shaped like ``input_ids`` holding each row's per-position values (0 elsewhere)."""
        out = torch.zeros(self.input_ids.shape, dtype=dtype)
        for (row, offset, length), row_values in zip(self.places, values, strict=True):
            if length:
                out[row, offset : offset + length] = torch.as_tensor(list(row_values)[:length], dtype=dtype)
        return out.to(self.input_ids.device)

    def take(self, tensor: torch.Tensor) -> list[list[float]]:
        """Each row's per-position values from a tensor shaped like ``input_ids``."""
        data = tensor.detach().float().cpu()
        return [data[row, offset : offset + length].tolist() for row, offset, length in self.places]


def collate(
    rows: Sequence[Sequence[int]], *, packing: bool, pad_id: int, device: torch.device | str = "cpu"
) -> Collated:
    """Tensors for ``rows``: one packed row (restarting position ids, no mask) or right-padded rows."""
    if packing:
        ids: list[int] = []
        positions: list[int] = []
        places = []
        for row in rows:
            places.append((0, len(ids), len(row)))
            ids.extend(row)
            positions.extend(range(len(row)))
        return Collated(
            input_ids=torch.tensor([ids], dtype=torch.long, device=device),
            position_ids=torch.tensor([positions], dtype=torch.long, device=device),
            attention_mask=None,
            places=places,
            real_tokens=len(ids),
        )
    width = max(len(row) for row in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        input_ids[b, : len(row)] = torch.tensor(list(row), dtype=torch.long)
        attention[b, : len(row)] = 1
    positions = torch.arange(width).unsqueeze(0).expand(len(rows), -1).contiguous()
    return Collated(
        input_ids=input_ids.to(device),
        position_ids=positions.to(device),
        attention_mask=attention.to(device),
        places=[(b, 0, len(row)) for b, row in enumerate(rows)],
        real_tokens=sum(len(row) for row in rows),
    )


@dataclass(frozen=True)
class Row:
    """One training sequence of a rollout batch: segment ``segment`` of episode ``episode`` (batch index)."""

    episode: int
    segment: int
    length: int
    action_tokens: int


def training_rows(episodes: Sequence[Episode]) -> list[Row]:
    """Every segment of every episode, in batch order."""
    return [
        Row(e, s, len(segment.input_ids), segment.action_tokens)
        for e, episode in enumerate(episodes)
        for s, segment in enumerate(episode.segments)
    ]


def minibatches(episodes: Sequence[Episode], rows: Sequence[Row], groups_per_minibatch: int) -> list[list[int]]:
    """Row indices per mini-batch: consecutive groups (in batch order), ``groups_per_minibatch`` groups each."""
    group_order: list[str] = []
    for episode in episodes:
        if episode.group_id not in group_order:
            group_order.append(episode.group_id)
    size = groups_per_minibatch
    chunks = [set(group_order[i : i + size]) for i in range(0, len(group_order), size)]
    return [[r for r, row in enumerate(rows) if episodes[row.episode].group_id in chunk] for chunk in chunks]


def rank_share(
    episodes: Sequence[Episode], rows: Sequence[Row], minibatch: Sequence[int], *, rank: int, world: int, balanced: bool
) -> list[int]:
    """Rank ``rank``'s row indices of a mini-batch: token-balanced (:func:`balance`), or the groups it collected."""
    if world == 1:
        return list(minibatch)
    if balanced:
        shares = balance([rows[i].length for i in minibatch], world)
        return [minibatch[j] for j in shares[rank]]
    group_index = [int(episodes[rows[i].episode].rollout_id.split(":")[1]) for i in minibatch]
    return [i for i, g in zip(minibatch, group_index, strict=True) if g % world == rank]
