"""Generated tokens/s of the trainer's rollouts: the ``hf`` engine beside TRL's per-turn ``model.generate``.

The engine-only view of issue 31.1 (docs/algorithms.md, "Generation engines"); ``benchmarks/compare.py``
runs TRL's whole ``GRPOTrainer`` beside ours. Both sides collect the same episodes with the trainer's
own :class:`~mimesis_gym.algorithms.rollout.Collector` (same envs, tasks, reset seeds, renderer, turn
and token budgets); only the engine behind ``Collector.generate`` differs:

* project: :class:`~mimesis_gym.algorithms.engines.local.LocalEngine`, what ``rollout.engine="hf"``
  runs (the local engine's running batch, slab cache and cross-turn prefix reuse; sampler log-probs
  recorded). Its prefix cache is dropped before every repeat, as the trainer does at every step.
* anchor: what TRL's ``GRPOTrainer`` does per turn: one left-padded ``model.generate`` of every
  episode's whole conversation (``do_sample``, the same temperature/top-p/top-k, the longest row's
  token budget, stopping at the stop ids), each row then cut at its first stop id or its own budget.
  Its log-probs are not computed (TRL recomputes them in a pass of its own; ours come with sampling),
  so the anchor is favoured.

Workload: the embedded SmolLM2-135M-Instruct in fp32, G = 4 episodes per task, ``--groups`` tasks,
the ``cpu-tiny`` preset's budgets (16 tokens per turn), at most ``--turns`` turns; KeywordEcho
(``algorithms/testing.py``) and TelepathyGym with the scripted user. The two sides alternate
(project first on even repeats) after one warm-up each; generated tokens/s = tokens sampled / seconds
inside the engine's calls, median over ``--repeats``. Ends with one ``report_ratio`` per env. Each
repeat also prints the CPU seconds of the process in those calls: on a machine loaded by other jobs
they vary less than the wall seconds.

    python benchmarks/trainer_generation.py [--repeats 3] [--groups 2] [--turns 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads, as the CLI does

import gymnasium as gym
import torch
from ratios import load_average, report_ratio

from mimesis_gym.algorithms import testing
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.engines.base import Sample, Sampling, classify_finish
from mimesis_gym.algorithms.engines.local import LocalEngine
from mimesis_gym.algorithms.render import ChatRenderer
from mimesis_gym.algorithms.rollout import Collector, EpisodeRequest

ANCHOR = "transformers generate (TRL's path)"
ENVS = {
    "KeywordEcho": (testing.ENV_ID, {}),
    "TelepathyGym": ("mimesis/TelepathyGym-v0", {"user": "scripted"}),
}


class GenerateEngine:
    """TRL's per-turn generation: one left-padded ``model.generate`` of every whole conversation."""

    def __init__(self, model: Any, tokenizer: Any, *, stop_ids: frozenset[int], end_of_turn_id: int) -> None:
        self.model, self.stop_ids, self.end_of_turn_id = model, stop_ids, end_of_turn_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else end_of_turn_id

    def generate(
        self, prompts: Sequence[Sequence[int]], *, max_new_tokens: Sequence[int], sampling: Sampling, seed: int | None
    ) -> list[Sample]:
        width = max(len(p) for p in prompts)
        ids = torch.full((len(prompts), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt) :] = torch.tensor(list(prompt))
            mask[row, width - len(prompt) :] = 1
        if seed is not None:
            torch.manual_seed(seed)
        with torch.no_grad():
            output = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=not sampling.greedy,
                temperature=sampling.temperature if not sampling.greedy else None,
                top_p=sampling.top_p if not sampling.greedy else None,
                top_k=sampling.top_k if not sampling.greedy else None,
                max_new_tokens=max(max_new_tokens),
                eos_token_id=sorted(self.stop_ids),
                pad_token_id=self.pad_id,
            )
        samples = []
        for row, limit in enumerate(max_new_tokens):
            new = output[row, width:].tolist()
            end = next((k + 1 for k, token in enumerate(new) if token in self.stop_ids), len(new))
            kept = new[: min(end, limit)]
            samples.append(Sample(kept, [0.0] * len(kept), classify_finish(kept, self.end_of_turn_id, self.stop_ids)))
        return samples


