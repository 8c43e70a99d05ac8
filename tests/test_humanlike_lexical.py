"""Lexical diversity against humans (mimesis_gym.evaluation.humanlike.lexical): hand-computed values,
edge cases, the o200k tokenizer's offline errors, and agreement with MirrorBench's own code on the
shipped human conversations (tests/data/humanlike_reference_mirrorbench.json)."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
from pathlib import Path

import pytest

from mimesis_gym.corpora import split_of
from mimesis_gym.evaluation.humanlike import lexical
from mimesis_gym.evaluation.humanlike.lexical import (
    LEXICAL_METRICS,
    TokenizerUnavailable,
    conversation_tokens,
    conversation_values,
    corpus_ttr,
    hdd,
    mattr,
    ttr,
    yules_k,
    zscore_summary,
    zscores,
)

REPO = Path(__file__).resolve().parents[1]
HUMANS = REPO.parent / "shared" / "data" / "humans"
REFERENCE = json.loads((REPO / "tests" / "data" / "humanlike_reference_mirrorbench.json").read_text())
TOLERANCE = 1e-12
"""Same definitions, same tokens: only float rounding may differ."""


# --- the measures on hand-made token lists -------------------------------------------------------


def test_ttr_and_yules_k_by_hand():
    tokens = ["a", "b", "a", "c"]  # frequencies 2, 1, 1
    assert ttr(tokens) == 0.75
    assert yules_k(tokens) == 10_000 * (4 + 1 + 1 - 4) / 16  # 1250
    assert yules_k(["x", "y", "z"]) == 0.0  # all distinct: no repetition


def test_mattr_on_a_short_window_by_hand():
    tokens = ["a", "a", "b", "a"]
    # windows of 2: [a a] 1/2, [a b] 1, [b a] 1
    assert mattr(tokens, window=2) == pytest.approx((0.5 + 1 + 1) / 3, abs=TOLERANCE)
    # windows of 3: [a a b] 2/3, [a b a] 2/3
    assert mattr(tokens, window=3) == pytest.approx(2 / 3, abs=TOLERANCE)


def test_hdd_on_a_tiny_case_by_hand():
    # draw 2 of {a1, a2, b}: {a1 a2} has 1 type, {a1 b} and {a2 b} have 2: expected 5/3 types, / 2
    assert hdd(["a", "a", "b"], sample_size=2) == pytest.approx(5 / 6, abs=TOLERANCE)


def test_fewer_tokens_than_the_window_or_sample_is_the_plain_ttr():
    tokens = ["we", "want", "what", "we", "want"]
    assert len(tokens) < lexical.MATTR_WINDOW and len(tokens) < lexical.HDD_SAMPLE_SIZE
    assert mattr(tokens) == ttr(tokens) == 0.6
    assert hdd(tokens) == pytest.approx(0.6, abs=TOLERANCE)


def test_no_token_gives_zero_measures_and_no_conversation_value():
    assert (ttr([]), mattr([]), hdd([]), yules_k([])) == (0.0, 0.0, 0.0, 0.0)
    assert conversation_values([]) == dict.fromkeys(LEXICAL_METRICS)
    assert conversation_values(["...", "?!"]) == dict.fromkeys(LEXICAL_METRICS)  # punctuation is no word


@pytest.mark.parametrize("call", [lambda: mattr(["a"], window=0), lambda: hdd(["a"], sample_size=0)])
def test_a_non_positive_window_or_sample_is_refused(call):
    with pytest.raises(ValueError, match="must be positive"):
        call()


# --- tokenising ----------------------------------------------------------------------------------


def test_the_words_tokenizer_joins_turns_and_folds_case():
    assert conversation_tokens(["Don't STOP, now!", "don't stop"]) == ["don't", "stop", "now", "don't", "stop"]
    assert conversation_tokens(["Ça va?", "Привет, мир"]) == ["ça", "va", "привет", "мир"]
    values = conversation_values(["Hello, world!", "hello again"])  # hello ×2, world, again
    assert values["ttr"] == 0.75 and values["yules_k"] == 1250.0
    assert values["mattr"] == 0.75 and values["hdd"] == pytest.approx(0.75, abs=TOLERANCE)


def test_a_single_string_or_an_unknown_tokenizer_is_refused():
    with pytest.raises(TypeError, match="not one str"):
        conversation_tokens("a whole conversation as one string")
    with pytest.raises(ValueError, match=r"unknown tokenizer 'gpt2': use one of words, o200k"):
        conversation_values(["hi"], tokenizer="gpt2")


@pytest.fixture
def o200k_cache(tmp_path, monkeypatch):
    """An empty TIKTOKEN_CACHE_DIR, and no encoding cached from before."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    lexical._o200k_encoding.cache_clear()
    yield tmp_path
    lexical._o200k_encoding.cache_clear()


def test_o200k_without_its_file_names_the_path_and_the_fix(o200k_cache):
    expected = o200k_cache / hashlib.sha1(lexical.O200K_URL.encode()).hexdigest()
    assert lexical.o200k_cache_file() == expected
    with pytest.raises(TokenizerUnavailable, match=r"no encoding file at .*TIKTOKEN_CACHE_DIR.*tokenizer='words'"):
        conversation_values(["hello"], tokenizer="o200k")


