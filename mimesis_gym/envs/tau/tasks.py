"""TauGym task packs: the shipped pack and the upstream loader (docs/envs/tau.md, Task data).

The record types live in :mod:`~mimesis_gym.envs.tau.schema`.

Both packs share one model: per domain a pristine :class:`~mimesis_gym.envs.tau.db.Database` and
tasks in UserRL's record format (``{id, obs, info: {task: {user_id, actions, instruction,
outputs}}}``). Everything is parsed once per process; the gold state of a task (its gold actions
replayed on a fresh copy, transfers skipped) and its ``user_facts`` are computed on first use and
cached on the pack. A pack pickles as the recipe to reload it, so envs pickle cheaply.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from mimesis_gym.core.tasks import UPSTREAM_DATA_FIX, TaskPack, UpstreamDataError, resolve_upstream_dir
from mimesis_gym.envs.tau.db import Database, EpisodeDB
from mimesis_gym.envs.tau.facts import derive_user_facts
from mimesis_gym.envs.tau.schema import GoldAction, TauTask, UserFacts
from mimesis_gym.envs.tau.toolkit import TRANSFER_TOOL, Tool, call_tool

__all__ = [
    "DOMAIN_TABLES",
    "GoldAction",
    "GoldReplay",
    "TauPack",
    "TauTask",
    "UserFacts",
    "domain_tools",
    "load_original_pack",
    "load_pack",
    "load_upstream_from",
    "load_upstream_pack",
    "replay",
]

DATA_DIR = Path(__file__).parent / "data" / "original"
ENV_VAR = "MIMESIS_GYM_TAU_DIR"
USERRL_ENV_VAR = "MIMESIS_GYM_USERRL_DIR"
DOMAIN_TABLES: dict[str, tuple[str, ...]] = {
    "retail": ("users", "orders", "products"),
    "airline": ("users", "reservations", "flights"),
}
DOMAIN_DIRS = ("tau-bench/{domain}", "{domain}", "tau_bench/envs/{domain}")
USERRL_TASK_DIR = "gyms/TauGym/taugym/data"
"""Where a UserRL checkout holds the TauGym task files."""
TASK_DIRS = (f"userrl/{USERRL_TASK_DIR}", USERRL_TASK_DIR, ".")
TASK_FILES = {"train": "tau_train.json", "test": "tau_test.json"}
PARQUET_DIRS = ("userrl/data/tau_multiturn", "data/tau_multiturn")
ORIGINAL_TASK_FILES = {"train": "tasks_train.json", "test": "tasks_test.json", "demo": "tasks_demo.json"}
_TRAILING_NUMBER = re.compile(r"(\d+)$")


_TOOLS: dict[str, dict[str, Tool]] = {}


def domain_tools(domain: str) -> dict[str, Tool]:
    """The tools of ``domain`` by name (``retail`` or ``airline``)."""
    tools = _TOOLS.get(domain)
    if tools is None:
        from mimesis_gym.envs.tau.tools_airline import AIRLINE_TOOLS
        from mimesis_gym.envs.tau.tools_retail import RETAIL_TOOLS

        _TOOLS.update(retail=RETAIL_TOOLS, airline=AIRLINE_TOOLS)
        tools = _TOOLS[domain]
    return tools


def replay(db: EpisodeDB, actions: Sequence[GoldAction], tools: Mapping[str, Tool]) -> list[str]:
    """Run gold actions on ``db`` (transfers and names that are not tools skipped); their results."""
    results = []
    for action in actions:
        if action.name == TRANSFER_TOOL or action.name not in tools:
            continue
        results.append(call_tool(tools, db, action.name, action.kwargs))
    return results


@dataclass
class GoldReplay:
    """A task's gold state: the episode view after its gold actions (never mutated) and the results."""

    db: EpisodeDB
    results: tuple[str, ...]
    _digest: str | None = field(default=None, repr=False)
    _texts: dict[tuple[str, str], str] | None = field(default=None, repr=False)

    @property
    def touched_texts(self) -> dict[tuple[str, str], str]:
        """Canonical strings of the records the gold actions changed (for cheap comparisons)."""
        if self._texts is None:
            self._texts = self.db.touched_texts()
        return self._texts

    def reached_by(self, db: EpisodeDB) -> bool:
        """Whether ``db`` (an episode over the same pristine tables) equals the gold state."""
        if db.base is not self.db.base:
            raise ValueError("cannot compare episode databases over different pristine tables")
        return db.matches(self.touched_texts)

    @property
    def digest(self) -> str:
        if self._digest is None:
            self._digest = self.db.digest()
        return self._digest


