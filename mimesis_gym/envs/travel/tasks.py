"""TravelGym tasks: schema, the predicate interpreter, the shipped pack and the UserRL loader.

See docs/envs/travel.md, "Task data".

A task has one entry per *dimension* (travel aspect: flight, hotel, apartment, rental_car, restaurant):
hidden preferences, the option table (correct / wrong / noise), the ids of the correct options, the
best (cheapest correct) id and the ground-truth search arguments. The shipped pack adds structured
preference metadata (a predicate in a tiny language, keywords, a probe question) that the scripted
roles and the pack's quality tests read; UserRL records lack it.

Everything is parsed once per process (``functools.cache`` / ``lru_cache``); each aspect's option
lines (``json.dumps`` without ``type``/``reason``) are rendered on its first search in the process and
kept, so a reset costs no parsing and a repeated search no JSON encoding.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs._matching import norm
from mimesis_gym.envs._userrl import create_kwargs, parquet_rows, prompt_pair, userrl_data_root

__all__ = [
    "ASPECTS",
    "ASPECT_LABELS",
    "ASPECT_LETTERS",
    "ASPECT_NOUNS",
    "DISPLAY_FIELDS",
    "LETTER_ASPECTS",
    "OPTION_ID",
    "PREDICATE_OPS",
    "TRAVEL_SETS",
    "VAGUE_MARKERS",
    "AspectData",
    "CatalogEntry",
    "NumberedPreference",
    "PredicateError",
    "Preference",
    "PreferenceMeta",
    "TravelTask",
    "canonical_query",
    "evaluate_predicate",
    "load_catalog",
    "load_original_pack",
    "load_upstream_pack",
    "load_userrl_tasks",
    "missing_record_file",
    "option_price",
    "parse_date",
    "request_failure",
    "unplayable_files",
]

DATA_DIR = Path(__file__).parent / "data"

ASPECTS: tuple[str, ...] = ("flight", "hotel", "apartment", "rental_car", "restaurant")
"""Every travel aspect; a task's ``dimensions`` keep this order (hotel and apartment never co-occur)."""
ASPECT_LETTERS: dict[str, str] = {"flight": "F", "hotel": "H", "apartment": "A", "rental_car": "C", "restaurant": "R"}
LETTER_ASPECTS: dict[str, str] = {letter: aspect for aspect, letter in ASPECT_LETTERS.items()}
ASPECT_LABELS: dict[str, str] = {
    "flight": "flight",
    "hotel": "hotel",
    "apartment": "apartment",
    "rental_car": "rental car",
    "restaurant": "restaurant",
}
ASPECT_NOUNS: dict[str, tuple[str, ...]] = {
    "flight": ("flight", "flights", "fly", "flying", "airline", "airfare", "plane"),
    "hotel": ("hotel", "hotels"),
    "apartment": ("apartment", "apartments", "flat", "airbnb"),
    "rental_car": ("rental car", "car rental", "car", "cars", "vehicle"),
    "restaurant": ("restaurant", "restaurants", "dine", "dining", "dinner", "lunch", "eat"),
}
"""The nouns that name an aspect in free text; the scripted judge and classifier share them."""
VAGUE_MARKERS: tuple[str, ...] = (
    "preference",
    "preferences",
    "prefer",
    "requirement",
    "requirements",
    "anything else",
    "any other",
    "what else",
    "in mind",
)
"""Phrases that make a question a vague preference question (the classifier's type 4)."""

DISPLAY_FIELDS: dict[str, tuple[str, ...]] = {
    "flight": ("path", "time", "company", "flight_number", "cost", "amenities", "service"),
    "hotel": ("name", "room", "cost", "rating", "amenities", "service"),
    "apartment": ("name", "room", "capacity", "cost", "rating", "amenities", "service"),
    "rental_car": ("brand", "model", "categories", "seats", "cost", "insurance", "service"),
    "restaurant": ("name", "cuisine", "expectation", "rating", "reviews", "tags"),
}
"""Display fields of an option, in key order (after ``id``; ``type`` and ``reason`` follow)."""
SEARCH_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "flight": ("origin", "destination", "date"),
    "hotel": ("city", "check_in", "check_out"),
    "apartment": ("city", "check_in", "check_out"),
    "rental_car": ("city", "pick_up_date", "drop_off_date"),
    "restaurant": ("city", "date"),
}
DATE_ARGUMENTS = frozenset({"date", "check_in", "check_out", "pick_up_date", "drop_off_date"})
OPTION_ID = re.compile(r"[ACFHR][0-9]+")
"""An option id: the aspect's letter and a number (``fullmatch``)."""
TRAVEL_SETS: tuple[str, ...] = ("22", "33", "44", "233", "333", "334", "444", "2222")
"""The preference-count sets W: one digit per aspect, the digit its number of hidden preferences."""
CLOSED_TAG = "Closed for renovation"

