"""Learning benchmark of the user side (docs/algorithms.md, "Training the user side"): SmolLM2-135M
learns to play ABCDBehavior's customer with FoldGRPO on CPU.

The roles are those of the simulator's RL stage (``recipes/simulator_abcd.yaml``): the policy is the
simulated **customer**, told to enact a realistic behavior; the scripted support agent answers and
the scripted judge scores the finished chat (docs/envs/abcd.md, "Rewards"):
``R = (2·exhibit + 1.5·placement + naturalness + 0.5·on_task) / 5``, halved when the behavior is
announced.

Behaviors: B7 (artificial constraint stacking), B12 (request overloading) and B13 (belittling or
entitled pressure), with the env's ``behaviors=`` filter on the train and test rows. The choice comes
from reading the scripted judge's rules (``envs/abcd/judge_rules.py``), not from test results. These
three have lexical, graded exhibit rules that one message can satisfy in part or fully: B7 counts
"can't / don't have / without / lost …" phrases (exhibit = matches / 3), B12 counts request clauses
in one message (clauses / the row's 3–5), B13 counts turns with "i demand / unacceptable / obviously
…" (0, 0.75, 1); all three may show from turn 1. A sampled message of the untrained tiny model hits
them now and then, so the rewards within a group differ: the signal a GRPO-style learner needs. The
others were left out: B1, B2, B4, B5, B6, B9 and B10 cannot be credited before turn 2 or 3 (their
``min_turn``) or need an event of the chat first (the agent's progress, a refusal); B1 and B5 also
read private thoughts, which the tiny model does not write; B3 is defined only when the agent asks
for the withheld field; B8 and B11 need exact field values in the message.

Setup (the ``mimesis-simulator-cpu`` preset: ``mimesis-simulator`` scaled to about a minute per
step on a busy 2-core machine): FoldGRPO (score = the sum of turn rewards), G = 4, 4 rows per step, one
mini-batch (one optimizer step per step), lr 5e-5 (``mimesis-simulator``'s 8e-6 is the paper's for a 9B
model over 500 steps; 5e-5 is what the CPU agent demos use), clip 0.2 / 0.28, dual clip 10, no KL,
fp32, ``--steps`` 16. One customer message per chat (``turn_budget=1``; the three behaviors may all
show at turn 1) of at most 48 tokens: the customer prompt alone is about 580 tokens (the trainer runs
it once per group: docs/algorithms.md, "Micro-batches and packing"). A message cut by the cap ends the chat
unjudged (reward 0), so the table also shows the share of cut chats. ``require_think=False``: the
think gate of ``reward_profile="train"`` would zero every reward, since the tiny model was never
taught to write ``<think>`` blocks. For each seed it prints the per-step mean training reward and the
greedy judge reward on the held-out **test** rows of the chosen behaviors before and after training
(per behavior and over all rows; the untrained model's greedy scores are the same for every seed and
are computed once per process); nothing is tuned on the test rows. Memory: one process peaked at
4.7 GB with 2 rows per step; ``--jobs 3`` ran on a 23 GB machine.

Criterion (as the agent demos): the mean greedy test reward (over seeds) rises (gain > 0), and at
least 2 of 3 seeds improve. Exit status 0 when it holds, 1 otherwise. ``--users-report`` also runs
``users-report`` on ABCD (the first ``--report-limit`` test rows of the chosen behaviors) with the
untrained tiny model and each seed's trained policy as customers, and prints disclosure and role
fidelity before/after.

    python benchmarks/learning_simulator.py [--behaviors B7 B12 B13] [--seeds 0 1 2] [--steps 16]
        [--lr 5e-5] [--turns 1] [--tokens 48] [--threads 1] [--jobs 1] [--users-report [--report-limit 12]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path
from typing import Any

import torch
from seeds import run_seeds

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.engines.base import Sampling
from mimesis_gym.algorithms.rollout import EpisodeRequest
from mimesis_gym.algorithms.trainer import Trainer
from mimesis_gym.envs.abcd.env import ABCDBehaviorEnv

ENV_ID = "mimesis/ABCDBehavior-v0"
BEHAVIORS = ("B7", "B12", "B13")
TURNS = 1
PROMPTS_PER_STEP = 4
TOKENS_PER_TURN = 48
_UNTRAINED: dict[str, Any] = {}
"""The untrained model's test scores, computed once per process."""
REPORT_ROWS = (
    ("disclosed by reply 1", lambda m: m["disclosure_curve"][0]),
    ("disclosed by the last reply", lambda m: m["disclosure_curve"][-1]),
    ("unprompted disclosure", lambda m: m["unprompted_disclosure"]),
    ("answered directly", lambda m: m["answered_directly"]),
    ("role faults (any)", lambda m: m["role_faults"]["any"]),
    ("acts as assistant", lambda m: m["role_faults"]["assistant"]),
    ("says it is an AI", lambda m: m["role_faults"]["ai"]),
    ("words per reply (mean)", lambda m: m["reply_words"]["mean"]),
    ("homogeneity (3-gram Jaccard)", lambda m: m["homogeneity"]),
)


