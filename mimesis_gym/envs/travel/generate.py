"""The seeded generator of TravelGym's shipped pack (docs/envs/travel.md, "Task data").

``python -m mimesis_gym.envs.travel.generate --seed 5150`` rewrites ``data/{train,test,demo}.jsonl``
and ``data/manifest.json`` from ``data/catalog.json`` (preferences) and ``data/world.json`` (cities,
names, amenity pools); the output is byte-identical for the same seed (a slow test regenerates and
compares). Nothing is derived from UserRL or UserBench data.

Each task has its own stream ``numpy.random.default_rng([seed, i])`` (``i``: 0-based index in
train-then-test order), and draws only with ``integers``, ``random`` and ``permutation``, so one task
can be regenerated alone. Per aspect: k catalogue preferences with distinct subcategories and no
conflicts (redrawn until every probe question reaches its own preference through the scripted
classifier), 2-5 correct options (every predicate holds), exactly 10 wrong ones (one predicate
broken, cycling over the predicates) and 5 noise ones (a request constraint broken); then prices:
the best option is the cheapest correct one by at least 5 USD, with at least 3 wrong and 1 noise
options cheaper still.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from mimesis_gym.envs.travel.roles import classify_utterance
from mimesis_gym.envs.travel.tasks import (
    ASPECT_LETTERS,
    DISPLAY_FIELDS,
    TRAVEL_SETS,
    CatalogEntry,
    evaluate_predicate,
    load_catalog,
    option_price,
    parse_record,
    request_failure,
)

__all__ = ["DEFAULT_SEED", "DEMO_TASK", "GenerationError", "generate_pack", "generate_task", "write_pack"]

DEFAULT_SEED = 5150
TRAIN_PER_SET = 24
TEST_PER_SET = 6
DATA_DIR = Path(__file__).parent / "data"
VERSION = "1"
N_WRONG = 10
N_NOISE = 5
SLOTS = ("flight", "lodging", "rental_car", "restaurant")
NIGHTLY = {"hotel": (80, 280), "apartment": (70, 240), "rental_car": (30, 100)}
FLAT = {"flight": (160, 700), "restaurant": (24, 70)}
RATING_RANGE = (5.0, 9.9)
NUMBER_WORDS = {3: "three", 4: "four", 5: "five", 6: "six"}


class GenerationError(RuntimeError):
    """A task could not be built within the retry budget (a catalogue or world inconsistency)."""


@cache
def load_world() -> dict[str, Any]:
    return json.loads((DATA_DIR / "world.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Trip:
    """The request side of a task: who travels where and when."""

    party_size: int
    nights: int
    origin: str
    city: str
    arguments: Mapping[str, Mapping[str, str]]


# ------------------------------------------------------------------------------------ random helpers


def _pick(rng: np.random.Generator, items: Sequence[Any]) -> Any:
    return items[int(rng.integers(len(items)))]


def _uniform(rng: np.random.Generator, low: float, high: float) -> float:
    return low + (high - low) * float(rng.random())


def _quarter(value: float, minimum: float = 0.25) -> float:
    return float(max(minimum, round(value * 4) / 4))


def _subset(rng: np.random.Generator, pool: Sequence[Any], low: int, high: int) -> list[Any]:
    count = low + int(rng.integers(high - low + 1))
    return [pool[int(i)] for i in rng.permutation(len(pool))[:count]]


def _priced(rng: np.random.Generator, table: Mapping[str, Sequence[int]], names: Sequence[str]) -> dict[str, int]:
    return {name: int(table[name][0] + rng.integers(table[name][1] - table[name][0] + 1)) for name in names}


def _insert_key(rng: np.random.Generator, mapping: dict[str, int], key: str, price: int) -> dict[str, int]:
    items = list(mapping.items())
    items.insert(int(rng.integers(len(items) + 1)), (key, price))
    return dict(items)


def _date(month: str, day: int) -> str:
    return f"{month} {day}"


# ------------------------------------------------------------------------------------ base options


def _route(rng: np.random.Generator, option: dict[str, Any], stops: int, trip: Trip) -> None:
    """Rebuild a flight's path, times, airlines and flight numbers with ``stops`` layovers."""
    world = load_world()
    via = [c for c in world["cities"] if c not in (trip.origin, trip.city)]
    layovers = [via[int(i)] for i in rng.permutation(len(via))[:stops]]
    option["path"] = [trip.origin, *layovers, trip.city]
    times: list[float] = []
    for leg in range(stops + 1):
        if leg:
            times.append(_quarter(_uniform(rng, 0.75, 4.5)))
        times.append(_quarter(_uniform(rng, 1.0, 5.0), 0.5))
    option["time"] = times
    airlines = world["airlines"]
    single = _pick(rng, airlines) if rng.random() < 0.6 else None
    legs = [single or _pick(rng, airlines) for _ in range(stops + 1)]
    option["company"] = [a["name"] for a in legs]
    option["flight_number"] = [f"{a['code']}{100 + int(rng.integers(900))}" for a in legs]


def _base_flight(rng: np.random.Generator, trip: Trip) -> dict[str, Any]:
    world = load_world()
    option: dict[str, Any] = {}
    _route(rng, option, int(rng.integers(3)), trip)
    option["cost"] = 0
    option["amenities"] = _subset(rng, world["flight_amenities"], 1, 4)
    option["service"] = _priced(rng, world["flight_services"], _subset(rng, list(world["flight_services"]), 1, 3))
    return option