MONTHS: tuple[str, ...] = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)

USERRL_PARQUET = "data/travel{w}_multiturn_onechoice/{split}.parquet"
USERRL_RECORDS = "gyms/TravelGym/travelgym/data/travelgym_data_{w}.json"
USERRL_NEEDS = tuple(USERRL_PARQUET.format(w=w, split=split) for w in TRAVEL_SETS for split in ("train", "test"))
"""The parquets ``load_upstream_pack`` reads under a UserRL root (all of them for the paper's task counts;
the loader needs one)."""


# ---------------------------------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class PreferenceMeta:
    """Structured data of a shipped-pack preference: what the scripted roles and quality tests read."""

    catalog_key: str
    predicate: Mapping[str, Any]
    keywords: tuple[str, ...]
    probe: str
    keys: tuple[str, ...] = ()
    """``keywords`` in match form (``norm``), computed at load for the scripted classifier."""


@dataclass(frozen=True, slots=True)
class Preference:
    """One hidden preference: ``[aspect, subcategory, preference, implicit_elicitation]`` (+ meta)."""

    aspect: str
    subcategory: str
    preference: str
    implicit_elicitation: str
    meta: PreferenceMeta | None = None


@dataclass(frozen=True, slots=True)
class NumberedPreference:
    """A preference as the episode tracks it: ``P1..Pn`` numbered over the dimensions in order."""

    id: str
    dimension: str
    pref: Preference

    @property
    def aspect(self) -> str:
        return self.pref.aspect

    def public(self) -> dict[str, str]:
        """The privileged view (``info["privileged"]["hidden"]["remaining"]``)."""
        return {
            "id": self.id,
            "aspect": self.pref.aspect,
            "preference": self.pref.preference,
            "implicit_elicitation": self.pref.implicit_elicitation,
        }


@dataclass(frozen=True, slots=True)
class AspectData:
    """One dimension of a task: preferences, options in stored order (correct, wrong, noise), answers."""

    name: str
    preferences: tuple[Preference, ...]
    options: tuple[Mapping[str, Any], ...]
    group_sizes: tuple[int, int, int]
    correct_ids: tuple[str, ...]
    best_id: str
    arguments: Mapping[str, str]
    _lines: list[str] = field(default_factory=list, repr=False, compare=False)

    def display_lines(self) -> list[str]:
        """Each option as shown in search results (``json.dumps`` without ``type``/``reason``), rendered
        once, on the first search of this aspect in the process."""
        if not self._lines and self.options:
            self._lines.extend(_display_line(option) for option in self.options)
        return self._lines


@dataclass(frozen=True, slots=True)
class TravelTask:
    """A TravelGym task. ``playable=False`` marks a UserRL stub (parquet row without its JSON record)."""

    id: str
    split: str
    wanted_num: str
    dimensions: tuple[str, ...]
    initial_description: str
    best_ids: tuple[str, ...]
    scenario: str = ""
    party_size: int | None = None
    aspects: Mapping[str, AspectData] = field(default_factory=dict)
    playable: bool = True
    system_prompt: str | None = None
    opening: str | None = None
    numbered: tuple[NumberedPreference, ...] = ()
    best_per_dimension: tuple[str, ...] = ()
    """Each dimension's ``best_id``, in dimension order (the episode's initial ``best_left``)."""
    correct_union: tuple[str, ...] = ()
    """The union of the dimensions' ``correct_ids`` (the episode's initial ``correct_left``)."""

    @property
    def travel_set(self) -> str:
        return f"travel{self.wanted_num}"

    @property
    def scripted_ready(self) -> bool:
        """Whether the scripted roles can play this task (every preference has its meta)."""
        return self.playable and all(p.pref.meta is not None for p in self.numbered)


