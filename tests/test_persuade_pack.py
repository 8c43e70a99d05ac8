"""PersuadeGym's original task pack: files, counts, the demo fixture and the quality rules.

See docs/envs/persuade.md, "Task data".

These tests read the committed JSONL files directly; they need no environment code. Assertion messages name the
claim id so that a failing rule points at the record to fix.
"""

import collections
import functools
import hashlib
import json
from pathlib import Path

import pytest

from mimesis_gym.envs._matching import norm, norm_tokens, shared_ngram, spec_matches

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym" / "envs" / "persuade" / "data"
USERRL_DIR = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "userrl"
SPLITS = ("train", "test", "demo")
COUNTS = {"train": 48, "test": 12, "demo": 1}
DOMAINS = frozenset(
    {
        "technology",
        "education",
        "health policy",
        "environment",
        "economy",
        "urban life",
        "culture",
        "sport",
        "work",
        "science policy",
    }
)
FIRST_PERSON = frozenset({"i", "my", "me", "we", "our"})
RECORD_KEYS = ["id", "split", "domain", "claim", "argument", "counterpoints", "defenses"]
COUNTERPOINT_KEYS = ["id", "summary", "keywords", "concession", "probe"]
COUNTERPOINT_IDS = [f"cp{i}" for i in range(1, 7)]
NGRAM = 10

# The fixed parts of the demo fixture (keywords and probes verbatim).
DEMO_ID = "persuade-demo-01"
DEMO_CLAIM = "Cities should ban private cars from their historic centres."
DEMO_COUNTERPOINTS = [
    (
        [["disabled", "disability", "elderly", "wheelchair", "mobility", "older people"]],
        "Banning cars would cut off disabled and elderly residents who cannot walk or cycle to the centre.",
    ),
    (
        [
            ["shop", "shops", "business", "businesses", "retailers", "merchants"],
            ["customers", "sales", "revenue", "deliveries", "delivery"],
        ],
        "Small shops in the centre depend on customers and deliveries that arrive by car, so their sales would fall.",
    ),
    (
        [["emergency", "ambulance", "ambulances", "fire engine", "fire engines", "firefighters"]],
        "Emergency services like ambulances need fast road access, which a ban could complicate.",
    ),
    (
        [
            ["traffic", "congestion"],
            [
                "surrounding",
                "nearby",
                "neighbourhoods",
                "neighborhoods",
                "outskirts",
                "ring road",
                "displaced",
                "shifted",
            ],
        ],
        "The traffic would simply be displaced into surrounding neighbourhoods, making congestion worse there.",
    ),
    (
        [["residents", "people who live"], ["parking", "garage", "own a car", "their cars"]],
        "Residents who live in the old town would lose parking for their cars and be forced to move.",
    ),
    (
        [
            ["public transport", "buses", "trams", "metro", "transit"],
            ["capacity", "overcrowded", "insufficient", "expensive", "cost"],
        ],
        "Public transport in most old towns lacks the capacity to absorb everyone, so buses would be overcrowded.",
    ),
]


