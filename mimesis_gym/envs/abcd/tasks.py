"""ABCDBehavior rows: schema, the shipped original pack and the real ABCD loader (docs/envs/abcd.md, "Data").

A *row* is one episode spec: a scenario, a condition (``B1``…``B13`` or ``control``) and its kwargs.
Both packs come as an :class:`AbcdTaskPack`, a ``TaskPack`` of rows that also carries the pack's
:class:`~mimesis_gym.envs.abcd.policy.StoreCatalog`. Loading is cached per process.
"""

from __future__ import annotations

import copy
import datetime as dt
import gzip
import json
import random
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from mimesis_gym.core.tasks import TaskPack, read_jsonl, require_upstream_files, resolve_upstream_dir
from mimesis_gym.envs.abcd.behaviors import CONDITIONS, applicable_behaviors, behavior, by_name, derive_kwargs
from mimesis_gym.envs.abcd.policy import SHIPPING_STATUSES, StoreCatalog, load_catalog, parse_rules

__all__ = [
    "CONDITION_MODES",
    "DATA_DIR",
    "ORIGINAL_DIR",
    "ORIGINAL_SPLITS",
    "AbcdRow",
    "AbcdTaskPack",
    "build_upstream_rows",
    "derive_sidecar",
    "load_original_pack",
    "load_upstream_pack",
    "read_conversations",
]

DATA_DIR = Path(__file__).parent / "data"
ORIGINAL_DIR = DATA_DIR / "original"
ORIGINAL_SPLITS = ("train", "test", "test_v1", "demo")
"""The original pack's splits, each read from ``rows_{split}.jsonl``."""
CONDITION_MODES = ("sampled", "all")
DEFAULT_TURN_BUDGET = 8
CONVERSATION_FILES = ("abcd_v1.1.json", "abcd_v1.1.json.gz", "abcd_sample.json")
POLICY_FILES = ("guidelines.json", "kb.json", "ontology.json")
"""The policy files of ABCD's data folder that ``pack="upstream"`` reads (beside one of ``CONVERSATION_FILES``)."""
RELEASE_ROWS = "rows.jsonl"
_FALLBACK_PURCHASE_DATE = "2020-01-01"


class AbcdRow(BaseModel):
    """One episode spec. ``id`` is ``row_id``."""

    model_config = ConfigDict(frozen=True)

    row_id: str
    split: str
    pack: str
    condition: str
    behavior: str | None = None
    kwargs: dict[str, Any] = {}
    turn_budget: int = DEFAULT_TURN_BUDGET
    flow: str
    subflow: str
    convo_id: int | str
    scenario: dict[str, Any]

    @model_validator(mode="after")
    def _check(self) -> AbcdRow:
        if self.condition not in CONDITIONS:
            raise ValueError(f"row {self.row_id}: condition {self.condition!r} is not one of {', '.join(CONDITIONS)}")
        if not 1 <= self.turn_budget <= 16:
            raise ValueError(f"row {self.row_id}: turn_budget must be 1–16, got {self.turn_budget}")
        if self.condition == "control":
            if self.behavior is not None:
                raise ValueError(f"row {self.row_id}: a control row has no behavior")
        else:
            entry = behavior(self.condition)
            if self.behavior != entry.name:
                raise ValueError(f"row {self.row_id}: behavior {self.behavior!r} does not match {self.condition}")
            if self.turn_budget < entry.min_turn + 1:
                raise ValueError(
                    f"row {self.row_id}: turn_budget {self.turn_budget} < min_turn + 1 of {self.condition}"
                )
        return self

    @property
    def id(self) -> str:
        return self.row_id

    @property
    def is_control(self) -> bool:
        return self.condition == "control"


class AbcdTaskPack(TaskPack[AbcdRow]):
    """A pack of rows plus the store catalog the rows refer to."""

    def __init__(self, name: str, splits: Mapping[str, Sequence[AbcdRow]], catalog: StoreCatalog) -> None:
        super().__init__(name, splits)
        self.catalog = catalog

    def pool(self, split: str) -> tuple[AbcdRow, ...]:
        """The rows of ``split``; a missing or empty split raises ``ValueError`` naming the splits with rows."""
        if not self.splits.get(split):
            with_rows = ", ".join(name for name, rows in self.splits.items() if rows) or "none"
            raise ValueError(f"split {split!r} of pack {self.name!r} has no rows; splits with rows: {with_rows}")
        return self.splits[split]


