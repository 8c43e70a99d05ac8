"""TravelGym's shipped pack: counts, the demo fixture, the catalogue and every quality rule.

See docs/envs/travel.md, "Task data".

These tests read the data files directly and re-evaluate every option with the predicate interpreter,
so they specify the pack independently of the generator.
"""

import collections
import json
import re
from functools import cache
from pathlib import Path

import pytest

from mimesis_gym.envs._matching import STOPWORDS, norm
from mimesis_gym.envs.travel.generate import DEFAULT_SEED, DEMO_TASK, generate_task, write_pack
from mimesis_gym.envs.travel.roles import classify_utterance, judge_search
from mimesis_gym.envs.travel.tasks import (
    ASPECT_LETTERS,
    ASPECT_NOUNS,
    ASPECTS,
    DISPLAY_FIELDS,
    MONTHS,
    PREDICATE_OPS,
    SEARCH_ARGUMENTS,
    TRAVEL_SETS,
    VAGUE_MARKERS,
    PredicateError,
    canonical_query,
    evaluate_predicate,
    load_catalog,
    load_original_pack,
    option_price,
    parse_record,
    request_failure,
)

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/travel/data"
BANNED_WORDS = (
    set(STOPWORDS)
    | {w for nouns in ASPECT_NOUNS.values() for noun in nouns for w in noun.split()}
    | {w for marker in VAGUE_MARKERS for w in marker.split()}
)
CANONICAL_ORDER = ("flight", "hotel", "apartment", "rental_car", "restaurant")


@cache
def records(split):
    return tuple(json.loads(line) for line in (DATA / f"{split}.jsonl").read_text(encoding="utf-8").splitlines())


def generated():
    return records("train") + records("test")


def aspects_of(record):
    for dimension in record["dimensions"]:
        yield dimension, record[dimension]


# ---------------------------------------------------------------- counts, ids, demo


def test_counts_ids_and_manifest():
    assert load_original_pack().counts() == {"train": 192, "test": 48, "demo": 1}
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert manifest["counts"] == {"train": 192, "test": 48, "demo": 1} and manifest["seed"] == DEFAULT_SEED
    for split, per_set in (("train", 24), ("test", 6)):
        sets = collections.Counter(r["wanted_num"] for r in records(split))
        assert sets == dict.fromkeys(TRAVEL_SETS, per_set)
        assert all(r["split"] == split for r in records(split))
    ids = [r["id"] for r in generated()]
    assert len(set(ids)) == 240 and all(re.fullmatch(r"travel-\d+-\d{4}", i) for i in ids)
    assert all(i.split("-")[1] == r["wanted_num"] for i, r in zip(ids, generated(), strict=True))


def test_demo_fixture():
    (demo,) = records("demo")
    assert demo == DEMO_TASK
    assert (demo["id"], demo["split"], demo["wanted_num"], demo["party_size"]) == ("travel-demo-01", "demo", "22", 4)
    assert demo["dimensions"] == ["rental_car", "restaurant"]
    car, diner = demo["rental_car"], demo["restaurant"]
    assert car["arguments"] == {"city": "Lisbon", "pick_up_date": "May 3", "drop_off_date": "May 7"}
    assert diner["arguments"] == {"city": "Lisbon", "date": "May 5"}
    cars = {o["id"]: o for group in car["options"].values() for o in group}
    assert {i: (o["type"], o["cost"], o["categories"], o["seats"]) for i, o in cars.items()} == {
        "C1": ("correct", 320, "Electric", 5),
        "C2": ("correct", 290, "Electric", 5),
        "C3": ("wrong", 210, "Electric", 5),
        "C4": ("wrong", 180, "Compact", 5),
        "C5": ("wrong", 250, "SUV", 7),
        "C6": ("noise", 150, "Electric", 2),
    }
    assert cars["C1"]["insurance"] == {"Full coverage": 60, "Basic": 20} and cars["C3"]["insurance"] == {"Basic": 15}
    diners = {o["id"]: o for group in diner["options"].values() for o in group}
    assert {i: (o["type"], o["expectation"], o["cuisine"], o["rating"]) for i, o in diners.items()} == {
        "R1": ("correct", 48, "Seafood", 9.1),
        "R2": ("correct", 35, "Seafood", 8.7),
        "R3": ("wrong", 22, "Seafood", 7.9),
        "R4": ("wrong", 25, "Italian", 9.3),
        "R5": ("wrong", 30, "Steakhouse", 8.0),
        "R6": ("noise", 20, "Seafood", 9.0),
    }
    assert diners["R6"]["tags"] == ["Closed for renovation"]
    assert (car["best_id"], diner["best_id"]) == ("C2", "R2")


# ---------------------------------------------------------------- record schema