class Timed:
    """An engine wrapper that adds up the wall and CPU seconds (every thread of the process) spent in
    ``generate`` and the tokens it sampled."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.reset()

    def reset(self) -> None:
        self.seconds, self.cpu_seconds, self.tokens = 0.0, 0.0, 0

    def generate(self, prompts: Sequence[Sequence[int]], **kwargs: Any) -> list[Sample]:
        started, cpu = time.perf_counter(), time.process_time()
        samples = self.engine.generate(prompts, **kwargs)
        self.seconds += time.perf_counter() - started
        self.cpu_seconds += time.process_time() - cpu
        self.tokens += sum(len(sample.ids) for sample in samples)
        return samples


def episode_requests(env_id: str, kwargs: dict[str, Any], groups: int, group_size: int) -> list[EpisodeRequest]:
    """``groups`` train tasks, ``group_size`` episodes each, reset seed 0 (as ``rollout.env_seed=fixed``)."""
    probe = gym.make(env_id, split="train", **kwargs)
    tasks = [task.id for task in probe.unwrapped.task_pack.pool("train")[:groups]]
    probe.close()
    options = {"split": "train", "reward_profile": "train", **kwargs}
    return [
        EpisodeRequest(lambda: gym.make(env_id, **options), env_id, task, 0, f"{task}", f"{task}:{m}")
        for task in tasks
        for m in range(group_size)
    ]


def collect(engine: Timed, tokenizer: Any, config: Any, requests: list[EpisodeRequest], seed: int) -> float:
    """One rollout batch; returns the engine's generated tokens/s over it."""
    engine.reset()
    episodes = Collector(engine, tokenizer, config).collect(requests, seed=seed)
    assert episodes and engine.tokens > 0
    return engine.tokens / engine.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2, help="tasks per batch (G = 4 episodes each)")
    parser.add_argument("--turns", type=int, default=3, help="agent turns per episode at most")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--envs", nargs="+", default=list(ENVS), choices=list(ENVS))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load_at_start = load_average()

    from transformers import AutoModelForCausalLM

    from mimesis_gym.core.tiny import ensure_tiny_model

    model = AutoModelForCausalLM.from_pretrained(str(ensure_tiny_model()), dtype=torch.float32).eval()
    tokenizer = testing.tiny_tokenizer()
    preset = TrainerConfig.preset("cpu-tiny")
    config = preset.rollout.model_copy(update={"max_turns": args.turns})
    renderer = ChatRenderer(tokenizer)
    stops = {"stop_ids": renderer.stop_ids, "end_of_turn_id": renderer.end_of_turn_id}
    local = LocalEngine(model, tokenizer, max_batch_size=config.max_concurrent_episodes, **stops)
    project, anchor = Timed(local), Timed(GenerateEngine(model, tokenizer, **stops))
    print(
        f"SmolLM2-135M fp32, {args.threads} torch thread(s), OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']}, "
        f"G={config.group_size}, {args.groups} groups, ≤{config.max_tokens_per_turn} tokens/turn, "
        f"≤{args.turns} turns, {args.repeats} repeats, load {load_at_start:.2f}"
    )
    for name in args.envs:
        env_id, kwargs = ENVS[name]
        requests = episode_requests(env_id, kwargs, args.groups, config.group_size)
        rates: dict[str, list[float]] = {"project": [], "anchor": []}
        cpu_rates: dict[str, list[float]] = {"project": [], "anchor": []}
        for repeat in range(-1, args.repeats):  # repeat -1 warms both sides up
            order = [("project", project), ("anchor", anchor)]
            for side, engine in order if repeat % 2 == 0 else order[::-1]:
                local.sync_weights(model, version=repeat)  # a new step: the prefix cache starts empty
                rate = collect(engine, tokenizer, config, requests, seed=repeat + 1)
                if repeat >= 0:
                    rates[side].append(rate)
                    cpu_rates[side].append(engine.tokens / engine.cpu_seconds)
                    print(
                        f"  {name} repeat {repeat}: {side} {engine.tokens} tokens in {engine.seconds:.2f} s "
                        f"({engine.cpu_seconds:.2f} CPU s)"
                    )
        mine, theirs = statistics.median(rates["project"]), statistics.median(rates["anchor"])
        mine_cpu, theirs_cpu = statistics.median(cpu_rates["project"]), statistics.median(cpu_rates["anchor"])
        print(
            f"{name}: project {mine:.1f} tokens/s, anchor {theirs:.1f} tokens/s; per CPU second "
            f"{mine_cpu:.1f} and {theirs_cpu:.1f} ({mine_cpu / theirs_cpu:.2f}×)"
        )
        report_ratio(
            "trainer_generation",
            f"trainer generated tokens/s, {name}",
            unit="tokens/s",
            anchor=ANCHOR,
            anchor_value=theirs,
            project_value=mine,
            better="higher",
            n=args.repeats,
            spread=[a / b for a, b in zip(rates["project"], rates["anchor"], strict=True)],
            goal=1.2,
            load_at_start=load_at_start,
        )


if __name__ == "__main__":
    main()
