"""Seconds per optimizer step: TRL's ``GRPOTrainer`` beside our ``Trainer``, alternated in one process.

docs/performance.md, "TRL's trainer". Per env (KeywordEcho, ``mimesis_gym.algorithms.testing.ENV_ID``,
and TelepathyGym with the scripted user) both trainers train the same embedded tiny model
(SmolLM2-135M, fp32, ``--threads`` torch threads for both) with the same group size G
(``--group``), prompts per step (``--prompts``, rows of the env's train split), learning rate
(``--lr``), turns (``--turns``) and tokens per turn (``--tokens-per-turn``), one optimizer step
per rollout batch, temperature 1, no KL term:

- **TRL**: ``GRPOTrainer`` with the adapter's ``environment_factory``
  (``mimesis_gym.integrations.trl``, as tests/test_trl_training.py runs it): the env's
  ``interact_with_env`` tool, at most ``--turns`` tool calls (``max_tool_calling_iterations``) and
  ``turns × tokens-per-turn`` completion tokens (``max_completion_length``), the Qwen2.5 tool
  template (SmolLM2's own cannot render tools). The untrained model seldom calls the tool, so most
  of TRL's rollouts are one completion; its prompt carries the tool schema.
- **ours**: ``Trainer([env], "tiny", "scripted", "grpo")`` from the ``cpu-tiny`` preset with the same
  budgets (``rollout.max_turns``, ``rollout.max_tokens_per_turn``), called as a user calls it.

The trainers alternate step by step (TRL's step, then ours, from a TRL callback); the first step
of each is a warm-up and dropped. Phases are timed from outside: TRL's generation is its
``_generate`` (the tool loop and env calls included), ours ``time/rollout`` (the env and user
included); the rest of the step (scoring, log-probs, loss, backward, optimizer) is the update.
Tokens: generated = the model's own tokens (TRL's ``tool_mask``, our action tokens); all = every
token of every trained sequence (prompt, replies, env text). Per trainer and env it prints s/step,
generated tokens/s during generation, all tokens/s over the step, update seconds and update tokens/s,
then one ``report_ratio`` row (benchmarks/ratios.py) per comparison and env; ``spread`` is the
min–max of the per-step ratios (none with one measured step).

The issue's author measured (2 cores, loaded): TRL 90.5 s/step (KeywordEcho), 109 s (TelepathyGym)
vs ours 19.1 / 46.3 s; generated tokens/s TRL 12.6 / 14.5 vs ours 6.7 / 11.5.

    python benchmarks/trl_trainer.py [--envs keyword,telepathy] [--steps 3] [--group 4] [--prompts 2]
        [--turns 4] [--tokens-per-turn 16] [--lr 5e-5] [--threads 2] [--quick]

``--quick`` (bench-compare): 2 steps (one measured), G 2, 1 prompt, 2 turns of 16 tokens. Both trainers
share the process: the defaults on TelepathyGym grew it past 14 GB (give it about 16 GB free).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratios import load_average, report_ratio

from mimesis_gym.algorithms import testing as keyword_echo

BENCHMARK = "trl_trainer"
ENVS = {"keyword": keyword_echo.ENV_ID, "telepathy": "mimesis/TelepathyGym-v0"}
"""``--envs`` names and the env each trains on."""
QUICK = {"steps": 2, "group": 2, "prompts": 1, "turns": 2, "tokens_per_turn": 16}


@dataclass
class StepTimes:
    """One measured optimizer step of one trainer: wall seconds and token counts."""

    step: float
    generation: float
    generated_tokens: int
    all_tokens: int

    @property
    def update(self) -> float:
        return self.step - self.generation


@dataclass
class Side:
    """The steps of one trainer, warm-up first."""

    name: str
    steps: list[StepTimes] = field(default_factory=list)
    prompt_tokens: list[int] = field(default_factory=list)

    @property
    def measured(self) -> list[StepTimes]:
        return self.steps[1:]

    def median(self, value: Callable[[StepTimes], float]) -> float:
        return statistics.median(value(step) for step in self.measured)


RATES: dict[str, tuple[str, str, Callable[[StepTimes], float], str, float | None]] = {
    # comparison: (unit, better, value of a step, short name, goal)
    "seconds per optimizer step": ("s", "lower", lambda s: s.step, "s/step", None),
    "generated tokens/s during generation": ("tokens/s", "higher",
                                             lambda s: s.generated_tokens / s.generation, "gen tok/s", 1.2),
    "all tokens/s over the step": ("tokens/s", "higher", lambda s: s.all_tokens / s.step, "all tok/s", None),
    "update tokens/s": ("tokens/s", "higher", lambda s: s.all_tokens / s.update, "upd tok/s", 1.2),
}  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="keyword,telepathy", help=f"comma-separated, of {sorted(ENVS)}")
    parser.add_argument("--steps", type=int, default=3, help="optimizer steps per trainer, the first a warm-up")
    parser.add_argument("--group", type=int, default=4, help="G: rollouts per prompt")
    parser.add_argument("--prompts", type=int, default=2, help="prompts (tasks) per step")
    parser.add_argument("--turns", type=int, default=4, help="turns (tool calls) per episode at most")
    parser.add_argument("--tokens-per-turn", type=int, default=16, help="generated tokens per turn at most")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--threads", type=int, default=2, help="torch threads, for both trainers")
    parser.add_argument("--quick", action="store_true", help="bench-compare's short mode: " + str(QUICK))
    args = parser.parse_args(argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    envs = [name.strip() for name in args.envs.split(",") if name.strip()]
    unknown = [name for name in envs if name not in ENVS]
    if unknown or not envs:
        parser.error(f"--envs {args.envs!r}: unknown {unknown}; choose from {sorted(ENVS)}")
    args.envs = envs
    if args.steps < 2:
        parser.error(f"--steps {args.steps}: at least 2 (the first is a warm-up)")
    if args.group < 2:
        parser.error(f"--group {args.group}: GRPO needs at least 2 rollouts per prompt")
    for name in ("prompts", "turns", "tokens_per_turn", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} {getattr(args, name)}: at least 1")
    return args


def our_trainer(env_id: str, args: argparse.Namespace, out: Path) -> tuple[Any, Side]:
    """Our Trainer on ``env_id`` with the run's budgets, and the side its steps are recorded into."""
    from mimesis_gym.algorithms.config import TrainerConfig
    from mimesis_gym.algorithms.trainer import Trainer

    overrides = [
        f"rollout.group_size={args.group}",
        f"rollout.prompts_per_batch={args.prompts}",
        f"rollout.max_turns={args.turns}",
        f"rollout.max_tokens_per_turn={args.tokens_per_turn}",
        f"update.mini_batch_prompts={args.prompts}",
        f"optim.lr={args.lr}",
        f"run.total_steps={args.steps}",
        f"run.output_dir={out / 'ours'}",
        "run.progress=false",
        "run.resume=never",
        "run.seed=0",
    ]
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    trainer = Trainer([env_id], "tiny", "scripted", "grpo", config=config)
    return trainer, Side("ours")


