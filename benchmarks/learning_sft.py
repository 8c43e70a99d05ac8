"""SFT warm-start benchmark (docs/algorithms.md, "SFT: the warm start"): collect, then SFT, on CPU.

1. ``mimesis-gym eval --agent oracle --envs mimesis_testing/KeywordEcho-v0 --split train --trials 2``:
   the privileged oracle plays the 64 training keywords twice (the "strong agent, several trials per
   task" of the Base agent's data);
2. ``mimesis-gym collect RUN --out sft.jsonl --top-k 1``: the best trajectory per task, 64 conversations;
3. per seed (0, 1, 2): ``algorithm="sft"`` trains SmolLM2-135M on them (preset ``cpu-tiny``: 4
   conversations per step, one optimizer step each, fp32; ``--steps`` 16 = one epoch, lr ``--lr``),
   and the greedy success on the 32 held-out test keywords is measured before and after.

Criterion: the mean greedy test success (over seeds) rises by at least 0.30 and every seed improves.
Exit status 0 when it holds, 1 otherwise. The numbers are written to ``--out``/learning_sft.json.

    python benchmarks/learning_sft.py [--seeds 0 1 2] [--steps 16] [--lr 1e-5] [--threads 1]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

import torch

from mimesis_gym import cli
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.testing import ENV_ID
from mimesis_gym.algorithms.trainer import Trainer


def collect_data(out: Path) -> Path:
    """The oracle's eval run on the training keywords and the SFT file collected from it."""
    run = out / "oracle-eval"
    shutil.rmtree(run, ignore_errors=True)
    data = out / "sft.jsonl"
    argv = ["eval", "--agent", "oracle", "--envs", ENV_ID, "--split", "train", "--trials", "2"]
    if cli.main([*argv, "--out", str(run), "--no-progress", "--no-preflight"]) != 0:
        raise SystemExit("the oracle eval failed")
    if cli.main(["collect", str(run), "--out", str(data), "--top-k", "1"]) != 0:
        raise SystemExit("collect failed")
    return data


def run_seed(seed: int, data: Path, args: argparse.Namespace) -> dict[str, object]:
    overrides = [
        f"run.seed={seed}",
        f"run.total_steps={args.steps}",
        f"optim.lr={args.lr}",
        f"run.output_dir={args.out / f'sft-seed{seed}'}",
        "run.progress=false",
        "run.resume=never",
        f"sft.data={data}",
    ]
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    started = time.perf_counter()
    trainer = Trainer([ENV_ID], "tiny", "scripted", "sft", config=config)
    before = trainer.evaluate(split="test")["val/score_mean"]
    losses = [trainer.step()["sft/loss"] for _ in range(args.steps)]
    after = trainer.evaluate(split="test")["val/score_mean"]
    minutes = (time.perf_counter() - started) / 60
    print(
        f"seed {seed}: greedy test success {before:.2f} -> {after:.2f}; SFT loss {losses[0]:.3f} -> "
        f"{losses[-1]:.3f}; {minutes:.1f} min",
        flush=True,
    )
    return {"seed": seed, "before": before, "after": after, "losses": losses, "minutes": minutes}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-5)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_sft"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    data = collect_data(args.out)
    results = [run_seed(seed, data, args) for seed in args.seeds]
    gain = statistics.mean(r["after"] for r in results) - statistics.mean(r["before"] for r in results)  # type: ignore[misc]
    improved = sum(r["after"] > r["before"] for r in results)  # type: ignore[operator]
    ok = gain >= 0.30 and improved == len(results)
    (args.out / "learning_sft.json").write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"\ncriterion: mean greedy test success gain {gain:+.2f} (need ≥ +0.30); improved in {improved}/"
        f"{len(results)} seeds (need all) -> {'PASS' if ok else 'FAIL'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