def env_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The env's kwargs for training and evaluation (the trainer adds user, split and reward profile)."""
    return {"behaviors": list(args.behaviors), "require_think": False, "turn_budget": args.turns}


def held_out_rows(args: argparse.Namespace) -> dict[str, list[str]]:
    """The held-out test row ids of each chosen behavior."""
    rows: dict[str, list[str]] = {}
    for row in ABCDBehaviorEnv.task_pack_for(env_kwargs(args)).pool("test"):  # the env's rows, no env built
        rows.setdefault(row.condition, []).append(row.id)
    return rows


def judged(trainer: Trainer, rows: dict[str, list[str]]) -> dict[str, dict[str, float]]:
    """Greedy episodes on the test rows, one batch: per behavior and over all rows (``all``), the mean
    judge reward and the share of chats cut by the per-message token cap (cut chats are not judged: 0)."""
    spec = trainer.envs[0]
    tasks = [(behavior, task) for behavior, ids in rows.items() for task in ids]
    requests = [EpisodeRequest(spec.eval_factory, spec.name, task, 0, f"test:{task}", f"test:{k}")
                for k, (_, task) in enumerate(tasks)]  # fmt: skip
    episodes = {e.task_id: e for e in trainer.collector.collect(requests, sampling=Sampling(temperature=0.0), seed=0)}
    groups = {**{behavior: [t for b, t in tasks if b == behavior] for behavior in rows}, "all": [t for _, t in tasks]}
    return {
        name: {
            "reward": statistics.mean(episodes[t].episode_score for t in ids),
            "cut": statistics.mean(float(episodes[t].truncated) for t in ids),
        }
        for name, ids in groups.items()
    }


def run_seed(seed: int, args: argparse.Namespace) -> dict[str, Any]:
    if args.threads:
        torch.set_num_threads(args.threads)
    out = args.out / f"seed{seed}"
    overrides = [
        f"run.seed={seed}",
        f"run.total_steps={args.steps}",
        f"run.output_dir={out}",
        "run.progress=false",
        "run.resume=never",
        f"optim.lr={args.lr}",
        f"rollout.prompts_per_batch={args.prompts}",
        f"update.mini_batch_prompts={args.prompts}",
        f"rollout.max_turns={args.turns}",
        f"rollout.max_tokens_per_turn={args.tokens}",
        *args.set,
    ]
    config = TrainerConfig.preset("mimesis-simulator-cpu").with_overrides(overrides)
    (out / "metrics.jsonl").unlink(missing_ok=True)
    rows = held_out_rows(args)
    started = time.perf_counter()
    trainer = Trainer([(ENV_ID, env_kwargs(args))], "tiny", "scripted", "foldgrpo", config=config)
    if "before" not in _UNTRAINED:  # greedy decoding of the same initial weights: the same for every seed
        _UNTRAINED["before"] = judged(trainer, rows)
    before = _UNTRAINED["before"]
    rewards, ties = [], []
    for _ in range(args.steps):
        metrics = trainer.step()
        rewards.append(metrics["reward/mean"])
        ties.append(metrics["group/zero_std_frac"])
        print(
            f"seed {seed} step {metrics['step']:>2}: reward {metrics['reward/mean']:.3f}, tied groups "
            f"{metrics['group/zero_std_frac']:.2f} ({metrics['time/step']:.0f} s)",
            flush=True,
        )
    after = judged(trainer, rows)
    policy = out / "policy"
    trainer.policy_model.save_pretrained(policy)
    trainer.tokenizer.save_pretrained(policy)
    minutes = (time.perf_counter() - started) / 60
    shown = ", ".join(f"{b} {before[b]['reward']:.3f} -> {after[b]['reward']:.3f}" for b in rows)
    print(
        f"seed {seed}: test reward {before['all']['reward']:.3f} -> {after['all']['reward']:.3f} ({shown}); chats cut "
        f"by the token cap {before['all']['cut']:.2f} -> {after['all']['cut']:.2f}; {minutes:.1f} min",
        flush=True,
    )
    return {"seed": seed, "before": before, "after": after, "rewards": rewards, "tied_groups": ties,
            "minutes": minutes, "policy": str(policy)}  # fmt: skip


