"""Update cost against its tokens (issue 31.2), and the update beside TRL's GRPO loss path on the same batch.

On synthetic rollout batches of three shapes, each at ``--sizes`` input tokens per step:

* **single**: one-turn rows, each with its own 60–120-id prompt and a reply of 8–48 ids;
* **multi**: KeywordEcho-like rows, a 28-id prompt and 2–4 turns of a 3–16-id reply and a 35-id
  observation (only the replies are scored);
* **grpo**: groups of ``G`` = 4 one-turn rows sharing a 442-id prompt (TelepathyGym's), replies of
  8–48 ids (a batch's size grows by whole rows, so its smallest size is one row).

Every row carries a non-zero advantage (one per row, the same on each of its turns), so no group
skips its backward. Per shape and size, alternated, after one warm-up each, medians over ``--repeats``:

* **project**: the trainer's update of one mini-batch (``PolicyUpdate.minibatch``: micro-batch
  plan, student forward with the chunked selective log-softmax, PPO-clip loss, backward, gradient
  clip, AdamW step), one optimizer step per batch (the detached current log-probs are ``ℓ_old``);
* **TRL**: ``trl.GRPOTrainer.compute_loss`` on the inputs its ``_prepare_inputs`` would hand it
  (left-padded prompt ids, right-padded completion ids, the loss mask as its ``tool_mask``, one
  advantage per row, ``old_per_token_logps`` absent as with one iteration per generation), then
  the backward, the gradient clip and its AdamW step. No generation is run.

Both sides start from the same weights (fp32) and count every input token. The table gives, per
shape and size, the seconds, the seconds per 1k tokens and the seconds per 1k tokens added since
the size before (``+s/1k``: the update is a fixed cost — the optimizer step, the gradient clip —
plus a cost per token, and linear scaling keeps that second column flat). The last lines are the
``report_ratio`` rows: update tokens/s vs TRL (all shapes and sizes pooled as total tokens over
total seconds, goal ≥ 1.2×) and the linearity of the update: the seconds per 1k tokens added over
the last step between sizes (e.g. 1,500 → 3,000) over that of the first (300 → 750), median over
the shapes, goal ≤ 1.2× (with two sizes: seconds per 1k tokens at the larger over the smaller).
The fixed cost would hide a quadratic term from the plain ratio: before issue 31.2 a packed 3,000-
token micro-batch cost twice the seconds per added token of a 300-token one, yet the same seconds
per token overall.

    python benchmarks/update_scaling.py [--sizes 300,750,1500,3000] [--shapes single,multi,grpo]
        [--repeats 2] [--threads 0] [--layers 0] [--no-trl] [--clock wall|cpu] [--span-tokens 512]

``--layers N`` keeps the tiny model's first N layers (a quicker look at the same per-layer shapes);
``--clock cpu`` times this process's CPU seconds (with ``--threads 1``, steadier on a loaded
machine); ``--span-tokens 1000000000`` runs a packed micro-batch as one span (before issue 31.2).
"""

from __future__ import annotations

import argparse
import copy
import functools
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from ratios import load_average, report_ratio

from mimesis_gym.algorithms.batching import PACKED_SPAN_TOKENS, training_rows
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners import RolloutBatch
from mimesis_gym.algorithms.records import Episode, Segment, Turn
from mimesis_gym.algorithms.testing import ENV_ID
from mimesis_gym.algorithms.trainer import Trainer

SHAPES = ("single", "multi", "grpo")
TELEPATHY_PROMPT = 442
GROUP = 4


def _episode(rollout_id: str, group: str, ids: list[int], prompt: int, spans: list[tuple[int, int]]) -> Episode:
    """One single-segment episode whose turns own the action ``spans`` (and the observation after each)."""
    mask, owner, turns = [0] * len(ids), [0] * len(ids), []
    for t, (start, end) in enumerate(spans, 1):
        stop = spans[t][0] if t < len(spans) else len(ids)
        mask[start:end] = [1] * (end - start)
        owner[start:stop] = [t] * (stop - start)
        turns.append(Turn(index=t, action_span=(start, end), gen_prompt_len=4, reward=0.0))
    segment = Segment(rollout_id=rollout_id, input_ids=ids, prompt_len=prompt, loss_mask=mask, turn_of_position=owner)
    return Episode(rollout_id=rollout_id, group_id=group, env_id=ENV_ID, task_id="t", seed=0, segments=[segment],
                   turns=turns)  # fmt: skip


