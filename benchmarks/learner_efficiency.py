"""Learner efficiency (docs/algorithms.md): a full GRPO update beside a bare forward+backward, and padding.

On one synthetic rollout batch (episodes with KeywordEcho-like lengths and masks, random ids and
non-zero advantages), measured side by side in one run, interleaved, medians over ``--repeats``:

* **bare**: ``model(input_ids).logits`` → cross-entropy on every position → backward, the same
  packed micro-batches (the floor any trainer pays for the same tokens);
* **update (recompute)**: the trainer's own code path — the no-grad old-log-prob pass, then per
  micro-batch the student forward (chunked selective log-softmax on action positions), the PPO-clip
  loss and its backward, and the optimizer step;
* **update (one step/batch)**: the same with the old log-probs taken from the detached current
  forward (the trainer does this when one optimizer step is taken per rollout batch).

Tokens/s counts every input token. Then the padding fraction of the same lengths packed (position
ids, no padding) vs sorted padding at the micro-batch budget. Goals: update ≥ 0.8× bare;
padding ≤ 10 % with packing.

Last, **shared prefixes**: a batch shaped like the simulator benchmark's (``--groups`` groups of 4
rows, each group one ``--prompt``-token prompt and replies of 8–48 ids), the update (one
step/batch) with ``update.prefix_sharing`` on and off, interleaved, and the largest log-prob
difference between the two.

    python benchmarks/learner_efficiency.py [--model tiny|random] [--episodes 8] [--repeats 3] [--threads 1]
        [--groups 2] [--prompt 580]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import Counter

import torch

from mimesis_gym.algorithms.advantage_step import assign, estimate
from mimesis_gym.algorithms.batching import collate, padding_fraction, plan_micro_batches, training_rows
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners import RolloutBatch
from mimesis_gym.algorithms.records import Episode, Segment, Turn
from mimesis_gym.algorithms.services import fill_old_logprobs
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model
from mimesis_gym.algorithms.trainer import Trainer


def synthetic_batch(count: int, seed: int, vocab: int) -> list[Episode]:
    """Episodes shaped like KeywordEcho rollouts: a 28-token prompt, 1–3 turns of 3–16 action ids, 35-id replies."""
    rng = random.Random(seed)
    episodes = []
    for e in range(count):
        ids = [rng.randrange(10, vocab) for _ in range(28)]
        mask, owner, turns = [0] * 28, [0] * 28, []
        for t in range(1, rng.randint(1, 3) + 1):
            start = len(ids)
            n = rng.randint(3, 16)
            ids += [rng.randrange(10, vocab) for _ in range(n)]
            mask += [1] * n
            owner += [t] * n
            turns.append(Turn(index=t, action_span=(start, start + n), gen_prompt_len=4, reward=rng.random()))
            obs = 35
            ids += [rng.randrange(10, vocab) for _ in range(obs)]
            mask += [0] * obs
            owner += [t] * obs
        segment = Segment(rollout_id=f"0:{e // 4}:{e % 4}", input_ids=ids, prompt_len=28, loss_mask=mask,
                          turn_of_position=owner)  # fmt: skip
        episodes.append(Episode(rollout_id=segment.rollout_id, group_id=f"g{e // 4}", env_id=ENV_ID, task_id="t",
                                seed=0, segments=[segment], turns=turns))  # fmt: skip
    return episodes


def grouped_batch(groups: int, prompt: int, seed: int, vocab: int) -> list[Episode]:
    """``groups`` groups of 4 one-turn episodes: a ``prompt``-token prompt per group, replies of 8–48 ids."""
    rng = random.Random(seed)
    episodes = []
    for g in range(groups):
        shared = [rng.randrange(10, vocab) for _ in range(prompt)]
        for k in range(4):
            n = rng.randint(8, 48)
            ids = shared + [rng.randrange(10, vocab) for _ in range(n)]
            turn = Turn(index=1, action_span=(prompt, prompt + n), gen_prompt_len=4, reward=rng.random())
            mask = [0] * prompt + [1] * n
            segment = Segment(rollout_id=f"0:{g}:{k}", input_ids=ids, prompt_len=prompt, loss_mask=mask,
                              turn_of_position=mask)  # fmt: skip
            episodes.append(Episode(rollout_id=segment.rollout_id, group_id=f"g{g}", env_id=ENV_ID, task_id="t",
                                    seed=0, segments=[segment], turns=[turn]))  # fmt: skip
    return episodes


def shared_prefix_comparison(trainer: Trainer, args: argparse.Namespace, vocab: int) -> None:
    """The update with ``update.prefix_sharing`` on and off on one grouped batch, interleaved; medians."""
    episodes = grouped_batch(args.groups, args.prompt, 2, vocab)
    tokens = sum(len(e.segments[0].input_ids) for e in episodes)
    rows = training_rows(episodes)
    sequences = [e.segments[0].input_ids for e in episodes]
    masks = [e.segments[0].loss_mask for e in episodes]
    services, saved = trainer.services, trainer.services.prefix_sharing
    runs: dict[bool, list[float]] = {True: [], False: []}
    scores = {}
    try:
        for repeat in range(args.repeats + 1):  # the first round warms up
            for shared in (True, False):
                services.prefix_sharing = shared
                started = time.perf_counter()
                update_step(trainer, episodes, recompute=False)
                if repeat:
                    runs[shared].append(time.perf_counter() - started)
        for shared in (True, False):
            services.prefix_sharing = shared
            scores[shared] = services.score(sequences, masks, "benchmark")
    finally:
        services.prefix_sharing = saved
    gap = max(abs(a - b) for x, y in zip(scores[True], scores[False], strict=True) for a, b in zip(x, y, strict=True))
    off, on = statistics.median(runs[False]), statistics.median(runs[True])
    print(f"\nshared prefixes: {args.groups} groups × 4 rows, {args.prompt}-token prompts, {tokens} tokens, "
          f"{len(rows)} rows")  # fmt: skip
    print(f"update (one step/batch), prefix sharing off {off:.2f} s, on {on:.2f} s: {off / on:.2f}× faster; "
          f"largest log-prob difference {gap:.1e}")  # fmt: skip


def bare_step(trainer: Trainer, episodes: list[Episode]) -> None:
    model = trainer.policy_model
    lengths = [len(e.segments[0].input_ids) for e in episodes]
    plan = plan_micro_batches(lengths, trainer.config.update.micro_batch_tokens, packing=trainer.packing)
    for group in plan:
        batch = collate([episodes[i].segments[0].input_ids for i in group], packing=trainer.packing, pad_id=0)
        logits = model(input_ids=batch.input_ids, position_ids=batch.position_ids, attention_mask=batch.attention_mask,
                       use_cache=False).logits  # fmt: skip
        targets = batch.input_ids[:, 1:].clone()
        if batch.attention_mask is not None:
            targets[batch.attention_mask[:, 1:] == 0] = -100  # padding is not a target
        flat = logits[:, :-1].reshape(-1, logits.shape[-1]).float()
        loss = torch.nn.functional.cross_entropy(flat, targets.reshape(-1), ignore_index=-100)
        loss.backward()
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)


def update_step(trainer: Trainer, episodes: list[Episode], *, recompute: bool) -> None:
    rows = training_rows(episodes)
    for episode in episodes:
        episode.old_logprobs = None
    if recompute:
        fill_old_logprobs(trainer.services, episodes, rows)
    assign(episodes, estimate(episodes, trainer.config.advantage, epoch=0))
    every = list(range(len(rows)))
    batch = RolloutBatch(step=0, episodes=episodes, local=episodes, rows=rows, minibatches=[every], shares=[every])
    trainer.update.minibatch(batch, 0, not recompute, Counter())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--model", choices=["tiny", "random"], default="tiny", help="SmolLM2-135M, or the 2-layer test model"
    )
    parser.add_argument("--episodes", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--budget", type=int, default=4096, help="micro-batch token budget")
    parser.add_argument("--groups", type=int, default=2, help="groups of 4 rows in the shared-prefix batch")
    parser.add_argument("--prompt", type=int, default=580, help="prompt tokens of each group (shared-prefix batch)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    policy = "tiny" if args.model == "tiny" else tiny_random_model()
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [f"update.micro_batch_tokens={args.budget}", "run.progress=false", "run.resume=never", "run.output_dir=/tmp/x"]
    )
    trainer = Trainer([ENV_ID], policy, config=config)
    vocab = trainer.policy_model.config.vocab_size
    episodes = synthetic_batch(args.episodes, 0, vocab)
    tokens = sum(len(e.segments[0].input_ids) for e in episodes)
    print(f"model {args.model}, {args.episodes} sequences, {tokens} tokens, packing={trainer.packing}, "
          f"threads={torch.get_num_threads()}")  # fmt: skip
    runs = {"bare": [], "update (recompute)": [], "update (one step/batch)": []}
    steps = {
        "bare": lambda: bare_step(trainer, episodes),
        "update (recompute)": lambda: update_step(trainer, episodes, recompute=True),
        "update (one step/batch)": lambda: update_step(trainer, episodes, recompute=False),
    }
    for step in steps.values():  # warm-up
        step()
    for _ in range(args.repeats):
        for name, step in steps.items():
            started = time.perf_counter()
            step()
            runs[name].append(time.perf_counter() - started)
    bare = tokens / statistics.median(runs["bare"])
    print(f"{'path':<26}{'median s':>10}{'tokens/s':>12}{'× bare':>9}")
    for name, times in runs.items():
        rate = tokens / statistics.median(times)
        print(f"{name:<26}{statistics.median(times):>10.2f}{rate:>12.1f}{rate / bare:>9.2f}")
    lengths = [len(e.segments[0].input_ids) for e in synthetic_batch(256, 1, vocab)]
    for budget in (args.budget, 9344):
        packed = padding_fraction(lengths, plan_micro_batches(lengths, budget, packing=True), packing=True)
        padded = padding_fraction(lengths, plan_micro_batches(lengths, budget, packing=False), packing=False)
        print(
            f"padding over real tokens, 256 sequences, budget {budget}: "
            f"packed {packed:.1%}, sorted padding {padded:.1%}"
        )
    ratio = min(tokens / statistics.median(runs[name]) for name in runs if name != "bare") / bare
    print(f"goal: update ≥ 0.8× bare -> {'PASS' if ratio >= 0.8 else 'FAIL'} (worst update path {ratio:.2f}×)")
    shared_prefix_comparison(trainer, args, vocab)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
