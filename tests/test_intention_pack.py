"""The shipped original pack of IntentionGym: counts, ids, demo fixture and quality rules.

See docs/envs/intention.md, "Task data".

These tests read the data files directly, so they specify the pack independently of the env code.
"""

import collections
import hashlib
import json
from functools import cache
from pathlib import Path

import pytest

from mimesis_gym.envs._matching import STOPWORDS, norm, norm_tokens, shared_ngram
from mimesis_gym.envs.intention.roles import ScriptedCoverageJudge
from mimesis_gym.envs.intention.tasks import Detail

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/intention/data"
USERRL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "userrl"
USERRL_FILES = ("all_intentions_train.json", "all_intentions_test.json")

SPLITS = ("train", "test", "demo")
RECORD_KEYS = ["id", "split", "category", "task", "missing_details"]
DETAIL_KEYS = ["description", "importance", "inquiry", "options", "keywords"]
BANNED_KEYWORDS = STOPWORDS | {"you", "your", "like", "prefer", "want", "need", "help", "task"}

DEMO_FIXTURE = {
    "id": "intention-demo-01",
    "split": "demo",
    "category": "Home and Garden",
    "task": "Help me plan a vegetable garden for my backyard.",
    "missing_details": [
        {
            "description": "Size of the available garden space",
            "importance": "3",
            "inquiry": "How much space do you have for the garden?",
            "options": ["A small 2 by 3 metre patch", "About 10 square metres", "Most of a 50 square metre yard"],
            "keywords": [
                "size",
                "space",
                "square metres",
                "square meters",
                "how big",
                "area",
                "dimensions",
                "room for",
            ],
        },
        {
            "description": "Amount of sunlight the spot receives",
            "importance": "2",
            "inquiry": "How many hours of direct sun does the spot get?",
            "options": ["Full sun most of the day", "Morning sun only", "Mostly shade"],
            "keywords": ["sun", "sunlight", "sunny", "shade", "shady", "light"],
        },
        {
            "description": "Vegetables the user wants to grow",
            "importance": "2",
            "inquiry": "Which vegetables would you like to grow?",
            "options": ["Tomatoes and peppers", "Leafy greens and herbs", "Carrots and potatoes"],
            "keywords": ["vegetables", "veggies", "crops", "grow", "what to plant", "which plants"],
        },
        {
            "description": "Time available for upkeep",
            "importance": "1",
            "inquiry": "How much time per week can you spend tending it?",
            "options": ["Under an hour a week", "Two or three hours a week", "I can tend it daily"],
            "keywords": ["time", "hours a week", "per week", "upkeep", "maintenance", "tending", "tend"],
        },
    ],
}


@cache
def lines(split: str) -> tuple[str, ...]:
    return tuple((DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines())


@cache
def records(split: str) -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in lines(split))


def all_records() -> list[dict]:
    return [r for split in SPLITS for r in records(split)]


def all_details() -> list[tuple[str, int, dict]]:
    return [(r["id"], i, d) for r in all_records() for i, d in enumerate(r["missing_details"])]


def scripted_coverage(remaining: list[dict], question: str) -> list[int]:
    """The env's scripted coverage judge on raw records."""
    details = [Detail.model_validate(d) for d in remaining]
    return ScriptedCoverageJudge().decide(question=question, remaining=details).value


# --- counts, ids, format -------------------------------------------------------------------------


def test_split_counts_are_120_train_30_test_1_demo():
    assert {split: len(records(split)) for split in SPLITS} == {"train": 120, "test": 30, "demo": 1}


def test_train_and_test_ids_are_numbered_consecutively():
    assert [r["id"] for r in records("train")] == [f"intention-{i:04d}" for i in range(1, 121)]
    assert [r["id"] for r in records("test")] == [f"intention-{i:04d}" for i in range(121, 151)]


def test_every_record_names_the_split_of_its_file():
    for split in SPLITS:
        for r in records(split):
            assert r["split"] == split, f"{r['id']} is stored in {split}.jsonl but says {r['split']!r}"


def test_record_and_detail_keys_are_in_schema_order():
    for r in all_records():
        assert list(r) == RECORD_KEYS, r["id"]
        for i, d in enumerate(r["missing_details"]):
            assert list(d) == DETAIL_KEYS, f"{r['id']} detail {i}"


def test_field_types():
    for r in all_records():
        for key in ("id", "split", "category", "task"):
            assert isinstance(r[key], str) and r[key].strip() == r[key] and r[key], f"{r['id']} {key}"
        for i, d in enumerate(r["missing_details"]):
            for key in ("description", "importance", "inquiry"):
                assert isinstance(d[key], str) and d[key], f"{r['id']} detail {i} {key}"
            for key in ("options", "keywords"):
                assert all(isinstance(x, str) and x.strip() for x in d[key]), f"{r['id']} detail {i} {key}"


def test_each_line_is_the_compact_non_ascii_escaped_dump_of_its_record():
    for split in SPLITS:
        for line, r in zip(lines(split), records(split), strict=True):
            assert line == json.dumps(r, ensure_ascii=False), r["id"]


def test_demo_file_is_exactly_the_spec_fixture():
    assert list(records("demo")) == [DEMO_FIXTURE]


