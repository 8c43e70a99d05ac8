"""Advantage estimators: one value per (episode, turn), pure functions.

See docs/algorithms.md, "Advantages: one number per turn".

Every estimator works on per-turn metadata of the whole rollout batch. The public entry point is
:func:`compute_advantages`, which takes a list of episode mappings — ``group_id``, ``rollout_id``,
``turn_rewards``, ``turn_token_counts`` and, where an estimator uses them, ``info_gains``, ``role``,
``process_rewards``, ``episode_score``, ``score`` — and returns per-turn advantages as nested lists;
every action token of a turn gets its turn's value.

Group statistics (shared): for values ``x_1..x_n`` of a group, ``n = 1`` gives ``μ = 0, σ = 1``;
otherwise the mean and the unbiased standard deviation. The normalised value is
``(x − μ)/(σ + ε)`` (``x − μ`` without ``std_normalize``); a group whose values all tie gets 0.
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

__all__ = [
    "EPS",
    "compute_advantages",
    "em_credit",
    "foldgrpo",
    "group_normalise",
    "grpo_multiturn",
    "grpo_outcome",
    "infopo",
    "reward_to_go",
    "score_outcome",
    "score_trajectory",
    "turn_credits",
]

EPS = 1e-6


def _stats(values: Sequence[float]) -> tuple[float, float]:
    """(μ, σ) by the shared rule: one value → (0, 1); else mean and unbiased std."""
    if len(values) <= 1:
        return 0.0, 1.0
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance)


def group_normalise(
    values: Sequence[float], groups: Sequence[Hashable], *, std_normalize: bool = True, eps: float = EPS
) -> list[float]:
    """Normalise each value within its group (a group whose values all tie gets exactly 0)."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, group in enumerate(groups):
        members[group].append(index)
    result = [0.0] * len(values)
    for indices in members.values():
        group_values = [values[i] for i in indices]
        if len(indices) > 1 and all(v == group_values[0] for v in group_values):
            continue
        mean, std = _stats(group_values)
        for i in indices:
            result[i] = (values[i] - mean) / (std + eps) if std_normalize else values[i] - mean
    return result


def reward_to_go(rewards: Sequence[float], gamma: float) -> list[float]:
    """``G_t = Σ_{u ≥ t} γ^{u−t} r_u`` (per turn)."""
    result = [0.0] * len(rewards)
    running = 0.0
    for t in range(len(rewards) - 1, -1, -1):
        running = rewards[t] + gamma * running
        result[t] = running
    return result


def em_credit(reward: float) -> float:
    """``round(0.5 + 0.5·(1 − e^{−2r})/(1 − e^{−2}), 4)``: 0 → 0.5, 0.5 → 0.8655, 1 → 1."""
    return round(0.5 + 0.5 * (1 - math.exp(-2 * reward)) / (1 - math.exp(-2)), 4)


def score_trajectory(rewards: Sequence[float], kind: str, gamma: float) -> float:
    """The trajectory score of multi-turn GRPO and InfoPO: ``G_1`` (``"r2g"``) or ``round(mean r_t, 4)``."""
    if kind == "r2g":
        return reward_to_go(rewards, gamma)[0] if rewards else 0.0
    if kind in ("mean", "sum"):  # UserRL calls the mean "sum"
        return round(sum(rewards) / len(rewards), 4) if rewards else 0.0
    raise ValueError(f"trajectory_score must be 'r2g' or 'mean'; got {kind!r}")


def turn_credits(rewards: Sequence[float], kind: str, gamma: float) -> list[float]:
    """Per-turn credit ``c_t``: 1 (``"equalized"``), ``G_t`` (``"r2g"``) or :func:`em_credit` of ``r_t``."""
    if kind == "equalized":
        return [1.0] * len(rewards)
    if kind == "r2g":
        return reward_to_go(rewards, gamma)
    if kind == "em":
        return [em_credit(r) for r in rewards]
    raise ValueError(f"turn_credit must be 'equalized', 'r2g' or 'em'; got {kind!r}")