def test_record_schema_and_request():
    for r in generated():
        assert list(r)[:7] == [
            "id",
            "split",
            "wanted_num",
            "dimensions",
            "party_size",
            "scenario",
            "initial_description",
        ]
        dims = r["dimensions"]
        assert len(dims) == len(r["wanted_num"]) and list(dims) == sorted(dims, key=CANONICAL_ORDER.index)
        assert not {"hotel", "apartment"} <= set(dims)
        assert sorted(len(data["preferences"]) for _, data in aspects_of(r)) == sorted(int(d) for d in r["wanted_num"])
        assert 1 <= r["party_size"] <= 6
        assert 2 <= len(re.findall(r"[.!?](\s|$)", r["scenario"])) <= 4
        for dimension, data in aspects_of(r):
            assert list(data) == ["preferences", "preference_meta", "options", "correct_ids", "best_id", "arguments"]
            assert list(data["arguments"]) == list(SEARCH_ARGUMENTS[dimension])
            for key, value in data["arguments"].items():
                assert isinstance(value, str)
                if key not in ("origin", "destination", "city"):
                    month, day = value.split()
                    assert month in MONTHS and 1 <= int(day) <= 31


def test_display_fields_in_key_order():
    for r in generated():
        for dimension, data in aspects_of(r):
            for group in ("correct", "wrong", "noise"):
                for option in data["options"][group]:
                    assert list(option) == ["id", *DISPLAY_FIELDS[dimension], "type", "reason"]
                    assert option["type"] == group


def test_option_counts_and_ids():
    for r in generated():
        for dimension, data in aspects_of(r):
            groups = data["options"]
            assert 2 <= len(groups["correct"]) <= 5 and len(groups["wrong"]) == 10 and len(groups["noise"]) == 5
            ids = [o["id"] for group in groups.values() for o in group]
            letter = ASPECT_LETTERS[dimension]
            assert sorted(ids, key=lambda i: int(i[1:])) == [f"{letter}{n}" for n in range(1, len(ids) + 1)]
            assert data["correct_ids"] == [o["id"] for o in groups["correct"]]
            assert data["best_id"] in data["correct_ids"]


# ---------------------------------------------------------------- quality rules


def test_types_agree_with_predicates_and_request():
    for r in generated():
        party = r["party_size"]
        for dimension, data in aspects_of(r):
            predicates = [meta["predicate"] for meta in data["preference_meta"]]
            broken_by = collections.Counter()
            for group in ("correct", "wrong", "noise"):
                for option in data["options"][group]:
                    fails_request = request_failure(dimension, option, party, data["arguments"]) is not None
                    failing = [i for i, p in enumerate(predicates) if not evaluate_predicate(p, option, party)]
                    if group == "noise":
                        assert fails_request, (r["id"], option["id"])
                        continue
                    assert not fails_request, (r["id"], option["id"])
                    assert len(failing) == (0 if group == "correct" else 1), (r["id"], option["id"], failing)
                    if group == "wrong":
                        broken_by[failing[0]] += 1
            assert all(broken_by[i] >= 2 for i in range(len(predicates))), (r["id"], dimension, broken_by)


def test_prices_best_is_the_unique_cheapest_with_cheaper_traps():
    for r in generated():
        party = r["party_size"]
        for dimension, data in aspects_of(r):
            predicates = [meta["predicate"] for meta in data["preference_meta"]]

            def price(option, dimension=dimension, predicates=predicates, party=party):
                return option_price(dimension, option, party, predicates)

            groups = data["options"]
            best = next(o for o in groups["correct"] if o["id"] == data["best_id"])
            others = [price(o) for o in groups["correct"] if o is not best]
            assert all(p >= price(best) + 5 for p in others), (r["id"], dimension)
            assert sum(price(o) < price(best) for o in groups["wrong"]) >= 3, (r["id"], dimension)
            assert sum(price(o) < price(best) for o in groups["noise"]) >= 1, (r["id"], dimension)


def test_preferences_keywords_and_statements():
    catalog = {e.key: e for e in load_catalog()}
    for r in generated():
        for dimension, data in aspects_of(r):
            keys = [meta["catalog_key"] for meta in data["preference_meta"]]
            assert len(set(keys)) == len(keys)
            subcategories = [p[1] for p in data["preferences"]]
            assert len(set(subcategories)) == len(subcategories), (r["id"], dimension)
            for pref, meta in zip(data["preferences"], data["preference_meta"], strict=True):
                entry = catalog[meta["catalog_key"]]
                assert pref[0] == dimension == entry.aspect and pref[1:3] == [entry.subcategory, entry.preference]
                assert pref[3] in entry.elicitations
                assert meta["predicate"] == entry.predicate and meta["keywords"] == list(entry.keywords)
                value = meta["predicate"]["value"]
                if isinstance(value, str):
                    assert value.lower() not in pref[3].lower(), (r["id"], pref[3])
            for a in keys:
                assert not set(catalog[a].conflicts_with) & set(keys), (r["id"], keys)


def test_every_probe_classifies_as_its_own_preference():
    for r in (*generated(), DEMO_TASK):
        task = parse_record(r)
        for pref in task.numbered:
            assert classify_utterance(pref.pref.meta.probe, task.numbered, task) == ("2", pref.id), (r["id"], pref.id)


def test_the_canonical_query_passes_the_scripted_search_judge():
    for r in (*generated(), DEMO_TASK):
        task = parse_record(r)
        for dimension in task.dimensions:
            query = canonical_query(dimension, task.aspects[dimension].arguments)
            assert judge_search(query, task) == ("True", dimension), (r["id"], query)


