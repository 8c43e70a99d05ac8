"""The applicability table: which env's user plays which of B1–B13, and why the others are not played.

Read from each env class's ``user_behaviors`` (docs/behaviors.md, "Which env plays which"); nothing keeps
a second list. ``mimesis-gym list behaviors`` prints it and docs/behaviors.md carries
:func:`applicability_markdown`'s text (a test keeps the two equal).
"""

from __future__ import annotations

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.envs import ENV_TABLE, EnvEntry

__all__ = ["applicability", "applicability_markdown"]


def applicability() -> list[tuple[EnvEntry, EnvBehaviors]]:
    """Every conversation env of the table with its behaviours, in table order."""
    return [(entry, entry.env_class().user_behaviors) for entry in ENV_TABLE if entry.kind == "conversation"]


def applicability_markdown() -> str:
    """The table as Markdown: a row per env (✓ played, · not), then each env's reasons, one line per
    reason with the behaviours it covers."""
    rows = applicability()
    header = "| env | " + " | ".join(BEHAVIOR_IDS) + " |"
    lines = [header, "|---|" + "---|" * len(BEHAVIOR_IDS)]
    for entry, spec in rows:
        cells = ["✓" if behavior in spec.applicable else "·" for behavior in BEHAVIOR_IDS]
        lines.append(f"| {entry.short} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("Why a behaviour is not played:")
    lines.append("")
    for entry, spec in rows:
        reasons: dict[str, list[str]] = {}
        for behavior, reason in spec.not_applicable.items():
            reasons.setdefault(reason, []).append(behavior)
        for reason, behaviors in reasons.items():
            which = "all" if len(behaviors) == len(BEHAVIOR_IDS) else ", ".join(behaviors)
            lines.append(f"- **{entry.short}** ({which}): {reason}")
    return "\n".join(lines)
