"""The behaviour dimensions and the UserLM measures (mimesis_gym.evaluation.humanlike.behaviour, .userlm).

Two kinds of check: our numbers equal OdysSim's own on the shipped human conversations (stored in
tests/data/humanlike_reference_odyssim.json by scripts/humanlike_reference_odyssim.py, which ran the
reference code outside this repository), and hand-made conversations whose values are worked out
by hand, for every feature and measure.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from mimesis_gym.corpora import split_of
from mimesis_gym.evaluation.humanlike.behaviour import (
    DIMENSIONS,
    FEATURES,
    PERCENT_FEATURES,
    conversation_features,
    dimension_scores,
    feature_row,
)
from mimesis_gym.evaluation.humanlike.userlm import (
    first_turn_diversity,
    intent_decomposition,
    intent_overlap,
    termination_f1,
    tokens,
)

ROOT = Path(__file__).resolve().parents[1]
HUMANS = ROOT.parent / "shared" / "data" / "humans"
REFERENCE = json.loads((ROOT / "tests" / "data" / "humanlike_reference_odyssim.json").read_text(encoding="utf-8"))
TOLERANCE = 1e-12
"""Largest absolute difference allowed from the reference (float rounding; measured: 0)."""


def _load_script():
    """scripts/humanlike_reference_odyssim.py: its corpus readers define the turns the reference saw."""
    path = ROOT / "scripts" / "humanlike_reference_odyssim.py"
    spec = importlib.util.spec_from_file_location("humanlike_reference_odyssim", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SCRIPT = _load_script()


@pytest.fixture(scope="module")
def sources():
    if not HUMANS.is_dir():
        pytest.skip("../shared/data/humans absent: the human corpora are not laid beside this checkout")
    read = SCRIPT.read_sources(HUMANS)
    return {source: [c for c in conversations if c.user_turns] for source, conversations in read.items()}


def _close(ours: float | None, theirs: float) -> float:
    """The absolute difference, failing the test beyond :data:`TOLERANCE`."""
    assert ours is not None
    difference = abs(ours - theirs)
    assert difference <= TOLERANCE, (ours, theirs)
    return difference


# -- agreement with OdysSim on the human corpora ----------------------------------------------------


def test_features_equal_the_reference_on_every_human_conversation(sources):
    order = REFERENCE["behaviour"]["feature_order"]
    assert set(order) == {"n_turns", *FEATURES}
    largest = 0.0
    for source, conversations in sources.items():
        stored = REFERENCE["behaviour"]["sources"][source]["conversations"]
        assert [entry["id"] for entry in stored] == [c.conv_id for c in conversations], source
        for conversation, entry in zip(conversations, stored, strict=True):
            assert entry["split"] == split_of(source, conversation.conv_id)
            ours = conversation_features(conversation.user_turns)
            assert ours is not None
            for name, theirs in zip(order, entry["features"], strict=True):
                largest = max(largest, _close(ours[name], theirs))
    assert largest <= TOLERANCE


def test_rows_and_dimension_scores_equal_the_reference(sources):
    stored = REFERENCE["behaviour"]["sources"]
    rows = {}
    for source, conversations in sources.items():
        halves = {
            half: feature_row(
                conversation_features(c.user_turns) for c in conversations if split_of(source, c.conv_id) == half
            )
            for half in ("dev", "test")
        }
        rows[source] = halves["dev"]
        for half, row in halves.items():
            assert row.keys() == stored[source]["rows"][half].keys()
            for name, theirs in stored[source]["rows"][half].items():
                _close(row[name], theirs)
        for dimension, theirs in stored[source]["dice_dev_test"].items():
            _close(dimension_scores(halves["dev"], halves["test"])[dimension], theirs)
    for pair in REFERENCE["behaviour"]["dev_pairs"]:
        scores = dimension_scores(rows[pair["reference"]], rows[pair["simulated"]])
        assert scores.keys() == pair["dice"].keys() == DIMENSIONS.keys()
        for dimension, theirs in pair["dice"].items():
            _close(scores[dimension], theirs)


def test_userlm_measures_equal_the_reference_on_the_human_corpora(sources):
    for source, conversations in sources.items():
        stored = REFERENCE["userlm"]["sources"][source]
        _close(first_turn_diversity([c.user_turns[0] for c in conversations]), stored["first_turn_diversity"])
        if "intent_decomposition" in stored:
            for conversation, entry in zip(conversations, stored["intent_overlaps"], strict=True):
                assert entry["id"] == conversation.conv_id
                for turn, theirs in zip(conversation.user_turns, entry["values"], strict=True):
                    _close(intent_overlap(conversation.intent, turn), theirs)
            cases = [(c.intent, turn) for c in conversations for turn in c.user_turns]
            ours = intent_decomposition([intent for intent, _ in cases], [turn for _, turn in cases])
            _close(ours, stored["intent_decomposition"])
        predicted = [SCRIPT.ends_with_thanks(turn) for c in conversations for turn in c.user_turns]
        truth = [index == len(c.user_turns) - 1 for c in conversations for index in range(len(c.user_turns))]
        _close(termination_f1(predicted, truth), stored["termination_f1_thanks"])


def test_userlm_hand_made_cases_equal_the_reference_where_defined():
    """Where the reference reports 0.0 for an undefined measure we say None; elsewhere equal."""
    stored = REFERENCE["userlm"]
    for case in stored["termination_cases"]:
        ours = termination_f1(case["predicted"], case["truth"])
        if not any(case["predicted"]) and not any(case["truth"]):
            assert ours is None and case["f1"] == 0.0
        else:
            _close(ours, case["f1"])
    for case in stored["diversity_cases"]:
        ours = first_turn_diversity(case["first_turns"])
        if sum(1 for turn in case["first_turns"] if tokens(turn)) < 2:
            assert ours is None and case["diversity"] == 0.0
        else:
            _close(ours, case["diversity"])
    for case in stored["intent_cases"]:
        _close(intent_overlap(case["intent"], case["turn"]), case["overlap"])
    for probe in stored["token_probes"]:
        assert tokens(probe["text"]) == probe["tokens"]


# -- hand-made conversations: every feature ---------------------------------------------------------

FEATURE_CASES = [
    # (user turns, feature, value per conversation)
    (["thanks a lot", "send me the file"], "politeness_rate", 0.5),
    (["I appreciate it", "pardon?", "no"], "politeness_rate", 2 / 3),
    (["ok then", "this turn has exactly six words"], "short_msg_rate", 0.5),
    (["one two three", "one two three four"], "short_msg_rate", 0.5),
    (["a \u2014 b", "a \u2013 b", "a - b"], "formality_rate", 2 / 3),
    (["Okay!!", "okay, do that", "  sounds good.  "], "ack_only_rate", 2 / 3),
    (["uh-huh", "thanks!", "yes please"], "ack_only_rate", 2 / 3),
    (["one", "one two three"], "verbosity_cv", 0.5),
    (["one two", "three four"], "verbosity_cv", 0.0),
    (["a b c " * 11], "repeat_rate", 1.0),
    (["a b c " * 10], "repeat_rate", 0.0),
    (["a b c " * 6, "a b c " * 5], "repeat_rate", 1.0),
    (["hi", "How can I help you today?"], "id_confuse_rate", 1.0),
    (["hi", "I would like a refund"], "id_confuse_rate", 0.0),
    (["one", "two", "three four"], "info_frontload", 0.5),
    (["my mail is a@b.co, ref 123456789", "hi"], "id_density", 1.0),
    (["please"], "id_density", 1.0),  # any word of six letters or more counts as an identifier
    (["order 12345_67890 and user_ab_123", "x"], "id_density", 1.0),  # one digit run, one snake id
    (["one", "one two three"], "user_words_per_turn", 2.0),
    (["one two three", "one"], "opening_words", 3.0),
    (["I'm not sure", "yes", "dunno"], "uncertainty_rate", 2 / 3),
    (["definitely", "no"], "certainty_rate", 0.5),
    (["are you sure? what do you mean?", "what do you mean", "how much is it", "hello"], "pushback_q_rate", 0.25),
    (["are you sure? what do you mean?", "what do you mean", "how much is it", "hello"], "clarify_q_rate", 0.25),
    (["are you sure? what do you mean?", "what do you mean", "how much is it", "hello"], "info_q_rate", 0.25),
    (["why won't it work", "wait, which one?"], "pushback_q_rate", 0.5),
    (["I'm so frustrated", "fine"], "emotion_rate", 0.5),
    (["this is useless", "ok"], "accusation_rate", 0.5),
    (["how about tuesday", "ok", "let's try the other"], "pivot_rate", 2 / 3),
]


@pytest.mark.parametrize(("turns", "feature", "expected"), FEATURE_CASES)
def test_each_feature_has_its_hand_worked_value(turns, feature, expected):
    features = conversation_features(turns)
    assert features is not None
    assert features[feature] == pytest.approx(expected)


def test_every_feature_has_a_hand_made_case_with_a_nonzero_value():
    covered = {feature for _, feature, expected in FEATURE_CASES if expected}
    assert covered == set(FEATURES)


def test_agent_markup_is_removed_before_anything_is_counted():
    features = conversation_features(["<|think|>please, thanks\nso sorry<|/think|>hi <function=x>{}</function>"])
    assert features is not None
    assert features["politeness_rate"] == 0.0
    assert features["user_words_per_turn"] == 1.0
    unclosed = conversation_features(["ok <function=lookup> and please"])
    assert unclosed is not None and unclosed["user_words_per_turn"] == 1.0


def test_no_user_turn_gives_none_and_n_turns_is_passed_through():
    assert conversation_features([]) is None
    assert conversation_features(["hi", "there"])["n_turns"] == 2.0
    assert conversation_features(["hi", "there"], n_turns=5)["n_turns"] == 5.0


def test_one_turn_and_an_empty_turn():
    one = conversation_features(["just one message here"])
    assert one is not None
    assert one["verbosity_cv"] == 0.0 and one["info_frontload"] == 1.0 and one["opening_words"] == 4.0
    empty = conversation_features([""])
    assert empty is not None
    assert empty["user_words_per_turn"] == 0.0 and empty["info_frontload"] == 0.0
    assert empty["short_msg_rate"] == 1.0  # an empty turn has at most three words
    assert all(empty[name] == 0.0 for name in FEATURES if name != "short_msg_rate")


# -- rows and Dice ----------------------------------------------------------------------------------


def test_feature_row_is_the_mean_with_rates_as_percentages():
    first = conversation_features(["thanks", "one two three four five"])
    second = conversation_features(["hello there"])
    row = feature_row([first, second])
    assert row["politeness_rate"] == pytest.approx(25.0)  # (50% + 0%) / 2
    assert row["user_words_per_turn"] == pytest.approx((3.0 + 2.0) / 2)  # not a percentage
    assert row["n_turns"] == pytest.approx(1.5)
    assert row.keys() == {"n_turns", *FEATURES}
    assert {"verbosity_cv", "id_density", "user_words_per_turn", "opening_words"}.isdisjoint(PERCENT_FEATURES)


def test_feature_row_refuses_nothing_and_foreign_mappings():
    with pytest.raises(ValueError, match="at least one"):
        feature_row([])
    with pytest.raises(ValueError, match="no feature 'n_turns'"):
        feature_row([{"politeness_rate": 1.0}])


def test_dice_per_dimension_by_hand():
    zeros = dict.fromkeys(("n_turns", *FEATURES), 0.0)
    assert dimension_scores(zeros, zeros) == {dimension: 100.0 for dimension in DIMENSIONS}
    reference = {**zeros, "emotion_rate": 30.0, "accusation_rate": 10.0, "user_words_per_turn": 8.0}
    simulated = {**zeros, "emotion_rate": 10.0, "user_words_per_turn": 8.0, "opening_words": 4.0}
    scores = dimension_scores(reference, simulated)
    # D4: emotion 2*10/40 = 0.5, accusation 10 vs 0 -> 0, pivot both zero -> 1
    assert scores["D4"] == pytest.approx((0.5 + 0.0 + 1.0) / 3 * 100)
    # D2: frontload 1, id density 1, words per turn equal 1, opening 0 vs 4 -> 0
    assert scores["D2"] == pytest.approx(75.0)
    assert scores["D1"] == scores["D3"] == 100.0
    assert dimension_scores(simulated, reference) == scores


def test_dice_names_a_missing_feature():
    row = dict.fromkeys(FEATURES, 1.0)
    broken = {name: value for name, value in row.items() if name != "pivot_rate"}
    with pytest.raises(ValueError, match="simulated_row lacks features \\['pivot_rate'\\]"):
        dimension_scores(row, broken)


# -- UserLM measures by hand ------------------------------------------------------------------------


def test_tokens_split_words_and_single_punctuation():
    assert tokens("Hello, World! it's") == ["hello", ",", "world", "!", "it", "'", "s"]
    assert tokens("snake_case #1") == ["snake_case", "#", "1"]
    assert tokens("   ") == []


def test_first_turn_diversity_by_hand():
    assert first_turn_diversity(["a b", "a c"]) == pytest.approx(1 - 1 / 3)
    assert first_turn_diversity(["a b", "a b", "c"]) == pytest.approx(1 - (1 + 0 + 0) / 3)
    assert first_turn_diversity(["same words", "Same words!"]) == pytest.approx(1 - 2 / 3)
    assert first_turn_diversity([]) is None
    assert first_turn_diversity(["only one"]) is None
    assert first_turn_diversity(["one", "", "   "]) is None  # blank openings are left out


def test_intent_overlap_and_decomposition_by_hand():
    intent = "Plan a trip to Paris in May"
    # content words of the turn: paris, trip, may, ideas; three come from the intent
    assert intent_overlap(intent, "paris trip in may, ideas?") == pytest.approx(0.75)
    assert intent_overlap(intent, "hi there") == 0.0
    assert intent_overlap(intent, "the a of to") == 0.0  # stopwords only: nothing to compare
    assert intent_overlap("", "paris") == 0.0
    assert intent_decomposition([intent, intent], ["paris trip in may, ideas?", "hi there"]) == pytest.approx(0.375)
    assert intent_decomposition([intent, "  "], ["hi there", "paris"]) == 0.0  # the blank intent is left out
    assert intent_decomposition(["", " "], ["a", "b"]) is None
    assert intent_decomposition([], []) is None
    with pytest.raises(ValueError, match="got 1 intents and 2 turns"):
        intent_decomposition([intent], ["a", "b"])


def test_termination_f1_by_hand():
    # ends = positive: tp 1 (last), fp 1 (first), fn 1 (fourth) -> precision 1/2, recall 1/2
    assert termination_f1([True, False, True, False], [False, False, True, True]) == pytest.approx(0.5)
    assert termination_f1([False, True], [False, True]) == 1.0
    assert termination_f1([True, True], [False, False]) == 0.0
    assert termination_f1([False, False], [False, True]) == 0.0
    assert termination_f1([False, False], [False, False]) is None
    assert termination_f1([], []) is None
    with pytest.raises(ValueError, match="got 2 and 1"):
        termination_f1([True, False], [True])


def test_the_stored_reference_holds_no_human_text(sources):
    stored = (ROOT / "tests" / "data" / "humanlike_reference_odyssim.json").read_text(encoding="utf-8")
    assert REFERENCE["how_made"]["odyssim_commit"] and REFERENCE["how_made"]["date"]
    long_turns = [turn for found in sources.values() for c in found for turn in c.user_turns if len(turn) >= 30]
    assert long_turns
    assert not [turn for turn in long_turns if json.dumps(turn)[1:-1] in stored]
