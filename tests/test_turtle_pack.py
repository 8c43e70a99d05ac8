"""TurtleGym's original puzzle pack as data (docs/envs/turtle.md, "Task data").

Counts, ids and schema; the demo fixture; the quality rules, including the behaviour of the
scripted roles (oracle, judge) on every puzzle; the theme cap; originality against UserRL.
"""

import hashlib
import json
from functools import cache, lru_cache
from pathlib import Path

import pytest

from mimesis_gym.envs._matching import NEGATION_TOKENS, is_negated, matches, norm_tokens
from mimesis_gym.envs.turtle.roles import scripted_answer, scripted_criterion_score
from mimesis_gym.envs.turtle.tasks import Criterion, Fact

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym" / "envs" / "turtle" / "data"
USERRL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "userrl"
USERRL_STORIES = USERRL_DIR / "gyms" / "TurtleGym" / "turtlegym" / "data" / "all_stories_refined.json"

SPLIT_FILES = {"train": "train.jsonl", "test": "test.jsonl", "demo": "demo.jsonl"}
RECORD_KEYS = ["id", "split", "new_title", "new_surface", "new_bottom", "evaluation", "facts"]
CRITERION_KEYS = ["statement", "score", "keywords"]
FACT_KEYS = ["statement", "answer", "keywords", "probe"]
DEATH_WORDS = [
    "dead",
    "die",
    "died",
    "dies",
    "dying",
    "death",
    "kill",
    "killed",
    "kills",
    "murder",
    "murdered",
    "corpse",
    "suicide",
    "drowned",
    "poisoned",
]
MAX_DEATH_THEMED = 10
ORIGINALITY_NGRAM = 12

DEMO_FIXTURE = {
    "id": "turtle-demo-01",
    "split": "demo",
    "new_title": "The Blinking Clock",
    "new_surface": (
        "A man woke up in the middle of the night, glanced at the clock on his wall and immediately called the "
        "police. Nothing in his room had been touched."
    ),
    "new_bottom": (
        "The man's electric wall clock always blinks after a power cut. When he woke up it was blinking, yet the "
        "street lights outside were still on, so only his own house had lost power. He realised that someone had "
        "switched off the main breaker in his garage to disable his alarm system. He called the police, who found "
        "a burglar hiding in the garage."
    ),
    "evaluation": [
        {
            "statement": "The clock showed a power interruption (it was blinking or had reset)",
            "score": 0.4,
            "keywords": [
                ["clock"],
                [
                    "blink",
                    "blinking",
                    "blinked",
                    "flashing",
                    "reset",
                    "power cut",
                    "lost power",
                    "power went out",
                    "outage",
                ],
            ],
        },
        {
            "statement": "Only the man's house lost power, not the whole street",
            "score": 0.2,
            "keywords": [
                ["only", "just his", "own house", "street lights", "neighbours", "neighbors"],
                ["power", "electricity", "breaker", "lights"],
            ],
        },
        {
            "statement": "An intruder deliberately cut the power to disable the alarm",
            "score": 0.3,
            "keywords": [
                ["burglar", "intruder", "thief", "robber", "someone"],
                ["breaker", "fuse", "switched off", "cut the power", "power was cut", "power had been cut"],
                ["alarm", "security"],
            ],
        },
        {
            "statement": "The police catch or find the intruder",
            "score": 0.1,
            "keywords": [["police"], ["found", "caught", "arrested", "catch", "find"]],
        },
    ],
    # (answer, keywords, probe) for F1..F14; the fact statements are the pack's own words.
    "facts": [
        (
            "Yes",
            [["clock", "display"], ["blink", "blinking", "blinked", "flashing", "flash"]],
            "Was the clock blinking?",
        ),
        ("Yes", [["power", "electricity", "outage", "blackout"]], "Had the power gone out?"),
        (
            "No",
            [
                ["neighbour", "neighbours", "neighbor", "neighbors", "street", "whole area", "city"],
                ["power", "electricity", "lights", "outage", "blackout"],
            ],
            "Did the neighbours lose power too?",
        ),
        (
            "Yes",
            [["someone", "somebody", "intruder", "burglar"], ["cut", "switched off", "turned off", "breaker", "fuse"]],
            "Did someone cut the power on purpose?",
        ),
        (
            "Yes",
            [["burglar", "intruder", "thief", "robber", "stranger", "break in", "broke in"]],
            "Was there an intruder?",
        ),
        ("Yes", [["garage"]], "Was someone in the garage?"),
        ("Yes", [["alarm", "security system"]], "Did he have an alarm system?"),
        ("No", [["stolen", "steal", "stole", "missing", "taken", "took"]], "Was anything stolen?"),
        ("No", [["hurt", "injured", "killed", "dead", "died", "murder", "murdered", "body"]], "Was anyone hurt?"),
        ("No", [["ghost", "supernatural", "spirit", "haunted", "magic"]], "Was it a ghost?"),
        ("Yes", [["police"], ["caught", "catch", "arrested", "arrest", "found"]], "Did the police catch anyone?"),
        ("No", [["clock"], ["broken", "smashed", "battery", "stopped"]], "Was the clock broken?"),
        ("Yes", [["clock"], ["electric", "plugged", "mains"]], "Was the clock electric?"),
        ("No", [["apartment", "flat", "hotel"]], "Did he live in an apartment?"),
    ],
}