def _read_json(path: Path) -> Any:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return json.load(handle)


# ---------------------------------------------------------------- original pack


@cache
def original_catalog() -> StoreCatalog:
    """The original pack's store policy, read from ``data/original/``."""
    return load_catalog(
        ORIGINAL_DIR,
        _read_json(ORIGINAL_DIR / "subflows.json"),
        parse_rules(_read_json(ORIGINAL_DIR / "rules.json"), str(ORIGINAL_DIR / "rules.json")),
        name="original",
        limits_from_rules=True,
        system_info=True,
    )


@cache
def load_original_pack() -> AbcdTaskPack:
    """The shipped pack: ``train`` (780 rows), ``test`` (244: 49 control + 15 per behavior, the paper's
    held-out sizes), ``test_v1`` (the 156 rows that were ``test`` before, ids ``abcd-orig-test-NNNN``,
    kept so runs recorded on them stay readable) and ``demo`` (14). Ids are unique across splits."""
    splits = {
        split: read_jsonl(ORIGINAL_DIR / f"rows_{split}.jsonl", AbcdRow.model_validate) for split in ORIGINAL_SPLITS
    }
    return AbcdTaskPack("abcd/original", splits, original_catalog())


# ---------------------------------------------------------------- real ABCD


@lru_cache(maxsize=8)
def upstream_catalog(root: Path) -> StoreCatalog:
    """Real ABCD guidelines, kb and ontology with the project's subflow map and ABCD-valued rules."""
    return load_catalog(
        root,
        _read_json(DATA_DIR / "abcd_subflows.json"),
        parse_rules(_read_json(DATA_DIR / "rules_abcd.json"), str(DATA_DIR / "rules_abcd.json")),
        name="upstream",
        limits_from_rules=False,
        system_info=False,
    )


def read_conversations(root: Path) -> dict[str, list[dict[str, Any]]]:
    """ABCD conversations by split: ``abcd_v1.1.json`` (or ``.gz``) with train/dev/test, else
    ``abcd_sample.json`` (a list → split ``sample``). ``FileNotFoundError`` lists what was tried."""
    for name in CONVERSATION_FILES:
        path = root / name
        if not path.is_file():
            continue
        data = _read_json(path)
        if isinstance(data, list):
            return {"sample": data}
        if isinstance(data, dict):
            return {split: list(data.get(split) or []) for split in ("train", "dev", "test")}
        raise ValueError(f"{path}: expected a list or a dict of splits, got {type(data).__name__}")
    tried = ", ".join(str(root / name) for name in CONVERSATION_FILES)
    raise FileNotFoundError(f"no ABCD conversations found; tried {tried}")