def test_manifest_records_the_pack_counts_and_file_digests():
    manifest_text = (DATA / "manifest.json").read_text(encoding="utf-8")
    manifest = json.loads(manifest_text)
    assert manifest_text == json.dumps(manifest, indent=2) + "\n"
    assert manifest["pack"] == "intention/original"
    assert manifest["counts"] == {split: len(records(split)) for split in SPLITS}
    for split in SPLITS:
        name = f"{split}.jsonl"
        assert manifest["sha256"][name] == hashlib.sha256((DATA / name).read_bytes()).hexdigest(), name


# --- quality rules --------------------------------------------------------------------------------


def test_task_texts_are_unique():
    counts = collections.Counter(r["task"] for r in all_records())
    duplicated = {task: n for task, n in counts.items() if n > 1}
    assert not duplicated, f"duplicate task texts: {duplicated}"


def test_at_least_15_categories():
    categories = {r["category"] for r in all_records()}
    assert len(categories) >= 15, sorted(categories)


def test_at_most_15_tasks_per_category():
    counts = collections.Counter(r["category"] for r in all_records())
    crowded = {category: n for category, n in counts.items() if n > 15}
    assert not crowded, f"categories with more than 15 tasks: {crowded}"


def test_category_names_are_title_case():
    small_words = {"and", "of", "the", "for", "to", "in"}
    for r in all_records():
        words = r["category"].split()
        assert all(w[0].isupper() or w in small_words for w in words), f"{r['id']}: {r['category']!r}"
        assert words[0][0].isupper(), f"{r['id']}: {r['category']!r}"


def test_three_to_six_details_per_task():
    for r in all_records():
        assert 3 <= len(r["missing_details"]) <= 6, f"{r['id']} has {len(r['missing_details'])} details"


def test_importance_is_the_string_1_2_or_3():
    for task_id, i, d in all_details():
        assert d["importance"] in ("1", "2", "3"), f"{task_id} detail {i}: {d['importance']!r}"


def test_importance_shares_over_the_whole_pack():
    counts = collections.Counter(d["importance"] for _, _, d in all_details())
    total = sum(counts.values())
    shares = {level: counts[level] / total for level in ("1", "2", "3")}
    assert 0.15 <= shares["3"] <= 0.25, shares
    assert 0.50 <= shares["2"] <= 0.70, shares
    assert 0.15 <= shares["1"] <= 0.30, shares


def test_two_to_four_distinct_options_per_detail():
    for task_id, i, d in all_details():
        assert 2 <= len(d["options"]) <= 4, f"{task_id} detail {i} has {len(d['options'])} options"
        assert len(set(d["options"])) == len(d["options"]), f"{task_id} detail {i} repeats an option"


def test_three_to_ten_distinct_keywords_per_detail():
    for task_id, i, d in all_details():
        assert 3 <= len(d["keywords"]) <= 10, f"{task_id} detail {i} has {len(d['keywords'])} keywords"
        assert len({norm(k) for k in d["keywords"]}) == len(d["keywords"]), f"{task_id} detail {i} repeats a keyword"


def test_no_keyword_is_a_bare_stopword_or_generic_request_word():
    for task_id, i, d in all_details():
        bare = [k for k in d["keywords"] if norm(k).strip() in BANNED_KEYWORDS or not norm(k).strip()]
        assert not bare, f"{task_id} detail {i} has bare function-word keywords {bare}"


def test_inquiries_are_questions():
    for task_id, i, d in all_details():
        assert d["inquiry"].rstrip().endswith("?"), f"{task_id} detail {i}: {d['inquiry']!r}"


def test_scripted_judge_maps_each_inquiry_to_exactly_its_own_detail():
    for r in all_records():
        details = r["missing_details"]
        for i, d in enumerate(details):
            covered = scripted_coverage(details, d["inquiry"])
            assert covered == [i], f"{r['id']} detail {i}: inquiry {d['inquiry']!r} covers details {covered}"


def test_oracle_inquiries_in_descending_importance_cover_one_detail_per_turn():
    for r in all_records():
        remaining = list(r["missing_details"])
        turns = 0
        while remaining:
            target = max(remaining, key=lambda d: int(d["importance"]))  # ties: first in task order
            covered = scripted_coverage(remaining, target["inquiry"])
            assert [remaining[j] for j in covered] == [target], f"{r['id']}: {target['inquiry']!r} covers {covered}"
            remaining = [d for j, d in enumerate(remaining) if j not in covered]
            turns += 1
        assert turns == len(r["missing_details"]), r["id"]


# --- originality ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def userrl_tasks() -> list[str]:
    base = USERRL_DIR / "gyms/IntentionGym/intentiongym/data"
    paths = [base / name for name in USERRL_FILES]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"UserRL IntentionGym data not found under {base}")
    return [record["task"] for p in paths for record in json.loads(p.read_text(encoding="utf-8"))]


def test_no_task_text_equals_a_userrl_task(userrl_tasks):
    upstream = {norm(task) for task in userrl_tasks}
    copied = [r["id"] for r in all_records() if norm(r["task"]) in upstream]
    assert not copied, f"task texts equal to UserRL tasks: {copied}"


def test_no_task_text_shares_an_8_word_sequence_with_a_userrl_task(userrl_tasks):
    grams = set()
    for task in userrl_tasks:
        tokens = norm_tokens(task)
        grams.update(tuple(tokens[k : k + 8]) for k in range(len(tokens) - 7))
    shared = {}
    for r in all_records():
        gram = shared_ngram(norm_tokens(r["task"]), grams, 8)
        if gram is not None:
            shared[r["id"]] = " ".join(gram)
    assert not shared, f"8-word sequences shared with UserRL tasks: {shared}"