# --------------------------------------------------------------------------------------------------
# Loading


@cache
def _read(split: str) -> tuple[dict, ...]:
    lines = (DATA / SPLIT_FILES[split]).read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines)


def records(split: str) -> list[dict]:
    return list(_read(split))


def puzzles() -> list[dict]:
    """The 80 pack puzzles (train then test)."""
    return records("train") + records("test")


def all_records() -> list[dict]:
    """Pack puzzles and the demo fixture."""
    return puzzles() + records("demo")


# --------------------------------------------------------------------------------------------------
# Scripted roles (docs/envs/turtle.md, "Roles")


def scripted_oracle(facts: list[dict], question: str) -> tuple[str, int | None]:
    """(answer, index of the deciding fact) from the env's scripted oracle."""
    parsed = [Fact(**fact) for fact in facts]
    answer, fact = scripted_answer(question, parsed)
    return answer, None if fact is None else parsed.index(fact)


def criterion_score(keywords: list[list[str]], text: str) -> float:
    """The env's scripted rubric score of one criterion."""
    return scripted_criterion_score(Criterion(statement="", weight=0.0, keywords=keywords), text)


def story_score(evaluation: list[dict], text: str) -> float:
    total = 0.0
    for criterion in evaluation:
        total += criterion["score"] * criterion_score(criterion["keywords"], text)
    return total


def sequential_sum(weights: list[float]) -> float:
    total = 0.0
    for weight in weights:
        total += weight
    return total


def word_count(text: str) -> int:
    return len(text.split())


def keyword_specs(record: dict) -> list[tuple[str, list[list[str]]]]:
    """(label, spec) for every criterion and fact of a record."""
    specs = [(f"criterion {i + 1}", c["keywords"]) for i, c in enumerate(record["evaluation"])]
    specs += [(f"fact {i + 1}", f["keywords"]) for i, f in enumerate(record["facts"])]
    return specs


# --------------------------------------------------------------------------------------------------
# Files, counts, ids, schema


def test_counts_are_64_train_16_test_1_demo():
    assert [len(records(split)) for split in ("train", "test", "demo")] == [64, 16, 1]


def test_ids_and_splits_follow_file_order():
    assert [r["id"] for r in records("train")] == [f"turtle-{i:04d}" for i in range(1, 65)]
    assert [r["id"] for r in records("test")] == [f"turtle-{i:04d}" for i in range(65, 81)]
    assert [r["id"] for r in records("demo")] == ["turtle-demo-01"]
    for split in SPLIT_FILES:
        for r in records(split):
            assert r["split"] == split, r["id"]


def test_every_line_is_one_canonical_json_object():
    for split, name in SPLIT_FILES.items():
        text = (DATA / name).read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text, name
        for line in text.splitlines():
            assert line == json.dumps(json.loads(line), ensure_ascii=False), f"{split}: non-canonical line"