def _room_capacity(rng: np.random.Generator, room_type: str, at_least: int = 1) -> int:
    low, high = load_world()["hotel_room_types"][room_type]
    low = max(low, at_least)
    return int(low + rng.integers(high - low + 1))


def _base_hotel(rng: np.random.Generator, trip: Trip) -> dict[str, Any]:
    world = load_world()
    types = list(world["hotel_room_types"])
    chosen = [types[int(i)] for i in rng.permutation(len(types))[: 2 + int(rng.integers(2))]]
    rooms = [{"type": t, "capacity": _room_capacity(rng, t)} for t in chosen]
    if not any(room["capacity"] >= trip.party_size for room in rooms):
        big = _pick(rng, ["Family room", "Suite"] if trip.party_size > 2 else ["Family room", "Suite", "Double"])
        rooms[int(rng.integers(len(rooms)))] = {"type": big, "capacity": _room_capacity(rng, big, trip.party_size)}
    return {
        "name": "",
        "room": rooms,
        "cost": [0] * len(rooms),
        "rating": round(_uniform(rng, 6.0, 9.8), 1),
        "amenities": _subset(rng, world["hotel_amenities"], 2, 5),
        "service": _priced(rng, world["hotel_services"], _subset(rng, list(world["hotel_services"]), 1, 3)),
    }