def shaped_batch(shape: str, tokens: int, vocab: int, seed: int) -> list[Episode]:
    """Rows of ``shape`` (module docstring) until the batch holds at least ``tokens`` ids; non-zero advantages."""
    rng = random.Random(seed)
    ids_of = lambda n: [rng.randrange(10, vocab) for _ in range(n)]  # noqa: E731
    episodes: list[Episode] = []
    shared: list[int] = []
    while sum(len(e.segments[0].input_ids) for e in episodes) < tokens:
        e = len(episodes)
        group, member = e // GROUP, e % GROUP
        if shape == "single":
            prompt = ids_of(rng.randint(60, 120))
            ids = prompt + ids_of(rng.randint(8, 48))
            spans = [(len(prompt), len(ids))]
        elif shape == "grpo":
            shared = ids_of(TELEPATHY_PROMPT) if member == 0 else shared
            prompt = shared
            ids = prompt + ids_of(rng.randint(8, 48))
            spans = [(len(prompt), len(ids))]
        elif shape == "multi":
            prompt = ids_of(28)
            ids, spans = list(prompt), []
            for _ in range(rng.randint(2, 4)):
                start = len(ids)
                ids += ids_of(rng.randint(3, 16))
                spans.append((start, len(ids)))
                ids += ids_of(35)
        else:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}; got {shape!r}")
        episode = _episode(f"0:{group}:{member}", f"g{group}", ids, len(prompt), spans)
        advantage = rng.choice([-1.0, 1.0]) * rng.uniform(0.2, 1.5)
        episode.turn_advantages = [advantage] * len(spans)
        episodes.append(episode)
    return episodes


def row_advantage(episode: Episode) -> float:
    """The one advantage a row carries (every turn of a synthetic row has the same)."""
    return float((episode.turn_advantages or [0.0])[0])


def project_update(trainer: Trainer, episodes: list[Episode]) -> None:
    """One optimizer step of the trainer's update on ``episodes`` as one mini-batch (no old-log-prob pass)."""
    rows = training_rows(episodes)
    every = list(range(len(rows)))
    batch = RolloutBatch(step=0, episodes=episodes, local=episodes, rows=rows, minibatches=[every], shares=[every])
    trainer.update.minibatch(batch, 0, True, Counter())


class TRLUpdate:
    """TRL's GRPO update on prepared inputs: ``compute_loss`` → backward → gradient clip → AdamW step."""

    def __init__(self, model: Any, tokenizer: Any, lr: float) -> None:
        from datasets import Dataset
        from trl import GRPOConfig, GRPOTrainer

        config = GRPOConfig(
            output_dir="/tmp/update_scaling_trl", use_cpu=True, report_to="none", save_strategy="no",
            per_device_train_batch_size=GROUP, num_generations=GROUP, learning_rate=lr, seed=0,
            disable_tqdm=True, bf16=False, beta=0.0, max_grad_norm=1.0,
        )  # fmt: skip
        self.trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=[lambda completions, **_: [0.0] * len(completions)],
            train_dataset=Dataset.from_dict({"prompt": ["hello"] * GROUP}),
            args=config,
        )
        self.trainer.create_optimizer()
        self.trainer.current_gradient_accumulation_steps = 1
        self.trainer.model.train()

    @staticmethod
    def inputs(episodes: list[Episode], pad_id: int) -> dict[str, torch.Tensor]:
        """What ``_prepare_inputs`` hands ``compute_loss``: prompts left-padded, completions right-padded."""
        segments = [e.segments[0] for e in episodes]
        prompts = [s.input_ids[: s.prompt_len] for s in segments]
        completions = [s.input_ids[s.prompt_len :] for s in segments]
        masks = [s.loss_mask[s.prompt_len :] for s in segments]
        p_width, c_width = max(map(len, prompts)), max(map(len, completions))
        prompt_ids = torch.full((len(segments), p_width), pad_id, dtype=torch.long)
        prompt_mask = torch.zeros_like(prompt_ids)
        completion_ids = torch.full((len(segments), c_width), pad_id, dtype=torch.long)
        completion_mask = torch.zeros_like(completion_ids)
        tool_mask = torch.zeros_like(completion_ids)
        for b, (prompt, completion, mask) in enumerate(zip(prompts, completions, masks, strict=True)):
            prompt_ids[b, p_width - len(prompt) :] = torch.tensor(prompt)
            prompt_mask[b, p_width - len(prompt) :] = 1
            completion_ids[b, : len(completion)] = torch.tensor(completion)
            completion_mask[b, : len(completion)] = 1
            tool_mask[b, : len(mask)] = torch.tensor(mask)
        return {
            "prompt_ids": prompt_ids, "prompt_mask": prompt_mask, "completion_ids": completion_ids,
            "completion_mask": completion_mask, "tool_mask": tool_mask,
            "advantages": torch.tensor([row_advantage(e) for e in episodes]),
            "num_items_in_batch": (completion_mask * tool_mask).sum(),
        }  # fmt: skip

    def step(self, inputs: dict[str, torch.Tensor]) -> None:
        trainer = self.trainer
        loss = trainer.compute_loss(trainer.model, inputs)
        trainer.accelerator.backward(loss)
        trainer.accelerator.clip_grad_norm_(trainer.model.parameters(), trainer.args.max_grad_norm)
        trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)


