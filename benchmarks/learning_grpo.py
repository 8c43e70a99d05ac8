"""Learning benchmark (docs/algorithms.md): SmolLM2-135M learns KeywordEcho with GRPO (or CSD) on CPU.

Preset ``cpu-tiny``: G = 4, 4 prompts per batch, one mini-batch (one optimizer step per batch),
lr 5e-5 (1e-5 showed no learning trend here; 5e-5 is the top of the usual [5e-6, 5e-5] range),
fp32, 16 tokens per turn, 30 steps, seeds 0, 1, 2, the scripted user. For each seed it prints the
per-step mean training reward and the greedy success on the 32 test keywords before and after
training, then checks the criterion:

* the mean greedy test success (over seeds) rises by at least 0.10, and
* the mean training reward of the last 5 steps beats the first 5 steps in at least 2 of 3 seeds.

``--algorithm csd`` adds the CSD term with KeywordEcho's scripted coach. A learning-curve PNG
(matplotlib, Agg) is written under ``--out`` and its path printed. Exit status 0 when the criterion
holds, 1 otherwise.

    python benchmarks/learning_grpo.py [--algorithm grpo|csd] [--seeds 0 1 2] [--steps 30] [--lr 5e-5]
        [--threads 1] [--jobs 3] [--set rollout.mask_truncated_turns=true]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
from seeds import run_seeds

from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.testing import ENV_ID
from mimesis_gym.algorithms.trainer import Trainer


def run_seed(seed: int, args: argparse.Namespace) -> dict[str, object]:
    if args.threads:
        torch.set_num_threads(args.threads)
    overrides = [
        f"run.seed={seed}",
        f"run.total_steps={args.steps}",
        *([f"optim.lr={args.lr}"] if args.lr is not None else []),
        f"run.output_dir={args.out / f'{args.algorithm}-seed{seed}'}",
        "run.progress=false",
        "run.resume=never",
        "csd.coach.kind=scripted",
        "csd.coach.callable=mimesis_gym.algorithms.testing:keyword_echo_coach",
        *args.set,
    ]
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    metrics_file = args.out / f"{args.algorithm}-seed{seed}" / "metrics.jsonl"
    metrics_file.unlink(missing_ok=True)
    started = time.perf_counter()
    trainer = Trainer([ENV_ID], "tiny", "scripted", args.algorithm, config=config)
    before = trainer.evaluate(split="test")["val/score_mean"]
    rewards = []
    for _ in range(args.steps):
        metrics = trainer.step()
        rewards.append(metrics["reward/mean"])
        print(
            f"seed {seed} step {metrics['step']:>2}: reward {metrics['reward/mean']:.3f} "
            f"({metrics['time/step']:.1f} s)",
            flush=True,
        )
    after = trainer.evaluate(split="test")["val/score_mean"]
    wall = time.perf_counter() - started
    first, last = statistics.mean(rewards[:5]), statistics.mean(rewards[-5:])
    print(
        f"seed {seed}: greedy test success {before:.2f} -> {after:.2f}; training reward first-5 {first:.2f} -> "
        f"last-5 {last:.2f}; {wall / 60:.1f} min",
        flush=True,
    )
    return {"seed": seed, "before": before, "after": after, "rewards": rewards, "first5": first, "last5": last,
            "minutes": wall / 60}  # fmt: skip


def plot(results: list[dict[str, object]], args: argparse.Namespace) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    for result in results:
        rewards = result["rewards"]
        axis.plot(range(1, len(rewards) + 1), rewards, marker=".", label=f"seed {result['seed']}")  # type: ignore[arg-type]
    axis.set_xlabel("step (rollout batch)")
    axis.set_ylabel("mean training reward")
    axis.set_title(f"KeywordEcho, SmolLM2-135M, {args.algorithm.upper()} (cpu-tiny)")
    axis.set_ylim(-0.05, 1.05)
    axis.legend()
    path = args.out / f"learning_{args.algorithm}.png"
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--algorithm", choices=["grpo", "csd"], default="grpo")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--lr", type=float, default=None, help="override the preset's lr (5e-5)")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_learning"))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--jobs", type=int, default=1, help="seeds run in this many processes at once")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    results = run_seeds(run_seed, args)
    gain = statistics.mean(r["after"] for r in results) - statistics.mean(r["before"] for r in results)  # type: ignore[misc]
    improved = sum(r["last5"] > r["first5"] for r in results)  # type: ignore[operator]
    needed = min(2, len(results))
    ok = gain >= 0.10 and improved >= needed
    path = plot(results, args)
    (args.out / f"learning_{args.algorithm}.json").write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nlearning curve: {path}")
    print(
        f"criterion: mean greedy test success gain {gain:+.2f} (need ≥ +0.10); last-5 > first-5 reward in "
        f"{improved}/{len(results)} seeds (need {needed}) -> {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