@functools.cache
def records(split: str) -> tuple[dict, ...]:
    lines = (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()
    return tuple(json.loads(line) for line in lines)


def all_records() -> list[dict]:
    return [r for split in SPLITS for r in records(split)]


def words(text: str) -> int:
    return len(text.split())


def first_person_count(text: str) -> int:
    return sum(token in FIRST_PERSON for token in norm_tokens(text))


# ---------------------------------------------------------------------------------------------- files and ids


def test_manifest_names_the_pack_its_counts_and_the_file_digests():
    raw = (DATA / "manifest.json").read_text(encoding="utf-8")
    manifest = json.loads(raw)
    assert raw == json.dumps(manifest, indent=2) + "\n"
    assert list(manifest) == ["pack", "counts", "sha256"]
    assert manifest["pack"] == "persuade/original"
    assert manifest["counts"] == COUNTS
    assert manifest["sha256"] == {
        f"{split}.jsonl": hashlib.sha256((DATA / f"{split}.jsonl").read_bytes()).hexdigest() for split in SPLITS
    }


def test_each_line_is_one_record_as_json_dumps_writes_it():
    for split in SPLITS:
        text = (DATA / f"{split}.jsonl").read_text(encoding="utf-8")
        assert text.endswith("\n") and "\n\n" not in text, split
        for line in text.splitlines():
            record = json.loads(line)
            assert line == json.dumps(record, ensure_ascii=False), record.get("id")


def test_counts_ids_and_splits():
    assert {split: len(records(split)) for split in SPLITS} == COUNTS
    assert [r["id"] for r in records("train")] == [f"persuade-{i:04d}" for i in range(1, 49)]
    assert [r["id"] for r in records("test")] == [f"persuade-{i:04d}" for i in range(49, 61)]
    assert [r["id"] for r in records("demo")] == [DEMO_ID]
    for split in SPLITS:
        for r in records(split):
            assert r["split"] == split, r["id"]


def test_record_schema():
    for r in all_records():
        assert list(r) == RECORD_KEYS, r["id"]
        for key in ("domain", "claim", "argument"):
            assert isinstance(r[key], str) and r[key].strip() == r[key] and r[key], (r["id"], key)
        assert [cp["id"] for cp in r["counterpoints"]] == COUNTERPOINT_IDS, r["id"]
        for cp in r["counterpoints"]:
            assert list(cp) == COUNTERPOINT_KEYS, (r["id"], cp["id"])
            for key in ("summary", "concession", "probe"):
                assert isinstance(cp[key], str) and cp[key].strip() == cp[key] and cp[key], (r["id"], cp["id"], key)
            groups = cp["keywords"]
            assert isinstance(groups, list) and 1 <= len(groups) <= 2, (r["id"], cp["id"])
            for group in groups:
                assert isinstance(group, list) and group, (r["id"], cp["id"])
                for phrase in group:
                    assert isinstance(phrase, str) and norm(phrase) != " ", (r["id"], cp["id"], phrase)
        assert len(r["defenses"]) == 4, r["id"]
        assert all(isinstance(d, str) and d.strip() == d and d for d in r["defenses"]), r["id"]


# ---------------------------------------------------------------------------------------------- demo fixture


def test_demo_fixture_has_the_fixed_parts_of_the_spec():
    (demo,) = records("demo")
    assert demo["domain"] == "urban life"
    assert demo["claim"] == DEMO_CLAIM
    assert [(cp["keywords"], cp["probe"]) for cp in demo["counterpoints"]] == DEMO_COUNTERPOINTS
    assert 150 <= words(demo["argument"]) <= 200, "the demo argument is about 170 words"


# ---------------------------------------------------------------------------------------------- quality rules


def test_claims_are_unique():
    seen = {}
    for r in all_records():
        key = norm(r["claim"])
        assert key not in seen, f"{r['id']} repeats the claim of {seen.get(key)}"
        seen[key] = r["id"]


def test_domains_are_known_varied_and_balanced():
    for r in all_records():
        assert r["domain"] in DOMAINS, r["id"]
    per_domain = collections.Counter(r["domain"] for r in all_records())
    assert len(per_domain) >= 8, per_domain
    assert max(per_domain.values()) <= 10, per_domain


def test_arguments_are_first_person_essays_of_150_to_300_words():
    for r in all_records():
        assert 150 <= words(r["argument"]) <= 300, f"{r['id']}: {words(r['argument'])} words"
        assert first_person_count(r["argument"]) >= 3, f"{r['id']}: argument is not in the first person"


def test_concessions_are_short_and_first_person_and_probes_are_short():
    for r in all_records():
        for cp in r["counterpoints"]:
            assert words(cp["concession"]) <= 30, f"{r['id']} {cp['id']}: concession too long"
            assert first_person_count(cp["concession"]) >= 1, f"{r['id']} {cp['id']}: concession not first person"
            assert words(cp["probe"]) <= 40, f"{r['id']} {cp['id']}: probe too long"


def test_defenses_are_four_distinct_first_person_replies():
    for r in all_records():
        assert len(set(r["defenses"])) == 4, f"{r['id']}: defenses are not distinct"
        for defense in r["defenses"]:
            assert first_person_count(defense) >= 1, f"{r['id']}: defense not first person: {defense!r}"


def test_each_probe_matches_its_own_counterpoint_and_no_other():
    for r in all_records():
        for cp in r["counterpoints"]:
            hits = [other["id"] for other in r["counterpoints"] if spec_matches(other["keywords"], cp["probe"])]
            assert hits == [cp["id"]], f"{r['id']} {cp['id']}: probe matches {hits}"


def test_keyword_phrases_are_disjoint_between_the_counterpoints_of_a_claim():
    """No phrase of one counterpoint equals, or occurs as whole words inside, a phrase of another."""
    for r in all_records():
        owned = [(norm(phrase), cp["id"]) for cp in r["counterpoints"] for group in cp["keywords"] for phrase in group]
        for phrase, owner in owned:
            for other, other_owner in owned:
                assert owner == other_owner or phrase not in other, (
                    f"{r['id']}: {phrase.strip()!r} of {owner} occurs in {other.strip()!r} of {other_owner}"
                )


def test_the_argument_matches_no_counterpoint():
    for r in all_records():
        hits = [cp["id"] for cp in r["counterpoints"] if spec_matches(cp["keywords"], r["argument"])]
        assert hits == [], f"{r['id']}: the argument already matches {hits}"


def test_six_probes_in_order_concede_one_point_each():
    """The oracle path of the scripted persuadee: each probe concedes exactly one new counterpoint."""
    for r in all_records():
        matched: list[str] = []
        for cp in r["counterpoints"]:
            new = [
                other["id"]
                for other in r["counterpoints"]
                if other["id"] not in matched and spec_matches(other["keywords"], cp["probe"])
            ]
            assert new == [cp["id"]], f"{r['id']} {cp['id']}: concedes {new}"
            matched.extend(new)
        assert matched == COUNTERPOINT_IDS, r["id"]


# ---------------------------------------------------------------------------------------------- originality


@functools.cache
def userrl_texts() -> tuple[frozenset[str], frozenset[tuple[str, ...]]]:
    """Normalised UserRL claims and the 10-word sequences of every UserRL claim and argument."""
    pq = pytest.importorskip("pyarrow.parquet")
    root = USERRL_DIR / "data" / "persuasion_multiturn"
    paths = [root / f"{split}.parquet" for split in ("train", "test")]
    if not all(path.is_file() for path in paths):
        pytest.skip(f"UserRL persuasion data not found under {root}")
    claims, ngrams = set(), set()
    for path in paths:
        for row in pq.read_table(path, columns=["reward_model"]).column("reward_model").to_pylist():
            claims.add(norm(row["claim"]))
            for text in (row["claim"], row["argument"]):
                tokens = norm_tokens(text)
                ngrams.update(tuple(tokens[i : i + NGRAM]) for i in range(len(tokens) - NGRAM + 1))
    return frozenset(claims), frozenset(ngrams)


def pack_texts(r: dict) -> list[str]:
    texts = [r["claim"], r["argument"], *r["defenses"]]
    for cp in r["counterpoints"]:
        texts += [cp["summary"], cp["concession"], cp["probe"]]
    return texts


def test_no_claim_or_ten_word_sequence_is_taken_from_userrl():
    claims, ngrams = userrl_texts()
    for r in all_records():
        assert norm(r["claim"]) not in claims, f"{r['id']}: claim equals a UserRL claim"
        for text in pack_texts(r):
            gram = shared_ngram(norm_tokens(text), ngrams, NGRAM)
            assert gram is None, f"{r['id']}: shares {' '.join(gram)!r} with UserRL"
