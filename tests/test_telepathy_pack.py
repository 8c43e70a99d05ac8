"""The shipped original pack of TelepathyGym: counts, data quality rules, originality and byte-exact rebuild
(docs/envs/telepathy.md, "Task data")."""

from __future__ import annotations

import collections
import json
from functools import cache
from pathlib import Path

import pytest

from mimesis_gym.envs._matching import norm, norm_tokens, shared_ngram
from mimesis_gym.envs.telepathy.build import COLOURS, build, goal_text, load_entities, teaser_text

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/telepathy/data"
USERRL_ENTITIES = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "userrl"
    / "gyms/TelepathyGym/telepathygym/data/all_entities_refined.json"
)
SPLITS = ("train", "test", "demo")
RECORD_KEYS = [
    "id",
    "split",
    "title",
    "description",
    "goal",
    "target_entity",
    "category",
    "aliases",
    "hypernyms",
    "colors",
    "attributes",
]

# The pack's property vocabulary: these names in this order and at least these patterns.
SPEC_PATTERNS: dict[str, list[str]] = {
    "alive": ["alive", "living thing", "living being", "living creature", "organism", "still living"],
    "real": ["real", "exist in real life", "exists in real life", "actually exist", "actually exists", "real world"],
    "fictional": ["fictional", "fiction", "made up", "imaginary", "mythical", "legendary"],
    "man_made": [
        "man made",
        "manmade",
        "human made",
        "artificial",
        "manufactured",
        "invented",
        "built by humans",
        "made by people",
    ],
    "natural": ["natural", "found in nature", "occurs naturally"],
    "bigger_than_person": [
        "bigger than a person",
        "larger than a person",
        "taller than a person",
        "bigger than a human",
        "larger than a human",
        "taller than a human",
        "bigger than me",
        "larger than me",
    ],
    "bigger_than_car": ["bigger than a car", "larger than a car"],
    "fits_in_hand": [
        "fit in your hand",
        "fit in my hand",
        "fits in your hand",
        "fits in a hand",
        "handheld",
        "hold it in one hand",
        "pocket",
    ],
    "edible": ["eat it", "edible", "can you eat", "can be eaten", "eaten"],
    "electronic": ["electronic", "electricity", "battery", "batteries", "plug", "electric", "powered"],
    "indoors": ["indoors", "inside a house", "in a house", "in homes", "at home", "in the kitchen"],
    "fly": ["fly", "flies", "flying", "airborne"],
    "water": ["in water", "in the water", "in the sea", "in the ocean", "swim", "swims", "aquatic", "underwater"],
    "legs": ["legs"],
    "four_legs": ["four legs", "4 legs", "quadruped"],
    "wheels": ["wheel", "wheels"],
    "europe": ["europe", "european"],
    "asia": ["asia", "asian"],
    "africa": ["africa", "african"],
    "americas": ["america", "american", "americas", "usa", "united states"],
    "old": [
        "more than 100 years",
        "over 100 years",
        "over a hundred years",
        "before 1900",
        "ancient",
        "centuries ago",
        "centuries old",
        "19th century",
    ],
    "modern": ["modern", "recent", "21st century", "this century"],
    "transport": ["transport", "transportation", "ride", "carry people", "travel in"],
    "music": ["music", "musical", "make sound", "makes sound", "sing", "sings"],
    "sport_related": [
        "athletic",
        "sporty",
        "related to sport",
        "related to sports",
        "used in sport",
        "used in sports",
    ],
    "female": ["female", "woman", "girl"],
    "male": ["male", "man", "boy"],
    "dangerous": ["dangerous", "deadly", "harmful", "venomous", "poisonous"],
    "fur": ["fur", "furry", "hairy"],
    "meat_eater": ["eat meat", "eats meat", "carnivore", "carnivorous", "predator", "hunt", "hunts"],
    "in_space": ["in space", "outer space", "orbit", "in the sky"],
    "sweet": ["sweet", "sugary"],
    "famous": ["famous", "well known", "popular"],
}
SPEC_NOUNS = [
    "animal",
    "mammal",
    "bird",
    "fish",
    "insect",
    "reptile",
    "herbivore",
    "wild animal",
    "person",
    "scientist",
    "food",
    "fruit",
    "vegetable",
    "vehicle",
    "car",
    "instrument",
    "musical instrument",
    "building",
    "place",
    "city",
    "country",
    "plant",
    "sport",
    "game",
    "event",
    "book",
    "movie",
    "planet",
    "company",
    "toy",
]
SPEC_COLOURS = ["red", "orange", "yellow", "green", "blue", "purple", "pink", "brown", "black", "white", "grey", "gray"]
SPEC_COLOURS += ["gold", "silver"]

