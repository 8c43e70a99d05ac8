"""TelepathyGym tasks: schema, the shipped pack with its vocabularies, and the UserRL loader.

See docs/envs/telepathy.md, "Task data".
"""

from __future__ import annotations

import json
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.tasks import TaskPack, read_jsonl
from mimesis_gym.envs._userrl import ParquetRow, parquet_splits, read_json, userrl_data_root

__all__ = ["TelepathyPack", "TelepathyTask", "Vocabulary", "load_original_pack", "load_upstream_pack"]

DATA_DIR = Path(__file__).parent / "data"
USERRL_ENTITIES = Path("gyms/TelepathyGym/telepathygym/data/all_entities_refined.json")
USERRL_PARQUETS = {
    "train": Path("data/telepathy_multiturn/train.parquet"),
    "test": Path("data/telepathy_multiturn/test.parquet"),
}
USERRL_NEEDS = (USERRL_ENTITIES, *USERRL_PARQUETS.values())
"""The files ``load_upstream_pack`` reads under a UserRL root."""
COLOURS = (
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
    "black",
    "white",
    "grey",
    "gray",
    "gold",
    "silver",
)


class TelepathyTask(BaseModel):
    """An entity to guess. The scripted answerer's fields (hypernyms, colours, attributes) exist only
    in the original pack."""

    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    title: str
    description: str
    goal: str = ""
    target_entity: str
    category: str
    aliases: tuple[str, ...] = ()
    hypernyms: tuple[str, ...] | None = None
    colors: tuple[str, ...] | None = None
    attributes: dict[str, bool | None] | None = None
    system_prompt: str | None = None
    opening: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The title and aliases (the title first)."""
        return (self.title, *[alias for alias in self.aliases if alias != self.title])


class Vocabulary(BaseModel):
    """The property patterns, category nouns and colours the scripted answerer recognises."""

    model_config = ConfigDict(frozen=True)

    properties: tuple[tuple[str, tuple[str, ...]], ...]
    nouns: tuple[str, ...]
    colours: tuple[str, ...] = COLOURS


class TelepathyPack(TaskPack[TelepathyTask]):
    """Lookup by id or by title, case-insensitively (as UserRL did)."""

    def __init__(self, name: str, splits: dict[str, list[TelepathyTask]], vocabulary: Vocabulary | None) -> None:
        super().__init__(name, splits, lookup_keys=lambda task: (task.id, task.title))
        self.vocabulary = vocabulary


def _vocabulary() -> Vocabulary:
    raw: Any = json.loads((DATA_DIR / "attributes.json").read_text(encoding="utf-8"))
    properties = raw["properties"] if isinstance(raw, dict) else raw
    colours = tuple(raw.get("colours", COLOURS)) if isinstance(raw, dict) else COLOURS
    nouns = json.loads((DATA_DIR / "nouns.json").read_text(encoding="utf-8"))
    return Vocabulary(
        properties=tuple((entry["name"], tuple(entry["patterns"])) for entry in properties),
        nouns=tuple(nouns),
        colours=colours,
    )


@cache
def load_original_pack() -> TelepathyPack:
    """The shipped pack: 160 train / 40 test entities, the demo fixture and the vocabularies."""
    splits = {
        split: read_jsonl(DATA_DIR / f"{split}.jsonl", TelepathyTask.model_validate)
        for split in ("train", "test", "demo")
    }
    return TelepathyPack("telepathy/original", splits, _vocabulary())


def load_upstream_pack(data_dir: str | None) -> TelepathyPack:
    """UserRL's 401 entities split by the parquets (360 / 41)."""
    return _load_upstream(userrl_data_root(data_dir, "TelepathyGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TelepathyPack:
    records = {record["title"].lower(): record for record in read_json(root / USERRL_ENTITIES)}
    splits = parquet_splits(
        root, USERRL_PARQUETS, lambda r: _upstream_task(records[r.row["reward_model"]["title"].lower()], r)
    )
    return TelepathyPack("telepathy/upstream", splits, None)


def _upstream_task(record: dict[str, Any], row: ParquetRow) -> TelepathyTask:
    return TelepathyTask(
        id=record["id"],
        split=row.split,
        title=record["title"],
        description=record["description"],
        goal=record.get("goal", ""),
        target_entity=record["target_entity"],
        category=record["category"],
        aliases=(record["title"],),
        system_prompt=row.system,
        opening=row.opening,
    )
