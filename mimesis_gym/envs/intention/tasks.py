"""IntentionGym tasks: schema, the shipped pack and the UserRL loader (docs/envs/intention.md, "Task data")."""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, field_validator

from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs._userrl import create_kwargs, parquet_rows, prompt_pair, read_json, userrl_data_root

__all__ = [
    "IMPORTANCE_LABELS",
    "IMPORTANCE_WEIGHTS",
    "Detail",
    "IntentionTask",
    "load_original_pack",
    "load_upstream_pack",
]

DATA_DIR = Path(__file__).parent / "data"
USERRL_FILES = {
    "train": Path("gyms/IntentionGym/intentiongym/data/all_intentions_train.json"),
    "test": Path("gyms/IntentionGym/intentiongym/data/all_intentions_test.json"),
}
USERRL_PARQUETS = {
    "train": Path("data/intention_multiturn/train.parquet"),
    "test": Path("data/intention_multiturn/test.parquet"),
}
USERRL_NEEDS = (*USERRL_FILES.values(), *USERRL_PARQUETS.values())
"""The files ``load_upstream_pack`` reads under a UserRL root."""
IMPORTANCE_WEIGHTS = {3: 1.0, 2: 0.7, 1: 0.4}
IMPORTANCE_LABELS = {3: "HIGH", 2: "MEDIUM", 1: "LOW"}


class Detail(BaseModel):
    """A missing detail of the vague request; ``keywords`` drive the scripted roles (original pack)."""

    model_config = ConfigDict(frozen=True)

    description: str
    importance: str
    inquiry: str = ""
    options: tuple[str, ...] = ()
    keywords: tuple[str, ...] | None = None

    @field_validator("importance")
    @classmethod
    def _importance(cls, value: str) -> str:
        if int(value) not in IMPORTANCE_WEIGHTS:
            raise ValueError(f"importance must be 1, 2 or 3, got {value!r}")
        return value

    @property
    def level(self) -> int:
        return int(self.importance)

    @property
    def weight(self) -> float:
        return IMPORTANCE_WEIGHTS[self.level]

    def public(self) -> dict[str, object]:
        return {
            "description": self.description,
            "importance": self.importance,
            "inquiry": self.inquiry,
            "options": list(self.options),
        }


class IntentionTask(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    category: str = ""
    task: str
    missing_details: tuple[Detail, ...]
    system_prompt: str | None = None
    opening: str | None = None

    @property
    def scripted_ready(self) -> bool:
        return all(detail.keywords is not None for detail in self.missing_details)

    @property
    def max_score(self) -> float:
        total = 0.0
        for detail in self.missing_details:
            total += detail.weight
        return total

    def record(self) -> dict[str, object]:
        """The task as UserRL's record (for ``prompt_set="userrl"`` style prompts)."""
        return {
            "id": self.id,
            "category": self.category,
            "task": self.task,
            "missing_details": [detail.public() for detail in self.missing_details],
        }


@cache
def load_original_pack() -> TaskPack[IntentionTask]:
    """The shipped pack: 120 train / 30 test tasks and the demo fixture."""
    return TaskPack.from_jsonl("intention/original", DATA_DIR, IntentionTask.model_validate)


def load_upstream_pack(data_dir: str | None) -> TaskPack[IntentionTask]:
    """UserRL's 1107 records: parquet rows in train (380) / test (40), the rest in split "other"."""
    return _load_upstream(userrl_data_root(data_dir, "IntentionGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TaskPack[IntentionTask]:
    records: dict[str, dict] = {}
    for relative in USERRL_FILES.values():
        for record in read_json(root / relative):
            for key in ("id", "task", "missing_details"):
                if key not in record:
                    raise ValueError(f"UserRL intention record without {key!r}: {str(record)[:80]}")
            records.setdefault(record["id"], record)
    prompts: dict[str, tuple[str, str, str]] = {}
    for split, relative in USERRL_PARQUETS.items():
        for row in parquet_rows(root / relative):
            system, opening = prompt_pair(row)
            prompts[create_kwargs(row)["id"]] = (split, system, opening)
    splits: dict[str, list[IntentionTask]] = {"train": [], "test": [], "other": []}
    for task_id, record in records.items():
        split, system, opening = prompts.get(task_id, ("other", None, None))
        splits[split].append(
            IntentionTask(
                id=task_id,
                split=split,
                category=record.get("category", ""),
                task=record["task"],
                missing_details=tuple(
                    Detail(
                        description=d["description"],
                        importance=str(d["importance"]),
                        inquiry=d.get("inquiry", ""),
                        options=tuple(d.get("options", ())),
                    )
                    for d in record["missing_details"]
                ),
                system_prompt=system,
                opening=opening,
            )
        )
    # parquet order, as the paper's runs drew them
    for split in ("train", "test"):
        order = {task_id: index for index, (task_id, value) in enumerate(prompts.items()) if value[0] == split}
        splits[split].sort(key=lambda task: order[task.id])
    return TaskPack("intention/upstream", splits)
