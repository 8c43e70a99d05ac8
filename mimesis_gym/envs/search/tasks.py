"""SearchGym tasks and corpus: schemas, the shipped pack and the UserRL Bamboogle loader.

See docs/envs/search.md, "Task data".

Every loader is cached per process: constructing an env after the first one reads nothing.
"""

from __future__ import annotations

from functools import cache, lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.tasks import TaskPack, read_jsonl
from mimesis_gym.envs._userrl import create_kwargs, parquet_rows, prompt_pair, read_json, userrl_data_root

__all__ = [
    "CORPUS_PATH",
    "Hop",
    "Passage",
    "SearchTask",
    "load_corpus",
    "load_original_pack",
    "load_upstream_pack",
]

DATA_DIR = Path(__file__).parent / "data"
CORPUS_PATH = DATA_DIR / "corpus.jsonl"
USERRL_QUESTIONS = Path("gyms/SearchGym/searchgym/data/questions.json")
USERRL_PARQUET = Path("data/bamboogle_multiturn/test.parquet")
USERRL_NEEDS = (USERRL_QUESTIONS, USERRL_PARQUET)
"""The files ``load_upstream_pack`` reads under a UserRL root."""


class Hop(BaseModel):
    """One step of a question's chain: a one-relation question, its answer and the passage stating it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    question: str
    answer: str
    passage: str


class SearchTask(BaseModel):
    """A question and its gold answer (UserRL's ``id, question, answer``) plus the pack's extras.

    ``aliases`` are other accepted surface forms; ``support``/``hops``/``template`` exist in the
    original pack only (UserRL tasks have none). ``system_prompt``/``opening`` are set for upstream
    tasks (the parquet messages verbatim); the original pack uses the env's own wording.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    split: str
    question: str
    answer: str
    aliases: tuple[str, ...] = ()
    support: tuple[str, ...] = ()
    hops: tuple[Hop, ...] = ()
    template: str | None = None
    system_prompt: str | None = None
    opening: str | None = None


class Passage(BaseModel):
    """One corpus passage; the BM25 document is ``title + ". " + text``."""

    model_config = ConfigDict(frozen=True)

    id: str = ""
    title: str
    text: str
    entity_type: str | None = None


@cache
def load_original_pack() -> TaskPack[SearchTask]:
    """The shipped pack: 200 train / 50 test questions and the demo fixture ``search-demo-01``."""
    return TaskPack.from_jsonl("search/original", DATA_DIR, SearchTask.model_validate)


@lru_cache(maxsize=8)
def load_corpus(path: Path = CORPUS_PATH) -> tuple[Passage, ...]:
    """The passages of a JSONL corpus (records with ``title`` and ``text``), in file order."""
    passages = tuple(read_jsonl(path, Passage.model_validate))
    if not passages:
        raise ValueError(f"corpus {path} holds no passages")
    return passages


def load_upstream_pack(data_dir: str | None) -> TaskPack[SearchTask]:
    """UserRL's 125 Bamboogle questions, split ``test`` only, in the parquet's row order."""
    return _load_upstream(userrl_data_root(data_dir, "SearchGym", USERRL_NEEDS))


@lru_cache(maxsize=8)
def _load_upstream(root: Path) -> TaskPack[SearchTask]:
    records = {record["id"]: record for record in read_json(root / USERRL_QUESTIONS)}
    tasks = []
    for row in parquet_rows(root / USERRL_PARQUET):
        record = records[create_kwargs(row)["id"]]
        system, opening = prompt_pair(row)
        tasks.append(
            SearchTask(
                id=record["id"],
                split="test",
                question=record["question"],
                answer=str(record["answer"]),
                system_prompt=system,
                opening=opening,
            )
        )
    return TaskPack("search/upstream", {"test": tasks})