def grpo_multiturn(
    episodes: Sequence[Mapping[str, Any]],
    *,
    gamma: float = 0.8,
    trajectory_score: str = "r2g",
    turn_credit: str = "r2g",
    std_normalize: bool = True,
    eps: float = EPS,
) -> list[list[float]]:
    """Multi-turn GRPO with UserRL's credit assignment (docs/algorithms.md, "Multi-turn GRPO").

    ``Â_i`` = group-normalised trajectory score; ``A_{i,t} = c_t · Â_i · N_i / Σ_i`` with
    ``Σ_i = Σ_t c_t n_t`` and ``N_i`` the action tokens of turns with non-zero credit (0 when
    ``Σ_i = 0``). The token-weighted mean over credited tokens equals ``Â_i``.
    """
    scores = [score_trajectory(e["turn_rewards"], trajectory_score, gamma) for e in episodes]
    normalised = group_normalise(scores, [e["group_id"] for e in episodes], std_normalize=std_normalize, eps=eps)
    result = []
    for episode, advantage in zip(episodes, normalised, strict=True):
        credits = turn_credits(episode["turn_rewards"], turn_credit, gamma)
        counts = episode["turn_token_counts"]
        weighted = sum(c * n for c, n in zip(credits, counts, strict=True))
        credited = sum(n for c, n in zip(credits, counts, strict=True) if c != 0)
        if weighted == 0:
            result.append([0.0] * len(credits))
        else:
            result.append([c * advantage * credited / weighted for c in credits])
    return result


def score_outcome(episode: Mapping[str, Any], score: str) -> float:
    """The episode score of outcome GRPO and FoldGRPO: the sum, mean or max of the turn rewards, or the env's score."""
    rewards = episode["turn_rewards"]
    if score == "sum":
        return float(sum(rewards))
    if score == "mean":
        return sum(rewards) / len(rewards) if rewards else 0.0
    if score == "max":
        return max(rewards) if rewards else 0.0
    if score == "episode_score":
        return float(episode["episode_score"])
    raise ValueError(f"score must be 'sum', 'mean', 'max' or 'episode_score'; got {score!r}")


def grpo_outcome(
    episodes: Sequence[Mapping[str, Any]], *, score: str = "sum", std_normalize: bool = True, eps: float = EPS
) -> list[list[float]]:
    """Outcome GRPO (docs/algorithms.md, "Outcome GRPO"): every turn of an episode gets its group-normalised score."""
    scores = [score_outcome(e, score) for e in episodes]
    normalised = group_normalise(scores, [e["group_id"] for e in episodes], std_normalize=std_normalize, eps=eps)
    return [[value] * len(e["turn_rewards"]) for e, value in zip(episodes, normalised, strict=True)]


def foldgrpo(
    episodes: Sequence[Mapping[str, Any]],
    *,
    score: str = "sum",
    group_by_role: bool | None = None,
    process_reward: bool = False,
    q_low: float = 0.0,
    q_high: float = 1.0,
    eps: float = EPS,
) -> list[list[float]]:
    """FoldGRPO: statistics over unique rollouts, optional role groups and process rewards.

    See docs/algorithms.md, "FoldGRPO".

    Each entry is a segment; its score is the ``score`` key when present, else as outcome GRPO.
    ``μ, σ`` come from the first segment of every distinct ``rollout_id`` in the group.
    """
    roles = {e.get("role") for e in episodes}
    by_role = len(roles) > 1 if group_by_role is None else group_by_role
    keys = [(e["group_id"], e.get("role")) if by_role else e["group_id"] for e in episodes]
    scores = [float(e["score"]) if "score" in e else score_outcome(e, score) for e in episodes]
    unique: dict[Hashable, dict[Hashable, float]] = defaultdict(dict)
    for key, episode, value in zip(keys, episodes, scores, strict=True):
        unique[key].setdefault(episode["rollout_id"], value)
    stats = {key: _stats(list(values.values())) for key, values in unique.items()}
    result = []
    for key, episode, value in zip(keys, episodes, scores, strict=True):
        mean, std = stats[key]
        turns = len(episode["turn_rewards"])
        if process_reward and episode.get("process_rewards") is not None:
            values = [min(q_high, max(q_low, value + q)) for q in episode["process_rewards"]]
        else:
            values = [value] * turns
        result.append([(v - mean) / (std + eps) for v in values])
    return result


def _token_std(values: Sequence[tuple[float, int]]) -> float:
    """Unbiased std over tokens: each (value, count) stands for ``count`` equal tokens."""
    total = sum(n for _, n in values)
    if total <= 1:
        return 0.0
    mean = sum(v * n for v, n in values) / total
    return math.sqrt(sum(n * (v - mean) ** 2 for v, n in values) / (total - 1))