def derive_sidecar(scenario: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    """Situation facts of a real ABCD scenario, drawn with the row's ``rng``."""
    purchase = str((scenario.get("order") or {}).get("purchase_date") or _FALLBACK_PURCHASE_DATE)
    try:
        start = dt.date.fromisoformat(purchase)
    except ValueError:
        start = dt.date.fromisoformat(_FALLBACK_PURCHASE_DATE)
    today = start + dt.timedelta(days=rng.randint(5, 200))
    return {
        "today": today.isoformat(),
        "shipping_status": rng.choice(SHIPPING_STATUSES),
        "oracle": rng.choice(("yes", "no")),
        "has_receipt": "no",
        "days_waiting": rng.randint(2, 14),
        "days_late": rng.randint(1, 5),
        "disputed_amount": rng.randint(5, 30),
    }


def _row(
    row_id: str,
    split: str,
    condition: str,
    kwargs: dict[str, Any],
    convo_id: Any,
    scenario: dict[str, Any],
    budget: int,
) -> AbcdRow:
    return AbcdRow(
        row_id=row_id,
        split=split,
        pack="upstream",
        condition=condition,
        behavior=None if condition == "control" else behavior(condition).name,
        kwargs=kwargs,
        turn_budget=budget,
        flow=str(scenario.get("flow", "")),
        subflow=str(scenario.get("subflow", "")),
        convo_id=convo_id,
        scenario=scenario,
    )


def build_upstream_rows(
    conversations: Sequence[Mapping[str, Any]], split: str, catalog: StoreCatalog, conditions: str, row_seed: int
) -> list[AbcdRow]:
    """Rows of real ABCD conversations of covered subflows, with
    ``rng = random.Random(f"{row_seed}:{convo_id}")`` drawing sidecar, condition and kwargs in that order."""
    rows: list[AbcdRow] = []
    for convo in conversations:
        scenario = copy.deepcopy(dict(convo.get("scenario") or {}))
        if not catalog.covered(str(scenario.get("subflow", ""))):
            continue
        convo_id = convo.get("convo_id")
        rng = random.Random(f"{row_seed}:{convo_id}")
        scenario["mimesis"] = derive_sidecar(scenario, rng)
        options = applicable_behaviors(scenario, catalog, strict=False)
        base = f"abcd-{split}-{convo_id}"
        if conditions == "all":
            rows.append(_row(f"{base}-control", split, "control", {}, convo_id, scenario, DEFAULT_TURN_BUDGET))
            for condition in options:
                kwargs = derive_kwargs(condition, scenario, catalog, rng, strict=False)
                rows.append(
                    _row(f"{base}-{condition}", split, condition, kwargs, convo_id, scenario, DEFAULT_TURN_BUDGET)
                )
            continue
        condition = "control" if rng.random() < 1 / 3 or not options else rng.choice(options)
        kwargs = {} if condition == "control" else derive_kwargs(condition, scenario, catalog, rng, strict=False)
        rows.append(_row(base, split, condition, kwargs, convo_id, scenario, DEFAULT_TURN_BUDGET))
    return rows


def _release_rows(path: Path, catalog: StoreCatalog, row_seed: int) -> list[AbcdRow]:
    """Rows in the MIMESIS release schema (JSON-string fields), as split ``release``."""
    rows: list[AbcdRow] = []
    for record in read_jsonl(path):
        scenario = record.get("scenario")
        scenario = json.loads(scenario) if isinstance(scenario, str) else copy.deepcopy(scenario or {})
        subflow = str(record.get("subflow") or scenario.get("subflow", ""))
        scenario.setdefault("subflow", subflow)
        scenario.setdefault("flow", record.get("flow", ""))
        if not catalog.covered(subflow):
            continue
        names = record.get("behavior_ids") or "[]"
        names = json.loads(names) if isinstance(names, str) else list(names)
        kwargs_list = record.get("kwargs") or "[]"
        kwargs_list = json.loads(kwargs_list) if isinstance(kwargs_list, str) else list(kwargs_list)
        condition = by_name(str(names[0])).id if names else "control"
        index = record.get("index", len(rows))
        if "mimesis" not in scenario:
            scenario["mimesis"] = derive_sidecar(scenario, random.Random(f"{row_seed}:release:{index}"))
        kwargs = dict(kwargs_list[0]) if kwargs_list and condition != "control" else {}
        budget = int(record.get("turn_budget") or DEFAULT_TURN_BUDGET)
        rows.append(_row(f"abcd-release-{index}", "release", condition, kwargs, index, scenario, budget))
    return rows


def load_upstream_pack(data_dir: str | None, conditions: str = "sampled", row_seed: int = 0) -> AbcdTaskPack:
    """Real ABCD rows from ``data_dir`` (or ``$MIMESIS_GYM_ABCD_DIR``), cached per arguments."""
    if conditions not in CONDITION_MODES:
        raise ValueError(f"conditions must be one of {', '.join(CONDITION_MODES)}; got {conditions!r}")
    root = resolve_upstream_dir(data_dir, "MIMESIS_GYM_ABCD_DIR").resolve()
    for files, any_of in ((POLICY_FILES, False), (CONVERSATION_FILES, True)):
        require_upstream_files(
            root,
            files,
            what="ABCD (pack='upstream')",
            folder="the data/ folder of an ABCD checkout",
            variable="MIMESIS_GYM_ABCD_DIR",
            any_of=any_of,
        )
    return _load_upstream(root, conditions, int(row_seed))


@lru_cache(maxsize=16)
def _load_upstream(root: Path, conditions: str, row_seed: int) -> AbcdTaskPack:
    catalog = upstream_catalog(root)
    splits = {
        split: build_upstream_rows(conversations, split, catalog, conditions, row_seed)
        for split, conversations in read_conversations(root).items()
    }
    if (root / RELEASE_ROWS).is_file():
        splits["release"] = _release_rows(root / RELEASE_ROWS, catalog, row_seed)
    return AbcdTaskPack(f"abcd/upstream/{conditions}/{row_seed}", splits, catalog)
