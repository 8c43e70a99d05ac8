"""The robustness table (docs/evaluation.md, "User behaviours"): each condition's score against control.

For every (user, agent) pair and every condition of ``eval --user-behaviors`` other than control,
on each env the condition was played on, the env score is computed as the paper's table computes it
(the mean over tasks of the mean over trials, ×100, over the episodes the scoring mode counts:
``exclude`` keeps status ``ok`` only, ``include`` every episode) under the condition and under
control, on the same planned tasks. A row's **score** is the mean of its env scores over the envs
where both have a value, **control** the mean of control's over the same envs, **Δ** their
difference; **enacted** is the share of the condition's counted episodes in which the env's check
found the behaviour. A Δ over episodes where the behaviour was not enacted is not a robustness
number, so every Δ is shown with its enacted share. ABCD, whose user is the policy, is left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, Field

from mimesis_gym.behaviors.registry import CONDITIONS, CONTROL
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.aggregate import display, env_score, task_scores
from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = [
    "EnvRobustness",
    "RobustnessCell",
    "RobustnessRow",
    "RobustnessTable",
    "counted",
    "env_rank",
    "robustness_markdown",
    "robustness_table",
]

NOT_ROBUSTNESS = (
    "A Δ over episodes in which the behaviour was not enacted is not a robustness number: read each Δ "
    "with its enacted share (the share of the condition's counted episodes in which the env's check found "
    "the behaviour)."
)


def env_rank(env: str) -> tuple[int, int, str]:
    """Where env ``env`` (a short name) goes in these tables: the env table's order, then the envs
    outside it by name; never the order episodes happened to finish in."""
    names = [entry.short for entry in ENV_TABLE]
    return (0, names.index(env), "") if env in names else (1, 0, env)


def counted(record: EpisodeRecord, mode: str) -> bool:
    """Whether the paper's table counts ``record`` in scoring mode ``mode``: every episode under
    ``include``, only status ``ok`` under ``exclude``."""
    return mode == "include" or record.status == "ok"


class RobustnessCell(BaseModel):
    """Scores ×100 (``None`` where nothing was counted), Δ, enacted share and counted episodes."""

    score: float | None
    control: float | None
    delta: float | None
    enacted_share: float | None
    n_episodes: int
    n_enacted: int
    judged_share: float | None = None
    """The share of the judge's readings that saw the behaviour (``eval --judge``); ``None`` without any."""
    n_judged: int = 0


class EnvRobustness(RobustnessCell):
    """One condition on one env."""

    env: str


class RobustnessRow(RobustnessCell):
    """One (user, agent, condition): score and control are the means over ``envs`` (those where the
    condition and control both have a score); enacted share and episodes count all the condition's
    counted episodes."""

    user: str
    agent: str
    condition: str
    envs: list[str]
    by_env: list[EnvRobustness] = Field(default_factory=list)


class RobustnessTable(BaseModel):
    """``summary.json``'s ``robustness``: the rows, the scoring mode and the (env, condition) pairs
    the plan skipped because the env's user cannot play the condition."""

    mode: str
    conditions: list[str]
    rows: list[RobustnessRow]
    not_applicable: dict[str, dict[str, str]] = Field(default_factory=dict)


def _score(records: Sequence[EpisodeRecord]) -> float | None:
    """The env score ×100 of ``records`` (one env), as the paper's table computes it."""
    value = env_score(task_scores((record.task_id, record.episode_score) for record in records))
    return None if value is None else 100.0 * value


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _env_row(env: str, played: Sequence[EpisodeRecord], control: Sequence[EpisodeRecord]) -> EnvRobustness:
    score, base = _score(played), _score(control)
    enacted = sum(record.behavior_enacted is True for record in played)
    readings = [record.behavior_judged for record in played if record.behavior_judged is not None]
    return EnvRobustness(
        env=env,
        score=score,
        control=base,
        delta=None if score is None or base is None else score - base,
        enacted_share=enacted / len(played) if played else None,
        n_episodes=len(played),
        n_enacted=enacted,
        judged_share=sum(readings) / len(readings) if readings else None,
        n_judged=len(readings),
    )


