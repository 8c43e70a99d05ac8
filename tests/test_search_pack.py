"""SearchGym's shipped world, corpus and questions: counts, the demo fixture, quality rules, reproducibility
(docs/envs/search.md, "Task data").

These tests read the data files directly, so they specify the pack independently of the generator;
``test_every_answer_follows_the_world`` re-derives each answer from ``world.json`` by following the
question's relation path, and the chain tests check that every hop is stated by its passage.
"""

import collections
import json
import re
from functools import cache
from pathlib import Path

import pytest

from mimesis_gym.envs.search.backends import bm25_index
from mimesis_gym.envs.search.generate import DEFAULT_SEED, write_pack
from mimesis_gym.envs.search.tasks import CORPUS_PATH, load_original_pack

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/search/data"
QUESTION_KEYS = ["id", "split", "question", "answer", "aliases", "support", "hops", "template"]
DEMO_NAMES = ("Harrowgate", "Odile", "Marsh", "Penmoor", "Carrowmere", "Velm", "Tessaly")
ENTITY_TYPES = ("town", "river", "person", "company", "work", "structure", "club")
YEAR_ATTRIBUTES = ("born", "founded", "opened", "year")

DEMO_PASSAGE_1 = (
    "The Harrowgate Bridge is a stone arch bridge over the Velm River in the town of Carrowmere. It was designed "
    "by the engineer Odile Marsh and opened to traffic in 1874. Its seven arches made it the longest crossing in "
    "the region for decades."
)
DEMO_PASSAGE_2 = (
    "Odile Marsh (born 1831) was an engineer known for her work on bridges and canals. She was born in the "
    "coastal village of Penmoor and trained at the Tessaly Ironworks before designing the Harrowgate Bridge."
)
DEMO_RECORD = {
    "id": "search-demo-01",
    "split": "demo",
    "question": "In which village was the designer of the Harrowgate Bridge born?",
    "answer": "Penmoor",
    "aliases": ["Penmoor village"],
    "support": ["p-demo-1", "p-demo-2"],
    "hops": [
        {"question": "Who designed the Harrowgate Bridge?", "answer": "Odile Marsh", "passage": "p-demo-1"},
        {"question": "Where was Odile Marsh born?", "answer": "Penmoor", "passage": "p-demo-2"},
    ],
    "template": "structure.designer.birthplace",
}


@cache
def records(split):
    return tuple(json.loads(line) for line in (DATA / f"{split}.jsonl").read_text().splitlines())


@cache
def corpus():
    return {p["id"]: p for p in (json.loads(line) for line in (DATA / "corpus.jsonl").read_text().splitlines())}


@cache
def world():
    return json.loads((DATA / "world.json").read_text())


def generated():
    return records("train") + records("test")


def first_entity(question):
    return corpus()[question["hops"][0]["passage"]]["title"]


def test_counts_ids_and_schema():
    assert load_original_pack().counts() == {"train": 200, "test": 50, "demo": 1}
    assert [q["id"] for q in generated()] == [f"search-{i:04d}" for i in range(1, 251)]
    assert 580 <= len(corpus()) <= 620
    for split in ("train", "test", "demo"):
        for q in records(split):
            assert list(q) == QUESTION_KEYS and q["split"] == split
            assert all(isinstance(a, str) and a for a in [q["answer"], *q["aliases"]])
    for passage in corpus().values():
        assert list(passage) == ["id", "title", "text", "entity_type"]


def test_demo_fixture_is_the_spec_record():
    assert list(records("demo")) == [DEMO_RECORD]
    assert corpus()["p-demo-1"] == {
        "id": "p-demo-1",
        "title": "Harrowgate Bridge",
        "text": DEMO_PASSAGE_1,
        "entity_type": "structure",
    }
    assert corpus()["p-demo-2"] == {
        "id": "p-demo-2",
        "title": "Odile Marsh",
        "text": DEMO_PASSAGE_2,
        "entity_type": "person",
    }


def test_world_entity_counts_and_one_passage_per_entity():
    data = world()
    counts = {kind: len(data[kind]) for kind in ENTITY_TYPES}
    assert counts == {"town": 90, "river": 30, "person": 220, "company": 80, "work": 100, "structure": 60, "club": 20}
    assert len(data["region"]) == 8
    passages = [record["passage"] for kind in ENTITY_TYPES for record in data[kind]]
    assert sorted(passages) == sorted(pid for pid in corpus() if not pid.startswith("p-demo"))
    for kind in ENTITY_TYPES:
        for record in data[kind]:
            assert corpus()[record["passage"]]["title"] == record["name"]
            assert corpus()[record["passage"]]["entity_type"] == kind
    names = [record["name"] for kind in ("region", *ENTITY_TYPES) for record in data[kind]]
    assert len(names) == len(set(names)), "entity names must be unique across the world"


def test_world_attributes_are_consistent():
    data = world()
    people = {p["name"]: p for p in data["person"]}
    towns = {t["name"]: t for t in data["town"]}
    for company in data["company"]:
        assert company["founded"] >= people[company["founder"]]["born"] + 20
        assert company["headquarters"] in towns
    for work in data["work"]:
        assert work["year"] >= people[work["creator"]]["born"] + 15
        assert work["kind"] in ("novel", "painting", "symphony", "opera", "atlas")
    for structure in data["structure"]:
        assert people[structure["designer"]]["occupation"] in ("engineer", "architect")
        assert structure["kind"] in ("bridge", "library", "theatre", "observatory", "lighthouse")
    for person in data["person"]:
        assert person["birthplace"] in towns
    rivers = {r["name"] for r in data["river"]}
    regions = {r["name"] for r in data["region"]}
    for town in data["town"]:
        assert town["river"] in rivers and town["region"] in regions


