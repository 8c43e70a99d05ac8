"""Training records (docs/algorithms.md): fields, estimator metadata and privileged fields kept out of dumps."""

import json

import pytest

from mimesis_gym.algorithms.records import Episode, Segment, Turn


def episode():
    turns = [
        Turn(index=1, action_span=(4, 7), obs_span=(7, 10), feedback_span=(8, 9), gen_prompt_len=2, reward=0.0,
             action_text="hi", user_thought="they want a hotel", user_utterance="Where to?"),
        Turn(index=2, action_span=(10, 12), gen_prompt_len=2, reward=1.0, action_text="ok"),
    ]  # fmt: skip
    segment = Segment(
        rollout_id="3:1:0",
        input_ids=list(range(12)),
        prompt_len=4,
        loss_mask=[0] * 4 + [1] * 3 + [0] * 3 + [1] * 2,
        turn_of_position=[0] * 4 + [1] * 6 + [2] * 2,
    )
    return Episode(
        rollout_id="3:1:0",
        group_id="3:1:mimesis/TravelGym-v0:t1:0",
        env_id="mimesis/TravelGym-v0",
        task_id="t1",
        seed=0,
        segments=[segment],
        turns=turns,
        messages=[{"role": "user", "content": "Hello"}],
        privileged=[{"hidden": {"budget": 950}}],
        opening_thought="secret",
        notes={1: "Ask about the budget."},
    )


def test_estimator_input_has_per_turn_metadata():
    data = episode().estimator_input()
    assert data["turn_rewards"] == [0.0, 1.0]
    assert data["turn_token_counts"] == [3, 2]
    assert (data["group_id"], data["rollout_id"], data["role"]) == ("3:1:mimesis/TravelGym-v0:t1:0", "3:1:0", "agent")


def test_dump_leaves_privileged_fields_out_unless_asked():
    public = json.dumps(episode().dump())
    assert "secret" not in public and "950" not in public and "they want a hotel" not in public
    assert "Ask about the budget" not in public
    private = json.dumps(episode().dump(log_privileged=True))
    assert "secret" in private and "950" in private and "they want a hotel" in private


def test_records_round_trip_through_json():
    original = episode()
    again = Episode.model_validate_json(json.dumps(original.dump(log_privileged=True)))
    assert again == original


def test_unknown_fields_are_rejected():
    with pytest.raises(ValueError):
        Turn(index=1, action_span=(0, 1), gen_prompt_len=0, rewards=1.0)
