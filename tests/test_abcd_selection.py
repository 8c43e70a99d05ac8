"""ABCDBehavior's ``behaviors=`` filter: parsing, the restricted pack, and every reader of it (reset, the
eval planner, the trainer's task lists, users-report) seeing only the kept rows (docs/envs/abcd.md, "Options")."""

from collections import Counter

import gymnasium as gym
import pytest

from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.tasks import build_env_specs
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.envs.abcd.env import ABCDBehaviorEnv
from mimesis_gym.envs.abcd.selection import parse_behaviors, restrict_pack
from mimesis_gym.envs.abcd.tasks import AbcdTaskPack, load_original_pack
from mimesis_gym.evaluation.runner import EvalConfig, build_plan
from mimesis_gym.evaluation.users_report import UsersReportConfig
from tests.conftest import SHARED_DATA

ENV_ID = "mimesis/ABCDBehavior-v0"


def conditions_of(rows):
    return {row.condition for row in rows}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["B12", "B7"], ("B7", "B12")),  # CONDITIONS order, whatever the order given
        ("b7, B12,B7", ("B7", "B12")),  # one comma-separated string (as --env-arg passes it), any case, repeats
        (["self_contradiction", "control"], ("control", "B11")),  # a behavior's name, and the control rows
        ("B3", ("B3",)),
    ],
)
def test_parse_behaviors_accepts_ids_names_and_comma_strings(value, expected) -> None:
    assert parse_behaviors(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["B14"], "unknown condition 'B14'; use control, B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11, B12, B13"),
        (["B7", "nonsense"], "unknown condition 'nonsense'"),
        ([], "at least one of control, B1"),
        ([7], "each item must be a string"),
        (7, "a list of condition ids or one comma-separated string"),
    ],
)
def test_parse_behaviors_fails_loudly_naming_the_valid_ids(value, message) -> None:
    with pytest.raises(ValueError, match=message):
        parse_behaviors(value)


def test_the_env_keeps_only_the_chosen_conditions_in_every_split() -> None:
    full = load_original_pack()
    env = gym.make(ENV_ID, split="train", behaviors=["B7", "B12"])
    pack = env.unwrapped.task_pack
    assert env.unwrapped.behaviors == ("B7", "B12") and pack.name == "abcd/original[B7,B12]"
    assert pack.catalog is full.catalog
    for split, rows in full.splits.items():
        kept = [row for row in rows if row.condition in ("B7", "B12")]
        assert list(pack.splits[split]) == kept and kept  # same rows, same order, none lost
    drawn = Counter()
    for seed in range(40):
        env.reset(seed=seed)
        drawn[env.unwrapped.row.condition] += 1
    assert set(drawn) == {"B7", "B12"}
    with pytest.raises(ValueError, match="unknown task_id"):  # a row outside the filter cannot be played
        env.reset(options={"task_id": next(row.id for row in full.splits["train"] if row.condition == "B3")})
    assert gym.make(ENV_ID).unwrapped.task_pack is full  # no filter: the shared pack itself


def test_a_bad_behaviors_value_fails_at_construction() -> None:
    with pytest.raises(ValueError, match="unknown condition 'B0'"):
        gym.make(ENV_ID, behaviors="B0")


def test_restricted_packs_are_cached_and_empty_results_fail() -> None:
    full = load_original_pack()
    assert restrict_pack(full, ("B7",)) is restrict_pack(full, ("B7",))
    b7 = [row for row in full.splits["train"] if row.condition == "B7"]
    b12 = [row for row in full.splits["test"] if row.condition == "B12"]
    small = AbcdTaskPack("small", {"train": b7, "test": b12}, full.catalog)
    kept = restrict_pack(small, ("B7",))
    with pytest.raises(ValueError, match=r"split 'test' of pack 'small\[B7\]' has no rows; splits with rows: train"):
        kept.pool("test")
    with pytest.raises(ValueError, match=r"pack 'small' has no rows of B13 in any split"):
        restrict_pack(small, ("B13",))


def test_the_planner_lists_the_same_rows_as_the_env() -> None:
    assert ABCDBehaviorEnv.task_pack_for({"behaviors": "B13"}) is gym.make(ENV_ID, behaviors="B13").unwrapped.task_pack
    config = EvalConfig(envs=["abcd"], agents=["oracle"], env_args={"abcd": {"behaviors": "B13"}})
    units, planned = build_plan(config)
    expected = [row.id for row in load_original_pack().splits["test"] if row.condition == "B13"]
    assert [unit.task_id for unit in units] == expected and planned == {"abcd": len(expected)}
    with pytest.raises(ConfigurationError, match="mimesis/ABCDBehavior-v0: behaviors: unknown condition 'B99'"):
        build_plan(EvalConfig(envs=["abcd"], agents=["oracle"], env_args={"abcd": {"behaviors": ["B99"]}}))


def test_the_trainer_draws_train_rows_of_the_chosen_behaviors_only() -> None:
    config = TrainerConfig.preset("cpu-tiny")
    (spec,) = build_env_specs([(ENV_ID, {"behaviors": ["B12", "B13"]})], config, user_model="scripted")
    by_id = load_original_pack().by_id
    tasks = spec.train_tasks + spec.val_tasks
    expected = [row.id for row in load_original_pack().splits["train"] if row.condition in ("B12", "B13")]
    assert sorted(tasks) == sorted(expected) and spec.val_tasks  # validation rows are held out of them
    assert {by_id[task].condition for task in tasks} == {"B12", "B13"}
    assert spec.eval_factory().unwrapped.behaviors == ("B12", "B13")


def test_users_report_passes_env_args_to_the_run_of_their_env() -> None:
    config = UsersReportConfig(users=["tiny"], envs=["intention", "abcd"], env_args={"abcd": {"behaviors": "B7"}})
    runs = config.eval_configs()
    assert runs["customer"].env_args == {"abcd": {"behaviors": "B7"}} and runs["probe"].env_args == {}
    with pytest.raises(ValueError, match="env_args names 'travel', which is not an env of this report"):
        UsersReportConfig(users=["tiny"], envs=["abcd"], env_args={"travel": {"split": "demo"}})


def test_the_planner_builds_upstream_rows_with_the_envs_conditions() -> None:
    root = SHARED_DATA / "abcd"
    if not (root / "abcd_sample.json").is_file():
        pytest.skip(f"ABCD sample data not found at {root} (expected ../shared/data/abcd)")
    kwargs = {"pack": "upstream", "data_dir": str(root), "conditions": "all"}
    every = ABCDBehaviorEnv.task_pack_for(kwargs)
    assert every is gym.make(ENV_ID, split="sample", **kwargs).unwrapped.task_pack
    sampled = ABCDBehaviorEnv.task_pack_for({"pack": "upstream", "data_dir": str(root)})
    assert len(every.pool("sample")) > len(sampled.pool("sample"))  # a control row plus every applicable behavior
    config = EvalConfig(envs=["abcd"], agents=["oracle"], split="sample", env_args={"abcd": kwargs})
    units, _ = build_plan(config)
    assert [unit.task_id for unit in units] == [row.id for row in every.pool("sample")]