def _condition_row(
    user: str, agent: str, condition: str, cells: Mapping[str, Mapping[str, list[EpisodeRecord]]]
) -> RobustnessRow:
    """The row of ``condition`` from ``cells`` (env → condition → counted records of this pair)."""
    by_env = [
        _env_row(env, conditions[condition], conditions.get(CONTROL, []))
        for env, conditions in sorted(cells.items(), key=lambda item: env_rank(item[0]))
        if condition in conditions
    ]
    if condition == CONTROL:
        scored = [row for row in by_env if row.score is not None]
        score = _mean([row.score for row in scored if row.score is not None])
        return RobustnessRow(
            user=user, agent=agent, condition=condition, envs=[row.env for row in scored], score=score,
            control=score, delta=None, enacted_share=None, n_episodes=sum(row.n_episodes for row in by_env),
            n_enacted=0, by_env=by_env,
        )  # fmt: skip
    paired = [row for row in by_env if row.delta is not None]
    score = _mean([row.score for row in paired if row.score is not None])
    base = _mean([row.control for row in paired if row.control is not None])
    n_episodes = sum(row.n_episodes for row in by_env)
    n_enacted = sum(row.n_enacted for row in by_env)
    n_judged = sum(row.n_judged for row in by_env)
    judged_yes = sum(round((row.judged_share or 0.0) * row.n_judged) for row in by_env)
    return RobustnessRow(
        user=user, agent=agent, condition=condition, envs=[row.env for row in paired], score=score, control=base,
        delta=None if score is None or base is None else score - base,
        enacted_share=n_enacted / n_episodes if n_episodes else None, n_episodes=n_episodes, n_enacted=n_enacted,
        judged_share=judged_yes / n_judged if n_judged else None, n_judged=n_judged, by_env=by_env,
    )  # fmt: skip


def robustness_table(
    records: Sequence[EpisodeRecord],
    mode: str,
    labels: Mapping[str, str] | None = None,
    not_applicable: Mapping[str, Mapping[str, str]] | None = None,
) -> RobustnessTable | None:
    """The robustness rows of ``records`` (``None`` when no condition but control was played).

    Rows go by user (``labels`` gives a user alias's label, as the summary's sections show it), then
    agent, in the order first seen, then condition in the registry's order, control first; a pair that
    played control alone (``eval --behavior-agents`` left it out) has no rows.
    """
    kept = [record for record in records if ENV_TABLE.summary_table(record.env) != "abcd"]
    if all(record.user_behavior == CONTROL for record in kept):
        return None
    cells: dict[tuple[str, str], dict[str, dict[str, list[EpisodeRecord]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for record in kept:
        bucket = cells[(record.user, record.agent)][record.env][record.user_behavior]
        if counted(record, mode):
            bucket.append(record)
    seen = {record.user_behavior for record in kept}
    conditions = [condition for condition in CONDITIONS if condition in seen]
    rows = [
        _condition_row((labels or {}).get(user, user), agent, condition, by_env)
        for (user, agent), by_env in cells.items()
        if any(set(played) - {CONTROL} for played in by_env.values())  # pairs that met a hard user
        for condition in conditions
        if any(condition in played for played in by_env.values())
    ]
    given = not_applicable or {}
    skipped = {c: dict(sorted(given[c].items())) for c in CONDITIONS if c in given}  # as run.json reads back
    return RobustnessTable(mode=mode, conditions=conditions, rows=rows, not_applicable=skipped)


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.0f}%"


def robustness_markdown(table: RobustnessTable | None) -> list[str]:
    """``summary.md``'s "Robustness" section (nothing when ``table`` is ``None``)."""
    if table is None:
        return []
    lines = [
        "## Robustness to user behaviours",
        "",
        f"Scores ×100 per condition (scoring mode {table.mode}): the mean over the envs the condition was played "
        "on of each env's score, beside control's on the same envs and tasks. " + NOT_ROBUSTNESS,
        "",
    ]
    judged = any(row.n_judged for row in table.rows)
    judge_head, judge_rule = (" Judge: enacted |", "---|") if judged else ("", "")
    lines += [
        f"| User | Agent | Condition | Envs | Score | Control | Δ vs control | Enacted |{judge_head} Episodes |",
        f"|---|---|---|---|---|---|---|---|{judge_rule}---|",
    ]
    for row in table.rows:
        delta = "—" if row.delta is None else f"{row.delta:+.2f}"
        judge_cell = f" {_share(row.judged_share)} |" if judged else ""
        lines.append(
            f"| {row.user} | {row.agent} | {row.condition} | {len(row.envs)} | {display(row.score)} | "
            f"{display(row.control)} | {delta} | {_share(row.enacted_share)} |{judge_cell} {row.n_episodes} |"
        )
    if table.not_applicable:
        lines += ["", "Not applicable (not played): " + "; ".join(
            f"{condition} on {', '.join(envs)}" for condition, envs in table.not_applicable.items()
        ) + "."]  # fmt: skip
    return [*lines, ""]
