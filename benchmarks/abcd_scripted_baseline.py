"""ABCDBehavior: the scripted judge's scores for the scripted customer on the fixed rows of a split.

Three customers play every row of one split of the original pack (default ``test``, 244 rows; the
table in docs/envs/abcd.md was measured on ``test_v1``, 156 rows) against the scripted support
agent and are scored by the scripted judge (docs/envs/abcd.md, "Scripted judge"):

- **enacted** — ``customers.ScriptedCustomer``: enacts each row's behavior (cooperative on control rows);
- **announced** — the same lines, plus a turn-1 sentence that names the act (the judge halves R);
- **cooperative** — never enacts anything (a customer that ignores its directive).

Prints, per condition, the mean reward R and the mean of each judge part (exhibit, placement,
naturalness, on_task, cooperative for control rows), then the overall means. The scripted customer
is written against the scripted agent's wording, so the enacted column is an upper reference of the
scripted judge, not a measure of any model; the cooperative column shows what the judge gives a
customer that does nothing special.

    python benchmarks/abcd_scripted_baseline.py [--split test] [--markdown]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from typing import Any

import gymnasium as gym

import mimesis_gym  # noqa: F401
from mimesis_gym.envs.abcd.behaviors import CONDITIONS
from mimesis_gym.envs.abcd.customers import play_scripted

ENV_ID = "mimesis/ABCDBehavior-v0"
PARTS = ("exhibit", "placement", "naturalness", "on_task")
VARIANTS = {"enacted": {}, "announced": {"announce": True}, "cooperative": {"enact": False}}


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def run(split: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{variant: {condition: {"n", "R", part…}}}`` over every row of ``split``."""
    if ENV_ID not in gym.registry:
        gym.register(id=ENV_ID, entry_point="mimesis_gym.envs.abcd.env:ABCDBehaviorEnv", max_episode_steps=16)
    env = gym.make(ENV_ID, split=split)
    rows = env.unwrapped.task_pack.pool(split)
    table: dict[str, dict[str, dict[str, float]]] = {}
    for variant, options in VARIANTS.items():
        collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for row in rows:
            reward, info = play_scripted(env, row.id, **options)
            parts: dict[str, Any] = info["reward_parts"]
            bucket = collected[row.condition]
            bucket["R"].append(reward)
            for name in (*PARTS, "cooperative"):
                if isinstance(parts.get(name), float):
                    bucket[name].append(parts[name])
        table[variant] = {
            condition: {"n": float(len(values["R"])), **{name: _mean(v) for name, v in values.items()}}
            for condition, values in collected.items()
        }
    env.close()
    return table


def render(table: dict[str, dict[str, dict[str, float]]], markdown: bool) -> str:
    header = [
        "condition",
        "n",
        "R",
        "exhibit",
        "placement",
        "naturalness",
        "on_task",
        "coop.",
        "R announced",
        "R coop.",
    ]
    lines = []
    if markdown:
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    else:
        lines.append("".join(f"{h:>12}" for h in header))

    def cell(value: float | None) -> str:
        return "—" if value is None or value != value else f"{value:.3f}"

    enacted, announced, cooperative = table["enacted"], table["announced"], table["cooperative"]
    for condition in CONDITIONS:
        if condition not in enacted:
            continue
        row = enacted[condition]
        values = [
            condition,
            str(int(row["n"])),
            cell(row["R"]),
            *(cell(row.get(name)) for name in PARTS),
            cell(row.get("cooperative")),
            cell(announced[condition]["R"]),
            cell(cooperative[condition]["R"]),
        ]
        lines.append("| " + " | ".join(values) + " |" if markdown else "".join(f"{v:>12}" for v in values))
    behaviors = [c for c in CONDITIONS if c != "control" and c in enacted]

    def overall(variant: dict[str, dict[str, float]], conditions: list[str]) -> float:
        total = sum(variant[c]["R"] * variant[c]["n"] for c in conditions)
        return total / sum(variant[c]["n"] for c in conditions)

    lines.append("")
    for label, conditions in (("all rows", list(enacted)), ("behavior rows", behaviors)):
        lines.append(
            f"mean R over {label}: enacted {overall(enacted, conditions):.3f}, "
            f"announced {overall(announced, conditions):.3f}, cooperative {overall(cooperative, conditions):.3f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = parser.parse_args()
    print(render(run(args.split), args.markdown))


if __name__ == "__main__":
    main()
