"""TurtleGym tasks: schema, the shipped pack and the UserRL loader (docs/envs/turtle.md, "Task data")."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs._userrl import ParquetRow, parquet_splits, read_json, userrl_data_root

__all__ = ["Criterion", "Fact", "TurtleTask", "load_original_pack", "load_upstream_pack"]

DATA_DIR = Path(__file__).parent / "data"
USERRL_STORIES = Path("gyms/TurtleGym/turtlegym/data/all_stories_refined.json")
USERRL_PARQUETS = {
    "train": Path("data/turtle_multiturn/train.parquet"),
    "test": Path("data/turtle_multiturn/test.parquet"),
}
USERRL_NEEDS = (USERRL_STORIES, *USERRL_PARQUETS.values())
"""The files ``load_upstream_pack`` reads under a UserRL root."""

KeywordSpec = list[list[str]]


class Criterion(BaseModel):
    """One rubric point: its statement, its weight and (original pack) the scripted judge's keywords."""

    model_config = ConfigDict(frozen=True)

    statement: str
    weight: float
    keywords: KeywordSpec | None = None


class Fact(BaseModel):
    """A yes/no fact of the hidden story the scripted oracle answers from (original pack)."""

    model_config = ConfigDict(frozen=True)

    statement: str
    answer: str
    keywords: KeywordSpec
    probe: str


class TurtleTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    title: str
    surface: str
    bottom: str
    criteria: tuple[Criterion, ...]
    facts: tuple[Fact, ...] | None = None
    system_prompt: str | None = None
    opening: str | None = None

    @property
    def scripted_ready(self) -> bool:
        return self.facts is not None and all(c.keywords is not None for c in self.criteria)


def _lookup_keys(task: TurtleTask) -> tuple[str, ...]:
    return (task.id, task.title)  # UserRL tasks are looked up by title, case-insensitively


def _from_record(record: dict) -> TurtleTask:
    return TurtleTask(
        id=record["id"],
        split=record["split"],
        title=record["new_title"],
        surface=record["new_surface"],
        bottom=record["new_bottom"],
        criteria=tuple(
            Criterion(statement=c["statement"], weight=float(c["score"]), keywords=c.get("keywords"))
            for c in record["evaluation"]
        ),
        facts=tuple(Fact(**fact) for fact in record["facts"]),
    )


@cache
def load_original_pack() -> TaskPack[TurtleTask]:
    """The shipped pack: 64 train / 16 test puzzles and the demo fixture."""
    return TaskPack.from_jsonl("turtle/original", DATA_DIR, _from_record, lookup_keys=_lookup_keys)


def load_upstream_pack(data_dir: str | None) -> TaskPack[TurtleTask]:
    """UserRL's 471 stories split by the parquets (423 / 48); ids are titles."""
    return _load_upstream(userrl_data_root(data_dir, "TurtleGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TaskPack[TurtleTask]:
    stories = {
        story["new_title"].lower(): story
        for story in read_json(root / USERRL_STORIES).values()
        if story.get("judgment") == "Yes"
    }
    splits = parquet_splits(
        root, USERRL_PARQUETS, lambda r: _upstream_task(stories[r.row["reward_model"]["title"].lower()], r)
    )
    return TaskPack("turtle/upstream", splits, lookup_keys=_lookup_keys)


def _upstream_task(story: dict[str, Any], row: ParquetRow) -> TurtleTask:
    return TurtleTask(
        id=story["new_title"],
        split=row.split,
        title=story["new_title"],
        surface=story["new_surface"],
        bottom=story["new_bottom"],
        criteria=tuple(Criterion(statement=c["statement"], weight=float(c["score"])) for c in story["evaluation"]),
        system_prompt=row.system,
        opening=row.opening,
    )
