"""Advantage estimators against hand-computed vectors (docs/algorithms.md)."""

import random

import pytest

from mimesis_gym.algorithms.advantages import compute_advantages, em_credit

GROUP = [
    {"group_id": "g", "rollout_id": "A", "turn_rewards": [0, 0, 1], "turn_token_counts": [2, 3, 1]},
    {"group_id": "g", "rollout_id": "B", "turn_rewards": [0, 1, 0], "turn_token_counts": [1, 2, 2]},
    {"group_id": "g", "rollout_id": "C", "turn_rewards": [0, 0, 0], "turn_token_counts": [2, 2, 2]},
    {"group_id": "g", "rollout_id": "D", "turn_rewards": [1, 0, 0], "turn_token_counts": [3, 1, 1]},
]


def approx(rows, abs_tol=1e-6):
    return [pytest.approx(row, abs=abs_tol) for row in rows]


@pytest.mark.parametrize(
    ("credit", "score", "expected"),
    [
        ("r2g", "r2g", [[0.056912, 0.071141, 0.088926], [0.376537, 0.470671, 0], [0, 0, 0], [0.901707, 0, 0]]),
        ("equalized", "mean", [[0.499997] * 3, [0.499997] * 3, [-1.499991] * 3, [0.499997] * 3]),
        ("r2g", "mean", [[0.410254, 0.512817, 0.641022], [0.428569, 0.535711, 0], [0, 0, 0], [0.499997, 0, 0]]),
        ("equalized", "r2g", [[0.069362] * 3, [0.439293] * 3, [-1.410362] * 3, [0.901707] * 3]),
        (
            "em",
            "mean",
            [
                [0.428569, 0.428569, 0.857138],
                [0.357141, 0.714281, 0.357141],
                [-1.499991] * 3,
                [0.624996, 0.312498, 0.312498],
            ],
        ),
        (
            "em",
            "r2g",
            [
                [0.059453, 0.059453, 0.118906],
                [0.313781, 0.627562, 0.313781],
                [-1.410362] * 3,
                [1.127134, 0.563567, 0.563567],
            ],
        ),
    ],
)
def test_multiturn_grpo_vectors(credit, score, expected):
    result = compute_advantages(GROUP, "grpo_multiturn", turn_credit=credit, trajectory_score=score, gamma=0.8)
    assert result == approx(expected)


def test_token_weighted_mean_equals_the_normalised_score():
    (a, *_) = compute_advantages(GROUP, "grpo_multiturn")
    tokens = [value for value, n in zip(a, GROUP[0]["turn_token_counts"], strict=True) for _ in range(n)]
    assert tokens == pytest.approx([0.056912, 0.056912, 0.071141, 0.071141, 0.071141, 0.088926], abs=1e-6)
    assert sum(tokens) / len(tokens) == pytest.approx(0.069362, abs=1e-6)


def test_em_credit_values_group_of_one_and_ties():
    assert [em_credit(r) for r in (0.2, 0.5, 0.8, -0.5)] == [0.6906, 0.8655, 0.9615, -0.4936]
    single = [{"group_id": "s", "rollout_id": "x", "turn_rewards": [0, 0, 1], "turn_token_counts": [1, 1, 1]}]
    assert compute_advantages(single, "grpo_multiturn", turn_credit="equalized")[0][0] == pytest.approx(0.6399994)
    tied = [dict(GROUP[0], rollout_id=str(i)) for i in range(3)]
    assert compute_advantages(tied, "grpo_multiturn") == [[0.0] * 3] * 3


def test_second_vector_set():
    group = [
        {"group_id": "g", "rollout_id": "A", "turn_rewards": [0, 0, 1], "turn_token_counts": [2, 3, 1]},
        {"group_id": "g", "rollout_id": "B", "turn_rewards": [0, 0], "turn_token_counts": [2, 2]},
        {"group_id": "g", "rollout_id": "C", "turn_rewards": [0.5, 0, 0.2], "turn_token_counts": [1, 1, 1]},
    ]
    eq = compute_advantages(group, "grpo_multiturn", turn_credit="equalized", trajectory_score="mean")
    assert [row[0] for row in eq] == pytest.approx([0.8445, -1.1043, 0.2598], abs=1e-4)
    r2g = compute_advantages(group, "grpo_multiturn")
    assert r2g == approx([[0.4871, 0.6089, 0.7611], [0, 0], [1.0695, 0.2725, 0.3406]], abs_tol=1e-4)


def slow_reference(episodes, gamma=0.8):
    """A direct transcription of the r2g/r2g definition, used to cross-check the estimator."""
    import statistics

    def g(rewards):
        return [sum(gamma ** (u - t) * rewards[u] for u in range(t, len(rewards))) for t in range(len(rewards))]

    scores = {id(e): g(e["turn_rewards"])[0] if e["turn_rewards"] else 0.0 for e in episodes}
    result = []
    for e in episodes:
        members = [scores[id(o)] for o in episodes if o["group_id"] == e["group_id"]]
        if len(members) == 1:
            mu, sd = 0.0, 1.0
        else:
            mu, sd = statistics.mean(members), statistics.stdev(members)
        a = 0.0 if len(members) > 1 and len(set(members)) == 1 else (scores[id(e)] - mu) / (sd + 1e-6)
        c = g(e["turn_rewards"])
        weighted = sum(ci * n for ci, n in zip(c, e["turn_token_counts"], strict=True))
        credited = sum(n for ci, n in zip(c, e["turn_token_counts"], strict=True) if ci != 0)
        result.append([ci * a * credited / weighted if weighted else 0.0 for ci in c])
    return result


