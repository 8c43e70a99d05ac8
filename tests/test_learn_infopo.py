"""InfoPO counterfactuals and the placeholder's length cases (docs/algorithms.md, "InfoPO")."""

import pytest

from mimesis_gym.algorithms.advantages import infopo
from mimesis_gym.algorithms.learners.infopo.counterfactual import (
    counterfactual_rows,
    fit_placeholder,
    information_gains,
)
from mimesis_gym.algorithms.records import Episode, Segment, Turn


def test_placeholder_is_padded_with_its_last_id_or_truncated():
    assert fit_placeholder([1, 2, 3, 4, 5], 8) == [1, 2, 3, 4, 5, 5, 5, 5]
    assert fit_placeholder([1, 2, 3, 4, 5], 3) == [1, 2, 3]
    with pytest.raises(ValueError):
        fit_placeholder([], 2)


def episode(observation="It is red.\nReward: 0.0"):
    # prompt 0-3 | a1 4-6 | obs 7-11 (feedback 8-10) | a2 12-14 | obs 15-17 (feedback 16-17) | a3 18-19
    ids = list(range(100, 120))
    turns = [
        Turn(index=1, action_span=(4, 7), obs_span=(7, 12), feedback_span=(8, 11), gen_prompt_len=1,
             observation=observation),
        Turn(index=2, action_span=(12, 15), obs_span=(15, 18), feedback_span=(16, 18), gen_prompt_len=1,
             observation="ok"),
        Turn(index=3, action_span=(18, 20), gen_prompt_len=1),
    ]  # fmt: skip
    mask = [0] * 20
    for turn in turns:
        mask[turn.action_span[0] : turn.action_span[1]] = [1] * turn.action_tokens
    segment = Segment(rollout_id="r", input_ids=ids, prompt_len=4, loss_mask=mask, turn_of_position=[0] * 20)
    return Episode(rollout_id="r", group_id="g", env_id="E", task_id="t", seed=0, segments=[segment], turns=turns)


def test_counterfactual_rows_keep_every_position_aligned():
    rows = counterfactual_rows(episode(), [1, 2, 3, 4, 5])
    assert [row.turn for row in rows] == [1, 2]  # the last turn has no following action
    first, second = rows
    assert first.input_ids == [*list(range(100, 108)), 1, 2, 3, *list(range(111, 115))]
    assert first.score_span == (12, 15)  # scored on a_{t+1}
    assert second.input_ids == [*list(range(100, 116)), 1, 2, 118, 119]
    assert second.score_span == (18, 20)


def test_empty_feedback_gives_no_row():
    assert [row.turn for row in counterfactual_rows(episode(observation="\nReward: 0.0"), [7])] == [2]


def test_identical_inputs_give_zero_gain_and_credit_lands_on_the_producing_action():
    item = episode()
    item.old_logprobs = [[-1.0] * 20]
    rows = counterfactual_rows(item, [1])
    assert information_gains(item, rows, [[-1.0] * len(r.input_ids) for r in rows]) == [0.0, 0.0]
    lower = [[-1.0] * 12 + [-1.6, -1.3, -1.3] + [-1.0] * 5, [-1.0] * 20]
    gains = information_gains(item, rows, lower)
    assert gains == pytest.approx([0.4, 0.0])  # the feedback after a_1 changed a_2: credited to turn 1
    episodes = [
        {**item.estimator_input(), "turn_rewards": [0.0, 0.0, 1.0], "info_gains": gains},
        {**item.estimator_input(), "rollout_id": "s", "turn_rewards": [0.0, 0.0, 0.0], "info_gains": [0.0, 0.0]},
    ]
    first = infopo(episodes, normalize_intrinsic=False)[0]
    outcome = infopo(episodes, beta0=0.0)[0]
    assert first[0] != outcome[0] and first[1:] == outcome[1:]  # only a_1 gets intrinsic credit
