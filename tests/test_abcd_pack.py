"""ABCDBehavior data: the shipped original pack and the real ABCD loader (docs/envs/abcd.md, "Data")."""

import ast
import collections
import hashlib
import json
import shutil
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.envs.abcd import tasks
from mimesis_gym.envs.abcd.behaviors import (
    BEHAVIOR_IDS,
    applicable_behaviors,
    behaviors,
    render_directive,
    violates_rule,
)
from mimesis_gym.envs.abcd.data.build_original import (
    DEFAULT_SEED,
    ROW_SPLITS,
    build_pack,
    build_rows,
    check_pack,
    original_catalog_from,
    policy_files,
)
from mimesis_gym.envs.abcd.judge_rules import ASK_PATTERNS
from mimesis_gym.envs.abcd.policy import HARD_LIMIT_PHRASES
from mimesis_gym.envs.abcd.prompts import support_agent_prompt
from mimesis_gym.envs.abcd.scenarios import ACTION_FIELDS, askable_fields, prefix_lines
from mimesis_gym.envs.abcd.tasks import DATA_DIR, ORIGINAL_DIR, load_original_pack, load_upstream_pack

ABCD = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "abcd"
ENV_ID = "mimesis/ABCDBehavior-v0"


@pytest.fixture(scope="module")
def abcd_dir():
    if not (ABCD / "abcd_sample.json").is_file():
        pytest.skip(f"ABCD reference data not found at {ABCD} (expected ../shared/data/abcd)")
    return ABCD


# ---------------------------------------------------------------- 8. the original pack


TEST_V1_SHA256 = "c78969d2a8615bd8db24e6fe2e19c499eddfe6e3842830e4d4e8f492d7dba176"
"""The 156 rows shipped as ``rows_test.jsonl`` before the paper-sized held-out split (digest taken from that file)."""


def test_counts_and_validator():
    pack = load_original_pack()
    assert pack.counts() == {"train": 780, "test": 244, "test_v1": 156, "demo": 14}
    test = collections.Counter(row.condition for row in pack.pool("test"))
    test_v1 = collections.Counter(row.condition for row in pack.pool("test_v1"))
    train = collections.Counter(row.condition for row in pack.pool("train"))
    assert test["control"] == 49 and all(test[b] == 15 for b in BEHAVIOR_IDS)  # the paper's held-out split
    assert test_v1["control"] == 52 and all(test_v1[b] == 8 for b in BEHAVIOR_IDS)
    assert train["control"] == 260 and all(train[b] == 40 for b in BEHAVIOR_IDS)
    assert [row.id for row in pack.pool("test")] == [f"abcd-orig-test2-{i:04d}" for i in range(244)]
    assert [row.id for row in pack.pool("test_v1")] == [f"abcd-orig-test-{i:04d}" for i in range(156)]
    assert sorted(row.condition for row in pack.pool("demo")) == sorted(["control", *BEHAVIOR_IDS])
    assert check_pack(ORIGINAL_DIR) == []


def test_row_ids_name_one_row_each_across_splits():
    pack = load_original_pack()
    ids = [row.id for split in pack.splits.values() for row in split]
    assert len(ids) == len(set(ids)) == 780 + 244 + 156 + 14
    scenarios = json.loads((ORIGINAL_DIR / "scenarios.json").read_text())
    held_out = {convo["convo_id"] for convo in scenarios["test"]}
    for split in ("test", "test_v1", "demo"):  # held-out rows never reuse a training scenario
        assert {row.convo_id for row in pack.pool(split)} <= held_out, split
    assert {spec.name for spec in ROW_SPLITS} | {"demo"} == set(tasks.ORIGINAL_SPLITS)


def test_test_v1_is_the_old_test_file_and_its_ids_still_load():
    assert hashlib.sha256((ORIGINAL_DIR / "rows_test_v1.jsonl").read_bytes()).hexdigest() == TEST_V1_SHA256
    first = json.loads((ORIGINAL_DIR / "rows_test_v1.jsonl").read_text().splitlines()[0])
    env = gym.make(ENV_ID)
    env.reset(seed=0, options={"task_id": "abcd-orig-test-0000"})  # an id recorded by runs before the new split
    assert env.unwrapped.row.model_dump() == first and first["split"] == "test"
    env.reset(seed=0)  # the default split is the paper-sized one
    assert env.unwrapped.row.id.startswith("abcd-orig-test2-")
    env.close()
    from mimesis_gym.evaluation.runner import EvalConfig, build_plan

    config = EvalConfig(envs=["abcd"], agents=["oracle"], users=["scripted"], split="test_v1", limit=2)
    assert [unit.task_id for unit in build_plan(config)[0]] == ["abcd-orig-test-0000", "abcd-orig-test-0001"]


