import pytest

from mimesis_gym.core.scoring import episode_score, make_scorer


def test_sum_of_rewards_is_not_clipped():
    steps = [
        {"action_kind": "action", "content": "x", "reward": 0.5},
        {"action_kind": "answer", "content": "y", "reward": 1.2},
    ]
    assert episode_score("sum", steps) == 1.7


def test_no_steps_scores_zero():
    assert episode_score("sum", []) == 0.0


def test_travel_keeps_the_best_answer_per_aspect_and_divides_by_aspects():
    steps = [
        {"action_kind": "answer", "content": "A2", "reward": 0.3},
        {"action_kind": "answer", "content": " A1", "reward": 1.0},
        {"action_kind": "answer", "content": "A3", "reward": 0.2},
        {"action_kind": "search", "content": "B", "reward": 5.0},  # not an answer: ignored
        {"action_kind": "answer", "content": "B1", "reward": 0.5},
        {"action_kind": "answer", "content": "  ", "reward": 9.0},  # empty content: ignored
    ]
    assert episode_score("per_aspect_best", steps, {"n_aspects": 3}) == pytest.approx((1.0 + 0.5) / 3)


def test_travel_needs_its_aspect_count():
    with pytest.raises(ValueError, match="n_aspects"):
        make_scorer("per_aspect_best", {})


def test_an_unknown_rule_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown scoring rule 'travel'; known: sum, per_aspect_best"):
        make_scorer("travel")