def users_report(results: list[dict[str, Any]], args: argparse.Namespace) -> dict[str, Any]:
    """``users-report`` on ABCD's chosen test rows: the untrained tiny model and each trained policy as customers."""
    from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report

    users = ["tiny", *(f"hf:{r['policy']}" for r in results)]
    rows = sum(len(ids) for ids in held_out_rows(args).values())
    config = UsersReportConfig(
        users=users,
        envs=["abcd"],
        limit=args.report_limit or rows,
        max_turns=args.turns,
        agent_max_tokens=args.tokens,
        concurrency=8,
        env_args={"abcd": {"behaviors": list(args.behaviors), "turn_budget": args.turns}},
    )
    out = args.out / "users_report"
    report = asyncio.run(run_users_report(config, out, resume=(out / "runs").exists(), progress=False))
    trained = users[1:]
    header = f"{'metric':<30} {'tiny (before)':>14} {'trained (mean)':>15}  per seed"
    print(f"\nusers-report on ABCD ({config.limit} test rows, {out / 'users_report.md'}):\n{header}")
    for label, pick in REPORT_ROWS:
        base = pick(report["users"]["tiny"])
        values = [pick(report["users"][user]) for user in trained]
        shown = [value for value in values if value is not None]
        mean = statistics.mean(shown) if shown else None
        cells = " ".join("–" if v is None else f"{v:.2f}" for v in values)
        print(f"{label:<30} {'–' if base is None else f'{base:.2f}':>14} {'–' if mean is None else f'{mean:.2f}':>15}  "
              f"{cells}")  # fmt: skip
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--behaviors", nargs="+", default=list(BEHAVIORS), help="condition ids to train and test on")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--prompts", type=int, default=PROMPTS_PER_STEP, help="rows per step (groups of G = 4)")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--turns", type=int, default=TURNS, help="customer turns per chat (env turn_budget)")
    parser.add_argument("--tokens", type=int, default=TOKENS_PER_TURN, help="tokens per customer message")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument(
        "--jobs", type=int, default=1, help="seeds run in this many processes at once (each peaks near 5 GB)"
    )
    parser.add_argument("--out", type=Path, default=Path("runs/bench_learning_simulator"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--users-report", action="store_true", help="also run users-report before/after")
    parser.add_argument("--report-limit", type=int, default=12, help="users-report test rows (0: all chosen rows)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = run_seeds(run_seed, args)
    columns = list(results[0]["before"])
    print("\ngreedy judge reward on the held-out test rows, before -> after (cut: chats cut by the token cap)")
    print(f"{'seed':<6}" + "".join(f"{c:>16}" for c in columns) + f"{'cut':>14}   minutes")
    for r in results:
        cells = "".join(f"{r['before'][c]['reward']:>7.3f} -> {r['after'][c]['reward']:<5.3f}" for c in columns)
        cut = f"{r['before']['all']['cut']:.2f} -> {r['after']['all']['cut']:.2f}"
        print(f"{r['seed']:<6}{cells}{cut:>14}   {r['minutes']:.1f}")
    gain = statistics.mean(r["after"]["all"]["reward"] - r["before"]["all"]["reward"] for r in results)
    improved = sum(r["after"]["all"]["reward"] > r["before"]["all"]["reward"] for r in results)
    needed = min(2, len(results))
    ok = gain > 0 and improved >= needed
    record: dict[str, Any] = {"results": results, "gain": gain, "improved": improved, "pass": ok}
    if args.users_report:
        record["users_report"] = users_report(results, args)["users"]
    (args.out / "learning_simulator.json").write_text(json.dumps(record, indent=2) + "\n")
    print(
        f"\ncriterion: mean greedy test reward gain {gain:+.3f} (need > 0); improved in {improved}/{len(results)} "
        f"seeds (need {needed}) -> {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