def test_o200k_with_a_wrong_file_is_refused_not_downloaded(o200k_cache):
    lexical.o200k_cache_file().write_text("not the encoding\n")
    with pytest.raises(TokenizerUnavailable, match="is not o200k_base"):
        conversation_values(["hello"], tokenizer="o200k")


# --- z-scores against humans ---------------------------------------------------------------------


def _rows(metric_values: list[float | None]) -> list[dict[str, float | None]]:
    """Rows with ``metric_values`` for every measure."""
    return [dict.fromkeys(LEXICAL_METRICS, value) for value in metric_values]


def test_zscores_by_hand():
    human = _rows([0.4, 0.6, None])  # mean 0.5, sample sd 0.1·√2; the None row is left out
    summary = zscore_summary(_rows([0.5, 0.7]), human)["mattr"]
    assert summary.mean_z == pytest.approx((0 + 0.2 / (0.1 * math.sqrt(2))) / 2, abs=TOLERANCE)
    assert (summary.baseline_n, summary.humans_without_tokens, summary.n) == (2, 1, 2)
    assert summary.baseline_mean == pytest.approx(0.5) and summary.baseline_sd == pytest.approx(0.1 * math.sqrt(2))


def test_a_simulated_conversation_without_tokens_counts_as_zero():
    summary = zscore_summary(_rows([None]), _rows([0.4, 0.6]))["hdd"]
    assert summary.mean_z == pytest.approx((0.0 - 0.5) / (0.1 * math.sqrt(2)))
    assert summary.simulated_without_tokens == 1 and summary.mean_simulated is None


@pytest.mark.parametrize("human", [_rows([0.5]), _rows([0.5, 0.5]), _rows([None, None]), []])
def test_no_spread_among_humans_gives_no_verdict(human):
    assert zscores(_rows([0.9]), human) == dict.fromkeys(LEXICAL_METRICS)


def test_a_row_missing_a_measure_is_named():
    with pytest.raises(KeyError, match="lacks 'mattr'"):
        zscores([{"hdd": 0.5}], _rows([0.4, 0.6]))


# --- agreement with MirrorBench on the shipped human conversations -------------------------------


def _load_reader():
    """The regeneration script, whose :func:`read_user_turns` reads the raw corpora."""
    spec = importlib.util.spec_from_file_location(
        "_mb_reference", REPO / "scripts" / "humanlike_reference_mirrorbench.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def corpora():
    if not HUMANS.is_dir():
        pytest.skip(f"../shared/data/humans absent: no human conversations at {HUMANS}")
    return _load_reader().read_user_turns(HUMANS)


def _o200k_ready() -> bool:
    """Whether tiktoken and a verified o200k_base file are here (then the o200k numbers are checked too)."""
    try:
        lexical._o200k_encoding()
    except TokenizerUnavailable:
        return False
    return True


TOKENIZER_PARAMS = [
    "words",
    pytest.param(
        "o200k",
        marks=pytest.mark.skipif(not _o200k_ready(), reason="o200k needs tiktoken and its file offline"),
    ),
]


@pytest.mark.parametrize("tokenizer", TOKENIZER_PARAMS)
def test_conversation_values_equal_mirrorbench(corpora, tokenizer):
    reference = REFERENCE["tokenizers"][tokenizer]["conversations"]
    ours = {
        f"{source}/{conv_id}": (conversation_tokens(turns, tokenizer), conversation_values(turns, tokenizer))
        for source, turns_by_id in corpora.items()
        for conv_id, turns in turns_by_id.items()
    }
    assert sorted(ours) == sorted(reference)
    for key, (tokens, values) in ours.items():
        assert len(tokens) == reference[key]["tokens"], key
        for metric in ("mattr", "hdd", "yules_k"):
            assert values[metric] == pytest.approx(reference[key][metric], abs=TOLERANCE, rel=TOLERANCE), (key, metric)


@pytest.mark.parametrize("tokenizer", TOKENIZER_PARAMS)
def test_corpus_ttr_and_zscores_equal_mirrorbench(corpora, tokenizer):
    block = REFERENCE["tokenizers"][tokenizer]
    for source, turns_by_id in corpora.items():
        tokens = {conv_id: conversation_tokens(turns, tokenizer) for conv_id, turns in turns_by_id.items()}
        assert corpus_ttr(tokens.values()) == pytest.approx(block["corpus_ttr"][source], abs=TOLERANCE)
        halves = {
            half: [turns_by_id[c] for c in turns_by_id if split_of(source, c) == half] for half in ("dev", "test")
        }
        pairs = block["zscores"][source]["pairs"]
        assert pairs == min(len(halves["dev"]), len(halves["test"])) > 1
        summary = zscore_summary(
            [conversation_values(t, tokenizer) for t in halves["test"][:pairs]],
            [conversation_values(t, tokenizer) for t in halves["dev"][:pairs]],
        )
        for metric in ("mattr", "hdd", "yules_k"):
            expected, got = block["zscores"][source][metric], summary[metric]
            for field in ("mean_z", "sd_z", "baseline_mean", "baseline_sd"):
                assert getattr(got, field) == pytest.approx(expected[field], abs=1e-9), (source, metric, field)
            assert (got.n, got.baseline_n) == (expected["n"], expected["baseline_n"])
