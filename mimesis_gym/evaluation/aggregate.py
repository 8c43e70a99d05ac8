"""The paper's aggregation protocol (docs/evaluation.md, "Scoring"): task and env scores, Avg, MR.

Per-episode scores come from :mod:`mimesis_gym.core.scoring`. Here: a task's score is the mean of
its episodes (trials); an env's score is the mean of its task scores (TravelGym's sets pooled);
values are reported ×100. **Avg** weights each env by its *planned* task count; **MR** ranks the
compared agents within each env column on the displayed values (two decimals), ties taking the
average of the ranks they span. The paper's columns and their order come from the env table
(``mimesis_gym.envs.ENV_TABLE``), as do the upstream task counts (``ENV_TABLE.avg_weights()``).
**Δ_sim** and **Δ_CSD** are the paper's two differences of Avg between released agents
(:data:`PAPER_DELTAS`, :func:`paper_deltas`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from mimesis_gym.agents.registry import RELEASED_AGENTS
from mimesis_gym.envs import ENV_TABLE

__all__ = [
    "PAPER_DELTAS",
    "display",
    "env_score",
    "mean_ranks",
    "paper_deltas",
    "released_alias",
    "task_scores",
    "weighted_avg",
]

PAPER_DELTAS: dict[str, tuple[str, str]] = {
    "Δ_sim": ("userrl-plus-agent", "userrl-agent"),
    "Δ_CSD": ("csd-agent", "userrl-plus-agent"),
}
"""Name → (minuend, subtrahend) released-agent aliases: what training against MIMESIS-9B instead of GPT-5.5
adds (UserRL+ − UserRL), and what CSD adds on top of it (CSD − UserRL+)."""


def task_scores(episodes: Iterable[tuple[str, float]]) -> dict[str, float]:
    """Mean episode score per task from ``(task_id, episode_score)`` pairs (trials averaged)."""
    totals: dict[str, list[float]] = defaultdict(list)
    for task_id, score in episodes:
        totals[task_id].append(score)
    return {task_id: sum(scores) / len(scores) for task_id, scores in totals.items()}


def env_score(scores_by_task: Mapping[str, float]) -> float | None:
    """Mean over the env's scored tasks (×1, not ×100); ``None`` when no task has a score."""
    if not scores_by_task:
        return None
    return sum(scores_by_task.values()) / len(scores_by_task)


def weighted_avg(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> tuple[float | None, bool]:
    """``Σ w·S / Σ w`` over the paper's columns that have a weight and a value, summed in column
    order (the env table's); the flag says some weighted column had no value (‡)."""
    numerator = denominator = 0.0
    partial = False
    for column in ENV_TABLE.column_names():
        if column not in weights:
            continue
        value = scores.get(column)
        if value is None:
            partial = True
            continue
        numerator += weights[column] * value
        denominator += weights[column]
    if denominator == 0:
        return None, partial
    return numerator / denominator, partial


def display(value: float | None) -> str:
    """A ×100 value as shown in tables: two decimals, ``—`` when not measured."""
    return "—" if value is None else f"{value:.2f}"


def mean_ranks(
    rows: Mapping[str, Mapping[str, float | None]], columns: Sequence[str] | None = None
) -> dict[str, tuple[float | None, bool]]:
    """MR per agent from ×100 column values: rank 1 = highest displayed value, ties averaged.

    ``columns`` defaults to the paper's columns (the env table's).

    A cell without a value is unranked; the agent's MR then averages its ranked columns and the
    flag (‡) is set.
    """
    ranks: dict[str, list[float]] = {agent: [] for agent in rows}
    partial = dict.fromkeys(rows, False)
    for column in ENV_TABLE.column_names() if columns is None else columns:
        present = [
            (agent, float(display(values.get(column))))
            for agent, values in rows.items()
            if values.get(column) is not None
        ]
        for agent, values in rows.items():
            if values.get(column) is None:
                partial[agent] = True
        ordered = sorted(present, key=lambda item: -item[1])
        position = 0
        while position < len(ordered):
            end = position
            while end + 1 < len(ordered) and ordered[end + 1][1] == ordered[position][1]:
                end += 1
            shared = (position + 1 + end + 1) / 2
            for agent, _ in ordered[position : end + 1]:
                ranks[agent].append(shared)
            position = end + 1
    return {agent: ((sum(values) / len(values)) if values else None, partial[agent]) for agent, values in ranks.items()}


def released_alias(agent: str, label: str = "") -> str | None:
    """The released-agent alias a summary row stands for: its agent name is the alias, or its label is the
    released agent's table label (``RELEASED_AGENTS``); ``None`` for any other agent."""
    key = agent.strip().lower()
    if key in RELEASED_AGENTS:
        return key
    return next((alias for alias, (_, released) in RELEASED_AGENTS.items() if label and label == released), None)


def paper_deltas(avgs: Mapping[str, float | None]) -> dict[str, float | None]:
    """The deltas of :data:`PAPER_DELTAS` whose two agents are keys of ``avgs`` (Avg ×100 by released alias);
    a delta is ``None`` when either Avg is."""
    deltas: dict[str, float | None] = {}
    for name, (minuend, subtrahend) in PAPER_DELTAS.items():
        if minuend in avgs and subtrahend in avgs:
            high, low = avgs[minuend], avgs[subtrahend]
            deltas[name] = None if high is None or low is None else high - low
    return deltas