def our_step(trainer: Any, side: Side) -> None:
    """One step of our Trainer; its episodes are read from what its collector returned."""
    collect = trainer.collector.collect
    seen: list[Any] = []

    def recording(*call_args: Any, **kwargs: Any) -> Any:
        episodes = collect(*call_args, **kwargs)
        seen.extend(episodes)
        return episodes

    trainer.collector.collect = recording
    try:
        metrics = trainer.step()
    finally:
        del trainer.collector.collect  # the instance attribute: the class's method again
    side.steps.append(
        StepTimes(
            step=metrics["time/step"],
            generation=metrics["time/rollout"],
            generated_tokens=sum(episode.action_tokens for episode in seen),
            all_tokens=sum(len(segment) for episode in seen for segment in episode.segments),
        )
    )
    side.prompt_tokens.extend(episode.segments[0].prompt_len for episode in seen if episode.segments)


class TRLRun:
    """TRL's ``GRPOTrainer`` on one env, its phases timed by wrapping two of its methods on the instance."""

    def __init__(self, env_id: str, args: argparse.Namespace, out: Path, model_path: str) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from trl import GRPOConfig, GRPOTrainer
        from trl.chat_template_utils import qwen2_5_chat_template

        from mimesis_gym.integrations.trl import build_dataset, environment_factory, reward_function

        tokenizer = AutoTokenizer.from_pretrained(model_path)
        tokenizer.chat_template = qwen2_5_chat_template  # SmolLM2's own template cannot render tool calls
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
        self.factory = environment_factory(env_id, max_episode_steps=args.turns)
        dataset = build_dataset(self.factory, split="train", limit=args.prompts * args.steps)
        config = GRPOConfig(
            output_dir=str(out / "trl"),
            use_cpu=True,
            report_to="none",
            save_strategy="no",
            logging_steps=1,
            max_steps=args.steps,
            per_device_train_batch_size=args.group * args.prompts,
            gradient_accumulation_steps=1,
            num_generations=args.group,
            max_completion_length=args.turns * args.tokens_per_turn,
            max_tool_calling_iterations=args.turns,
            shuffle_dataset=False,
            learning_rate=args.lr,
            seed=0,
            disable_tqdm=True,
            activation_checkpointing=False,  # GRPOConfig's default; ours checkpoints on GPU only
            bf16=False,  # GRPOConfig's default bf16 autocast; both trainers run fp32
        )
        self.trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[reward_function("episode_score")],
            train_dataset=dataset,
            environment_factory=self.factory,
            args=config,
        )
        self.side = Side("TRL")
        self._generation = 0.0
        self._tokens = (0, 0)
        self._wrap()

    def _wrap(self) -> None:
        generate, score = self.trainer._generate, self.trainer._generate_and_score_completions

        def timed_generate(*call_args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return generate(*call_args, **kwargs)
            finally:
                self._generation += time.perf_counter() - started

        def counted_score(*call_args: Any, **kwargs: Any) -> Any:
            output = score(*call_args, **kwargs)
            completion = output["completion_mask"]
            own = completion * output["tool_mask"] if output.get("tool_mask") is not None else completion
            prompt = int(output["prompt_mask"].sum())
            self._tokens = (int(own.sum()), prompt + int(completion.sum()))
            self.side.prompt_tokens.extend(int(n) for n in output["prompt_mask"].sum(dim=1))
            return output

        self.trainer._generate = timed_generate
        self.trainer._generate_and_score_completions = counted_score

    def run(self, after_each_step: Callable[[], None]) -> None:
        """Train; after each TRL step, record it and call ``after_each_step`` (our trainer's step)."""
        from transformers import TrainerCallback

        run = self

        class Alternate(TrainerCallback):
            def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                run._generation, run._tokens = 0.0, (0, 0)
                run._started = time.perf_counter()

            def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
                wall = time.perf_counter() - run._started
                run.side.steps.append(StepTimes(wall, run._generation, *run._tokens))
                after_each_step()

        self.trainer.add_callback(Alternate())
        try:
            self.trainer.train()
        finally:
            self.factory.close()


def print_sides(env: str, sides: list[Side]) -> None:
    print(f"\n{env}: medians over {len(sides[0].measured)} measured step(s) (warm-up dropped)")
    print(f"  {'trainer':<7} {'prompt tok':>10} " + " ".join(f"{short:>10}" for *_, short, _ in RATES.values())
          + f" {'update s':>9} {'gen tok':>8} {'all tok':>8}")  # fmt: skip
    for side in sides:
        prompt = statistics.median(side.prompt_tokens) if side.prompt_tokens else float("nan")
        values = " ".join(f"{side.median(value):>10.3g}" for _, _, value, _, _ in RATES.values())
        update, generated = side.median(lambda s: s.update), side.median(lambda s: s.generated_tokens)
        print(f"  {side.name:<7} {prompt:>10.0f} {values} {update:>9.3g} {generated:>8.0f} "
              f"{side.median(lambda s: s.all_tokens):>8.0f}")  # fmt: skip


def report(env: str, trl: Side, ours: Side, load_at_start: float) -> None:
    """One ratio row per comparison: ours over TRL, the medians of the measured steps."""
    for comparison, (unit, better, value, _, goal) in RATES.items():
        per_step = [value(o) / value(t) for t, o in zip(trl.measured, ours.measured, strict=False) if value(t)]
        spread = per_step if len(per_step) > 1 else None
        report_ratio(BENCHMARK, f"{comparison}, {env}", unit=unit, anchor="TRL GRPOTrainer",
                     anchor_value=trl.median(value), project_value=ours.median(value), better=better,  # type: ignore[arg-type]
                     n=len(per_step), spread=spread, goal=goal, load_at_start=load_at_start)  # fmt: skip


def run_env(env: str, args: argparse.Namespace, model_path: str, load_at_start: float) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-trl-") as tmp:
        out = Path(tmp)
        ours, ours_side = our_trainer(ENVS[env], args, out)
        trl = TRLRun(ENVS[env], args, out, model_path)

        def ours_after_trl() -> None:
            our_step(ours, ours_side)
            print(f"  {env} step {len(ours_side.steps)}: TRL {trl.side.steps[-1].step:.1f} s, "
                  f"ours {ours_side.steps[-1].step:.1f} s", flush=True)  # fmt: skip

        trl.run(ours_after_trl)
        if len(trl.side.steps) != len(ours_side.steps) or len(trl.side.steps) < 2:
            raise RuntimeError(f"{env}: TRL ran {len(trl.side.steps)} steps and ours {len(ours_side.steps)}")
        print_sides(env, [trl.side, ours_side])
        report(env, trl.side, ours_side, load_at_start)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
        import trl
    except ImportError as error:
        print(f"trl_trainer: needs TRL and torch (pip install 'mimesis-gym[trl]'): {error}", file=sys.stderr)
        return 2
    from mimesis_gym.core.tiny import ensure_tiny_model

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is marked experimental in TRL
    torch.set_num_threads(args.threads)
    load_at_start = load_average()
    print(f"trl_trainer: envs {args.envs}, {args.steps} steps (1 warm-up), G {args.group}, {args.prompts} prompt(s), "
          f"{args.turns} turns × {args.tokens_per_turn} tokens, lr {args.lr:g}, fp32, {args.threads} torch threads, "
          f"TRL {trl.__version__}, load {load_at_start:.2f}", flush=True)  # fmt: skip
    model_path = str(ensure_tiny_model())
    for env in args.envs:
        run_env(env, args, model_path, load_at_start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