class TauPack(TaskPack[TauTask]):
    """Tasks, the pristine database and the policy text of each domain, and per-task caches."""

    def __init__(
        self,
        name: str,
        splits: Mapping[str, Sequence[TauTask]],
        databases: Mapping[str, Database],
        policies: Mapping[str, str | None],
        recipe: tuple[str | None, ...],
    ) -> None:
        super().__init__(name, splits)
        self.databases = dict(databases)
        self.policies = dict(policies)
        self.recipe = recipe
        self._gold: dict[str, GoldReplay] = {}
        self._facts: dict[str, UserFacts] = {}
        self._calls: dict[str, tuple[GoldAction, ...]] = {}
        self._pools: dict[tuple[str, str | None], tuple[TauTask, ...]] = {}

    def __reduce__(self) -> tuple[Any, ...]:
        return (load_pack, self.recipe)

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(self.databases)

    def domain_pool(self, split: str, domain: str | None) -> tuple[TauTask, ...]:
        """The split's tasks of ``domain`` (all domains for ``None``), file order; errors name the choices."""
        key = (split, domain)
        pool = self._pools.get(key)
        if pool is None:
            tasks = self.pool(split)
            pool = tasks if domain is None else tuple(task for task in tasks if task.domain == domain)
            if not pool:
                raise ValueError(f"split {split!r} of pack {self.name!r} has no {domain} tasks")
            self._pools[key] = pool
        return pool

    def gold(self, task: TauTask) -> GoldReplay:
        """The gold state of ``task`` (cached per pack and task)."""
        replayed = self._gold.get(task.id)
        if replayed is None:
            db = EpisodeDB(self.databases[task.domain])
            results = replay(db, task.actions, domain_tools(task.domain))
            replayed = self._gold[task.id] = GoldReplay(db, tuple(results))
        return replayed

    def gold_calls(self, task: TauTask) -> tuple[GoldAction, ...]:
        """The task's gold actions without transfers: what the oracle sends with ``[answer]``."""
        calls = self._calls.get(task.id)
        if calls is None:
            calls = self._calls[task.id] = tuple(a for a in task.actions if a.name != TRANSFER_TOOL)
        return calls

    def user_facts(self, task: TauTask) -> UserFacts:
        """The task's stored ``user_facts``, or facts derived from its gold actions (cached)."""
        if task.user_facts is not None:
            return task.user_facts
        facts = self._facts.get(task.id)
        if facts is None:
            facts = self._facts[task.id] = derive_user_facts(task, self.databases[task.domain])
        return facts


def load_pack(kind: str, *roots: str | None) -> TauPack:
    """The pack named by a recipe: ``("original", None)`` or ``("upstream", "<tau root>", "<task root>", ...)``."""
    if kind == "original":
        return load_original_pack()
    tau_root, *task_roots = (Path(root) for root in roots if root is not None)
    return _load_upstream(tau_root, tuple(task_roots))


def _restore_database(kind: str, *rest: str | None) -> Database:
    *roots, domain = rest
    return load_pack(kind, *roots).databases[domain]  # type: ignore[index]