def test_agrees_with_a_slow_reference_on_random_batches():
    rng = random.Random(0)
    for _ in range(200):
        episodes = []
        for group in range(rng.randint(1, 3)):
            for member in range(rng.randint(1, 8)):
                turns = rng.randint(1, 5)
                episodes.append(
                    {
                        "group_id": group,
                        "rollout_id": f"{group}-{member}",
                        "turn_rewards": [rng.choice([0, 0, 0.5, 1]) for _ in range(turns)],
                        "turn_token_counts": [rng.randint(0, 4) for _ in range(turns)],
                    }
                )
        assert compute_advantages(episodes, "grpo_multiturn") == approx(slow_reference(episodes), abs_tol=1e-9)


def test_outcome_grpo():
    result = compute_advantages(GROUP, "grpo_outcome", score="sum")
    assert result == approx([[0.499999] * 3, [0.499999] * 3, [-1.499997] * 3, [0.499999] * 3])


def segment(rollout, score, role=None, q=None):
    return {
        "group_id": "g",
        "rollout_id": rollout,
        "score": score,
        "role": role,
        "turn_rewards": [0] * 4,
        "turn_token_counts": [1] * 4,
        "process_rewards": q,
    }


def test_foldgrpo_unique_rollouts_roles_and_process_rewards():
    segs = [
        segment("r1", 1),
        segment("r1", 1),
        segment("r2", 0),
        segment("r3", 1),
        segment("r4", 0),
        segment("r4", 0),
        segment("r4", 0),
    ]
    result = compute_advantages(segs, "foldgrpo")
    assert [row[0] for row in result] == pytest.approx(
        [0.866024, 0.866024, -0.866024, 0.866024, -0.866024, -0.866024, -0.866024], abs=1e-6
    )
    assert result[0][0] != pytest.approx(1.069043, abs=1e-3)  # not the per-segment statistics
    roles = [
        segment("u1", 1, "user"),
        segment("u2", 0, "user"),
        segment("j1", 0.5, "judge"),
        segment("j2", 1.0, "judge"),
    ]
    assert [row[0] for row in compute_advantages(roles, "foldgrpo")] == pytest.approx(
        [0.707106, -0.707106, -0.707105, 0.707105], abs=1e-6
    )
    pooled = compute_advantages(roles, "foldgrpo", group_by_role=False)
    assert [row[0] for row in pooled] == pytest.approx([0.783348, -1.305580, -0.261116, 0.783348], abs=1e-6)
    process = [segment("r1", 1, q=[0, 0, -1, -0.2]), segment("r2", 0, q=[-1] * 4), segment("r3", 1), segment("r4", 0)]
    result = compute_advantages(process, "foldgrpo", process_reward=True)
    assert result[0] == pytest.approx([0.866024, 0.866024, -0.866024, 0.519614], abs=1e-6)
    assert result[1] == pytest.approx([-0.866024] * 4, abs=1e-6)


def test_foldgrpo_with_one_segment_per_rollout_equals_outcome_grpo():
    assert compute_advantages(GROUP, "foldgrpo") == compute_advantages(GROUP, "grpo_outcome")


def test_infopo_fusion_vector():
    episodes = [
        {
            "group_id": "g1",
            "rollout_id": "A",
            "turn_rewards": [0, 0, 1],
            "turn_token_counts": [2, 2, 1],
            "info_gains": [0.6, 0.2],
        },
        {
            "group_id": "g1",
            "rollout_id": "B",
            "turn_rewards": [0, 0],
            "turn_token_counts": [1, 2],
            "info_gains": [-0.1],
        },
        {"group_id": "g1", "rollout_id": "C", "turn_rewards": [1, 0], "turn_token_counts": [2, 1], "info_gains": [0.4]},
        {"group_id": "g2", "rollout_id": "D", "turn_rewards": [0, 0], "turn_token_counts": [1, 1], "info_gains": [0.5]},
        {
            "group_id": "g2",
            "rollout_id": "E",
            "turn_rewards": [0, 0, 0],
            "turn_token_counts": [1, 1, 1],
            "info_gains": [0.3, 0.1],
        },
    ]
    result = compute_advantages(episodes, "infopo")
    assert result[0] == pytest.approx([0.218758, 0.217883, 0.218133], abs=1e-6)
    assert result[1] == pytest.approx([-1.092182, -1.091057], abs=1e-6)
    assert result[2] == pytest.approx([0.873112, 0.872924], abs=1e-6)
    assert result[3] == pytest.approx([0.0499998, 0], abs=1e-6)
    assert result[4] == pytest.approx([0, -0.0499998, 0], abs=1e-6)


def test_unknown_estimator():
    with pytest.raises(ValueError, match="unknown estimator 'ppo'"):
        compute_advantages(GROUP, "ppo")
