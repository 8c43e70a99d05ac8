"""``user_behavior=``: which behaviour a user plays in an episode (docs/behaviors.md).

:class:`BehaviorMix` reads the value an env, ``eval`` or a trainer's env config takes — one condition
(``"control"``, ``"B2"``), a list drawn uniformly per episode, or a mapping of weights — and draws one
condition per episode. A single condition draws nothing, so ``user_behavior="control"`` (the default)
leaves every random stream of an env exactly as it was without the knob.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mimesis_gym.behaviors.registry import CONDITIONS, CONTROL

__all__ = ["BehaviorMix", "canonical_condition"]


def canonical_condition(name: Any) -> str:
    """``name`` written as the registry writes it (``b2`` → ``B2``, ``CONTROL`` → ``control``);
    ``ValueError`` naming the conditions for anything else."""
    if not isinstance(name, str):
        raise ValueError(f"a user behavior is a string such as 'B2' or 'control'; got {type(name).__name__}")
    text = name.strip()
    for condition in CONDITIONS:
        if text.lower() == condition.lower():
            return condition
    raise ValueError(f"unknown user behavior {name!r}; known: {', '.join(CONDITIONS)}")


@dataclass(frozen=True)
class BehaviorMix:
    """The conditions an env draws from per episode, with their probabilities (summing to 1)."""

    conditions: tuple[str, ...]
    probabilities: tuple[float, ...]

    @classmethod
    def parse(cls, value: str | Sequence[str] | Mapping[str, float] | BehaviorMix | None) -> BehaviorMix:
        """Read ``user_behavior=``: ``None``/``"control"``, ``"B2"``, ``"control,B2"``, ``["B2", "B9"]``
        (uniform) or ``{"control": 3, "B2": 1}`` (weights, finite and ≥ 0, not all 0). Raises
        ``ValueError`` naming the bad value."""
        if isinstance(value, BehaviorMix):
            return value
        if value is None:
            return cls((CONTROL,), (1.0,))
        if isinstance(value, str):
            value = [part for part in value.split(",") if part.strip()] or [value]
        if isinstance(value, Mapping):
            weights: dict[str, float] = {}
            for name, weight in value.items():
                if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
                    raise ValueError(f"user behavior weight of {name!r} must be a finite number; got {weight!r}")
                if weight < 0:
                    raise ValueError(f"user behavior weight of {name!r} must be >= 0; got {weight!r}")
                condition = canonical_condition(name)
                weights[condition] = weights.get(condition, 0.0) + float(weight)
            total = sum(weights.values())
            if total <= 0:
                raise ValueError("user behavior weights must not all be 0")
            kept = {name: weight for name, weight in weights.items() if weight > 0}
            return cls(tuple(kept), tuple(weight / total for weight in kept.values()))
        if isinstance(value, Sequence):
            names = list(dict.fromkeys(canonical_condition(name) for name in value))
            if not names:
                raise ValueError("user behavior list is empty; name at least one condition (e.g. 'control')")
            return cls(tuple(names), tuple(1.0 / len(names) for _ in names))
        raise ValueError(
            "user_behavior must be a condition, a list of conditions or a mapping of weights; "
            f"got {type(value).__name__}"
        )

    @property
    def fixed(self) -> str | None:
        """The one condition when there is one, else ``None``."""
        return self.conditions[0] if len(self.conditions) == 1 else None

    def check_applicable(self, applicable: Collection[str], env: str, reasons: Mapping[str, str]) -> None:
        """``ValueError`` when a condition does not apply to ``env``: names it, says why (``reasons``)
        and lists the applicable conditions."""
        for condition in self.conditions:
            if condition == CONTROL or condition in applicable:
                continue
            why = reasons.get(condition, "not played by this env's user")
            known = ", ".join(name for name in CONDITIONS if name == CONTROL or name in applicable)
            raise ValueError(f"user behavior {condition} does not apply to {env}: {why}; applicable: {known}")

    def draw(self, rng: np.random.Generator) -> str:
        """One condition for an episode; a fixed condition draws nothing from ``rng``."""
        if len(self.conditions) == 1:
            return self.conditions[0]
        return self.conditions[int(rng.choice(len(self.conditions), p=np.asarray(self.probabilities)))]