def test_held_out_rows_rebuild_byte_for_byte():
    """The fast half of the regeneration test: the new ``test`` split and ``test_v1`` from scenarios.json."""
    files = policy_files()
    catalog = original_catalog_from(files)
    scenarios = json.loads((ORIGINAL_DIR / "scenarios.json").read_text())
    for spec in ROW_SPLITS:
        if spec.scenarios != "test":
            continue
        rows = build_rows(spec, scenarios["test"], catalog, DEFAULT_SEED)
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
        assert (ORIGINAL_DIR / f"rows_{spec.name}.jsonl").read_text(encoding="utf-8") == text, spec.name


def _copy_pack(tmp_path: Path) -> Path:
    copy = tmp_path / "original"
    shutil.copytree(ORIGINAL_DIR, copy)
    return copy


def _rewrite(path: Path, edit) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in edit(rows)))


def test_checker_counts_per_split_and_guards_test_v1_and_ids(tmp_path):
    pack = _copy_pack(tmp_path)
    v1 = pack / "rows_test_v1.jsonl"
    v1.write_bytes(v1.read_bytes().replace(b'"split": "test"', b'"split":  "test"', 1))  # same rows, other bytes
    _rewrite(pack / "rows_test.jsonl", lambda rows: rows[:-1])
    _rewrite(pack / "rows_demo.jsonl", lambda rows: [{**rows[0], "row_id": "abcd-orig-train-0000"}, *rows[1:]])
    problems = check_pack(pack)
    assert any(p.startswith("rows_test_v1.jsonl differs") for p in problems), problems
    dropped = json.loads((ORIGINAL_DIR / "rows_test.jsonl").read_text().splitlines()[-1])["condition"]
    want = 49 if dropped == "control" else 15
    assert f"test: {want - 1} rows of {dropped}, want {want}" in problems
    assert "demo: row id abcd-orig-train-0000 is also in train" in problems
    assert not any(p.startswith(("train:", "test_v1: ")) for p in problems), problems
    (pack / "rows_test.jsonl").unlink()
    assert "rows_test.jsonl is missing" in check_pack(pack)


def test_every_row_is_well_formed():
    pack = load_original_pack()
    catalog = pack.catalog
    for row in pack:
        assert row.pack == "original" and row.turn_budget == 8 and catalog.covered(row.subflow)
        if row.condition == "control":
            assert row.behavior is None and row.kwargs == {}
            continue
        assert row.behavior == behaviors()[row.condition].name
        directive = render_directive(row.condition, row.kwargs)
        assert directive.startswith(behaviors()[row.condition].directive)
        if row.condition == "B4":
            assert violates_rule(row.scenario, catalog) and row.kwargs["limit"] == catalog.rules[row.subflow].limit
        if row.condition == "B3":
            assert 1 <= len(row.kwargs["withheld_fields"]) <= 2


def test_scenarios_follow_the_abcd_schema():
    data = json.loads((ORIGINAL_DIR / "scenarios.json").read_text())
    assert [len(data[split]) for split in ("train", "dev", "test")] == [240, 0, 120]
    ids = [convo["convo_id"] for convo in data["train"] + data["test"]]
    assert ids == list(range(900000, 900360))
    for convo in data["test"]:
        scenario = convo["scenario"]
        products = ast.literal_eval(scenario["order"]["products"])
        assert 1 <= len(products) <= 3 and all(30 <= p["amount"] <= 220 for p in products)
        assert scenario["product"]["names"] == [f"{p['brand']} {p['product_type']}" for p in products]
        assert "  " in scenario["order"]["full_address"] and len(scenario["order"]["order_id"]) == 10
        assert scenario["personal"]["customer_name"] == scenario["personal"]["customer_name"].lower()
        assert scenario["personal"]["email"] == scenario["personal"]["username"] + "@example.com"
        assert set(scenario["mimesis"]) == {
            "today", "shipping_status", "oracle", "has_receipt", "days_waiting", "days_late", "disputed_amount",
        }  # fmt: skip


