"""The user-behaviour dimension of an eval plan (docs/evaluation.md, "User behaviours").

``eval --user-behaviors control,B3,B9`` plays each condition as its own set of work units: every
(agent, user) pair × env × task × trial once per condition the env's user plays
(``EnvBehaviors.applicable``; ``control`` everywhere). This module reads the flag
(:func:`run_conditions`), decides which (env, condition) pairs are played and which are skipped as
not applicable (:func:`plan_conditions`), and copies what the env reports about an episode's
behaviour into its record (:func:`note_behavior`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.behaviors.spec import canonical_condition
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.envs import EnvEntry
from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = ["ConditionPlan", "note_behavior", "plan_conditions", "run_conditions"]


def run_conditions(names: Iterable[Any]) -> list[str]:
    """The conditions a run plays: ``control`` first (always: every Δ is taken against it), then each
    named condition once, written as the registry writes it (``b3`` → ``B3``).

    ``ValueError`` naming an unknown condition and the known ones.
    """
    return list(dict.fromkeys([CONTROL, *(canonical_condition(name) for name in names)]))


@dataclass(frozen=True)
class ConditionPlan:
    """Which conditions each env of a run plays, and the (env, condition) pairs skipped."""

    played: dict[str, tuple[str, ...]]
    """Env short name → the run's conditions its user plays, in the run's order (``control`` first)."""
    skipped: dict[str, dict[str, str]]
    """Condition → {env short name: why its user cannot play it}: the pairs left out of the plan."""

    def summary_line(self) -> str | None:
        """One line naming the skipped pairs (``None`` when none), for the run's log."""
        if not self.skipped:
            return None
        parts = [f"{condition} on {', '.join(envs)}" for condition, envs in self.skipped.items()]
        return "user behaviours not applicable, skipped: " + "; ".join(parts)


def plan_conditions(entries: Sequence[EnvEntry], conditions: Sequence[str]) -> ConditionPlan:
    """The (env, condition) pairs of a run over ``entries``.

    An env plays ``control`` and each condition its user plays; the others are skipped, with the
    env's reason. A condition that no env of the run plays is a :class:`ConfigurationError` naming
    it, the envs and every condition each of them can play.
    """
    played: dict[str, tuple[str, ...]] = {}
    skipped: dict[str, dict[str, str]] = {}
    playable: dict[str, tuple[str, ...]] = {}
    for entry in entries:
        behaviors = entry.env_class().user_behaviors
        playable[entry.short] = (CONTROL, *behaviors.applicable)
        played[entry.short] = tuple(c for c in conditions if c == CONTROL or c in behaviors.applicable)
        for condition in conditions:
            if condition not in played[entry.short]:
                reason = behaviors.not_applicable.get(condition, "not played by this env's user")
                skipped.setdefault(condition, {})[entry.short] = reason
    unplayed = [c for c in conditions if not any(c in envs for envs in played.values())]
    if unplayed:
        plays = "; ".join(f"{env}: {', '.join(conditions)}" for env, conditions in playable.items())
        raise ConfigurationError(
            f"--user-behaviors {', '.join(unplayed)}: no env of this run ({', '.join(played)}) plays "
            f"{'it' if len(unplayed) == 1 else 'them'}; what each env plays: {plays}"
        )
    return ConditionPlan(played, skipped)


def note_behavior(record: EpisodeRecord, info: Mapping[str, Any]) -> None:
    """Copy ``info["user_behavior"]`` (the env's report after a reset or step) into ``record``:
    whether the behaviour was enacted so far (``None`` under control) and the turns it showed in."""
    report = info.get("user_behavior")
    if not isinstance(report, Mapping):
        return
    enacted = report.get("enacted")
    record.behavior_enacted = None if enacted is None else bool(enacted)
    record.behavior_turns = [int(turn) for turn in report.get("turns", ())]