def test_record_schema_and_key_order():
    for r in all_records():
        assert list(r) == RECORD_KEYS, r["id"]
        for key in ("new_title", "new_surface", "new_bottom"):
            assert isinstance(r[key], str) and r[key].strip() == r[key] and r[key], f"{r['id']}: {key}"
        for c in r["evaluation"]:
            assert list(c) == CRITERION_KEYS, r["id"]
            assert isinstance(c["statement"], str) and c["statement"], r["id"]
            assert isinstance(c["score"], float), r["id"]
        for f in r["facts"]:
            assert list(f) == FACT_KEYS, r["id"]
            assert isinstance(f["statement"], str) and f["statement"], r["id"]
            assert isinstance(f["probe"], str) and f["probe"], r["id"]


def test_manifest_counts_and_digests():
    manifest_text = (DATA / "manifest.json").read_text(encoding="utf-8")
    manifest = json.loads(manifest_text)
    assert manifest_text == json.dumps(manifest, indent=2) + "\n"
    assert list(manifest) == ["pack", "counts", "sha256"]
    assert manifest["pack"] == "turtle/original"
    assert manifest["counts"] == {"train": 64, "test": 16, "demo": 1}
    for name in SPLIT_FILES.values():
        digest = hashlib.sha256((DATA / name).read_bytes()).hexdigest()
        assert manifest["sha256"][name] == digest, f"stale digest for {name}"


# --------------------------------------------------------------------------------------------------
# Demo fixture


def test_demo_record_equals_the_spec_fixture():
    (demo,) = records("demo")
    for key in ("id", "split", "new_title", "new_surface", "new_bottom", "evaluation"):
        assert demo[key] == DEMO_FIXTURE[key], key
    assert [(f["answer"], f["keywords"], f["probe"]) for f in demo["facts"]] == DEMO_FIXTURE["facts"]


def test_demo_scripted_oracle_answers_as_the_spec_run():
    facts = records("demo")[0]["facts"]
    expected = {
        "Was the clock blinking?": "Yes",
        "Did the neighbours lose power too?": "No",
        "Was anything stolen?": "No",
        "Was nothing stolen?": "Yes",
        "Didn't the clock blink?": "Yes",
        "Was the man a vampire?": "Maybe",
        "Was someone in the garage?": "Yes",
    }
    for question, answer in expected.items():
        assert scripted_oracle(facts, question)[0] == answer, question
    assert scripted_oracle(facts, "Did the neighbours lose power too?")[1] == 2, "F3 must beat F2 by strength"


def test_demo_scripted_judge_scores_as_the_spec_run():
    (demo,) = records("demo")
    story = "The clock was blinking because the power had been cut."
    assert [criterion_score(c["keywords"], story) for c in demo["evaluation"]] == [1.0, 0.5, 0.0, 0.0]
    assert story_score(demo["evaluation"], story) == pytest.approx(0.5, abs=1e-12)
    assert story_score(demo["evaluation"], demo["new_bottom"]) >= 1.0


# --------------------------------------------------------------------------------------------------
# Quality rules


def test_titles_are_unique_case_insensitively():
    titles = [r["new_title"].casefold() for r in all_records()]
    duplicates = sorted({t for t in titles if titles.count(t) > 1})
    assert not duplicates, duplicates


def test_surfaces_have_15_to_60_words():
    for r in puzzles():
        assert 15 <= word_count(r["new_surface"]) <= 60, f"{r['id']}: {word_count(r['new_surface'])} words"


def test_bottoms_have_40_to_140_words():
    for r in puzzles():
        assert 40 <= word_count(r["new_bottom"]) <= 140, f"{r['id']}: {word_count(r['new_bottom'])} words"


def test_two_to_five_criteria():
    for r in puzzles():
        assert 2 <= len(r["evaluation"]) <= 5, r["id"]


def test_weights_are_multiples_of_005_in_the_unit_interval():
    for r in puzzles():
        for c in r["evaluation"]:
            w = c["score"]
            assert 0 < w <= 1 and abs(w * 20 - round(w * 20)) < 1e-9, f"{r['id']}: weight {w}"
            assert w == round(w, 2), f"{r['id']}: weight {w} is not written with two decimals"


def test_first_criterion_is_the_main_twist_with_weight_at_least_03():
    for r in puzzles():
        assert r["evaluation"][0]["score"] >= 0.3, r["id"]


def test_sequential_float_sum_of_weights_reaches_one():
    for r in all_records():
        total = sequential_sum([c["score"] for c in r["evaluation"]])
        assert total >= 1.0, f"{r['id']}: weights sum to {total!r} in list order"