def _parse_preference(entry: Sequence[Any], meta: Mapping[str, Any] | None) -> Preference:
    parsed_meta = None
    if meta is not None:
        parsed_meta = PreferenceMeta(
            catalog_key=str(meta["catalog_key"]),
            predicate=dict(meta["predicate"]),
            keywords=tuple(str(k) for k in meta["keywords"]),
            probe=str(meta["probe"]),
            keys=tuple(norm(str(k)) for k in meta["keywords"]),
        )
    return Preference(str(entry[0]), str(entry[1]), str(entry[2]), str(entry[3]), parsed_meta)


def _display_line(option: Mapping[str, Any]) -> str:
    return json.dumps({key: value for key, value in option.items() if key not in ("type", "reason")})


def _parse_aspect(name: str, data: Mapping[str, Any]) -> AspectData:
    raw_prefs = data.get("preferences") or []
    metas = data.get("preference_meta")
    preferences = []
    for index, entry in enumerate(raw_prefs):
        if not isinstance(entry, (list, tuple)) or len(entry) < 4:
            continue  # UserRL skipped short entries
        meta = metas[index] if isinstance(metas, list) and index < len(metas) else None
        preferences.append(_parse_preference(entry, meta))
    groups = data.get("options") or {}
    options: list[Mapping[str, Any]] = []
    sizes = []
    for group in ("correct", "wrong", "noise"):
        members = list(groups.get(group) or [])
        sizes.append(len(members))
        options.extend(members)
    return AspectData(
        name=name,
        preferences=tuple(preferences),
        options=tuple(options),
        group_sizes=(sizes[0], sizes[1], sizes[2]),
        correct_ids=tuple(str(i) for i in data.get("correct_ids") or ()),
        best_id=str(data.get("best_id", "")),
        arguments={str(k): str(v) for k, v in (data.get("arguments") or {}).items()},
    )


def _number(dimensions: Sequence[str], aspects: Mapping[str, AspectData]) -> tuple[NumberedPreference, ...]:
    numbered: list[NumberedPreference] = []
    for dimension in dimensions:
        aspect = aspects.get(dimension)
        for pref in aspect.preferences if aspect else ():
            numbered.append(NumberedPreference(f"P{len(numbered) + 1}", dimension, pref))
    return tuple(numbered)


def parse_record(
    record: Mapping[str, Any],
    *,
    split: str | None = None,
    system_prompt: str | None = None,
    opening: str | None = None,
    best_ids: Sequence[str] | None = None,
) -> TravelTask:
    """A task from a record of the shipped pack's or UserRL's schema.

    UserRL keeps each dimension's data at ``record[<dimension>]``; older exports nest it under
    ``record["preferences"][<dimension>]``: both are read.
    """
    dimensions = tuple(str(d) for d in record["dimensions"])
    nested = record.get("preferences") if isinstance(record.get("preferences"), dict) else {}
    aspects = {}
    for dimension in dimensions:
        data = record.get(dimension)
        if not isinstance(data, dict):
            data = nested.get(dimension)
        if not isinstance(data, dict):
            raise ValueError(f"travel record {record.get('id')!r} has no data for dimension {dimension!r}")
        aspects[dimension] = _parse_aspect(dimension, data)
    if best_ids is None:
        best_ids = [aspects[d].best_id for d in dimensions]
    party = record.get("party_size")
    return TravelTask(
        id=str(record["id"]),
        split=str(split if split is not None else record.get("split", "")),
        wanted_num=str(record.get("wanted_num", "")),
        dimensions=dimensions,
        initial_description=str(record.get("initial_description", "")),
        best_ids=tuple(best_ids),
        scenario=str(record.get("scenario", "")),
        party_size=int(party) if party is not None else None,
        aspects=aspects,
        system_prompt=system_prompt,
        opening=opening,
        numbered=_number(dimensions, aspects),
        best_per_dimension=tuple(aspects[d].best_id for d in dimensions),
        correct_union=tuple(dict.fromkeys(i for d in dimensions for i in aspects[d].correct_ids)),
    )


