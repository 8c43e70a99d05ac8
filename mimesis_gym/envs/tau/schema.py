"""TauGym's task records: gold actions, the user's facts and the task (docs/envs/tau.md, Task data).

The lowest module of the tau package: the pack loader (:mod:`~mimesis_gym.envs.tau.tasks`) and
the facts derivation (:mod:`~mimesis_gym.envs.tau.facts`) both build on these types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["GoldAction", "TauTask", "UserFacts"]


class GoldAction(BaseModel):
    """One gold tool call: ``name`` and ``kwargs`` exactly as in the data (ints stay ints)."""

    model_config = ConfigDict(frozen=True)

    name: str
    kwargs: dict[str, Any]


class UserFacts(BaseModel):
    """What the scripted user knows and says (docs/envs/tau.md, Roles); absent facts are ``None`` or empty."""

    model_config = ConfigDict(frozen=True)

    user_id: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    zip: str | None = None
    email: str | None = None
    knows_email: bool = False
    knows_user_id: bool = False
    request: str = ""
    orders: tuple[str, ...] = ()
    items: dict[str, str] = {}
    targets: dict[str, str] = {}
    payment: str | None = None
    reason: str | None = None
    address: str | None = None
    reservations: tuple[str, ...] = ()
    flights: tuple[str, ...] = ()
    passengers: tuple[str, ...] = ()
    bags: str | None = None


class TauTask(BaseModel):
    """A TauGym task. ``obs`` is the recorded first customer message; ``system_prompt`` and
    ``opening_prompt`` are UserRL's parquet texts when available (upstream pack), else ``None``."""

    model_config = ConfigDict(frozen=True)

    id: str
    split: str
    domain: str
    obs: str
    user_id: str
    actions: tuple[GoldAction, ...]
    instruction: str
    outputs: tuple[str, ...] = ()
    kind: str | None = None
    user_facts: UserFacts | None = None
    system_prompt: str | None = None
    opening_prompt: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any], split: str, **extra: Any) -> TauTask:
        """A task from UserRL's record format (plus ``kind`` / ``user_facts`` at the top level)."""
        try:
            task = record["info"]["task"]
            task_id = record["id"]
            return cls(
                id=task_id,
                split=split,
                domain="airline" if "airline" in task_id else "retail",
                obs=record.get("obs") or "",
                user_id=task["user_id"],
                actions=tuple(GoldAction(name=a["name"], kwargs=a["kwargs"]) for a in task["actions"]),
                instruction=task["instruction"],
                outputs=tuple(task.get("outputs") or ()),
                kind=record.get("kind"),
                user_facts=UserFacts.model_validate(record["user_facts"]) if record.get("user_facts") else None,
                **extra,
            )
        except (KeyError, TypeError) as error:
            raise ValueError(f"TauGym record without {error}: {str(record)[:120]}") from None