@dataclass
class Cell:
    """One shape at one size: its tokens and each side's seconds per repeat."""

    shape: str
    tokens: int
    rows: int
    seconds: dict[str, list[float]] = field(default_factory=lambda: {"project": [], "TRL": []})

    def median(self, side: str) -> float:
        return statistics.median(self.seconds[side]) if self.seconds[side] else float("nan")


def timed(step: Callable[[], None], clock: Callable[[], float]) -> float:
    started = clock()
    step()
    return clock() - started


def load_models(layers: int) -> tuple[Any, Any]:
    """The tiny model (fp32, its first ``layers`` layers when > 0) and its tokenizer."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mimesis_gym.core.tiny import ensure_tiny_model

    path = str(ensure_tiny_model())
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if layers:
        model.model.layers = model.model.layers[:layers]
        model.config.num_hidden_layers = layers
    return model, AutoTokenizer.from_pretrained(path)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="300,750,1500,3000", help="input tokens per step, comma-separated")
    parser.add_argument("--shapes", default=",".join(SHAPES), help=f"of {', '.join(SHAPES)}")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--layers", type=int, default=0, help="keep the tiny model's first N layers (0: all)")
    parser.add_argument("--budget", type=int, default=4096, help="update.micro_batch_tokens")
    parser.add_argument("--no-trl", action="store_true", help="the project's sweep only")
    parser.add_argument(
        "--clock", choices=["wall", "cpu"], default="wall", help="cpu: this process's CPU seconds (a loaded machine)"
    )
    parser.add_argument(
        "--span-tokens", type=int, default=PACKED_SPAN_TOKENS, help="the scorer's packed span (10**9: one span)"
    )
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.shapes = args.shapes.split(",")
    unknown = sorted(set(args.shapes) - set(SHAPES))
    if unknown:
        parser.error(f"--shapes: unknown {', '.join(unknown)}; choose from {', '.join(SHAPES)}")
    return args


def print_table(cells: list[Cell], with_trl: bool) -> None:
    """Per shape and size: seconds, seconds per 1k tokens and per 1k more tokens than the size before
    (the linearity fit), tokens/s, and TRL's."""
    print(f"\n{'shape':<7}{'tokens':>7}{'rows':>5}{'project s':>11}{'s/1k tok':>10}{'+s/1k':>7}{'tok/s':>8}"
          + (f"{'TRL s':>9}{'TRL tok/s':>11}{'× TRL':>7}" if with_trl else ""))  # fmt: skip
    for k, cell in enumerate(cells):
        ours = cell.median("project")
        before = cells[k - 1] if k and cells[k - 1].shape == cell.shape else None
        marginal = (
            "" if before is None else f"{1000 * (ours - before.median('project')) / (cell.tokens - before.tokens):.2f}"
        )
        line = f"{cell.shape:<7}{cell.tokens:>7}{cell.rows:>5}{ours:>11.2f}{1000 * ours / cell.tokens:>10.2f}"
        line += f"{marginal:>7}{cell.tokens / ours:>8.1f}"
        if with_trl:
            trl = cell.median("TRL")
            line += f"{trl:>9.2f}{cell.tokens / trl:>11.1f}{trl / ours:>7.2f}"
        print(line)