DEMO_TRUE = [
    "alive",
    "real",
    "natural",
    "bigger_than_person",
    "bigger_than_car",
    "legs",
    "four_legs",
    "africa",
    "famous",
    "fur",
]
DEMO_FALSE = [
    "fictional",
    "man_made",
    "fits_in_hand",
    "edible",
    "electronic",
    "indoors",
    "fly",
    "water",
    "wheels",
    "europe",
    "asia",
    "americas",
    "transport",
    "music",
    "sport_related",
    "dangerous",
    "meat_eater",
    "in_space",
]
DEMO_NULL = ["old", "modern", "female", "male", "sweet"]


@cache
def records(split: str) -> tuple[dict, ...]:
    return tuple(json.loads(line) for line in (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines())


def all_records() -> list[dict]:
    return [record for split in SPLITS for record in records(split)]


def pack_records() -> list[dict]:
    return list(records("train")) + list(records("test"))


@cache
def attributes_file() -> dict:
    return json.loads((DATA / "attributes.json").read_text(encoding="utf-8"))


@cache
def nouns() -> tuple[str, ...]:
    return tuple(json.loads((DATA / "nouns.json").read_text(encoding="utf-8")))


def property_names() -> list[str]:
    return [entry["name"] for entry in attributes_file()["properties"]]


def category_noun(record: dict) -> str:
    return record["category"].replace("_", " ")


# ------------------------------------------------------------------------------------------------ counts


def test_counts_ids_and_splits():
    assert [len(records(split)) for split in SPLITS] == [160, 40, 1]
    assert [r["id"] for r in pack_records()] == [f"telepathy-{i:04d}" for i in range(1, 201)]
    assert [r["id"] for r in records("demo")] == ["telepathy-demo-01"]
    for split in SPLITS:
        assert {r["split"] for r in records(split)} == {split}
    manifest = json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["pack"] == "telepathy/original"
    assert manifest["counts"] == {"train": 160, "test": 40, "demo": 1}


def test_record_schema():
    names = property_names()
    for r in all_records():
        assert list(r) == RECORD_KEYS, r["id"]
        for key in ("id", "split", "title", "description", "goal", "target_entity", "category"):
            assert isinstance(r[key], str) and r[key] == r[key].strip() and r[key], (r["id"], key)
        for key in ("aliases", "hypernyms", "colors"):
            assert isinstance(r[key], list) and all(isinstance(x, str) and x for x in r[key]), (r["id"], key)
        assert list(r["attributes"]) == names, r["id"]
        assert all(value is None or isinstance(value, bool) for value in r["attributes"].values()), r["id"]


# ------------------------------------------------------------------------------------------------ quality rules


def test_titles_are_unique_and_aliases_are_not_shared():
    titles = [r["title"].casefold() for r in all_records()]
    assert len(set(titles)) == len(titles), [t for t, n in collections.Counter(titles).items() if n > 1]
    owner: dict[str, str] = {}
    for r in all_records():
        assert r["aliases"][0] == r["title"], r["id"]
        assert len({norm(name) for name in r["aliases"]}) == len(r["aliases"]), f"{r['id']}: duplicate alias"
        for name in r["aliases"]:
            key = norm(name)
            assert key != " ", r["id"]
            assert owner.setdefault(key, r["id"]) == r["id"], f"{name!r} is shared by {owner[key]} and {r['id']}"


def test_categories_are_varied_and_balanced():
    counts = collections.Counter(r["category"] for r in pack_records())
    assert len(counts) >= 20, counts
    assert max(counts.values()) <= 15, counts.most_common(3)
    assert set(counts) >= {r["category"] for r in records("demo")}


def test_attribute_values():
    for r in all_records():
        values = r["attributes"]
        assert sum(value is None for value in values.values()) <= 8, r["id"]
        if values["real"] is not None and values["fictional"] is not None:
            assert values["real"] == (not values["fictional"]), r["id"]
        if values["four_legs"]:
            assert values["legs"], r["id"]
        if values["bigger_than_car"]:
            assert values["bigger_than_person"] is not False and values["fits_in_hand"] is not True, r["id"]
        if values["female"] and values["male"]:
            pytest.fail(f"{r['id']}: both female and male")


def test_hypernyms_colours_and_texts():
    vocabulary = set(nouns())
    for r in all_records():
        noun = category_noun(r)
        assert noun in vocabulary, r["id"]
        assert noun in r["hypernyms"], r["id"]
        assert set(r["hypernyms"]) <= vocabulary, (r["id"], set(r["hypernyms"]) - vocabulary)
        assert len(set(r["hypernyms"])) == len(r["hypernyms"]), r["id"]
        assert set(r["colors"]) <= set(COLOURS) and len(set(r["colors"])) == len(r["colors"]), r["id"]
        assert r["target_entity"].startswith(f"{r['title']} - "), r["id"]
        assert len(r["target_entity"]) > len(r["title"]) + 20, r["id"]
        assert "\t" not in r["target_entity"] and "\n" not in r["target_entity"], r["id"]
        assert r["description"].startswith("I am thinking of"), r["id"]
        assert noun in r["description"], r["id"]
        assert r["description"] == teaser_text(noun) and r["goal"] == goal_text(noun), r["id"]


def test_signatures_are_distinct():
    seen: dict[tuple, str] = {}
    for r in all_records():
        signature = (frozenset(r["hypernyms"]), frozenset(r["colors"]), tuple(r["attributes"].values()))
        assert seen.setdefault(signature, r["id"]) == r["id"], f"{seen[signature]} and {r['id']} are indistinguishable"


# ------------------------------------------------------------------------------------------------ vocabularies


def test_property_vocabulary_follows_the_spec():
    raw = attributes_file()
    assert list(raw) == ["properties", "colours"]
    assert property_names() == list(SPEC_PATTERNS)
    for entry in raw["properties"]:
        assert list(entry) == ["name", "patterns"]
        missing = set(SPEC_PATTERNS[entry["name"]]) - set(entry["patterns"])
        assert not missing, (entry["name"], missing)
        assert len(set(map(norm, entry["patterns"]))) == len(entry["patterns"]), entry["name"]
    assert raw["colours"] == SPEC_COLOURS == list(COLOURS)


def test_noun_vocabulary():
    vocabulary = nouns()
    assert len(vocabulary) >= 150
    assert set(SPEC_NOUNS) <= set(vocabulary), set(SPEC_NOUNS) - set(vocabulary)
    assert len({norm(noun) for noun in vocabulary}) == len(vocabulary)
    assert all(noun == noun.strip().lower() and noun for noun in vocabulary)


def test_vocabularies_are_pairwise_disjoint():
    patterns = {norm(p) for entry in attributes_file()["properties"] for p in entry["patterns"]}
    pattern_count = sum(len(entry["patterns"]) for entry in attributes_file()["properties"])
    assert len(patterns) == pattern_count, "a pattern is listed under two properties"
    vocabularies = {
        "property pattern": patterns,
        "noun": {norm(noun) for noun in nouns()} | {norm(h) for r in all_records() for h in r["hypernyms"]},
        "colour": {norm(colour) for colour in attributes_file()["colours"]},
        "title/alias": {norm(name) for r in all_records() for name in r["aliases"]},
    }
    kinds = list(vocabularies)
    for i, first in enumerate(kinds):
        for second in kinds[i + 1 :]:
            clash = vocabularies[first] & vocabularies[second]
            assert not clash, f"{first} vs {second}: {sorted(clash)}"


# ------------------------------------------------------------------------------------------------ originality


def test_no_target_entity_shares_an_8_word_sequence_with_userrl():
    if not USERRL_ENTITIES.is_file():
        pytest.skip(f"UserRL entities not found at {USERRL_ENTITIES}")
    upstream = json.loads(USERRL_ENTITIES.read_text(encoding="utf-8"))
    grams: set[tuple[str, ...]] = set()
    for record in upstream:
        tokens = norm_tokens(record["target_entity"])
        grams.update(tuple(tokens[i : i + 8]) for i in range(len(tokens) - 7))
    for r in all_records():
        shared = shared_ngram(norm_tokens(r["target_entity"]), grams, 8)
        assert shared is None, (r["id"], " ".join(shared))


# ------------------------------------------------------------------------------------------------ build


def test_rebuild_reproduces_the_committed_files_byte_for_byte(tmp_path):
    manifest = build(tmp_path)
    for name in ("train.jsonl", "test.jsonl", "demo.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
    assert manifest == json.loads((DATA / "manifest.json").read_text(encoding="utf-8"))


def test_source_table_matches_the_records():
    assert load_entities() == all_records()
    lines = (DATA / "entities.tsv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + 200 + 1
    assert all(len(line.split("\t")) == 8 for line in lines)


# ------------------------------------------------------------------------------------------------ demo


def test_demo_record_matches_the_spec():
    (demo,) = records("demo")
    assert demo["id"] == "telepathy-demo-01" and demo["split"] == "demo"
    assert demo["title"] == "Giraffe" and demo["category"] == "animal"
    assert demo["description"] == "I am thinking of an animal. Ask me yes/no questions to find out which one!"
    assert demo["goal"] == "Guess the animal I am thinking of."
    assert demo["target_entity"].startswith("Giraffe - ")
    assert demo["aliases"] == ["Giraffe", "giraffes"]
    assert demo["hypernyms"] == ["animal", "mammal", "herbivore", "wild animal"]
    assert demo["colors"] == ["yellow", "brown", "orange"]
    attributes = demo["attributes"]
    assert sorted(DEMO_TRUE + DEMO_FALSE + DEMO_NULL) == sorted(attributes)
    assert all(attributes[name] is True for name in DEMO_TRUE)
    assert all(attributes[name] is False for name in DEMO_FALSE)
    assert all(attributes[name] is None for name in DEMO_NULL)
    # The demo walkthrough depends on these vocabulary facts.
    assert "bird" in nouns() and "car" in nouns() and "green" in attributes_file()["colours"]
    assert "mammal" in demo["hypernyms"] and "wild animal" in demo["hypernyms"] and "green" not in demo["colors"]
