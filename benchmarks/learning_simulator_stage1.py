"""The paper's Stage I on CPU (docs/simulator.md, "The CPU demo"): SmolLM2-135M learns to write the
user's side of real conversations, judged against held-out humans by the scorecard.

1. Data (``mimesis-gym sft-data``, ``dev`` halves only): the human turns of OASST1, SimulatorArena
   (document and math) and chitchat in the mid-training style (thinking off; ``--per-source``
   conversations of each; those over ``--mid-max-tokens`` 1,536 tokens are dropped by the learner),
   and ThoughtTrace's 11 ``dev`` conversations in the ThoughtTrace style (each message after the user's
   own reason, ``<think>reason</think>message``; up to ``--tt-max-tokens`` 4,096 tokens: its assistant
   replies are long).
2. Per seed (0, 1, 2): mid-training (``algorithm="sft"``, the paper's optimizer shape — AdamW β (0.9,
   0.999), cosine, no warm-up, weight decay 0.01 — at lr ``--mid-lr``, 4 conversations a step for
   ``--mid-steps`` steps), then ThoughtTrace SFT from that checkpoint (cosine, weight decay 0, warm-up
   ``--tt-warmup`` steps, lr ``--tt-lr``, ``--tt-steps`` steps). The paper's 3e-5 and 1e-7 are for a 9B
   model over millions of examples; on a 135M model and a few dozen CPU steps the mid-training rate is
   the CPU learners' 5e-5 and ThoughtTrace's is raised to 1e-5 so that it moves the weights at all (1e-7
   changes nothing measurable in 3 steps).
3. The scorecard (``mimesis-gym users-report --humans``) replays the **held-out** ``test`` halves of
   OASST1, SimulatorArena (both), ThoughtTrace and chitchat (``--limit`` conversations each,
   ``--max-turns`` real replies each, 64-token user turns) with the untrained model and each seed's
   model after mid-training and after ThoughtTrace, one process per model (seven local models in one
   process ran out of 24 GB), each with the ceiling and the floor.
4. The hand-off to Stage II: one FoldGRPO step of ABCDBehavior's customer (the ``mimesis-simulator-cpu``
   preset, behaviors B7/B12/B13, one 48-token message per chat) from seed 0's Stage I checkpoint.

Pass rule (fixed before the run): the mean index gain after ThoughtTrace over the untrained model is
> 0, at least 2 of 3 seeds improve, and the role-fault rate (mean over corpora) does not rise. Exit 0
when it holds, 1 otherwise. The numbers are written to ``--out``/stage1.json.

    python benchmarks/learning_simulator_stage1.py [--humans ../shared/data/humans] [--seeds 0 1 2]
        [--mid-steps 24] [--tt-steps 3] [--limit 3] [--max-turns 4] [--threads 0] [--out runs/bench_stage1]

A seed's trained model is reused when a finished run of the same settings left it in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym import cli
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.trainer import Trainer
from mimesis_gym.evaluation.humanlike.scorecard import CEILING, FLOOR

ROOT = Path(__file__).resolve().parents[1]
MIDTRAIN_SOURCES = ("oasst1", "simulatorarena-doc", "simulatorarena-math", "chitchat")
JUDGED_SOURCES = ("oasst1", "simulatorarena-doc", "simulatorarena-math", "thoughttrace", "chitchat")
REPLAY_ENV = "mimesis/HumanReplay-v0"
ABCD_ENV = "mimesis/ABCDBehavior-v0"


def build_data(args: argparse.Namespace) -> tuple[Path, Path]:
    """The two SFT files, written by ``mimesis-gym sft-data`` from the ``dev`` halves."""
    data = args.out / "data"
    data.mkdir(parents=True, exist_ok=True)
    mid, thought = data / "midtrain.jsonl", data / "thoughttrace.jsonl"
    common = ["sft-data", "--humans", str(args.humans), "--force"]
    if cli.main([*common, "--sources", ",".join(MIDTRAIN_SOURCES), "--style", "midtrain",
                 "--limit", str(args.per_source), "--out", str(mid)]) != 0:  # fmt: skip
        raise SystemExit("sft-data (midtrain) failed")
    if cli.main([*common, "--sources", "thoughttrace", "--style", "thoughttrace", "--out", str(thought)]) != 0:
        raise SystemExit("sft-data (thoughttrace) failed")
    return mid, thought


def sft(
    policy: str, data: Path, out: Path, seed: int, *, steps: int, lr: float, warmup: int, decay: float, max_tokens: int
) -> Path:
    """``steps`` SFT steps of ``policy`` on ``data`` (cosine schedule); the trained model's folder. A folder
    that a finished run of the same settings left (``done.json``) is reused."""
    model = out / "policy"
    settings = {"policy": policy, "data": str(data), "seed": seed, "steps": steps, "lr": lr, "warmup": warmup,
                "decay": decay, "max_tokens": max_tokens}  # fmt: skip
    done = out / "done.json"
    if done.is_file() and json.loads(done.read_text(encoding="utf-8")) == settings:
        print(f"  {out.name}: reused (same settings)", flush=True)
        return model
    overrides = [
        f"run.seed={seed}",
        f"run.total_steps={steps}",
        f"run.output_dir={out}",
        "run.progress=false",
        "run.resume=never",
        f"sft.data={data}",
        f"sft.max_tokens={max_tokens}",
        f"optim.lr={lr}",
        f"optim.warmup_steps={warmup}",
        f"optim.weight_decay={decay}",
        "optim.schedule=cosine",
    ]
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    trainer = Trainer([REPLAY_ENV], policy, "scripted", "sft", config=config)
    losses = [trainer.step()["sft/loss"] for _ in range(steps)]
    trainer.policy_model.save_pretrained(model)
    trainer.tokenizer.save_pretrained(model)
    done.write_text(json.dumps(settings) + "\n", encoding="utf-8")
    print(f"  {out.name}: SFT loss {losses[0]:.3f} -> {losses[-1]:.3f} over {steps} steps", flush=True)
    return model


def stage_two_step(policy: Path, args: argparse.Namespace) -> float:
    """One FoldGRPO step of ABCD's customer from ``policy``: its mean training reward."""
    overrides = [f"run.output_dir={args.out / 'stage2'}", "run.progress=false", "run.resume=never", "run.total_steps=1",
                 "rollout.max_turns=1", "rollout.max_tokens_per_turn=48"]  # fmt: skip
    config = TrainerConfig.preset("mimesis-simulator-cpu").with_overrides(overrides)
    kwargs = {"behaviors": ["B7", "B12", "B13"], "require_think": False, "turn_budget": 1}
    trainer = Trainer([(ABCD_ENV, kwargs)], f"hf:{policy}", "scripted", "foldgrpo", config=config)
    metrics = trainer.step()
    return float(metrics["reward/mean"])