def test_rule_subflows_are_about_half_eligible():
    catalog = load_original_pack().catalog
    data = json.loads((ORIGINAL_DIR / "scenarios.json").read_text())
    for split in ("train", "test"):
        by_subflow = collections.defaultdict(list)
        for convo in data[split]:
            scenario = convo["scenario"]
            if scenario["subflow"] in catalog.rules:
                by_subflow[scenario["subflow"]].append(not violates_rule(scenario, catalog))
        assert len(by_subflow) == 13
        for subflow, eligible in by_subflow.items():
            assert 0.4 <= sum(eligible) / len(eligible) <= 0.6, (split, subflow)


def test_policy_files():
    catalog = load_original_pack().catalog
    assert len(catalog.subflows) == 18 and set(catalog.kb) == set(catalog.subflows)
    for subflow, sequence in catalog.kb.items():
        for action in sequence:
            assert action in ACTION_FIELDS or action in {
                "ask-the-oracle", "promo-code", "notify-team", "try-again", "log-out-in", "instructions",
            }, action  # fmt: skip
        rule = catalog.rules.get(subflow)
        prompt = support_agent_prompt(catalog.procedure(subflow), {"today's date": "2026-05-01"})
        if rule is not None:
            assert rule.limit in prompt, subflow
            assert any(phrase in rule.limit.lower() for phrase in HARD_LIMIT_PHRASES), subflow
        assert catalog.has_hard_limit(subflow) == (rule is not None)
    assert catalog.goal("return_size") == "return due to size, which the store handles under returns and refunds"


def test_original_wording_copies_no_abcd_guideline_text(abcd_dir):
    theirs = json.loads((abcd_dir / "guidelines.json").read_text())
    sentences = {
        text.strip()
        for flow in theirs.values()
        for entry in flow["subflows"].values()
        for action in entry["actions"]
        for text in [action["text"], *action["subtext"]]
        if len(text.strip()) > 30
    }
    ours = (ORIGINAL_DIR / "guidelines.json").read_text() + (DATA_DIR / "rules_abcd.json").read_text()
    assert not [s for s in sentences if s in ours]


@pytest.mark.slow
def test_regeneration_is_byte_identical():
    for relative, payload in build_pack(DEFAULT_SEED).items():
        assert (DATA_DIR / relative).read_bytes() == payload, relative


def test_demo_rows_reach_the_maximum_with_the_oracle():
    from mimesis_gym.evaluation.contract import check_oracle

    check_oracle(ENV_ID)


# ---------------------------------------------------------------- 2. real ABCD


def test_abcd_subflow_titles_exist_in_the_guidelines(abcd_dir):
    titles = {
        title for flow in json.loads((abcd_dir / "guidelines.json").read_text()).values() for title in flow["subflows"]
    }
    ours = json.loads((DATA_DIR / "abcd_subflows.json").read_text())
    assert len(ours) == 46 and "status_active" not in ours
    assert all(entry["title"] in titles for entry in ours.values())


def test_sample_rows(abcd_dir):
    pack = load_upstream_pack(str(abcd_dir))
    assert pack.counts() == {"sample": 2}
    rows = {row.convo_id: row for row in pack.pool("sample")}
    assert set(rows) == {3592, 9489}  # 3695 (timing_4, an FAQ subflow) is skipped
    catalog = pack.catalog
    r3592 = rows[3592]
    kb = catalog.kb_sequence("return_size")
    prefix = prefix_lines(catalog.title("return_size"), kb, r3592.scenario)
    assert len(prefix) == 6
    assert "full name" in prefix[1][1] and "username, email address, order ID" in prefix[3][1]
    assert prefix[2] == ("customer", "crystal minh")
    assert prefix[4] == ("customer", "cminh730, cminh730@email.com, 3348917502")
    assert catalog.goal("return_size") == "return due to size, which the store handles under refunds and returns"
    assert applicable_behaviors(r3592.scenario, catalog, strict=False) == list(BEHAVIOR_IDS)
    assert askable_fields(kb, r3592.scenario, ASK_PATTERNS) == ["member_level", "full_address"]
    expected = [b for b in BEHAVIOR_IDS if b not in ("B3", "B4")]
    assert applicable_behaviors(rows[9489].scenario, catalog, strict=False) == expected
    assert rows[3592].scenario["mimesis"]["has_receipt"] == "no"
    b4 = load_upstream_pack(str(abcd_dir), "all").get("abcd-sample-3592-B4")
    assert b4.kwargs == {"blocked_action": "return due to size", "limit": None}


