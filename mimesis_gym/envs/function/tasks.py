"""FunctionGym tasks: schema, the shipped pack, procedural tasks and the UserRL loader.

See docs/envs/function.md, "Task data".

Every loader is cached per process: constructing an env after the first one reads nothing.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, PrivateAttr

from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs._userrl import create_kwargs, parquet_splits, read_json, userrl_data_root
from mimesis_gym.envs.function.generate import generate_task
from mimesis_gym.envs.function.rules import Rule, parse_rule

__all__ = [
    "FunctionTask",
    "ProceduralPack",
    "load_original_pack",
    "load_upstream_pack",
    "procedural_task",
]

DATA_DIR = Path(__file__).parent / "data"
USERRL_FUNCTIONS = Path("gyms/FunctionGym/functiongym/data/functions.json")
USERRL_PARQUETS = {
    "train": Path("data/function_multiturn/train.parquet"),
    "test": Path("data/function_multiturn/test.parquet"),
}
USERRL_NEEDS = (USERRL_FUNCTIONS, *USERRL_PARQUETS.values())
"""The files ``load_upstream_pack`` reads under a UserRL root."""
_PROCEDURAL_ID = re.compile(r"fn-proc-(\d+)")


class FunctionTask(BaseModel):
    """One hidden function and its test case (UserRL's schema plus ``split``).

    ``system_prompt``/``opening`` are set for upstream tasks (the parquet messages verbatim);
    the original pack uses the env's own wording.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    split: str | None = None
    rule: str
    test_case: tuple[int, int, int, int]
    expected_result: float
    system_prompt: str | None = None
    opening: str | None = None
    _compiled: Rule = PrivateAttr()

    def model_post_init(self, context: Any) -> None:
        try:
            self._compiled = parse_rule(self.rule)
        except ValueError as error:
            raise ValueError(f"task {self.id}: {error}") from None

    @property
    def compiled_rule(self) -> Rule:
        return self._compiled


@cache
def load_original_pack() -> TaskPack[FunctionTask]:
    """The shipped pack: 400 train / 100 test / 3 demo tasks."""
    return TaskPack.from_jsonl("function/original", DATA_DIR, FunctionTask.model_validate)


def load_upstream_pack(data_dir: str | None) -> TaskPack[FunctionTask]:
    """UserRL's 538 functions, split by its parquets (460 train / 78 test)."""
    return _load_upstream(userrl_data_root(data_dir, "FunctionGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TaskPack[FunctionTask]:
    by_id = {record["id"]: record for record in read_json(root / USERRL_FUNCTIONS)}
    splits = parquet_splits(
        root,
        USERRL_PARQUETS,
        lambda r: FunctionTask(
            **by_id[create_kwargs(r.row)["id"]], split=r.split, system_prompt=r.system, opening=r.opening
        ),
    )
    return TaskPack("function/upstream", splits)


@lru_cache(maxsize=1024)
def procedural_task(n: int) -> FunctionTask:
    """The procedural task ``fn-proc-<n>``: ``generate_task(default_rng(n))``."""
    task = generate_task(np.random.default_rng(n))
    return FunctionTask(
        id=f"fn-proc-{n}", rule=task.rule, test_case=task.test_case, expected_result=task.expected_result
    )


class ProceduralPack(TaskPack[FunctionTask]):
    """An endless pack: every reset without ``task_id`` generates a fresh task; splits do not apply."""

    def __init__(self) -> None:
        super().__init__("function/procedural", {})

    def counts(self) -> dict[str, int]:
        return {}

    def get(self, task_id: str) -> FunctionTask:
        match = _PROCEDURAL_ID.fullmatch(task_id)
        if match is None:
            raise ValueError(f"unknown task_id {task_id!r}: procedural task ids look like 'fn-proc-12345'")
        return procedural_task(int(match.group(1)))

    def select(self, np_random: np.random.Generator, task_id: str | None, split: str) -> FunctionTask:
        if task_id is not None:
            return self.get(task_id)
        return procedural_task(int(np_random.integers(0, 2**63 - 1)))
