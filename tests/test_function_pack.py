"""The shipped original pack of FunctionGym: counts, quality rules, byte-exact regeneration.

See docs/envs/function.md, "Task data".
"""

import collections
import contextlib
import json
from pathlib import Path

import pytest

from mimesis_gym.envs.function.generate import DEFAULT_SEED, DEMO_TASKS, write_pack
from mimesis_gym.envs.function.rules import RuleEvaluationError, parse_rule
from mimesis_gym.envs.function.tasks import load_original_pack

DATA = Path(__file__).resolve().parents[1] / "mimesis_gym/envs/function/data"


def records(split):
    return [json.loads(line) for line in (DATA / f"{split}.jsonl").read_text().splitlines()]


def test_counts_and_ids():
    assert load_original_pack().counts() == {"train": 400, "test": 100, "demo": 3}
    ids = [r["id"] for r in records("train") + records("test")]
    assert ids == [f"fn-{i:04d}" for i in range(1, 501)]
    assert records("demo") == [dict(t) for t in DEMO_TASKS]


def test_schema_of_every_record():
    for split in ("train", "test", "demo"):
        for r in records(split):
            assert list(r) == ["id", "split", "rule", "test_case", "expected_result"]
            assert r["split"] == split
            assert len(r["test_case"]) == 4 and all(isinstance(x, int) and 1 <= x <= 10 for x in r["test_case"])
            assert isinstance(r["expected_result"], float)


def test_quality_rules():
    generated = records("train") + records("test")
    rules = [r["rule"] for r in generated]
    assert len(set(rules + [t["rule"] for t in DEMO_TASKS])) == len(rules) + 3, "duplicate rule strings"
    operator_counts = collections.Counter()
    for r in generated:
        rule = parse_rule(r["rule"])
        assert rule.variable_counts == {"a": 1, "b": 1, "c": 1, "d": 1}, r["id"]
        value = rule.evaluate([float(x) for x in r["test_case"]])
        assert abs(value - round(value)) < 1e-9 and abs(value) <= 5000 and value == r["expected_result"], r["id"]
        operator_counts[rule.operator_count] += 1
        assert rule.operator_count in (3, 4, 5)
    assert 0.50 <= operator_counts[3] / len(generated) <= 0.80
    assert operator_counts[5] / len(generated) <= 0.15
    assert 0.05 <= sum("/" in rule for rule in rules) / len(rules) <= 0.35


def test_rules_are_not_degenerate():
    import numpy as np

    rng = np.random.default_rng(0)
    probes = [[float(x) for x in rng.integers(1, 11, size=4)] for _ in range(40)]
    for r in records("test"):
        rule = parse_rule(r["rule"])
        values = set()
        for probe in probes:
            with contextlib.suppress(RuleEvaluationError):
                values.add(rule.evaluate(probe))
        assert len(values) >= 10, r["id"]


@pytest.mark.slow
def test_regeneration_reproduces_the_committed_files_byte_for_byte(tmp_path):
    manifest = json.loads((DATA / "manifest.json").read_text())
    assert manifest["seed"] == DEFAULT_SEED
    write_pack(tmp_path, manifest["seed"], manifest["counts"]["train"], manifest["counts"]["test"])
    for name in ("train.jsonl", "test.jsonl", "demo.jsonl", "manifest.json"):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