def scorecard(user: str, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The scorecard of one user on the held-out ``test`` halves, in a process of its own (one local model
    in memory at a time: several in one process ran out of 24 GB), resumed when ``out`` holds a run."""
    command = [sys.executable, "-m", "mimesis_gym.cli", "users-report", "--humans", str(args.humans),
               "--sources", ",".join(JUDGED_SOURCES), "--users", user, "--limit", str(args.limit),
               "--max-turns", str(args.max_turns), "--role-max-tokens", "64", "--concurrency", "4",
               "--out", str(out), "--no-progress"]  # fmt: skip
    if (out / "runs").exists():
        command.append("--resume")
    completed = subprocess.run(command, capture_output=True, text=True)
    if completed.returncode not in (0, 4):  # 4: a user wrote no turn at all (its row says so)
        raise SystemExit(f"users-report for {user} exited {completed.returncode}: {completed.stderr[-2000:]}")
    print(f"  scored {user}", flush=True)
    return json.loads((out / "users_report.json").read_text(encoding="utf-8"))


def role_faults(entry: dict[str, Any]) -> float | None:
    rates = [table["parts"]["role_fault_rate"] for table in entry if table["parts"]["role_fault_rate"] is not None]
    return statistics.mean(rates) if rates else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--humans", type=Path, default=ROOT.parent / "shared" / "data" / "humans")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--per-source", type=int, default=24, help="mid-training conversations of each corpus")
    parser.add_argument("--mid-steps", type=int, default=24)
    parser.add_argument("--mid-lr", type=float, default=5e-5)
    parser.add_argument("--tt-steps", type=int, default=3)
    parser.add_argument("--tt-lr", type=float, default=1e-5)
    parser.add_argument("--tt-warmup", type=int, default=1)
    parser.add_argument("--mid-max-tokens", type=int, default=1536, help="longer mid-training chats are dropped")
    parser.add_argument("--tt-max-tokens", type=int, default=4096, help="longer ThoughtTrace conversations are dropped")
    parser.add_argument("--limit", type=int, default=3, help="held-out conversations of each corpus")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_stage1"))
    args = parser.parse_args()
    if not args.humans.is_dir():
        print(f"no corpora at {args.humans}: pass --humans DIR")
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out = args.out.resolve()
    started = time.perf_counter()
    mid_data, thought_data = build_data(args)
    models: dict[int, dict[str, Path]] = {}
    for seed in args.seeds:
        print(f"seed {seed}:", flush=True)
        mid = sft("tiny", mid_data, args.out / f"seed{seed}-midtrain", seed, steps=args.mid_steps, lr=args.mid_lr,
                  warmup=0, decay=0.01, max_tokens=args.mid_max_tokens)  # fmt: skip
        thought = sft(f"hf:{mid}", thought_data, args.out / f"seed{seed}-thoughttrace", seed, steps=args.tt_steps,
                      lr=args.tt_lr, warmup=args.tt_warmup, decay=0.0, max_tokens=args.tt_max_tokens)  # fmt: skip
        models[seed] = {"midtrain": mid, "thoughttrace": thought}
    reports = {"tiny": scorecard("tiny", args.out / "scorecard-untrained", args)}
    for seed, stages in models.items():
        for stage, path in stages.items():
            reports[f"hf:{path}"] = scorecard(f"hf:{path}", args.out / f"scorecard-seed{seed}-{stage}", args)

    def row(user: str, report: dict[str, Any] | None = None) -> dict[str, Any]:
        report = report or reports[user]
        return {
            "index": report["overall"][user]["index"],
            "families": report["overall"][user]["families"],
            "role_faults": role_faults([report["sources"][s][user] for s in JUDGED_SOURCES]),
        }

    before = row("tiny")
    results = []
    print(f"\n| seed | stage | index | behaviour | lexical | UserLM | role & length | role faults |\n|---{'|---' * 7}|")
    ceiling, floor = row(CEILING, reports["tiny"]), row(FLOOR, reports["tiny"])
    for label, data in (("–", before), ("ceiling", ceiling), ("floor", floor)):
        print(_line(label, "untrained" if label == "–" else "", data))
    for seed, stages in models.items():
        after = {stage: row(f"hf:{path}") for stage, path in stages.items()}
        for stage, data in after.items():
            print(_line(str(seed), stage, data))
        results.append({"seed": seed, "before": before, **after})
    gain = statistics.mean(r["thoughttrace"]["index"] for r in results) - before["index"]
    improved = sum(r["thoughttrace"]["index"] > before["index"] for r in results)
    faults_after = statistics.mean(r["thoughttrace"]["role_faults"] for r in results)
    ok = gain > 0 and improved >= 2 and faults_after <= before["role_faults"]
    reward = stage_two_step(models[args.seeds[0]]["thoughttrace"], args)
    minutes = (time.perf_counter() - started) / 60
    record = {"results": results, "gain": gain, "improved": improved, "role_faults_after": faults_after,
              "stage2_reward": reward, "minutes": minutes, "pass": ok}  # fmt: skip
    (args.out / "stage1.json").write_text(json.dumps(record, indent=2, default=str) + "\n", encoding="utf-8")
    print(
        f"\ncriterion: mean index gain {gain:+.1f} (need > 0); improved in {improved}/{len(results)} seeds (need ≥ 2); "
        f"role faults {before['role_faults']:.3f} -> {faults_after:.3f} (must not rise) -> {'PASS' if ok else 'FAIL'}"
    )
    print(f"Stage II hand-off: one FoldGRPO step on ABCD from seed {args.seeds[0]}'s Stage I model, mean reward "
          f"{reward:.3f}; {minutes:.0f} min in all; scorecards in {args.out}/scorecard-*")  # fmt: skip
    return 0 if ok else 1


def _line(seed: str, stage: str, data: dict[str, Any]) -> str:
    def cell(value: float | None, digits: int = 1) -> str:
        return "–" if value is None else f"{value:.{digits}f}"

    families = data["families"]
    return (
        f"| {seed} | {stage} | {cell(data['index'])} | {cell(families['behaviour'])} | {cell(families['lexical'])} | "
        f"{cell(families['userlm'])} | {cell(families['role_length'])} | {cell(data['role_faults'], 3)} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