def test_the_pack_is_varied():
    tasks = generated()
    combos = collections.Counter(tuple(r["dimensions"]) for r in tasks)
    used = collections.Counter(
        meta["catalog_key"] for r in tasks for _, d in aspects_of(r) for meta in d["preference_meta"]
    )
    assert len(combos) >= 12 and len(used) >= 0.9 * len(load_catalog())
    assert len({r["initial_description"] for r in tasks}) == len(tasks)


# ---------------------------------------------------------------- catalogue


def test_catalogue_rules():
    entries = load_catalog()
    keys = {e.key for e in entries}
    assert len(keys) == len(entries)
    for aspect in ASPECTS:
        mine = [e for e in entries if e.aspect == aspect]
        assert len(mine) >= 12 and len({e.subcategory for e in mine}) >= 8, aspect
    for e in entries:
        assert e.predicate["op"] in PREDICATE_OPS
        assert len(e.elicitations) >= 2 and len(e.keywords) >= 4 and e.probe.endswith("?")
        assert set(e.conflicts_with) <= keys
        for keyword in e.keywords:
            words = norm(keyword).split()
            assert any(w not in BANNED_WORDS for w in words), (e.key, keyword)
        value = e.predicate["value"]
        if isinstance(value, str):
            assert all(value.lower() not in s.lower() for s in e.elicitations), e.key


def test_a_generic_question_never_hits_a_keyword():
    task = parse_record(DEMO_TASK)
    for aspect, nouns in ASPECT_NOUNS.items():
        question = f"Do you have any preferences for the {nouns[0]}?"
        assert classify_utterance(question, task.numbered, task)[0] == "4", aspect


# ---------------------------------------------------------------- the predicate interpreter


@pytest.mark.parametrize(
    ("predicate", "expected"),
    [
        ({"field": "categories", "op": "eq", "value": "electric"}, True),
        ({"field": "seats", "op": "ge", "value": 5}, True),
        ({"field": "seats", "op": "le", "value": 4}, False),
        ({"field": "brand", "op": "ne", "value": "Velora"}, True),
        ({"field": "insurance", "op": "has_key", "value": "full coverage"}, True),
        ({"field": "insurance", "op": "lacks_key", "value": "Basic"}, True),
        ({"field": "tags", "op": "contains", "value": "GPS"}, False),
        ({"field": "tags", "op": "not_contains", "value": "gps"}, True),
        ({"field": "path", "op": "len_eq", "value": 3}, True),
        ({"field": "path", "op": "len_le", "value": 2}, False),
        ({"field": "time", "op": "sum_le", "value": 6.5}, True),
        ({"field": "time", "op": "layover_max_le", "value": 1.0}, False),
        ({"field": "room", "op": "room_baths_ge", "value": 2}, True),
    ],
)
def test_predicate_ops(predicate, expected):
    option = {
        "categories": "Electric",
        "seats": 5,
        "brand": "Kaito",
        "insurance": {"Full coverage": 50},
        "tags": ["Kid-friendly"],
        "path": ["A", "B", "C"],
        "time": [2.0, 1.5, 3.0],
        "room": "3B2B",
    }
    assert evaluate_predicate(predicate, option) is expected


def test_hotel_room_type_predicate_and_price():
    hotel = {
        "room": [
            {"type": "Single", "capacity": 1},
            {"type": "Suite", "capacity": 4},
            {"type": "Family room", "capacity": 5},
        ],
        "cost": [100, 400, 350],
    }
    suite = {"field": "room", "op": "capacity_room_ge", "value": "Suite"}
    assert evaluate_predicate(suite, hotel, party_size=4) and not evaluate_predicate(suite, hotel, party_size=5)
    assert option_price("hotel", hotel, 4) == 350 and option_price("hotel", hotel, 4, [suite]) == 400
    assert option_price("hotel", hotel, 6) == 100  # nothing fits: the cheapest room


def test_bad_predicates_raise():
    with pytest.raises(PredicateError, match="unknown predicate op"):
        evaluate_predicate({"field": "x", "op": "regex", "value": "."}, {"x": "a"})
    with pytest.raises(PredicateError, match="no field"):
        evaluate_predicate({"field": "y", "op": "eq", "value": 1}, {"x": 1})
    with pytest.raises(PredicateError, match="must be a list"):
        evaluate_predicate({"field": "x", "op": "contains", "value": "a"}, {"x": "a"})


# ---------------------------------------------------------------- the generator


def test_one_task_regenerates_alone():
    for index in (0, 100, 200):
        split, position = ("train", index) if index < 192 else ("test", index - 192)
        record = records(split)[position]
        number = int(record["id"].rsplit("-", 1)[1])
        assert generate_task(DEFAULT_SEED, index, split, record["wanted_num"], number) == record


@pytest.mark.slow
def test_regeneration_reproduces_the_committed_files_byte_for_byte(tmp_path):
    manifest = json.loads((DATA / "manifest.json").read_text())
    write_pack(tmp_path, manifest["seed"])
    for name in ("train.jsonl", "test.jsonl", "demo.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