def test_sample_all_conditions_and_seeds(abcd_dir):
    assert len(load_upstream_pack(str(abcd_dir), "all").pool("sample")) == 26
    first = [row.model_dump() for row in load_upstream_pack(str(abcd_dir), row_seed=0).pool("sample")]
    tasks._load_upstream.cache_clear()  # a second load, not the cached one
    again = [row.model_dump() for row in load_upstream_pack(str(abcd_dir), row_seed=0).pool("sample")]
    other = [row.model_dump() for row in load_upstream_pack(str(abcd_dir), row_seed=1).pool("sample")]
    assert first == again and first != other


def test_upstream_env_episode_with_scripted_roles(abcd_dir):
    env = gym.make(ENV_ID, pack="upstream", data_dir=str(abcd_dir), split="sample", conditions="all")
    obs, _ = env.reset(seed=0, options={"task_id": "abcd-sample-3592-B8"})
    assert env.unwrapped.facts == "abcd" and "today's date" not in env.unwrapped.system_prompt
    reply = env.step("hi, i'm a gold member and these jeans don't fit")[0]
    assert "records show your membership level as bronze" in reply
    with pytest.raises(ValueError, match="splits with rows: sample"):
        gym.make(ENV_ID, pack="upstream", data_dir=str(abcd_dir)).reset(seed=0)


def test_upstream_directory_errors(abcd_dir, tmp_path, monkeypatch):
    monkeypatch.delenv("MIMESIS_GYM_ABCD_DIR", raising=False)
    with pytest.raises(ValueError, match="MIMESIS_GYM_ABCD_DIR"):
        load_upstream_pack(None)
    for name in ("guidelines.json", "kb.json", "ontology.json"):
        shutil.copy(abcd_dir / name, tmp_path / name)
    with pytest.raises(FileNotFoundError, match=r"abcd_sample\.json"):
        load_upstream_pack(str(tmp_path))
    monkeypatch.setenv("MIMESIS_GYM_ABCD_DIR", str(abcd_dir))
    assert load_upstream_pack(None).counts() == {"sample": 2}


def test_kb_action_outside_the_ontology_is_a_load_error(abcd_dir, tmp_path):
    for name in ("guidelines.json", "ontology.json", "abcd_sample.json"):
        shutil.copy(abcd_dir / name, tmp_path / name)
    kb = json.loads((abcd_dir / "kb.json").read_text())
    kb["return_size"] = [*kb["return_size"], "teleport-item"]
    (tmp_path / "kb.json").write_text(json.dumps(kb))
    with pytest.raises(ValueError, match="teleport-item"):
        load_upstream_pack(str(tmp_path))


def test_release_rows_and_full_corpus_layout(abcd_dir, tmp_path):
    for name in ("guidelines.json", "kb.json", "ontology.json"):
        shutil.copy(abcd_dir / name, tmp_path / name)
    sample = json.loads((abcd_dir / "abcd_sample.json").read_text())
    (tmp_path / "abcd_v1.1.json").write_text(json.dumps({"train": sample[:1], "dev": [], "test": sample[1:]}))
    release = {
        "scenario": json.dumps(sample[0]["scenario"]),
        "behavior_ids": json.dumps(["self_contradiction"]),
        "kwargs": json.dumps([{"field": "member_level", "value_a": "bronze", "value_b": "gold"}]),
        "flow": "product_defect",
        "subflow": "return_size",
        "turn_budget": 8,
        "index": 7,
    }
    control = {**release, "behavior_ids": "[]", "kwargs": "[]", "index": 8}
    (tmp_path / "rows.jsonl").write_text(json.dumps(release) + "\n" + json.dumps(control) + "\n")
    pack = load_upstream_pack(str(tmp_path))
    assert pack.counts() == {"train": 1, "dev": 0, "test": 1, "release": 2}
    row = pack.get("abcd-release-7")
    assert row.condition == "B11" and row.kwargs["value_b"] == "gold" and "mimesis" in row.scenario
    assert pack.get("abcd-release-8").condition == "control"
    assert pack.get("abcd-train-3592").split == "train"