# ---------------------------------------------------------------------------------------- predicates


class PredicateError(ValueError):
    """A predicate the interpreter cannot evaluate (unknown op, missing or mistyped field)."""


def _fold(value: Any) -> Any:
    return value.casefold() if isinstance(value, str) else value


def _number_of(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PredicateError(f"{what} must be a number, got {value!r}")
    return float(value)


def _as_list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise PredicateError(f"{what} must be a list, got {type(value).__name__}")
    return value


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise PredicateError(f"{what} must be an object, got {type(value).__name__}")
    return value


def _room_baths(room: Any) -> int:
    match = re.fullmatch(r"(\d+)B(\d+)B", str(room))
    if match is None:
        raise PredicateError(f"apartment room must look like '2B1B', got {room!r}")
    return int(match.group(2))


def eligible_rooms(option: Mapping[str, Any], party_size: int) -> list[int]:
    """Indices of a hotel option's rooms that hold the whole party."""
    rooms = _as_list(option.get("room"), "hotel room")
    return [i for i, room in enumerate(rooms) if int(room.get("capacity", 0)) >= party_size]


def _op_scalar(op: str, field_value: Any, value: Any) -> bool:
    if op in ("eq", "ne"):
        same = _fold(field_value) == _fold(value)
        return same if op == "eq" else not same
    left, right = _number_of(field_value, "field"), _number_of(value, "value")
    return left >= right if op == "ge" else left <= right


def evaluate_predicate(predicate: Mapping[str, Any], option: Mapping[str, Any], party_size: int | None = None) -> bool:
    """Evaluate ``{"field", "op", "value"}`` on an option; never ``eval``.

    Raises :class:`PredicateError` for an unknown op or a field of the wrong type.
    """
    op, name, value = predicate.get("op"), predicate.get("field"), predicate.get("value")
    if not isinstance(name, str) or name not in option:
        raise PredicateError(f"option has no field {name!r}")
    field_value = option[name]
    if op in ("eq", "ne", "ge", "le"):
        return _op_scalar(op, field_value, value)
    if op in ("contains", "not_contains"):
        found = any(_fold(item) == _fold(value) for item in _as_list(field_value, name))
        return found if op == "contains" else not found
    if op in ("has_key", "lacks_key"):
        keys = {_fold(key) for key in _as_dict(field_value, name)}
        return (_fold(value) in keys) == (op == "has_key")
    if op == "len_eq":
        return len(_as_list(field_value, name)) == int(_number_of(value, "value"))
    if op == "len_le":
        return len(_as_list(field_value, name)) <= _number_of(value, "value")
    if op == "sum_le":
        return sum(_number_of(x, name) for x in _as_list(field_value, name)) <= _number_of(value, "value")
    if op == "layover_max_le":
        layovers = [_number_of(x, name) for x in _as_list(field_value, name)[1::2]]
        return (max(layovers) if layovers else 0.0) <= _number_of(value, "value")
    if op == "room_baths_ge":
        return _room_baths(field_value) >= _number_of(value, "value")
    if op == "capacity_room_ge":
        if party_size is None:
            raise PredicateError("capacity_room_ge needs the party size")
        rooms = _as_list(field_value, name)
        return any(_fold(rooms[i].get("type")) == _fold(value) for i in eligible_rooms(option, party_size))
    raise PredicateError(f"unknown predicate op {op!r}; known: {', '.join(PREDICATE_OPS)}")


PREDICATE_OPS: tuple[str, ...] = (
    "eq",
    "ne",
    "ge",
    "le",
    "contains",
    "not_contains",
    "has_key",
    "lacks_key",
    "len_eq",
    "len_le",
    "sum_le",
    "layover_max_le",
    "room_baths_ge",
    "capacity_room_ge",
)


def option_price(
    aspect: str,
    option: Mapping[str, Any],
    party_size: int,
    predicates: Sequence[Mapping[str, Any]] = (),
) -> float:
    """The price that "cheapest" compares.

    flight / apartment / rental_car ``cost``, restaurant ``expectation``; hotel: the cheapest room
    that holds the party, restricted to the wanted room type when a ``capacity_room_ge`` predicate
    asks for one and the option has such a room (otherwise any room that holds the party, else any room).
    """
    if aspect == "restaurant":
        return float(option["expectation"])
    if aspect != "hotel":
        return float(option["cost"])
    rooms, costs = option["room"], option["cost"]
    eligible = eligible_rooms(option, party_size)
    for predicate in predicates:
        if predicate.get("op") == "capacity_room_ge":
            typed = [i for i in eligible if _fold(rooms[i].get("type")) == _fold(predicate.get("value"))]
            if typed:
                eligible = typed
    chosen = eligible or list(range(len(rooms)))
    return float(min(costs[i] for i in chosen))


def request_failure(
    aspect: str, option: Mapping[str, Any], party_size: int, arguments: Mapping[str, str]
) -> str | None:
    """The request constraint an option fails (it is then noise), or ``None``."""
    if aspect == "flight":
        path = option["path"]
        if not path or path[0] != arguments["origin"]:
            return "does not depart from the requested origin"
        if path[-1] != arguments["destination"]:
            return "does not arrive at the requested destination"
        return None
    if aspect == "hotel":
        return None if eligible_rooms(option, party_size) else "no room holds the whole party"
    if aspect == "apartment":
        return None if int(option["capacity"]) >= party_size else "too small for the party"
    if aspect == "rental_car":
        return None if int(option["seats"]) >= party_size else "too few seats for the party"
    if aspect == "restaurant":
        return "closed for renovation" if CLOSED_TAG in option["tags"] else None
    raise ValueError(f"unknown aspect {aspect!r}")


def canonical_query(aspect: str, arguments: Mapping[str, str]) -> str:
    """The one-line search the scripted judge always accepts (the oracle's search)."""
    a = arguments
    if aspect == "flight":
        return f"flight from {a['origin']} to {a['destination']} on {a['date']}"
    if aspect in ("hotel", "apartment"):
        return f"{aspect} in {a['city']} from {a['check_in']} to {a['check_out']}"
    if aspect == "rental_car":
        return f"rental car in {a['city']} from {a['pick_up_date']} to {a['drop_off_date']}"
    if aspect == "restaurant":
        return f"restaurant in {a['city']} on {a['date']}"
    raise ValueError(f"unknown aspect {aspect!r}")


def parse_date(text: str) -> tuple[int, int] | None:
    """``"<Month> <day>"`` → ``(month, day)``; ``None`` when it is not in that form."""
    parts = text.strip().split()
    if len(parts) != 2 or not parts[1].isdigit():
        return None
    names = [m.lower() for m in MONTHS]
    month = parts[0].lower()
    return (names.index(month) + 1, int(parts[1])) if month in names else None


# ---------------------------------------------------------------------------------------- catalogue


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """A preference of the catalogue (``data/catalog.json``), the generator's building block."""

    key: str
    aspect: str
    subcategory: str
    predicate: Mapping[str, Any]
    preference: str
    elicitations: tuple[str, ...]
    keywords: tuple[str, ...]
    probe: str
    conflicts_with: tuple[str, ...]


@cache
def load_catalog() -> tuple[CatalogEntry, ...]:
    """The preference catalogue, in file order."""
    entries = json.loads((DATA_DIR / "catalog.json").read_text(encoding="utf-8"))
    return tuple(
        CatalogEntry(
            key=e["key"],
            aspect=e["aspect"],
            subcategory=e["subcategory"],
            predicate=dict(e["predicate"]),
            preference=e["preference"],
            elicitations=tuple(e["elicitations"]),
            keywords=tuple(e["keywords"]),
            probe=e["probe"],
            conflicts_with=tuple(e["conflicts_with"]),
        )
        for e in entries
    )


@cache
def catalog_keywords() -> dict[str, tuple[str, ...]]:
    """Every catalogue keyword per aspect, in match form (the scripted classifier's type-3 vocabulary)."""
    keywords: dict[str, list[str]] = {aspect: [] for aspect in ASPECTS}
    for entry in load_catalog():
        keywords[entry.aspect].extend(norm(k) for k in entry.keywords)
    return {aspect: tuple(dict.fromkeys(words)) for aspect, words in keywords.items()}


# ---------------------------------------------------------------------------------------- packs


@cache
def load_original_pack() -> TaskPack[TravelTask]:
    """The shipped pack: 192 train / 48 test tasks (24 / 6 per set W) and the demo fixture."""
    return TaskPack.from_jsonl("travel/original", DATA_DIR, parse_record)


def dimensions_from_id(scenario_id: str) -> tuple[str, ...]:
    """``"apartment:2-86|rental_car:2-60"`` → ``("apartment", "rental_car")``."""
    return tuple(part.split(":", 1)[0] for part in scenario_id.split("|"))


def load_userrl_tasks(data_dir: str | Path) -> list[TravelTask]:
    """UserRL's travel tasks: parquet rows joined with the JSON records by scenario id.

    Rows come in set order (22, 33, 44, 233, 333, 334, 444, 2222), train then test within a set.
    A row whose set's ``travelgym_data_{W}.json`` is absent becomes a stub (``playable=False``).
    """
    return list(_load_userrl(Path(data_dir).expanduser().resolve()))


def load_upstream_pack(data_dir: str | None) -> TaskPack[TravelTask]:
    """UserRL's 3122 tasks as a pack with splits ``train`` (2651) and ``test`` (471)."""
    return _upstream_pack(userrl_data_root(data_dir, "TravelGym", USERRL_NEEDS, any_of=True))


def unplayable_files(pack: TaskPack[TravelTask]) -> dict[str, int]:
    """The absent ``travelgym_data_{W}.json`` files of a loaded pack, each with how many of its tasks
    it leaves unplayable (stubs), in set order."""
    stubs = {
        USERRL_RECORDS.format(w=wanted): sum(1 for task in pack if task.wanted_num == wanted and not task.playable)
        for wanted in TRAVEL_SETS
    }
    return {path: count for path, count in stubs.items() if count}


@lru_cache(maxsize=8)
def _upstream_pack(root: Path) -> TaskPack[TravelTask]:
    tasks = _load_userrl(root)
    return TaskPack("travel/upstream", {split: [t for t in tasks if t.split == split] for split in ("train", "test")})


@lru_cache(maxsize=64)
def _records(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object keyed by scenario id")
    return data


@lru_cache(maxsize=8)
def _load_userrl(root: Path) -> tuple[TravelTask, ...]:
    tasks: list[TravelTask] = []
    for wanted in TRAVEL_SETS:
        records = _records(root / USERRL_RECORDS.format(w=wanted))
        for split in ("train", "test"):
            path = root / USERRL_PARQUET.format(w=wanted, split=split)
            if not path.is_file():
                continue
            for row in parquet_rows(path):
                tasks.append(_userrl_task(row, wanted, split, records))
    return tuple(tasks)


def _userrl_task(row: dict[str, Any], wanted: str, split: str, records: dict[str, Any] | None) -> TravelTask:
    scenario_id = str(create_kwargs(row)["id"])
    system, opening = prompt_pair(row)
    best = tuple(str(i) for i in ast.literal_eval(row["reward_model"]["ground_truth"]))
    record = (records or {}).get(scenario_id)
    if record is None:
        return TravelTask(
            id=scenario_id,
            split=split,
            wanted_num=wanted,
            dimensions=dimensions_from_id(scenario_id),
            initial_description=opening.split("\n", 1)[0],
            best_ids=best,
            playable=False,
            system_prompt=system,
            opening=opening,
        )
    record = {**record, "id": scenario_id, "wanted_num": str(record.get("wanted_num", wanted))}
    return parse_record(record, split=split, system_prompt=system, opening=opening, best_ids=best)


def missing_record_file(tasks: Sequence[TravelTask]) -> str | None:
    """The first ``travelgym_data_{W}.json`` (in set order) that stubs among ``tasks`` need, or ``None``."""
    needed = {task.wanted_num for task in tasks if not task.playable}
    for wanted in TRAVEL_SETS:
        if wanted in needed:
            return USERRL_RECORDS.format(w=wanted)
    return None