def _read_json(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _read_tables(directory: Path, domain: str, recipe: tuple[str | None, ...]) -> Database:
    tables = {}
    for table in DOMAIN_TABLES[domain]:
        path = directory / f"{table}.json"
        if not path.is_file():
            raise UpstreamDataError(f"TauGym {domain} table not found: {path}; {UPSTREAM_DATA_FIX}")
        tables[table] = _read_json(path)
    return Database(domain, tables, source=(*recipe, domain), restore=_restore_database)


# ---------------------------------------------------------------------------------------------
# The shipped pack


@cache
def load_original_pack() -> TauPack:
    """The shipped retail pack: 40 train / 20 test tasks, the demo fixtures, the invented store."""
    recipe: tuple[str | None, ...] = ("original", None)
    database = _read_tables(DATA_DIR / "retail", "retail", recipe)
    splits = {
        split: [TauTask.from_record(record, split) for record in _read_json(DATA_DIR / name)]
        for split, name in ORIGINAL_TASK_FILES.items()
    }
    policy = (DATA_DIR / "retail" / "policy.md").read_text(encoding="utf-8")
    return TauPack("tau/original", splits, {"retail": database}, {"retail": policy}, recipe)


# ---------------------------------------------------------------------------------------------
# The upstream files (tau-bench databases + UserRL task files)


_ROOTS: dict[tuple[str | None, ...], tuple[Path, tuple[Path, ...]]] = {}
MISSING_ROOT = (
    "pack='upstream' for TauGym needs tau-bench's databases and UserRL's TauGym tasks: pass data_dir=<a folder "
    f"holding both> or set ${ENV_VAR} to a tau-bench checkout and ${USERRL_ENV_VAR} to a UserRL checkout "
    "(mimesis-gym data pull tau-bench|userrl --to DIR gets them)"
)


def load_upstream_pack(data_dir: str | None) -> TauPack:
    """tau-bench's retail and airline databases with UserRL's 665 TauGym tasks.

    Where the files come from: ``data_dir`` if given (one folder holding both, e.g. ``tau-bench/`` and
    ``userrl/`` side by side), else ``$MIMESIS_GYM_TAU_DIR`` (a tau-bench checkout, or such a folder).
    UserRL's task files and parquets are looked for in ``$MIMESIS_GYM_USERRL_DIR`` (a UserRL checkout)
    when it is set, first without ``data_dir`` and after it with one. Missing files raise an error
    naming the paths tried and the variable to set. The roots are resolved once per ``(data_dir,
    variables)`` and process, so constructing an env makes no file-system calls after the first load.
    """
    tau_variable, userrl_variable = os.environ.get(ENV_VAR), os.environ.get(USERRL_ENV_VAR)
    key = (None if data_dir is None else str(data_dir), None if data_dir else tau_variable, userrl_variable)
    roots = _ROOTS.get(key)
    if roots is None:
        if data_dir is None and not tau_variable:
            raise ValueError(MISSING_ROOT)
        tau_root = resolve_upstream_dir(data_dir, ENV_VAR).resolve()
        userrl = [resolve_upstream_dir(None, USERRL_ENV_VAR).resolve()] if userrl_variable else []
        task_roots = [tau_root, *userrl] if data_dir is not None else [*userrl, tau_root]
        roots = _ROOTS[key] = (tau_root, tuple(dict.fromkeys(task_roots)))
    return _load_upstream(*roots)


def load_upstream_from(tau_root: Path, task_roots: Sequence[Path]) -> TauPack:
    """The upstream pack from explicit roots: tau-bench's files under ``tau_root``, UserRL's TauGym task
    files and parquets under the first of ``task_roots`` that holds them (``mimesis-gym data check``)."""
    return _load_upstream(tau_root.resolve(), tuple(dict.fromkeys(root.resolve() for root in task_roots)))


def _first_existing(candidates: Sequence[Path], what: str, fix: str) -> Path:
    for path in candidates:
        if path.exists():
            return path
    tried = ", ".join(str(path) for path in candidates)
    raise UpstreamDataError(f"TauGym {what} not found; tried {tried}; {fix}")


@lru_cache(maxsize=8)
def _load_upstream(tau_root: Path, task_roots: tuple[Path, ...]) -> TauPack:
    recipe = ("upstream", str(tau_root), *(str(root) for root in task_roots))
    databases: dict[str, Database] = {}
    policies: dict[str, str | None] = {}
    for domain in DOMAIN_TABLES:
        folder = _first_existing(
            [tau_root / pattern.format(domain=domain) for pattern in DOMAIN_DIRS],
            f"{domain} folder",
            f"set ${ENV_VAR} (or data_dir) to a tau-bench checkout: mimesis-gym data pull tau-bench --to DIR",
        )
        databases[domain] = _read_tables(folder / "data", domain, recipe)
        wiki = folder / "wiki.md"
        policies[domain] = wiki.read_text(encoding="utf-8") if wiki.is_file() else None
    task_dir = _first_existing(
        [root / directory / TASK_FILES["test"] for root in task_roots for directory in TASK_DIRS],
        "task file tau_test.json",
        f"set ${USERRL_ENV_VAR} to a UserRL checkout: mimesis-gym data pull userrl --to DIR",
    ).parent
    prompts = _parquet_prompts(task_roots)
    splits: dict[str, list[TauTask]] = {}
    for split, name in TASK_FILES.items():
        path = task_dir / name
        if not path.is_file():
            raise UpstreamDataError(f"TauGym task file not found: {path}; {UPSTREAM_DATA_FIX}")
        records = _read_json(path)
        _check_ids(records, path)
        splits[split] = []
        for record in records:
            system, opening = prompts.get(record.get("id"), (None, None))
            splits[split].append(TauTask.from_record(record, split, system_prompt=system, opening_prompt=opening))
    return TauPack("tau/upstream", splits, databases, policies, recipe)


def _check_ids(records: list[dict[str, Any]], path: Path) -> None:
    """Each id's trailing number is the record's position among its domain's records in the file."""
    seen: dict[str, int] = {}
    for record in records:
        task_id = str(record.get("id", ""))
        domain = "airline" if "airline" in task_id else "retail"
        position = seen.get(domain, 0)
        seen[domain] = position + 1
        match = _TRAILING_NUMBER.search(task_id)
        if match is None or int(match.group(1)) != position:
            raise ValueError(
                f"{path}: task id {task_id!r} should end with {position} (its position among {domain} records)"
            )


def _parquet_prompts(roots: Sequence[Path]) -> dict[str, tuple[str, str]]:
    """``reward_model.id`` → (system prompt, opening message) from UserRL's parquets, if present."""
    candidates = [root / d for root in roots for d in PARQUET_DIRS]
    directory = next((path for path in candidates if (path / "test.parquet").is_file()), None)
    if directory is None:
        return {}
    from mimesis_gym.envs._userrl import parquet_rows, prompt_pair

    prompts: dict[str, tuple[str, str]] = {}
    for split in ("train", "test"):
        path = directory / f"{split}.parquet"
        if path.is_file():
            for row in parquet_rows(path):
                prompts[row["reward_model"]["id"]] = prompt_pair(row)
    return prompts