def _apartment_room(rng: np.random.Generator, capacity: int, baths: int | None = None) -> str:
    bedrooms = min(4, max(1, (capacity + 1) // 2 + (int(rng.integers(2)) if capacity > 2 else 0)))
    if baths is None:
        baths = 1 + int(rng.integers(min(bedrooms, 2)))
    return f"{bedrooms}B{baths}B"


def _base_apartment(rng: np.random.Generator, trip: Trip) -> dict[str, Any]:
    world = load_world()
    capacity = trip.party_size + int(rng.integers(3))
    return {
        "name": "",
        "room": _apartment_room(rng, capacity),
        "capacity": capacity,
        "cost": 0,
        "rating": round(_uniform(rng, 6.0, 9.8), 1),
        "amenities": _subset(rng, world["apartment_amenities"], 2, 5),
        "service": _priced(rng, world["apartment_services"], _subset(rng, list(world["apartment_services"]), 1, 3)),
    }


def _seat_choices(low: int, high: int, at_least: int) -> list[int]:
    return [s for s in load_world()["car_seat_values"] if low <= s <= high and s >= at_least]


def _base_car(rng: np.random.Generator, trip: Trip) -> dict[str, Any]:
    world = load_world()
    brand = _pick(rng, world["car_brands"])
    categories = [c for c, (low, high) in world["car_categories"].items() if _seat_choices(low, high, trip.party_size)]
    category = _pick(rng, categories)
    seats = _pick(rng, _seat_choices(*world["car_categories"][category], trip.party_size))
    return {
        "brand": brand["name"],
        "model": _pick(rng, brand["models"]),
        "categories": category,
        "seats": int(seats),
        "cost": 0,
        "insurance": _priced(rng, world["car_insurance"], _subset(rng, list(world["car_insurance"]), 1, 3)),
        "service": _priced(rng, world["car_services"], _subset(rng, list(world["car_services"]), 1, 3)),
    }


def _base_restaurant(rng: np.random.Generator, trip: Trip) -> dict[str, Any]:
    world = load_world()
    return {
        "name": "",
        "cuisine": _pick(rng, world["cuisines"]),
        "expectation": 0,
        "rating": round(_uniform(rng, 6.0, 9.8), 1),
        "reviews": {},
        "tags": _subset(rng, world["restaurant_tags"], 1, 4),
    }


BASE_OPTIONS = {
    "flight": _base_flight,
    "hotel": _base_hotel,
    "apartment": _base_apartment,
    "rental_car": _base_car,
    "restaurant": _base_restaurant,
}

# ------------------------------------------------------------------------------------ predicate setters


def _domain(aspect: str, field: str) -> list[str]:
    world = load_world()
    if field == "categories":
        return list(world["car_categories"])
    if field == "cuisine":
        return list(world["cuisines"])
    if field == "brand":
        return [b["name"] for b in world["car_brands"]]
    raise GenerationError(f"no value domain for {aspect}.{field}")


def _price_table(aspect: str, field: str) -> Mapping[str, Sequence[int]]:
    world = load_world()
    key = {"flight": "flight", "hotel": "hotel", "apartment": "apartment", "rental_car": "car"}[aspect]
    return world[f"{key}_insurance" if field == "insurance" else f"{key}_services"]


def _set_scalar(
    rng: np.random.Generator, aspect: str, option: dict[str, Any], pred: Mapping[str, Any], want: bool, trip: Trip
) -> None:
    op, field, value = pred["op"], pred["field"], pred["value"]
    if op in ("eq", "ne"):
        equal = (op == "eq") == want
        new = value if equal else _pick(rng, [v for v in _domain(aspect, field) if v.casefold() != value.casefold()])
        option[field] = new
        if field == "brand":
            option["model"] = _pick(rng, next(b["models"] for b in load_world()["car_brands"] if b["name"] == new))
        return
    # ge / le: the region where the predicate takes the wanted truth value
    upper = (op == "ge") == want  # the wanted region lies at or above the threshold
    if field == "rating":
        low, high = RATING_RANGE
        if op == "ge":
            low, high = (value, high) if want else (low, value - 0.1)
        else:
            low, high = (low, value) if want else (value + 0.1, high)
        option[field] = round(_uniform(rng, low, high), 1)
        return
    if field == "seats":
        values = [s for s in load_world()["car_seat_values"] if s >= trip.party_size]
        if op == "ge":
            values = [s for s in values if (s >= value) == want]
        else:
            values = [s for s in values if (s <= value) == want]
        if not values:
            raise GenerationError(f"no seat count makes {pred} {want} for a party of {trip.party_size}")
        option[field] = int(_pick(rng, values))
        return
    raise GenerationError(f"unsupported numeric predicate {pred} (upper={upper})")


def _set_list(
    rng: np.random.Generator, aspect: str, option: dict[str, Any], pred: Mapping[str, Any], want: bool
) -> None:
    field, value = pred["field"], pred["value"]
    present = (pred["op"] == "contains") == want
    items = option[field]
    if field == "company":
        others = [a for a in load_world()["airlines"] if a["name"].casefold() != value.casefold()]
        code = {a["name"]: a["code"] for a in load_world()["airlines"]}
        if present:
            leg = int(rng.integers(len(items)))
            items[leg] = value
            option["flight_number"][leg] = f"{code[value]}{100 + int(rng.integers(900))}"
        else:
            for leg, airline in enumerate(items):
                if airline.casefold() == value.casefold():
                    replacement = _pick(rng, others)
                    items[leg] = replacement["name"]
                    option["flight_number"][leg] = f"{replacement['code']}{100 + int(rng.integers(900))}"
        return
    if present and not any(i.casefold() == value.casefold() for i in items):
        items.insert(int(rng.integers(len(items) + 1)), value)
    elif not present:
        option[field] = [i for i in items if i.casefold() != value.casefold()]


def _set_key(
    rng: np.random.Generator, aspect: str, option: dict[str, Any], pred: Mapping[str, Any], want: bool
) -> None:
    field, value = pred["field"], pred["value"]
    present = (pred["op"] == "has_key") == want
    mapping = option[field]
    has = any(k.casefold() == value.casefold() for k in mapping)
    if present and not has:
        low, high = _price_table(aspect, field)[value]
        option[field] = _insert_key(rng, mapping, value, int(low + rng.integers(high - low + 1)))
    elif not present and has:
        option[field] = {k: v for k, v in mapping.items() if k.casefold() != value.casefold()}


def _set_time(
    rng: np.random.Generator, option: dict[str, Any], pred: Mapping[str, Any], want: bool, trip: Trip
) -> None:
    op, value = pred["op"], float(pred["value"])
    times = option["time"]
    if op == "layover_max_le":
        if want:
            for i in range(1, len(times), 2):
                times[i] = _quarter(_uniform(rng, 0.5, value))
            return
        if len(times) == 1:
            _route(rng, option, 1 + int(rng.integers(2)), trip)
            times = option["time"]
        leg = 1 + 2 * int(rng.integers(len(times) // 2))
        times[leg] = _quarter(value + 0.5 + _uniform(rng, 0.0, 3.0))
        return
    # sum_le: rescale the flight legs (even indices) to reach a target total
    target = _uniform(rng, 0.55 * value, value - 0.25) if want else _uniform(rng, value + 0.5, 1.5 * value)
    layover_total = sum(times[1::2])
    legs = len(times[0::2])
    if want and layover_total > target - 0.5 * legs:
        for i in range(1, len(times), 2):
            times[i] = 0.5
        layover_total = sum(times[1::2])
    per_leg = max(0.5, (target - layover_total) / legs)
    for i in range(0, len(times), 2):
        times[i] = _quarter(per_leg * _uniform(rng, 0.85, 1.15), 0.5)
    if want and sum(times) > value:  # rounding or jitter overshot: trim the longest leg
        longest = max(range(0, len(times), 2), key=lambda i: times[i])
        times[longest] = _quarter(times[longest] - (sum(times) - value) - 0.25, 0.5)


def _set_stops(
    rng: np.random.Generator, option: dict[str, Any], pred: Mapping[str, Any], want: bool, trip: Trip
) -> None:
    length = int(pred["value"])
    if pred["op"] == "len_eq":
        stops = [length - 2] if want else [s for s in range(3) if s != length - 2]
    else:
        stops = [s for s in range(4) if (s + 2 <= length) == want and s <= 3]
    _route(rng, option, int(_pick(rng, stops)), trip)


def _set_baths(rng: np.random.Generator, option: dict[str, Any], pred: Mapping[str, Any], want: bool) -> None:
    bedrooms = int(option["room"].split("B")[0])
    value = int(pred["value"])
    baths = value + int(rng.integers(2)) if want else 1 + int(rng.integers(max(1, value - 1)))
    option["room"] = f"{bedrooms}B{baths}B"


def _set_room_type(
    rng: np.random.Generator, option: dict[str, Any], pred: Mapping[str, Any], want: bool, trip: Trip
) -> None:
    value = pred["value"]
    rooms = option["room"]
    table = load_world()["hotel_room_types"]
    if want:
        eligible = [i for i, r in enumerate(rooms) if r["capacity"] >= trip.party_size]
        index = _pick(rng, eligible) if eligible and rng.random() < 0.7 else int(rng.integers(len(rooms)))
        rooms[index] = {"type": value, "capacity": _room_capacity(rng, value, trip.party_size)}
        return
    for i, room in enumerate(rooms):
        if room["type"].casefold() == value.casefold() and room["capacity"] >= trip.party_size:
            fitting = [t for t, (low, high) in table.items() if low <= room["capacity"] <= high and t != value]
            rooms[i] = {"type": _pick(rng, fitting), "capacity": room["capacity"]}


def set_predicate(
    rng: np.random.Generator, aspect: str, option: dict[str, Any], pred: Mapping[str, Any], want: bool, trip: Trip
) -> None:
    """Change ``option`` so that ``pred`` evaluates to ``want`` (other predicates may move; callers re-check)."""
    op = pred["op"]
    if op in ("eq", "ne", "ge", "le"):
        _set_scalar(rng, aspect, option, pred, want, trip)
    elif op in ("contains", "not_contains"):
        _set_list(rng, aspect, option, pred, want)
    elif op in ("has_key", "lacks_key"):
        _set_key(rng, aspect, option, pred, want)
    elif op in ("sum_le", "layover_max_le"):
        _set_time(rng, option, pred, want, trip)
    elif op in ("len_eq", "len_le"):
        _set_stops(rng, option, pred, want, trip)
    elif op == "room_baths_ge":
        _set_baths(rng, option, pred, want)
    elif op == "capacity_room_ge":
        _set_room_type(rng, option, pred, want, trip)
    else:
        raise GenerationError(f"the generator cannot set predicate op {op!r}")


# ------------------------------------------------------------------------------------ option groups


def _holds(pred: Mapping[str, Any], option: Mapping[str, Any], trip: Trip) -> bool:
    return evaluate_predicate(pred, option, trip.party_size)


def _settle(
    rng: np.random.Generator,
    aspect: str,
    option: dict[str, Any],
    preds: Sequence[Mapping[str, Any]],
    trip: Trip,
    broken: int | None,
) -> bool:
    """Repair every predicate except ``broken`` (kept false); True when the option ends as wanted."""
    for _ in range(6):
        changed = False
        for i, pred in enumerate(preds):
            want = i != broken
            if _holds(pred, option, trip) != want:
                set_predicate(rng, aspect, option, pred, want, trip)
                changed = True
        if not changed:
            break
    return all(_holds(p, option, trip) == (i != broken) for i, p in enumerate(preds)) and (
        request_failure(aspect, option, trip.party_size, trip.arguments[aspect]) is None
    )


def _correct_option(
    rng: np.random.Generator, aspect: str, preds: Sequence[Mapping[str, Any]], trip: Trip
) -> dict[str, Any]:
    for _ in range(60):
        option = BASE_OPTIONS[aspect](rng, trip)
        if _settle(rng, aspect, option, preds, trip, None):
            return option
    raise GenerationError(f"no correct {aspect} option for {[dict(p) for p in preds]}")


def _wrong_option(
    rng: np.random.Generator, aspect: str, preds: Sequence[Mapping[str, Any]], broken: int, trip: Trip
) -> dict[str, Any]:
    for _ in range(60):
        option = _correct_option(rng, aspect, preds, trip)
        set_predicate(rng, aspect, option, preds[broken], False, trip)
        if _settle(rng, aspect, option, preds, trip, broken):
            return option
    raise GenerationError(f"cannot break only {dict(preds[broken])} of {aspect}")


def _break_request(rng: np.random.Generator, aspect: str, option: dict[str, Any], trip: Trip) -> None:
    world = load_world()
    party = trip.party_size
    if aspect == "flight":
        path = option["path"]
        others = [c for c in world["cities"] if c not in path and c not in (trip.origin, trip.city)]
        path[0 if rng.random() < 0.5 else -1] = _pick(rng, others)
    elif aspect == "hotel":
        table = world["hotel_room_types"]
        for i, room in enumerate(option["room"]):
            if room["capacity"] >= party:
                capacity = 1 + int(rng.integers(party - 1))
                fitting = [t for t, (low, high) in table.items() if low <= capacity <= high]
                option["room"][i] = {"type": _pick(rng, fitting), "capacity": capacity}
    elif aspect == "apartment":
        capacity = 1 + int(rng.integers(party - 1))
        option["capacity"] = capacity
        option["room"] = _apartment_room(rng, capacity)
    elif aspect == "rental_car":
        option["seats"] = int(_pick(rng, [s for s in world["car_seat_values"] if s < party]))
    else:
        tags = option["tags"]
        tags.insert(int(rng.integers(len(tags) + 1)), "Closed for renovation")


def _noise_option(
    rng: np.random.Generator, aspect: str, preds: Sequence[Mapping[str, Any]], trip: Trip
) -> dict[str, Any]:
    option = _correct_option(rng, aspect, preds, trip)
    _break_request(rng, aspect, option, trip)
    if request_failure(aspect, option, trip.party_size, trip.arguments[aspect]) is None:
        raise GenerationError(f"noise {aspect} option still meets the request")
    return option


# ------------------------------------------------------------------------------------ prices


def _set_price(
    rng: np.random.Generator,
    aspect: str,
    option: dict[str, Any],
    price: int,
    trip: Trip,
    preds: Sequence[Mapping[str, Any]],
) -> None:
    if aspect == "restaurant":
        option["expectation"] = price
    elif aspect != "hotel":
        option["cost"] = price
    else:
        rooms = option["room"]
        eligible = [i for i, r in enumerate(rooms) if r["capacity"] >= trip.party_size]
        chosen = eligible
        for pred in preds:
            if pred["op"] == "capacity_room_ge":
                typed = [i for i in eligible if rooms[i]["type"].casefold() == pred["value"].casefold()]
                chosen = typed or chosen
        chosen = chosen or list(range(len(rooms)))
        cheapest = _pick(rng, chosen)
        option["cost"] = [
            price
            if i == cheapest
            else price + 10 + int(rng.integers(max(11, price // 2)))
            if i in chosen
            else max(20, int(price * _uniform(rng, 0.6, 1.4)))
            for i in range(len(rooms))
        ]
    if option_price(aspect, option, trip.party_size, preds) != price:
        raise GenerationError(f"{aspect} price did not come out as {price}")


def _prices(rng: np.random.Generator, aspect: str, trip: Trip) -> tuple[int, int]:
    """The best price and the largest discount a cheaper trap may take below it."""
    if aspect in NIGHTLY:
        low, high = NIGHTLY[aspect]
        best = int(_uniform(rng, low, high) * trip.nights)
    else:
        low, high = FLAT[aspect]
        best = int(low + rng.integers(high - low + 1))
    return best, max(6, int(best * 0.4))


def _assign_prices(
    rng: np.random.Generator,
    aspect: str,
    groups: Mapping[str, list[dict[str, Any]]],
    trip: Trip,
    preds: Sequence[Mapping[str, Any]],
) -> None:
    best, spread = _prices(rng, aspect, trip)

    def cheaper() -> int:
        return best - 5 - int(rng.integers(spread - 4))

    def dearer() -> int:
        return best + 5 + int(rng.integers(max(6, int(best * 0.6))))

    for i, option in enumerate(groups["correct"]):
        _set_price(rng, aspect, option, best if i == 0 else dearer(), trip, preds)
    for group, low, high in (("wrong", 3, 5), ("noise", 1, 3)):
        members = groups[group]
        cheap = {int(i) for i in rng.permutation(len(members))[: low + int(rng.integers(high - low + 1))]}
        for i, option in enumerate(members):
            _set_price(rng, aspect, option, cheaper() if i in cheap else dearer(), trip, preds)


# ------------------------------------------------------------------------------------ finishing


def _reviews(rng: np.random.Generator, rating: float) -> dict[str, int]:
    total = 40 + int(rng.integers(860))
    top = min(0.85, max(0.05, (rating - 5.0) / 5.0 * 0.85))
    rest = 1.0 - top
    shares = (top, rest * 0.45, rest * 0.3, rest * 0.15, rest * 0.1)
    return {str(5 - i): round(total * share) for i, share in enumerate(shares)}


def _names(rng: np.random.Generator, aspect: str, count: int) -> list[str]:
    world = load_world()
    if aspect == "hotel":
        pool = [f"{a} {b}" for a in world["hotel_name_first"] for b in world["hotel_name_second"]]
    elif aspect == "apartment":
        pool = [
            f"{a} {b} {c}"
            for a in world["apartment_name_first"]
            for b in world["apartment_name_second"]
            for c in world["apartment_name_third"]
        ]
    else:
        pool = [f"The {a} {b}" for a in world["restaurant_name_first"] for b in world["restaurant_name_second"]]
    return [pool[int(i)] for i in rng.permutation(len(pool))[:count]]


def _finish_options(
    rng: np.random.Generator,
    aspect: str,
    groups: Mapping[str, list[dict[str, Any]]],
    entries: Sequence[CatalogEntry],
    trip: Trip,
) -> dict[str, Any]:
    ordered = [(group, option) for group in ("correct", "wrong", "noise") for option in groups[group]]
    names = _names(rng, aspect, len(ordered)) if aspect in ("hotel", "apartment", "restaurant") else []
    numbers = rng.permutation(len(ordered))
    letter = ASPECT_LETTERS[aspect]
    out: dict[str, list[dict[str, Any]]] = {"correct": [], "wrong": [], "noise": []}
    for index, (group, option) in enumerate(ordered):
        if names:
            option["name"] = names[index]
        if aspect == "restaurant":
            option["reviews"] = _reviews(rng, option["rating"])
        if group == "correct":
            reason = "meets the request and every preference"
        elif group == "wrong":
            failed = [e for e in entries if not _holds(e.predicate, option, trip)]
            reason = "fails the preference: " + "; ".join(e.preference for e in failed)
        else:
            reason = "fails the request: " + str(
                request_failure(aspect, option, trip.party_size, trip.arguments[aspect])
            )
        record = {"id": f"{letter}{int(numbers[index]) + 1}"}
        record.update({field: option[field] for field in DISPLAY_FIELDS[aspect]})
        record.update({"type": group, "reason": reason})
        out[group].append(record)
    correct_ids = [o["id"] for o in out["correct"]]
    return {"options": out, "correct_ids": correct_ids, "best_id": correct_ids[0]}


# ------------------------------------------------------------------------------------ preferences


def _pick_entries(rng: np.random.Generator, aspect: str, k: int) -> list[CatalogEntry]:
    candidates = [e for e in load_catalog() if e.aspect == aspect]
    for _ in range(50):
        chosen: list[CatalogEntry] = []
        for i in rng.permutation(len(candidates)):
            entry = candidates[int(i)]
            if any(
                entry.subcategory == c.subcategory or entry.key in c.conflicts_with or c.key in entry.conflicts_with
                for c in chosen
            ):
                continue
            chosen.append(entry)
            if len(chosen) == k:
                return chosen
    raise GenerationError(f"cannot pick {k} compatible {aspect} preferences")


def _preference_fields(entries: Sequence[CatalogEntry], variants: Sequence[int]) -> dict[str, Any]:
    return {
        "preferences": [
            [e.aspect, e.subcategory, e.preference, e.elicitations[v]] for e, v in zip(entries, variants, strict=True)
        ],
        "preference_meta": [
            {"catalog_key": e.key, "predicate": dict(e.predicate), "keywords": list(e.keywords), "probe": e.probe}
            for e in entries
        ],
    }


def probes_reach_their_preferences(record: Mapping[str, Any]) -> bool:
    """Whether every probe of a task, with all its preferences remaining, classifies as type 2 with its own."""
    task = parse_record(record)
    for pref in task.numbered:
        assert pref.pref.meta is not None
        if classify_utterance(pref.pref.meta.probe, task.numbered, task) != ("2", pref.id):
            return False
    return True


def _choose_preferences(
    rng: np.random.Generator, dimensions: Sequence[str], ks: Sequence[int]
) -> dict[str, tuple[list[CatalogEntry], list[int]]]:
    for _ in range(50):
        chosen = {}
        for dimension, k in zip(dimensions, ks, strict=True):
            entries = _pick_entries(rng, dimension, k)
            variants = [int(rng.integers(len(e.elicitations))) for e in entries]
            chosen[dimension] = (entries, variants)
        probe_record = {
            "id": "probe-check",
            "dimensions": list(dimensions),
            **{d: _preference_fields(*chosen[d]) for d in dimensions},
        }
        if probes_reach_their_preferences(probe_record):
            return chosen
    raise GenerationError(f"no preference set whose probes all classify for {list(dimensions)}")


# ------------------------------------------------------------------------------------ narrative


STYLES_BY_SIZE = {1: ("solo",), 2: ("partner", "friend", "colleague")}
"""Party styles that fit a party size (three or more: family, friends, team)."""


def _party_phrases(style: str, size: int) -> tuple[str, str]:
    """(third-person clause for the scenario, first-person clause for the request)."""
    words = NUMBER_WORDS.get(size, str(size))
    return {
        "solo": ("alone", " on my own"),
        "partner": ("with their partner", " with my partner"),
        "friend": ("with a close friend", " with a friend"),
        "colleague": ("with a colleague", " with a colleague"),
        "family": (f"with their family of {words}", f" with my family of {words}"),
        "friends": (f"with a group of {words} friends", f" for a group of {words} friends"),
        "team": (f"with a team of {words} colleagues", f" for a team of {words} colleagues"),
    }[style]


def _article(word: str) -> str:
    return "an" if word[0].lower() in "aeiou" else "a"


def _needs(dimension: str, arguments: Mapping[str, str]) -> str:
    a = arguments
    if dimension == "flight":
        return f"a flight from {a['origin']} to {a['destination']} on {a['date']}"
    if dimension == "hotel":
        return f"a hotel from {a['check_in']} to {a['check_out']}"
    if dimension == "apartment":
        return f"an apartment to rent from {a['check_in']} to {a['check_out']}"
    if dimension == "rental_car":
        return f"a rental car from {a['pick_up_date']} to {a['drop_off_date']}"
    return f"a restaurant for a meal on {a['date']}"


def _join(parts: Sequence[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


# ------------------------------------------------------------------------------------ tasks


def generate_task(seed: int, index: int, split: str, wanted: str, number: int) -> dict[str, Any]:
    """Task ``index`` (0-based, train then test) of the pack, drawn from its own stream."""
    rng = np.random.default_rng([seed, index])
    world = load_world()
    slots = sorted(int(s) for s in rng.permutation(len(SLOTS))[: len(wanted)])
    lodging = "hotel" if rng.integers(2) == 0 else "apartment"
    dimensions = [lodging if SLOTS[s] == "lodging" else SLOTS[s] for s in slots]
    ks = [int(wanted[int(j)]) for j in rng.permutation(len(wanted))]
    city = _pick(rng, world["cities"])
    origin = _pick(rng, [c for c in world["cities"] if c != city])
    month = _pick(rng, world["months"])
    start = 1 + int(rng.integers(22))
    nights = 2 + int(rng.integers(5))
    lowest = 3 if "rental_car" in dimensions else 2 if lodging in dimensions else 1
    party = lowest + int(rng.integers(7 - lowest))
    day = start + int(rng.integers(nights + 1))
    begin, end = _date(month, start), _date(month, start + nights)
    arguments = {
        "flight": {"origin": origin, "destination": city, "date": begin},
        "hotel": {"city": city, "check_in": begin, "check_out": end},
        "apartment": {"city": city, "check_in": begin, "check_out": end},
        "rental_car": {"city": city, "pick_up_date": begin, "drop_off_date": end},
        "restaurant": {"city": city, "date": _date(month, day)},
    }
    trip = Trip(party_size=party, nights=nights, origin=origin, city=city, arguments=arguments)
    name = _pick(rng, world["first_names"])
    fitting = STYLES_BY_SIZE.get(party, ("family", "friends", "team"))
    kind = _pick(rng, [k for k in world["trip_kinds"] if set(k["styles"]) & set(fitting)])
    third, first = _party_phrases(_pick(rng, [s for s in kind["styles"] if s in fitting]), party)
    trip_kind = f"{_article(kind['kind'])} {kind['kind']}"
    chosen = _choose_preferences(rng, dimensions, ks)
    record: dict[str, Any] = {
        "id": f"travel-{wanted}-{number:04d}",
        "split": split,
        "wanted_num": wanted,
        "dimensions": dimensions,
        "party_size": party,
        "scenario": (
            f"{name} is planning {trip_kind} to {city} {third}, from {begin} to {end}. {kind['purpose']} "
            f"{name} has firm views on each part of the trip but only mentions them when asked about the "
            "specific point."
        ),
        "initial_description": (
            f"I'm planning {trip_kind} to {city}{first}. I need {_join([_needs(d, arguments[d]) for d in dimensions])}."
        ),
    }
    for dimension in dimensions:
        entries, variants = chosen[dimension]
        preds = [e.predicate for e in entries]
        groups = {
            "correct": [_correct_option(rng, dimension, preds, trip) for _ in range(2 + int(rng.integers(4)))],
            "wrong": [_wrong_option(rng, dimension, preds, w % len(preds), trip) for w in range(N_WRONG)],
            "noise": [_noise_option(rng, dimension, preds, trip) for _ in range(N_NOISE)],
        }
        _assign_prices(rng, dimension, groups, trip, preds)
        finished = _finish_options(rng, dimension, groups, entries, trip)
        record[dimension] = {
            **_preference_fields(entries, variants),
            "options": finished["options"],
            "correct_ids": finished["correct_ids"],
            "best_id": finished["best_id"],
            "arguments": dict(arguments[dimension]),
        }
    return record


def generate_pack(seed: int = DEFAULT_SEED) -> dict[str, list[dict[str, Any]]]:
    """The train (24 per set) and test (6 per set) records, sets in the order of ``TRAVEL_SETS``."""
    plan = [("train", w, n) for w in TRAVEL_SETS for n in range(1, TRAIN_PER_SET + 1)]
    plan += [("test", w, TRAIN_PER_SET + n) for w in TRAVEL_SETS for n in range(1, TEST_PER_SET + 1)]
    pack: dict[str, list[dict[str, Any]]] = {"train": [], "test": []}
    for index, (split, wanted, number) in enumerate(plan):
        pack[split].append(generate_task(seed, index, split, wanted, number))
    return pack


# ------------------------------------------------------------------------------------ the demo fixture


def _car(
    cid: str,
    kind: str,
    cost: int,
    category: str,
    seats: int,
    insurance: dict[str, int],
    brand: str,
    model: str,
    service: dict[str, int],
    reason: str,
) -> dict[str, Any]:
    return {
        "id": cid,
        "brand": brand,
        "model": model,
        "categories": category,
        "seats": seats,
        "cost": cost,
        "insurance": insurance,
        "service": service,
        "type": kind,
        "reason": reason,
    }


def _diner(
    rid: str,
    kind: str,
    name: str,
    cuisine: str,
    price: int,
    rating: float,
    reviews: list[int],
    tags: list[str],
    reason: str,
) -> dict[str, Any]:
    return {
        "id": rid,
        "name": name,
        "cuisine": cuisine,
        "expectation": price,
        "rating": rating,
        "reviews": {str(5 - i): n for i, n in enumerate(reviews)},
        "tags": tags,
        "type": kind,
        "reason": reason,
    }


_OK = "meets the request and every preference"

DEMO_TASK: dict[str, Any] = {
    "id": "travel-demo-01",
    "split": "demo",
    "wanted_num": "22",
    "dimensions": ["rental_car", "restaurant"],
    "party_size": 4,
    "scenario": (
        "Marta is taking her family of four to Lisbon for a spring break. They will drive around the coast "
        "for a few days and want one memorable dinner out in the city. Marta cares about the environment "
        "and worries about costly damage to rental cars."
    ),
    "initial_description": (
        "I'm travelling to Lisbon with my family of four. I need a rental car from May 3 to May 7, and we'd "
        "like dinner at a restaurant on May 5."
    ),
    "rental_car": {
        "preferences": [
            [
                "rental_car",
                "vehicle type",
                "Wants an electric car.",
                "Honestly, I'd love to skip petrol stations this time; plugging in overnight sounds much nicer.",
            ],
            [
                "rental_car",
                "insurance",
                "Wants full-coverage insurance.",
                "A tiny scratch cost me a fortune last time, so I want to be protected against absolutely everything.",
            ],
        ],
        "preference_meta": [
            {
                "catalog_key": "car_electric",
                "predicate": {"field": "categories", "op": "eq", "value": "Electric"},
                "keywords": [
                    "electric",
                    "ev",
                    "petrol",
                    "gas",
                    "fuel",
                    "type of car",
                    "kind of car",
                    "car type",
                    "category",
                    "engine",
                    "hybrid",
                    "charging",
                ],
                "probe": "Would you like an electric car or a petrol one?",
            },
            {
                "catalog_key": "car_full_insurance",
                "predicate": {"field": "insurance", "op": "has_key", "value": "Full coverage"},
                "keywords": ["insurance", "coverage", "protection", "damage", "scratch", "deductible"],
                "probe": "What level of insurance do you want on the car?",
            },
        ],
        "options": {
            "correct": [
                _car(
                    "C1",
                    "correct",
                    320,
                    "Electric",
                    5,
                    {"Full coverage": 60, "Basic": 20},
                    "Velora",
                    "Pulse",
                    {"GPS": 10, "Child seat": 12},
                    _OK,
                ),
                _car(
                    "C2", "correct", 290, "Electric", 5, {"Full coverage": 55}, "Kaito", "Sora", {"Toll pass": 8}, _OK
                ),
            ],
            "wrong": [
                _car(
                    "C3",
                    "wrong",
                    210,
                    "Electric",
                    5,
                    {"Basic": 15},
                    "Ostra",
                    "Halo",
                    {"GPS": 9},
                    "fails the preference: Wants full-coverage insurance.",
                ),
                _car(
                    "C4",
                    "wrong",
                    180,
                    "Compact",
                    5,
                    {"Full coverage": 40, "Basic": 12},
                    "Quillon",
                    "Arc",
                    {"Additional driver": 15},
                    "fails the preference: Wants an electric car.",
                ),
                _car(
                    "C5",
                    "wrong",
                    250,
                    "SUV",
                    7,
                    {"Basic": 25},
                    "Marlow",
                    "Heath",
                    {"Unlimited mileage": 30},
                    "fails the preference: Wants an electric car.; Wants full-coverage insurance.",
                ),
            ],
            "noise": [
                _car(
                    "C6",
                    "noise",
                    150,
                    "Electric",
                    2,
                    {"Full coverage": 30},
                    "Velora",
                    "Aria",
                    {"GPS": 10},
                    "fails the request: too few seats for the party",
                ),
            ],
        },
        "correct_ids": ["C1", "C2"],
        "best_id": "C2",
        "arguments": {"city": "Lisbon", "pick_up_date": "May 3", "drop_off_date": "May 7"},
    },
    "restaurant": {
        "preferences": [
            [
                "restaurant",
                "cuisine",
                "Wants seafood.",
                "We're right by the ocean, so I want whatever came off the fishing boats this morning.",
            ],
            [
                "restaurant",
                "rating",
                "Wants a rating of at least 8.5.",
                "I only go to places that nearly everyone raves about.",
            ],
        ],
        "preference_meta": [
            {
                "catalog_key": "rest_seafood",
                "predicate": {"field": "cuisine", "op": "eq", "value": "Seafood"},
                "keywords": ["cuisine", "seafood", "fish", "type of food", "kind of food", "food", "dishes"],
                "probe": "What kind of cuisine would you like for dinner?",
            },
            {
                "catalog_key": "rest_rating",
                "predicate": {"field": "rating", "op": "ge", "value": 8.5},
                "keywords": ["rating", "rated", "reviews", "review", "stars", "score"],
                "probe": "How highly rated should the restaurant be?",
            },
        ],
        "options": {
            "correct": [
                _diner(
                    "R1",
                    "correct",
                    "The Silver Anchor",
                    "Seafood",
                    48,
                    9.1,
                    [410, 90, 22, 6, 4],
                    ["Waterfront view", "Takes reservations"],
                    _OK,
                ),
                _diner(
                    "R2",
                    "correct",
                    "The Lucky Sparrow",
                    "Seafood",
                    35,
                    8.7,
                    [260, 88, 30, 9, 5],
                    ["Outdoor seating", "Kid-friendly"],
                    _OK,
                ),
            ],
            "wrong": [
                _diner(
                    "R3",
                    "wrong",
                    "The Crooked Kettle",
                    "Seafood",
                    22,
                    7.9,
                    [120, 95, 60, 20, 11],
                    ["Open late"],
                    "fails the preference: Wants a rating of at least 8.5.",
                ),
                _diner(
                    "R4",
                    "wrong",
                    "The Golden Olive",
                    "Italian",
                    25,
                    9.3,
                    [520, 80, 15, 5, 2],
                    ["Vegetarian options", "Wine list"],
                    "fails the preference: Wants seafood.",
                ),
                _diner(
                    "R5",
                    "wrong",
                    "The Rustic Barrel",
                    "Steakhouse",
                    30,
                    8.0,
                    [180, 110, 45, 15, 8],
                    ["Live music"],
                    "fails the preference: Wants seafood.",
                ),
            ],
            "noise": [
                _diner(
                    "R6",
                    "noise",
                    "The Hidden Fig",
                    "Seafood",
                    20,
                    9.0,
                    [300, 70, 18, 6, 3],
                    ["Closed for renovation"],
                    "fails the request: closed for renovation",
                ),
            ],
        },
        "correct_ids": ["R1", "R2"],
        "best_id": "R2",
        "arguments": {"city": "Lisbon", "date": "May 5"},
    },
}
"""The demo task's fixture (exempt from the 10-wrong / 5-noise counts)."""


# ------------------------------------------------------------------------------------ writing


def _jsonl(records: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)


def write_pack(directory: Path, seed: int = DEFAULT_SEED) -> dict[str, int]:
    """Write ``{train,test,demo}.jsonl`` and ``manifest.json`` into ``directory``; return the counts."""
    directory.mkdir(parents=True, exist_ok=True)
    pack = generate_pack(seed)
    files = {"train": _jsonl(pack["train"]), "test": _jsonl(pack["test"]), "demo": _jsonl([DEMO_TASK])}
    for split, text in files.items():
        (directory / f"{split}.jsonl").write_text(text, encoding="utf-8")
    counts = {"train": len(pack["train"]), "test": len(pack["test"]), "demo": 1}
    manifest = {
        "version": VERSION,
        "generator": "python -m mimesis_gym.envs.travel.generate",
        "seed": seed,
        "counts": counts,
        "sha256": {f"{split}.jsonl": hashlib.sha256(text.encode()).hexdigest() for split, text in files.items()},
    }
    (directory / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Regenerate TravelGym's shipped pack.")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=DATA_DIR, help="output directory (default: the package data)")
    args = parser.parse_args(argv)
    counts = write_pack(args.out, args.seed)
    print(f"wrote {counts} to {args.out}")


if __name__ == "__main__":
    main()
