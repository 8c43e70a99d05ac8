"""Rank balancing, micro-batch planning and collation (docs/algorithms.md, "Micro-batches and packing").

* :func:`balance` gives each rank an equal-count, token-balanced share (longest first, greedy).
* :func:`plan_micro_batches` groups rows under a token budget: **packed** (first-fit decreasing,
  rows concatenated with restarting position ids, no padding) or **padded** (sorted by length; a
  micro-batch closes before its padded size would exceed the budget or 1.25 × its real tokens).
* :func:`plan_shared_prefixes` finds rows that start with the same tokens (a group's prompt), so that
  the prefix is run once for all of them (:class:`MicroPlan` ``shared_prefix``); :func:`plan_micro`
  combines it with the plain plan.
* :func:`collate` builds the tensors of one micro-batch and remembers where each row landed, so
  per-token values can be laid out (:meth:`Collated.place`) and read back (:meth:`Collated.take`).
* :func:`packed_spans` cuts a packed row into spans of whole sequences of at most
  :data:`PACKED_SPAN_TOKENS` tokens, which the scorer runs one by one: attention over one packed
  row costs time quadratic in its tokens, over bounded spans linear.
* :class:`Row` is one training sequence of a rollout batch; :func:`training_rows`,
  :func:`minibatches` and :func:`rank_share` cut a batch into mini-batches and each rank's share.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from mimesis_gym.algorithms.records import Episode

__all__ = [
    "MIN_SHARED_PREFIX",
    "PACKED_SPAN_TOKENS",
    "PAD_SLACK",
    "Collated",
    "MicroPlan",
    "Row",
    "balance",
    "collate",
    "common_prefix",
    "minibatches",
    "packed_spans",
    "padding_fraction",
    "plan_micro",
    "plan_micro_batches",
    "plan_shared_prefixes",
    "rank_share",
    "training_rows",
]

PAD_SLACK = 1.25
"""A padded micro-batch holds at most this many times its real tokens."""

MIN_SHARED_PREFIX = 256
"""Rows share their prefix in one forward only when it is at least this many tokens long (the default of
``update.prefix_sharing_min_tokens``): a shorter one saves less than the extra forward costs."""

PACKED_SPAN_TOKENS = 512
"""The longest span of a packed row that runs through the model at once (a longer sequence is a span of its own).

Attention runs over the whole input it is given, the packed sequences kept apart by a block-diagonal
mask whose masked blocks are computed all the same: one packed row of a 3,000-token micro-batch spent
about 40 % of the update in attention, and the update's seconds per token grew with the batch.
Spans of whole sequences, at most this long, keep attention's cost per token bounded
(docs/algorithms.md, "Micro-batches and packing"); 256–1,024 measured alike, 512 best.
"""


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


@dataclass(frozen=True)
class MicroPlan:
    """One micro-batch of a plan: row indices, and how many leading tokens they all share (0: none).

    With ``shared_prefix`` = P > 0 every row has the same first P tokens and at least one more; the
    rows are collated padded and the scorer runs those P tokens once
    (docs/algorithms.md, "Micro-batches and packing").
    """

    rows: list[int]
    shared_prefix: int = 0


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The number of leading tokens ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    k = 0
    while k < n and a[k] == b[k]:
        k += 1
    return k


def _shared_cost(prefix: int, rows: int, longest: int) -> int:
    """Tokens one shared-prefix micro-batch runs: the prefix once, each row's padded rest."""
    return prefix + rows * (longest - prefix)


def plan_shared_prefixes(
    sequences: Sequence[Sequence[int]], token_budget: int, *, min_prefix: int = MIN_SHARED_PREFIX
) -> tuple[list[MicroPlan], list[int]]:
    """Micro-batches of rows that share a prefix of at least ``min_prefix`` tokens, and the rows left over.

    Rows are sorted lexicographically, so rows with long common prefixes (the ``G`` rollouts of one
    group start with the same prompt) are neighbours, and the rows of any run of that order share
    the smallest common prefix of its neighbours. The order is cut into runs that minimise the
    tokens run (dynamic programming): a run of two or more rows sharing at least ``min_prefix``
    tokens within ``token_budget`` costs its prefix once plus each row's padded rest; any other row
    costs its length and is returned for :func:`plan_micro_batches`. Deterministic.
    """
    order = sorted(range(len(sequences)), key=lambda i: (list(sequences[i]), i))
    rows = [sequences[i] for i in order]
    n = len(rows)
    adjacent = [common_prefix(rows[k], rows[k + 1]) for k in range(n - 1)]
    best = [0] * (n + 1)  # best[j]: fewest tokens for rows[:j]
    cut: list[tuple[int, int]] = [(0, 0)] * (n + 1)  # (start of the last run, its shared prefix or 0)
    for j in range(1, n + 1):
        best[j], cut[j] = best[j - 1] + len(rows[j - 1]), (j - 1, 0)
        prefix, longest = len(rows[j - 1]) - 1, len(rows[j - 1])
        for i in range(j - 2, -1, -1):  # the run rows[i:j]
            prefix = min(prefix, adjacent[i], len(rows[i]) - 1)
            longest = max(longest, len(rows[i]))
            if prefix < min_prefix:
                break
            cost = _shared_cost(prefix, j - i, longest)
            if cost <= token_budget and best[i] + cost < best[j]:
                best[j], cut[j] = best[i] + cost, (i, prefix)
    plans: list[MicroPlan] = []
    rest: list[int] = []
    j = n
    while j > 0:
        i, prefix = cut[j]
        if prefix:
            plans.append(MicroPlan(sorted(order[i:j]), prefix))
        else:
            rest.extend(order[i:j])
        j = i
    return plans[::-1], sorted(rest)


def plan_micro(
    sequences: Sequence[Sequence[int]],
    token_budget: int,
    *,
    packing: bool,
    share_prefix: bool,
    min_prefix: int = MIN_SHARED_PREFIX,
) -> list[MicroPlan]:
    """The micro-batches of ``sequences``: shared-prefix batches first (when ``share_prefix``), then the
    other rows planned by :func:`plan_micro_batches` (packed or padded)."""
    if share_prefix:
        plans, rest = plan_shared_prefixes(sequences, token_budget, min_prefix=min_prefix)
    else:
        plans, rest = [], list(range(len(sequences)))
    groups = plan_micro_batches([len(sequences[i]) for i in rest], token_budget, packing=packing)
    return plans + [MicroPlan([rest[j] for j in group]) for group in groups]


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


def packed_spans(positions: Sequence[int], width: int = PACKED_SPAN_TOKENS) -> list[tuple[int, int]]:
    """``(start, end)`` spans of a packed row's ``positions`` that hold whole sequences, at most ``width`` tokens.

    A sequence starts wherever the position does not follow the one before (as the model's packed-row
    mask reads it). Consecutive sequences join a span while it stays within ``width``; a longer
    sequence is a span of its own. The spans cover the row in order.
    """
    if not len(positions):
        return []
    starts = [k for k in range(len(positions)) if k == 0 or positions[k] != positions[k - 1] + 1]
    spans: list[tuple[int, int]] = []
    begin = 0
    for start, end in zip(starts, [*starts[1:], len(positions)], strict=True):
        if end - begin > width and start > begin:
            spans.append((begin, start))
            begin = start
    spans.append((begin, len(positions)))
    return spans


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