def infopo(
    episodes: Sequence[Mapping[str, Any]],
    *,
    gamma: float = 0.8,
    trajectory_score: str = "mean",
    turn_credit: str = "equalized",
    normalize_intrinsic: bool = True,
    gate_temperature: float = 0.05,
    beta0: float = 0.1,
    beta_decay: float = 0.0,
    epoch: int = 0,
    intrinsic_only: bool = False,
    eps: float = EPS,
    diagnostics: dict[str, Any] | None = None,
) -> list[list[float]]:
    """InfoPO fusion (docs/algorithms.md, "InfoPO"): outcome GRPO plus a gated, capped information-gain advantage.

    ``info_gains[t]`` is ``I_t`` for the feedback after action ``t`` (``t < T``); each token of
    ``a_t`` gets ``v_t = I_t / |a_t|`` (the last turn 0). ``A = A^out + β_e · w_i · λ · Â^I``.
    A ``diagnostics`` dict, when given, receives ``lambda_`` (λ), ``beta``, ``s_out``, ``s_intrinsic`` and
    per-group ``group_std`` and ``gate`` (for logging).
    """
    outcome = grpo_multiturn(episodes, gamma=gamma, trajectory_score=trajectory_score, turn_credit=turn_credit, eps=eps)
    # per-turn intrinsic value v_t = I_t / |a_t|
    intrinsic: list[list[float]] = []
    for episode in episodes:
        gains = list(episode.get("info_gains") or [])
        counts = episode["turn_token_counts"]
        intrinsic.append(
            [gains[t] / counts[t] if t < len(gains) and t < len(counts) - 1 and counts[t] else 0.0
             for t in range(len(counts))]
        )  # fmt: skip
    groups: dict[Hashable, list[int]] = defaultdict(list)
    for index, episode in enumerate(episodes):
        groups[episode["group_id"]].append(index)
    group_std: dict[Hashable, float] = {}
    for group, indices in groups.items():
        scores = [score_trajectory(episodes[i]["turn_rewards"], trajectory_score, gamma) for i in indices]
        group_std[group] = _stats(scores)[1] if len(scores) > 1 else 1.0
    normalised_intrinsic = [list(values) for values in intrinsic]
    if normalize_intrinsic:
        for indices in groups.values():
            pooled = [
                (v, episodes[i]["turn_token_counts"][t]) for i in indices for t, v in enumerate(intrinsic[i]) if v != 0
            ]
            if not pooled:
                continue
            total = sum(n for _, n in pooled)
            mean = sum(v * n for v, n in pooled) / total
            std = _token_std(pooled) if total > 1 else 1.0
            for i in indices:
                normalised_intrinsic[i] = [(v - mean) / (std + eps) if v != 0 else 0.0 for v in intrinsic[i]]
    tokens_out = [(a, n) for e, row in zip(episodes, outcome, strict=True)
                  for a, n in zip(row, e["turn_token_counts"], strict=True)]  # fmt: skip
    tokens_in = [(a, n) for e, row in zip(episodes, normalised_intrinsic, strict=True)
                 for a, n in zip(row, e["turn_token_counts"], strict=True)]  # fmt: skip
    s_out = _token_std(tokens_out) + eps
    s_in = _token_std(tokens_in) + eps
    cap = min(1.0, max(s_out, 1.0) / s_in)
    beta = beta0 * math.exp(-beta_decay * epoch)
    if diagnostics is not None:
        diagnostics.update(lambda_=cap, beta=beta, s_out=s_out, s_intrinsic=s_in, group_std=dict(group_std))
        diagnostics["gate"] = {g: 1.0 / (1.0 + math.exp(std / gate_temperature)) for g, std in group_std.items()}
    result = []
    for episode, out_row, in_row in zip(episodes, outcome, normalised_intrinsic, strict=True):
        if intrinsic_only:
            result.append([cap * value for value in in_row])
            continue
        gate = 1.0 / (1.0 + math.exp(group_std[episode["group_id"]] / gate_temperature))
        result.append([a + beta * gate * cap * b for a, b in zip(out_row, in_row, strict=True)])
    return result


ESTIMATORS = {"grpo_multiturn": grpo_multiturn, "grpo_outcome": grpo_outcome, "foldgrpo": foldgrpo, "infopo": infopo}


def compute_advantages(
    episodes: Sequence[Mapping[str, Any]],
    estimator: str = "grpo_multiturn",
    *,
    diagnostics: dict[str, Any] | None = None,
    **options: Any,
) -> list[list[float]]:
    """Per-turn advantages (nested lists, one list per episode) of the named estimator.

    ``diagnostics`` reaches the estimators that report some (InfoPO) and is left empty by the others.
    """
    try:
        function = ESTIMATORS[estimator]
    except KeyError:
        raise ValueError(f"unknown estimator {estimator!r}; known: {', '.join(ESTIMATORS)}") from None
    if diagnostics is not None and "diagnostics" in inspect.signature(function).parameters:
        options["diagnostics"] = diagnostics
    return function(episodes, **options)
