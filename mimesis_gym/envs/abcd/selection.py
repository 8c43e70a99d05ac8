"""Restricting ABCDBehavior to some conditions: the env's ``behaviors=`` argument (docs/envs/abcd.md, "Options").

:func:`parse_behaviors` reads the argument (condition ids ``B1``…``B13`` and ``control``, or behavior
names, as a sequence or one comma-separated string) and fails loudly on anything else, naming the
accepted values. :func:`restrict_pack` returns a pack holding only those conditions' rows in every
split, with the same catalog; it is cached per (pack, conditions), so constructing many envs with the
same filter (the trainer's factories) builds it once. Trainers, evaluation runs and ``reset`` then draw
only from the kept rows, since they all read ``env.task_pack``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from mimesis_gym.envs.abcd.behaviors import BEHAVIOR_IDS, CONDITIONS, behaviors
from mimesis_gym.envs.abcd.tasks import AbcdTaskPack

__all__ = ["parse_behaviors", "restrict_pack"]


def parse_behaviors(value: str | Sequence[str]) -> tuple[str, ...]:
    """The condition ids ``value`` names, in ``CONDITIONS`` order, without repeats.

    Accepted items: ``B1``…``B13`` (any case), ``control``, or a behavior's name
    (``self_contradiction``). ``ValueError`` names the offending item and every accepted id.
    """
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, Sequence) or isinstance(items, (bytes, bytearray)):
        raise ValueError(f"behaviors must be a list of condition ids or one comma-separated string; got {value!r}")
    names = {entry.name: entry.id for entry in behaviors().values()}
    chosen: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"behaviors: each item must be a string such as 'B3'; got {item!r}")
        key = item.strip()
        condition = key.upper() if key.upper() in BEHAVIOR_IDS else names.get(key, key.lower())
        if condition not in CONDITIONS:
            raise ValueError(
                f"behaviors: unknown condition {item!r}; use {', '.join(CONDITIONS)} (or a behavior's name)"
            )
        chosen.add(condition)
    if not chosen:
        raise ValueError(f"behaviors must name at least one of {', '.join(CONDITIONS)}; got {value!r}")
    return tuple(condition for condition in CONDITIONS if condition in chosen)


@lru_cache(maxsize=32)
def restrict_pack(pack: AbcdTaskPack, conditions: tuple[str, ...]) -> AbcdTaskPack:
    """``pack`` with only the rows whose condition is in ``conditions`` (every split, order kept).

    The restricted pack is named ``<pack name>[<ids>]``, so a split left without rows raises an error
    that shows the filter. ``ValueError`` when no split keeps a row.
    """
    wanted = set(conditions)
    splits = {split: [row for row in rows if row.condition in wanted] for split, rows in pack.splits.items()}
    if not any(splits.values()):
        raise ValueError(f"pack {pack.name!r} has no rows of {', '.join(conditions)} in any split")
    return AbcdTaskPack(f"{pack.name}[{','.join(conditions)}]", splits, pack.catalog)
