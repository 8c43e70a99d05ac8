"""ABCDBehavior's behavior registry, parameters and applicability (docs/envs/abcd.md, "Behaviors")."""

import copy
import random

import pytest

from mimesis_gym.behaviors import registry
from mimesis_gym.envs.abcd.behaviors import (
    BEHAVIOR_IDS,
    applicable,
    behaviors,
    by_name,
    derive_kwargs,
    parameter_sentence,
    render_directive,
)
from mimesis_gym.envs.abcd.data.build_original import main as build_main
from mimesis_gym.envs.abcd.tasks import ORIGINAL_DIR, load_original_pack


@pytest.fixture(scope="module")
def pack():
    return load_original_pack()


def scenario(pack, subflow):
    return copy.deepcopy(next(r for r in pack.pool("test") if r.subflow == subflow).scenario)


def test_registry_contents():
    entries = behaviors()
    assert tuple(entries) == BEHAVIOR_IDS
    assert [b for b, e in entries.items() if e.judge_sees_thoughts] == ["B1", "B5"]
    assert {b: e.min_turn for b, e in entries.items() if e.min_turn != 1} == {
        "B1": 2, "B2": 2, "B4": 2, "B5": 2, "B6": 2, "B9": 2, "B10": 3,
    }  # fmt: skip
    assert entries["B2"].confusable_with == ("B7", "B6", "B12")
    assert by_name("self_contradiction").id == "B11"


def test_registry_validation_rejects_bad_entries():
    good = [
        {**vars(e), "params": list(e.params), "confusable_with": list(e.confusable_with)} for e in behaviors().values()
    ]
    with pytest.raises(ValueError, match="invalid confusable"):
        registry._validate([*good[:-1], {**good[-1], "confusable_with": ["B13"]}])
    with pytest.raises(ValueError, match="unique"):
        registry._validate([*good[:-1], {**good[-1], "name": good[0]["name"]}])
    with pytest.raises(ValueError, match="B1…B13"):
        registry._validate(good[:-1])


def test_false_values_differ_from_the_truth(pack):
    base = scenario(pack, "return_size")
    seen = set()
    for seed in range(60):
        kwargs = derive_kwargs("B8", base, pack.catalog, random.Random(seed), strict=True)
        seen.add(kwargs["field"])
        assert kwargs["false_value"] != kwargs["true_value"]
        if kwargs["field"] == "order_id":
            true = kwargs["true_value"]
            assert kwargs["false_value"] == true[:-1] + str((int(true[-1]) + 1) % 10)
        if kwargs["field"] == "purchase_date":
            assert kwargs["false_value"] == "last week"
        b11 = derive_kwargs("B11", base, pack.catalog, random.Random(seed), strict=True)
        assert b11["value_a"] == base["order"].get(b11["field"], base["personal"].get(b11["field"]))
        assert b11["value_a"] != b11["value_b"]
    assert seen == {"member_level", "purchase_date", "payment_method", "order_id", "packaging"}


def test_b8_skips_a_recent_purchase_date(pack):
    base = scenario(pack, "return_size")
    base["mimesis"]["today"] = base["order"]["purchase_date"]
    fields = {derive_kwargs("B8", base, pack.catalog, random.Random(s), strict=True)["field"] for s in range(40)}
    assert "purchase_date" not in fields


def test_b6_excludes_the_rows_own_topic(pack):
    base = scenario(pack, "recover_password")
    topics = {derive_kwargs("B6", base, pack.catalog, random.Random(s), strict=True)["target_topic"] for s in range(40)}
    assert "a password reset" not in topics and len(topics) == 4


def test_applicability(pack):
    catalog = pack.catalog
    assert not applicable("B3", scenario(pack, "cost"), catalog, strict=True)  # nothing askable after the prefix
    assert applicable("B3", scenario(pack, "return_size"), catalog, strict=True)
    assert not applicable("B4", scenario(pack, "slow_speed"), catalog, strict=True)  # no rule
    gold = scenario(pack, "return_size")
    gold["personal"]["member_level"] = "gold"
    assert not applicable("B4", gold, catalog, strict=True)  # gold always qualifies
    assert applicable("B4", gold, catalog, strict=False)


def test_directives(pack):
    row = next(r for r in pack.pool("test") if r.condition == "B3")
    text = render_directive("B3", row.kwargs)
    assert text.startswith(behaviors()["B3"].directive) and "Do not give your" in text
    assert parameter_sentence("B7", {}) == "" and render_directive("B7", {}) == behaviors()["B7"].directive
    assert "'gold'" in parameter_sentence(
        "B8", {"field": "member_level", "true_value": "bronze", "false_value": "gold"}
    )


def test_build_check_cli(capsys):
    assert build_main(["--check", "--out", str(ORIGINAL_DIR.parent)]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