def test_passages_are_well_formed_and_unique():
    texts = [p["text"] for p in corpus().values()]
    assert len(texts) == len(set(texts)), "a passage text repeats"
    for passage in corpus().values():
        if passage["id"].startswith("p-demo"):
            continue
        words = len(passage["text"].split())
        assert 40 <= words <= 120, (passage["id"], words)
        sentences = len(re.findall(r"[.!?](?:\s|$)", passage["text"]))
        assert 2 <= sentences <= 6, (passage["id"], sentences)


def test_demo_names_occur_in_no_other_passage():
    for passage in corpus().values():
        if passage["id"].startswith("p-demo"):
            continue
        text = f"{passage['title']} {passage['text']}".lower()
        for name in DEMO_NAMES:
            assert name.lower() not in text, (name, passage["id"])


def test_question_mix_and_templates():
    questions = generated()
    assert len({q["question"] for q in questions} | {DEMO_RECORD["question"]}) == 251, "question strings repeat"
    hops = collections.Counter(len(q["hops"]) for q in questions)
    assert hops == {2: 200, 3: 50}
    assert len({q["template"] for q in questions}) >= 12
    assert all(q["template"].count(".") == len(q["hops"]) for q in questions)


def test_test_first_entities_never_start_a_train_question():
    train_starts = {first_entity(q) for q in records("train")}
    assert not train_starts & {first_entity(q) for q in records("test")}


def test_the_named_entity_is_the_title_of_exactly_one_passage():
    titles = collections.Counter(p["title"] for p in corpus().values())
    for q in generated() + records("demo"):
        name = first_entity(q)
        assert titles[name] == 1 and name in q["question"], q["id"]


def test_every_chain_is_stated_by_its_supporting_passages():
    for q in generated() + records("demo"):
        assert q["support"] == [hop["passage"] for hop in q["hops"]], q["id"]
        assert q["hops"][-1]["answer"] == q["answer"], q["id"]
        for index, hop in enumerate(q["hops"]):
            passage = corpus()[hop["passage"]]  # the supporting passage exists
            assert hop["answer"].lower() in passage["text"].lower(), (q["id"], index)
            if index + 1 < len(q["hops"]):
                following = q["hops"][index + 1]
                # the bridging entity is named in this hop's passage and asked about in the next hop
                assert hop["answer"] in following["question"], (q["id"], index)
                assert corpus()[following["passage"]]["title"] == hop["answer"], (q["id"], index)


@cache
def _index():
    return {(kind, record["name"]): record for kind in ("region", *ENTITY_TYPES) for record in world()[kind]}


def _follow(template, start):
    """The answer of ``template`` from the entity named ``start``, by the world's relations."""
    kind, *path = template.split(".")
    record = _index()[(kind, start)]
    value = None
    for attribute in path:
        value = record[attribute]
        target = world()["relations"][kind].get(attribute)
        if target is not None:
            kind, record = target, _index()[(target, value)]
    return str(value), kind, record


def test_every_answer_follows_the_world():
    for q in generated():
        answer, kind, record = _follow(q["template"], first_entity(q))
        assert answer == q["answer"], q["id"]


def test_aliases_follow_the_rules():
    for q in generated() + records("demo"):
        answer, aliases = q["answer"], q["aliases"]
        last_attribute = q["template"].split(".")[-1]
        if answer.isdigit():
            number = int(answer)
            expected = [f"{number:,}"] if number >= 1000 and last_attribute not in YEAR_ATTRIBUTES else []
            assert aliases == expected, q["id"]
            continue
        text = corpus()[q["hops"][-1]["passage"]]["text"].lower()
        for alias in aliases:
            assert alias.startswith(answer + " "), q["id"]
            descriptor = alias[len(answer) + 1 :]
            # the descriptor is the one the passage uses: "village of Penmoor", "Velm River", "region of X"
            assert f"{descriptor} of {answer}".lower() in text or alias.lower() in text, (q["id"], alias)


def test_hop_questions_retrieve_their_passages_with_bm25():
    index = bm25_index(str(CORPUS_PATH), 1.5, 0.75)
    found = total = 0
    for q in generated():
        for hop in q["hops"]:
            total += 1
            found += hop["passage"] in [p.id for p, _ in index.top(hop["question"], 5)]
    assert found / total >= 0.9, f"only {found}/{total} hop questions retrieve their passage in the top 5"
    for hop in DEMO_RECORD["hops"]:
        assert index.top(hop["question"], 5)[0][0].id == hop["passage"]


@pytest.mark.slow
def test_regeneration_reproduces_the_committed_files_byte_for_byte(tmp_path):
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert manifest["seed"] == DEFAULT_SEED
    write_pack(tmp_path, manifest["seed"])
    for name in ("corpus.jsonl", "world.json", "train.jsonl", "test.jsonl", "demo.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