def test_ten_to_twenty_facts_with_yes_no_answers_and_at_least_four_no():
    for r in puzzles():
        answers = [f["answer"] for f in r["facts"]]
        assert 10 <= len(answers) <= 20, f"{r['id']}: {len(answers)} facts"
        assert set(answers) <= {"Yes", "No"}, r["id"]
        assert answers.count("No") >= 4, f"{r['id']}: only {answers.count('No')} 'No' facts"


def test_keyword_specs_are_non_empty_lists_of_non_empty_phrases():
    for r in all_records():
        for label, spec in keyword_specs(r):
            assert isinstance(spec, list) and spec, f"{r['id']} {label}: empty spec"
            for group in spec:
                assert isinstance(group, list) and group, f"{r['id']} {label}: empty group"
                for phrase in group:
                    assert isinstance(phrase, str) and norm_tokens(phrase), f"{r['id']} {label}: bad phrase {phrase!r}"


def test_no_keyword_contains_a_negation_token():
    for r in all_records():
        for label, spec in keyword_specs(r):
            for group in spec:
                for phrase in group:
                    negations = set(norm_tokens(phrase)) & NEGATION_TOKENS
                    assert not negations, f"{r['id']} {label}: {phrase!r} contains {sorted(negations)}"


def test_probes_are_plain_questions():
    for r in all_records():
        for i, f in enumerate(r["facts"]):
            assert f["probe"].endswith("?"), f"{r['id']} fact {i + 1}: {f['probe']!r}"
            assert not is_negated(f["probe"]), f"{r['id']} fact {i + 1}: negated probe {f['probe']!r}"


def test_scripted_oracle_answers_every_probe_with_its_fact():
    for r in all_records():
        facts = r["facts"]
        for i, f in enumerate(facts):
            answer, decider = scripted_oracle(facts, f["probe"])
            winner = "no fact" if decider is None else f"fact {decider + 1} ({facts[decider]['statement']!r})"
            assert answer == f["answer"], (
                f"{r['id']} fact {i + 1}: probe {f['probe']!r} got {answer!r} from {winner}, expected {f['answer']!r}"
            )


def test_scripted_judge_scores_the_bottom_fully_on_every_criterion():
    for r in all_records():
        for i, c in enumerate(r["evaluation"]):
            assert criterion_score(c["keywords"], r["new_bottom"]) == 1.0, f"{r['id']} criterion {i + 1}"
        assert story_score(r["evaluation"], r["new_bottom"]) >= 1.0, r["id"]


def test_surface_alone_scores_below_half():
    for r in all_records():
        score = story_score(r["evaluation"], r["new_surface"])
        assert score < 0.5, f"{r['id']}: the surface alone scores {score}"


def test_at_most_ten_bottoms_use_death_words():
    themed = [r["id"] for r in puzzles() if any(matches(word, r["new_bottom"]) for word in DEATH_WORDS)]
    assert len(themed) <= MAX_DEATH_THEMED, themed


# --------------------------------------------------------------------------------------------------
# Originality


@lru_cache(maxsize=1)
def userrl_stories() -> tuple[dict, ...]:
    if not USERRL_STORIES.is_file():
        pytest.skip(f"UserRL reference data not found at {USERRL_DIR}")
    return tuple(json.loads(USERRL_STORIES.read_text(encoding="utf-8")).values())


def ngrams(text: str, n: int) -> set[tuple[str, ...]]:
    tokens = norm_tokens(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def test_no_12_word_sequence_is_shared_with_userrl_stories():
    upstream = set()
    for story in userrl_stories():
        upstream |= ngrams(story["new_surface"], ORIGINALITY_NGRAM)
        upstream |= ngrams(story["new_bottom"], ORIGINALITY_NGRAM)
    for r in all_records():
        for key in ("new_surface", "new_bottom"):
            shared = ngrams(r[key], ORIGINALITY_NGRAM) & upstream
            assert not shared, f"{r['id']} {key} shares {' '.join(sorted(shared)[0])!r} with UserRL"


def test_titles_differ_from_userrl_titles():
    upstream = {story["new_title"].casefold() for story in userrl_stories()}
    clashes = [r["id"] for r in all_records() if r["new_title"].casefold() in upstream]
    assert not clashes, clashes
