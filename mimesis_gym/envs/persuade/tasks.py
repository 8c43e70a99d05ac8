"""PersuadeGym tasks: schema, the shipped pack and the UserRL loader (docs/envs/persuade.md, "Task data")."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs._userrl import ParquetRow, parquet_splits, read_json, userrl_data_root

__all__ = ["Counterpoint", "PersuadeTask", "load_original_pack", "load_upstream_pack"]

DATA_DIR = Path(__file__).parent / "data"
USERRL_PARQUETS = {
    "train": Path("data/persuasion_multiturn/train.parquet"),
    "test": Path("data/persuasion_multiturn/test.parquet"),
}
USERRL_STATEMENTS = Path("gyms/PersuadeGym/persuadegym/data/all_statements_refined.json")
USERRL_NEEDS = tuple(USERRL_PARQUETS.values())
"""The files ``load_upstream_pack`` reads under a UserRL root."""


class Counterpoint(BaseModel):
    """An objection the scripted persuadee concedes when an argument matches its keywords."""

    model_config = ConfigDict(frozen=True)

    id: str
    summary: str
    keywords: tuple[tuple[str, ...], ...]
    concession: str
    probe: str


class PersuadeTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    domain: str = ""
    claim: str
    argument: str
    counterpoints: tuple[Counterpoint, ...] | None = None
    defenses: tuple[str, ...] | None = None
    system_prompt: str | None = None
    opening: str | None = None

    @property
    def scripted_ready(self) -> bool:
        return self.counterpoints is not None and self.defenses is not None


@cache
def load_original_pack() -> TaskPack[PersuadeTask]:
    """The shipped pack: 48 train / 12 test claims and the demo fixture."""
    return TaskPack.from_jsonl("persuade/original", DATA_DIR, PersuadeTask.model_validate)


def load_upstream_pack(data_dir: str | None) -> TaskPack[PersuadeTask]:
    """UserRL's persuasion parquets (378 / 42 rows), plus any other statement of the optional JSON."""
    return _load_upstream(userrl_data_root(data_dir, "PersuadeGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TaskPack[PersuadeTask]:
    splits = parquet_splits(root, USERRL_PARQUETS, _upstream_task)
    seen = {task.id for tasks in splits.values() for task in tasks}
    statements = root / USERRL_STATEMENTS
    if statements.is_file():
        splits["other"] = [
            PersuadeTask(id=record["id"], split="other", claim=record["claim"], argument=record["argument"])
            for record in read_json(statements)
            if record["id"] not in seen
        ]
    return TaskPack("persuade/upstream", splits)


def _upstream_task(row: ParquetRow) -> PersuadeTask:
    model = row.row["reward_model"]
    return PersuadeTask(
        id=model["id"],
        split=row.split,
        claim=model["claim"],
        argument=model["argument"],
        system_prompt=row.system,
        opening=row.opening,
    )
