"""pass^k and pass@k over the trials of ``eval --trials n`` (docs/evaluation.md, "pass^k and pass@k").

An episode **succeeds** when it reached its task's best score: ``episode_score ≥ max_score − 1e-6``,
``max_score`` being ``env.task_max_score()`` at reset (the env's own notion; the per-env table is in
the docs). For a task with ``n`` counted trials of which ``c`` succeeded, the unbiased estimators
(tau2-bench's, from the combinatorics of drawing ``k`` of the ``n`` trials without replacement) are

    pass^k = C(c, k) / C(n, k)         every one of k trials succeeds (consistency)
    pass@k = 1 − C(n − c, k) / C(n, k)  at least one of k trials succeeds

and a cell's value is their mean over its tasks, for k = 1 … n. The trials that count are those the
scoring mode counts (``exclude``: status ``ok`` only; ``include``: all) whose record has a positive
``max_score``; a task with fewer counted trials than ``k`` is left out of the mean for that ``k``
(``tasks_per_k`` says how many tasks each value averages).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from math import comb

from pydantic import BaseModel

from mimesis_gym.behaviors.registry import CONDITIONS
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.robustness import counted, env_rank

__all__ = [
    "SUCCESS_TOLERANCE",
    "PassKRow",
    "PassKTable",
    "pass_at_k",
    "pass_hat_k",
    "pass_k_markdown",
    "pass_k_table",
    "succeeded",
]

SUCCESS_TOLERANCE = 1e-6
"""How far below its task's best score an episode may end and still count as a success (float sums)."""


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k of one task: ``C(c, k) / C(n, k)``; ``ValueError`` unless ``0 ≤ c ≤ n`` and ``1 ≤ k ≤ n``."""
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def pass_at_k(n: int, c: int, k: int) -> float:
    """pass@k of one task: ``1 − C(n − c, k) / C(n, k)``; ``ValueError`` unless ``0 ≤ c ≤ n`` and ``1 ≤ k ≤ n``."""
    _check(n, c, k)
    return 1.0 - comb(n - c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass^k needs 0 <= c <= n and 1 <= k <= n; got n={n}, c={c}, k={k}")


def succeeded(record: EpisodeRecord) -> bool | None:
    """Whether the episode reached its task's best score; ``None`` when that is unknown (no
    ``max_score``: an older record or an env that never reset) or there is nothing to reach (≤ 0)."""
    if record.max_score is None or record.max_score <= 0:
        return None
    return record.episode_score >= record.max_score - SUCCESS_TOLERANCE


class PassKRow(BaseModel):
    """One (user, agent, env, condition); lists are indexed by ``k − 1`` (``None``: no task has k trials)."""

    user: str
    agent: str
    env: str
    condition: str
    n_tasks: int
    trials: int
    """The most counted trials of any of its tasks: the largest k."""
    pass_hat_k: list[float | None]
    pass_at_k: list[float | None]
    tasks_per_k: list[int]


class PassKTable(BaseModel):
    """``summary.json``'s ``pass_k``: the scoring mode and the rows."""

    mode: str
    rows: list[PassKRow]


def _row(user: str, agent: str, env: str, condition: str, tasks: Mapping[str, list[bool]]) -> PassKRow:
    trials = max(len(outcomes) for outcomes in tasks.values())
    hat: list[float | None] = []
    at: list[float | None] = []
    per_k: list[int] = []
    for k in range(1, trials + 1):
        eligible = [(len(outcomes), sum(outcomes)) for outcomes in tasks.values() if len(outcomes) >= k]
        per_k.append(len(eligible))
        hat.append(sum(pass_hat_k(n, c, k) for n, c in eligible) / len(eligible))
        at.append(sum(pass_at_k(n, c, k) for n, c in eligible) / len(eligible))
    return PassKRow(
        user=user, agent=agent, env=env, condition=condition, n_tasks=len(tasks), trials=trials,
        pass_hat_k=hat, pass_at_k=at, tasks_per_k=per_k,
    )  # fmt: skip


def pass_k_table(
    records: Sequence[EpisodeRecord], mode: str, labels: Mapping[str, str] | None = None
) -> PassKTable | None:
    """pass^k and pass@k per (user, agent, env, condition); ``None`` when no task has two counted trials.

    Rows go by user (its label from ``labels``) and agent in the order first seen, then env in the env
    table's order, then condition in the registry's order (control first).
    """
    cells: dict[tuple[str, str], dict[str, dict[str, dict[str, list[bool]]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    )
    for record in records:
        outcome = succeeded(record) if counted(record, mode) else None
        if outcome is not None:
            cells[(record.user, record.agent)][record.env][record.user_behavior][record.task_id].append(outcome)
    trials = [len(o) for by_env in cells.values() for c in by_env.values() for t in c.values() for o in t.values()]
    if max(trials, default=0) < 2:
        return None
    rows = [
        _row((labels or {}).get(user, user), agent, env, condition, by_env[env][condition])
        for (user, agent), by_env in cells.items()
        for env in sorted(by_env, key=env_rank)
        for condition in CONDITIONS
        if condition in by_env[env]
    ]
    return PassKTable(mode=mode, rows=rows)


def _value(values: Sequence[float | None], k: int) -> str:
    value = values[k - 1] if k <= len(values) else None
    return "—" if value is None else f"{value:.3f}"


def pass_k_markdown(table: PassKTable | None) -> list[str]:
    """``summary.md``'s pass^k section (nothing when ``table`` is ``None``)."""
    if table is None:
        return []
    n = max(row.trials for row in table.rows)
    header = [
        "User", "Agent", "Env", "Condition", "Tasks",
        *(f"pass^{k}" for k in range(1, n + 1)), *(f"pass@{k}" for k in range(2, n + 1)),
    ]  # fmt: skip
    lines = [
        "## pass^k and pass@k",
        "",
        f"Per task over its trials (scoring mode {table.mode}; a trial succeeds when it reached the task's best "
        "score), then the mean over tasks: pass^k = C(c,k)/C(n,k) (all k trials succeed), pass@k = "
        "1 − C(n−c,k)/C(n,k) (one of k does); pass@1 = pass^1. A task with fewer counted trials than k is left "
        "out of that k.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for row in table.rows:
        cells = [row.user, row.agent, ENV_TABLE.title(row.env), row.condition, str(row.n_tasks)]
        cells += [_value(row.pass_hat_k, k) for k in range(1, n + 1)]
        cells += [_value(row.pass_at_k, k) for k in range(2, n + 1)]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]