def report(cells: list[Cell], args: argparse.Namespace, load_at_start: float) -> None:
    """The two ``report_ratio`` rows (module docstring)."""
    if not args.no_trl:
        ours = sum(c.median("project") for c in cells)
        trl = sum(c.median("TRL") for c in cells)
        tokens = sum(c.tokens for c in cells)
        pairs = [t / o for c in cells for o, t in zip(c.seconds["project"], c.seconds["TRL"], strict=True)]
        report_ratio("update_scaling", "update tokens/s vs TRL (same batch)", unit="tokens/s",
                     anchor="TRL GRPOTrainer compute_loss+backward+step", anchor_value=tokens / trl,
                     project_value=tokens / ours, better="higher", n=args.repeats, spread=pairs, goal=1.2,
                     load_at_start=load_at_start)  # fmt: skip
    pairs = [linearity(c for c in cells if c.shape == shape) for shape in args.shapes]
    pairs = [pair for pair in pairs if pair is not None]
    if pairs:
        low, high = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
        marginal = len(args.sizes) > 2
        what = "s per 1k more tokens" if marginal else "s per 1k tokens"
        report_ratio("update_scaling", f"update {what} at {max(args.sizes)} vs at {min(args.sizes)} tokens",
                     unit="s/1k tokens", anchor=f"the update at {min(args.sizes)} tokens", anchor_value=low,
                     project_value=high, better="lower", n=args.repeats, spread=[h / lo for lo, h in pairs],
                     goal=1.2, load_at_start=load_at_start)  # fmt: skip


def linearity(shape_cells: Iterable[Cell]) -> tuple[float, float] | None:
    """Seconds per 1k tokens at a shape's smallest and largest size: of the tokens added over the first and
    the last step between sizes when there are three sizes or more (the fixed cost cancels), else overall."""
    points = sorted((c.tokens, c.median("project")) for c in shape_cells)
    if len(points) < 2:
        return None
    if len(points) == 2:
        return tuple(1000 * s / t for t, s in points)  # type: ignore[return-value]
    (t0, s0), (t1, s1), (t2, s2), (t3, s3) = points[0], points[1], points[-2], points[-1]
    return 1000 * (s1 - s0) / (t1 - t0), 1000 * (s3 - s2) / (t3 - t2)


def main() -> int:
    args = parse_args()
    clock = time.perf_counter if args.clock == "wall" else time.process_time
    if args.threads:
        torch.set_num_threads(args.threads)
    load_at_start = load_average()
    model, tokenizer = load_models(args.layers)
    trl_model = None if args.no_trl else copy.deepcopy(model)
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [f"update.micro_batch_tokens={args.budget}", "run.progress=false", "run.resume=never",
         "run.output_dir=/tmp/update_scaling"]
    )  # fmt: skip
    trainer = Trainer([ENV_ID], (model, tokenizer), config=config)
    trl = None if trl_model is None else TRLUpdate(trl_model, tokenizer, config.optim.lr)
    vocab, pad_id = trainer.policy_model.config.vocab_size, trainer.pad_id
    trainer.services.scorer.span_tokens = args.span_tokens
    print(f"tiny model{f' (first {args.layers} layers)' if args.layers else ''}, fp32, {args.clock} clock, "
          f"threads={torch.get_num_threads()}, packing={trainer.packing}, "
          f"prefix sharing={trainer.services.prefix_sharing}, budget {args.budget}, spans {args.span_tokens}, "
          f"load {load_at_start:.1f}")  # fmt: skip
    cells = []
    for shape in args.shapes:
        for size in args.sizes:
            episodes = shaped_batch(shape, size, vocab, seed=size)
            cell = Cell(shape, sum(len(e.segments[0].input_ids) for e in episodes), len(episodes))
            sides = {"project": functools.partial(project_update, trainer, episodes)}
            if trl is not None:
                sides["TRL"] = functools.partial(trl.step, TRLUpdate.inputs(episodes, pad_id))
            for repeat in range(args.repeats + 1):  # the first round warms up
                for name, step in sides.items() if repeat % 2 else reversed(sides.items()):
                    seconds = timed(step, clock)
                    if repeat:
                        cell.seconds[name].append(seconds)
            print(f"{shape} {cell.tokens} tokens: "
                  + ", ".join(f"{n} {cell.median(n):.2f} s" for n in sides), flush=True)  # fmt: skip
            cells.append(cell)
    print_table(cells, trl is not None)
    report(cells, args, load_at_start)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
