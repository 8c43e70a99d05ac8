"""The trainer (algorithms.md §6): collect → advantages → update → log, one rollout batch per step.

:func:`train` is the one-call API; :class:`Trainer` exposes ``fit()``, ``step()`` and ``evaluate()``.
The loop is written against :class:`accelerate.Accelerator`, so the same script runs on one CPU or
under ``accelerate launch`` (DDP, FSDP) without changes. One step (§6.3):

1. draw ``prompts_per_batch`` tasks (a seeded order over every env's training tasks); each is a group
   of ``G`` episodes with the same task and reset seed; whole groups go to ranks;
2. collect the rank's episodes token-exactly (``rollout.py``); CSD: the coach writes notes;
3. all-gather the episodes; every rank gets an equal-count, token-balanced share of every mini-batch;
4. old log-probs of the rank's sequences, one no-grad pass per rollout batch (InfoPO: the
   counterfactual pass too, gains all-gathered);
5. advantages on the gathered per-turn metadata (identical on every rank);
6. per PPO epoch and mini-batch: global denominators, then per micro-batch the CSD teacher forward
   (no grad, current weights), the student forward, the loss and its backward; clip, step;
7. log metrics (``metrics.jsonl``), evaluate, checkpoint.
"""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import math
import random
import shutil
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from mimesis_gym.algorithms import advantages as adv_lib
from mimesis_gym.algorithms.batching import balance, collate, plan_micro_batches
from mimesis_gym.algorithms.coach_runner import ChatCoach, ScriptedCoach, coach_episodes
from mimesis_gym.algorithms.config import AlgorithmConfig, TrainerConfig
from mimesis_gym.algorithms.csd import csd_gate, csd_loss
from mimesis_gym.algorithms.engines.base import Sampling
from mimesis_gym.algorithms.engines.hf import HFEngine
from mimesis_gym.algorithms.infopo import counterfactual_rows, information_gains
from mimesis_gym.algorithms.logprobs import PolicyScorer
from mimesis_gym.algorithms.losses import kl_penalty, token_losses
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.render import ChatRenderer
from mimesis_gym.algorithms.rollout import Collector, EpisodeRequest
from mimesis_gym.algorithms.teacher import TeacherRow, build_teacher_row

__all__ = ["DropoutError", "TrainResult", "Trainer", "aggregation_weights", "check_no_dropout", "load_policy", "train"]

logger = logging.getLogger(__name__)

EnvLike = str | tuple[str, dict[str, Any]] | Callable[[], Any]


class DropoutError(ValueError):
    """CSD and InfoPO compare forwards of the same weights: every dropout probability must be 0."""


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    output_dir: Path
    last_checkpoint: Path | None
    best_checkpoint: Path | None
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _EnvSpec:
    name: str
    factory: Callable[[], Any]
    eval_factory: Callable[[], Any]
    train_tasks: list[str]
    val_tasks: list[str]


@dataclass
class _Row:
    """One training sequence of the gathered batch: episode ``episode`` (batch index), segment ``segment``."""

    episode: int
    segment: int
    length: int
    action_tokens: int


@dataclass
class _State:
    step: int = 0
    epoch: int = 0
    cursor: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    skipped_steps: int = 0
    placebo_pool: list[tuple[str, str]] = field(default_factory=list)


def load_policy(policy: Any) -> tuple[Any, Any]:
    """``(model, tokenizer)`` for ``"tiny"``, ``"hf:<path>"``, a path, or a ``(model, tokenizer)`` pair.

    Weights are loaded in fp32 (mixed precision does the bf16 compute on GPU, §6.6); ``"tiny"`` is
    always the converted safetensors cache, never the GGUF-loaded object.
    """
    if isinstance(policy, (tuple, list)) and len(policy) == 2:
        model, tokenizer = policy
    else:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if policy == "tiny":
            from mimesis_gym.core.tiny import ensure_tiny_model

            path = str(ensure_tiny_model())
        elif isinstance(policy, str) and policy.startswith("hf:"):
            path = policy[3:]
        elif isinstance(policy, (str, Path)):
            path = str(policy)
        else:
            raise ValueError(f"policy must be 'tiny', 'hf:<path>', a path or a (model, tokenizer) pair; got {policy!r}")
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return model, tokenizer


def aggregation_weights(
    action_tokens: Sequence[int], agg: str, tokens: int, sequences: int, max_response_tokens: int
) -> list[float]:
    """Per-row weight ``w`` of each action token so that a loss aggregates as ``Σ w·L`` (§3 table).

    ``tokens`` and ``sequences`` are the scope's action tokens and sequences with ≥ 1 action token
    (the whole mini-batch on every rank for ``token_mean_scope="minibatch"``).
    """
    weights = []
    for count in action_tokens:
        if not count:
            weights.append(0.0)
        elif agg == "token-mean":
            weights.append(1.0 / max(1, tokens))
        elif agg == "seq-mean-token-mean":
            weights.append(1.0 / (max(1, sequences) * count))
        elif agg == "seq-mean-token-sum":
            weights.append(1.0 / max(1, sequences))
        elif agg == "seq-mean-token-sum-norm":
            weights.append(1.0 / (max(1, sequences) * max_response_tokens))
        else:
            raise ValueError(f"unknown loss_agg {agg!r}")
    return weights


def check_no_dropout(model: Any) -> None:
    """Raise :class:`DropoutError` when any dropout module or config probability is non-zero."""
    offenders = [
        name for name, module in model.named_modules() if isinstance(module, torch.nn.Dropout) and module.p > 0
    ]
    config = getattr(model, "config", None)
    if config is not None:
        for key, value in config.to_dict().items():
            if "dropout" in key and isinstance(value, (int, float)) and value > 0:
                offenders.append(f"config.{key}={value}")
    if offenders:
        raise DropoutError(
            "CSD and InfoPO need every dropout probability at 0 (the teacher and counterfactual forwards must "
            f"match the student's); found: {', '.join(offenders[:8])}"
        )


def _env_name(env: Any, fallback: str) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or fallback


class Trainer:
    """Trains a policy on conversation envs with GRPO / FoldGRPO / InfoPO / CSD (§6).

    Arguments are those of :func:`train`. ``accelerator`` may be passed to reuse one; by default
    one is created from the config (bf16 mixed precision on GPU, fp32 on CPU).
    """

    def __init__(
        self,
        env_ids: Sequence[EnvLike],
        policy: Any = "tiny",
        user: Any = "scripted",
        algorithm: str | AlgorithmConfig | None = None,
        *,
        judge: Any = None,
        config: TrainerConfig | dict[str, Any] | str | Path | None = None,
        eval_env_ids: Sequence[EnvLike] | None = None,
        callbacks: Iterable[Callable[[Trainer, dict[str, Any]], None]] = (),
        accelerator: Any = None,
    ) -> None:
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        self.config = TrainerConfig.load(config).with_algorithm(algorithm)
        cfg = self.config
        self.callbacks = list(callbacks)
        if accelerator is None:
            cuda = torch.cuda.is_available()
            precision = {"auto": "bf16" if cuda else "no", "float32": "no", "bfloat16": "bf16", "float16": "fp16"}
            trackers = [name for name in cfg.run.loggers if name != "jsonl"]
            accelerator = Accelerator(
                mixed_precision=precision[cfg.run.dtype],
                log_with=trackers or None,
                project_dir=cfg.run.output_dir,
            )
            if trackers:
                accelerator.init_trackers("mimesis_gym", config=json.loads(cfg.model_dump_json()))
        self.accelerator = accelerator
        self.rank, self.world = accelerator.process_index, accelerator.num_processes
        self._validate()
        set_seed(cfg.run.seed)
        self.output_dir = Path(cfg.run.output_dir)
        self.csd_on = cfg.csd.enabled and cfg.csd.alpha > 0
        self.infopo_on = cfg.advantage.estimator == "infopo"

        model, tokenizer = load_policy(policy)
        if self.csd_on or self.infopo_on:
            check_no_dropout(model)
        self.tokenizer = tokenizer
        self.pad_id = int(tokenizer.pad_token_id)
        gradient_checkpointing = cfg.update.gradient_checkpointing
        if gradient_checkpointing is None:
            gradient_checkpointing = accelerator.device.type == "cuda"
        if gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.to(accelerator.device)
        self.renderer = ChatRenderer(tokenizer)
        self.renderer.check_incremental()  # TemplateNotIncrementalError at start, not mid-run

        self.user_model = self._chat_model(user)
        self.judge_model = self._chat_model(judge) if judge is not None else None
        self.envs = self._env_specs(env_ids, user, judge)
        self.eval_envs = self._env_specs(eval_env_ids, user, judge, eval_split="test") if eval_env_ids else None

        scorer = PolicyScorer(model)
        optimizer = torch.optim.AdamW(
            scorer.parameters(), lr=cfg.optim.lr, betas=tuple(cfg.optim.betas), weight_decay=cfg.optim.weight_decay
        )
        self.scorer, self.optimizer = accelerator.prepare(scorer, optimizer)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer.optimizer, self._lr_factor)
        accelerator.register_for_checkpointing(self.scheduler)
        self.policy_model = accelerator.unwrap_model(self.scorer).model
        self.reference = self._reference_model() if cfg.loss.kl_coef > 0 else None
        self.packing = self._packing_supported()

        self.engine = self._engine()
        self.collector = Collector(self.engine, tokenizer, cfg.rollout)
        for spec in self.envs:  # the prefix check for every tool layout the run will render
            probe = spec.factory()
            probe.reset(seed=0, options={"task_id": spec.train_tasks[0]} if spec.train_tasks else None)
            renderer, _ = self.collector.renderer_for(probe.unwrapped.tools)
            renderer.check_incremental()
            probe.close()
        self.coach = self._coach() if self.csd_on else None
        self._coach_loop: Any = None

        self.state = _State()
        self._rows_skipped = self._placebo_turns = self._coached_turn_count = 0
        self.counters: Counter[str] = Counter()
        """Forward passes by phase (``old_logprob_passes``, ``old_logprob_forwards``, ``teacher_forwards``,
        ``student_forwards``, ``counterfactual_forwards``); tests read them."""
        self.history: list[dict[str, Any]] = []
        self.all_tasks = [(i, task) for i, spec in enumerate(self.envs) for task in spec.train_tasks]
        if not self.all_tasks:
            raise ValueError("no training tasks: every env's train split is empty or went to validation")
        self.total_steps = cfg.run.total_steps
        if cfg.run.total_epochs is not None:
            self.total_steps = math.ceil(cfg.run.total_epochs * len(self.all_tasks) / cfg.rollout.prompts_per_batch)
        self.last_checkpoint: Path | None = None
        if cfg.run.resume == "auto":
            self._resume()

    # ------------------------------------------------------------------ setup helpers

    def _validate(self) -> None:
        cfg = self.config
        if cfg.rollout.prompts_per_batch % self.world:
            raise ValueError(
                f"rollout.prompts_per_batch={cfg.rollout.prompts_per_batch} must be divisible by the "
                f"world size {self.world}"
            )
        if cfg.advantage.estimator == "infopo" and cfg.rollout.context_mode != "accumulate":
            raise ValueError("InfoPO needs rollout.context_mode='accumulate' (feedback spans inside one sequence)")
        if cfg.csd.enabled and cfg.csd.coach.kind == "scripted" and cfg.csd.coach.callable is None:
            raise ValueError("csd.coach: kind='scripted' needs csd.coach.callable ('module:function' or a callable)")
        truncated_sampling = cfg.rollout.top_p < 1 or cfg.rollout.top_k is not None
        if cfg.rollout.engine == "vllm" and cfg.loss.old_logprob_source == "sampler" and truncated_sampling:
            raise ValueError("old_logprob_source='sampler' with vLLM needs top_p=1 and no top_k (§1.5)")

    def _lr_factor(self, optimizer_step: int) -> float:
        optim = self.config.optim
        if optim.warmup_steps and optimizer_step < optim.warmup_steps:
            return (optimizer_step + 1) / optim.warmup_steps
        if optim.schedule == "constant":
            return 1.0
        total = max(1, self._optimizer_steps_total() - optim.warmup_steps)
        progress = min(1.0, (optimizer_step - optim.warmup_steps) / total)
        if optim.schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    def _optimizer_steps_total(self) -> int:
        cfg = self.config
        minibatches = math.ceil(cfg.rollout.prompts_per_batch / cfg.update.mini_batch_prompts)
        return getattr(self, "total_steps", cfg.run.total_steps) * minibatches * cfg.update.ppo_epochs

    def _chat_model(self, alias: Any) -> Any:
        if alias is None or alias == "scripted":
            return "scripted"
        if isinstance(alias, str):
            from mimesis_gym.users.registry import make_chat_model

            return make_chat_model(alias) or "scripted"
        return alias

    def _env_specs(
        self, env_ids: Sequence[EnvLike], user: Any, judge: Any, eval_split: str | None = None
    ) -> list[_EnvSpec]:
        cfg = self.config
        specs = []
        for index, item in enumerate(env_ids):
            if callable(item) and not isinstance(item, str):
                factory = eval_factory = item
                probe = item()
                name = _env_name(probe, f"env{index}")
            else:
                env_id, extra = (item, {}) if isinstance(item, str) else (item[0], dict(item[1]))
                kwargs: dict[str, Any] = {"user": self.user_model, "split": "train"}
                if self.judge_model is not None:
                    kwargs["judge"] = self.judge_model
                kwargs["reward_profile"] = cfg.rollout.reward_profile
                kwargs.update(extra)
                train_kwargs = {"privileged": True, **kwargs} if (cfg.csd.enabled and cfg.csd.alpha > 0) else kwargs

                def factory(env_id: str = env_id, kw: dict[str, Any] = train_kwargs) -> Any:
                    return gym.make(env_id, **kw)

                def eval_factory(env_id: str = env_id, kw: dict[str, Any] = kwargs) -> Any:
                    return gym.make(env_id, **kw)

                name = env_id
                probe = factory()
            pack = probe.unwrapped.task_pack
            probe.close()
            split = eval_split or "train"
            tasks = [task.id for task in pack.splits.get(split, ())]
            if not tasks:
                raise ValueError(f"env {name!r} has no {split!r} tasks (pack splits: {', '.join(pack.splits)})")
            val: list[str] = []
            if eval_split is None and cfg.run.val_fraction > 0:
                count = max(1, round(cfg.run.val_fraction * len(tasks)))
                order = np.random.default_rng(42).permutation(len(tasks))
                chosen = set(order[:count].tolist())
                val = [task for i, task in enumerate(tasks) if i in chosen]
                tasks = [task for i, task in enumerate(tasks) if i not in chosen]
            elif eval_split is not None:
                val, tasks = tasks, []
            specs.append(_EnvSpec(name, factory, eval_factory, tasks, val))
        return specs

    def _reference_model(self) -> PolicyScorer:
        reference = copy.deepcopy(self.policy_model).eval()
        for parameter in reference.parameters():
            parameter.requires_grad_(False)
        return PolicyScorer(reference)

    def _packing_supported(self) -> bool:
        mode = self.config.update.packing
        if mode != "auto":
            return mode == "on"
        rows = [
            [int(i) for i in torch.randint(3, 1000, (9,), generator=torch.Generator().manual_seed(s))] for s in (0, 1)
        ]
        with torch.no_grad():
            results = []
            for packing in (True, False):
                batch = collate(rows, packing=packing, pad_id=self.pad_id, device=self.accelerator.device)
                mask = batch.place([[0] + [1] * (len(row) - 1) for row in rows], dtype=torch.bool)
                logprobs, _ = self.scorer(batch.input_ids, mask, batch.position_ids, batch.attention_mask)
                results.append(batch.take(logprobs))
        packed, padded = results
        return all(abs(a - b) < 1e-3 for x, y in zip(packed, padded, strict=True) for a, b in zip(x, y, strict=True))

    def _engine(self) -> Any:
        if self.config.rollout.engine == "vllm":
            from mimesis_gym.algorithms.engines.vllm_colocate import VLLMColocateEngine

            return VLLMColocateEngine.from_model(self.policy_model, self.tokenizer, self.renderer, self.config.vllm)
        return HFEngine(
            self.policy_model,
            self.tokenizer,
            stop_ids=self.renderer.stop_ids,
            end_of_turn_id=self.renderer.end_of_turn_id,
        )

    def _coach(self) -> Any:
        coach = self.config.csd.coach
        if coach.kind == "scripted":
            return ScriptedCoach(coach.callable)  # type: ignore[arg-type]
        if coach.model is not None:
            from mimesis_gym.users.registry import make_chat_model

            model = make_chat_model(coach.model)
        else:
            model = None if self.user_model == "scripted" else self.user_model
        if model is None:
            raise ValueError(
                "csd.coach: kind='chat' needs a chat model, and the env's user is scripted; set csd.coach.model "
                "to a users-registry alias, or csd.coach.kind='scripted' with csd.coach.callable"
            )
        return ChatCoach(model, max_tokens=coach.max_tokens, temperature=coach.temperature)

    # ------------------------------------------------------------------ the loop

    def fit(self) -> TrainResult:
        """Run ``total_steps`` steps (from the resumed step), checkpoint at the end; returns a :class:`TrainResult`."""
        from tqdm.auto import tqdm

        show = self.config.run.progress and self.accelerator.is_main_process
        bar = tqdm(total=self.total_steps, initial=self.state.step, disable=not show, desc="train", unit="step")
        try:
            while self.state.step < self.total_steps:
                metrics = self.step()
                bar.update(1)
                bar.set_postfix(reward=f"{metrics['reward/mean']:.3f}", score=f"{metrics['score/mean']:.3f}")
        finally:
            bar.close()
        if self.last_checkpoint is None or not self.last_checkpoint.name.endswith(f"_{self.state.step}"):
            self.save_checkpoint()
        best = self.output_dir / "checkpoints" / "best"
        self.accelerator.end_training()
        return TrainResult(
            output_dir=self.output_dir,
            last_checkpoint=self.last_checkpoint,
            best_checkpoint=best if best.is_dir() else None,
            history=list(self.history),
        )

    def step(self) -> dict[str, Any]:
        """One rollout batch and its updates; returns (and logs) the step's metrics."""
        cfg = self.config
        step = self.state.step + 1
        metrics: dict[str, Any] = {"step": step}
        started = time.perf_counter()

        # 1-2. collect this rank's groups, then coach them
        sync_started = time.perf_counter()
        self._sync_engine()
        metrics["time/sync"] = time.perf_counter() - sync_started
        groups = self._draw_groups(step)
        requests = [request for g in groups[self.rank :: self.world] for request in self._group_requests(step, *g)]
        rollout_started = time.perf_counter()
        local = self.collector.collect(requests, seed=self._seed(step, 1, self.rank))
        if hasattr(self.engine, "sleep"):
            self.engine.sleep()  # vLLM: free the engine's memory for the update
        coach_active = self.csd_on and step > cfg.csd.warmup_steps
        coach_stats = None
        if coach_active:
            coach_stats = coach_episodes(
                local, self.coach, cfg.csd, seed=self._seed(step, 2, self.rank), runner=self._coach_runner()
            )
        episodes = self._gather_episodes(local)
        metrics["time/rollout"] = time.perf_counter() - rollout_started
        metrics.update(self._rollout_metrics(episodes))
        if coach_stats is not None:
            metrics.update(self._coach_metrics(coach_stats))

        # 3. rows and shares
        rows = [
            _Row(e, s, len(seg.input_ids), seg.action_tokens)
            for e, episode in enumerate(episodes)
            for s, seg in enumerate(episode.segments)
        ]
        minibatches = self._minibatches(episodes, rows)
        shares = [self._share(episodes, rows, mb) for mb in minibatches]

        # 4. old log-probs (+ InfoPO counterfactuals)
        old_started = time.perf_counter()
        shortcut = (
            len(minibatches) == 1
            and cfg.update.ppo_epochs == 1
            and not self.infopo_on
            and cfg.loss.old_logprob_source == "recompute"
        )
        my_rows = [rows[i] for share in shares for i in share]
        if cfg.loss.old_logprob_source == "sampler":
            self._sampler_old_logprobs(episodes, my_rows)
        elif not shortcut:
            self._old_logprobs(episodes, my_rows)
        if self.infopo_on:
            self._information_gains(episodes, my_rows)
        metrics["time/old_logprob"] = time.perf_counter() - old_started

        # 5. advantages
        metrics.update(self._advantages(episodes))

        # placebo notes are chosen identically on every rank (same pool, same seed)
        placebos = self._assign_placebos(episodes, step) if coach_active and cfg.csd.placebo else {}
        coached = self._coached_turns(episodes, placebos) if coach_active else {}

        # 6. update
        update_started = time.perf_counter()
        sums: Counter[str] = Counter()
        grad_norms: list[float] = []
        for epoch in range(cfg.update.ppo_epochs):
            order = list(range(len(minibatches)))
            if cfg.update.shuffle and epoch > 0:
                random.Random(self._seed(step, 3, epoch)).shuffle(order)
            for m in order:
                grad_norm = self._update_minibatch(
                    episodes, rows, minibatches[m], shares[m], coached, placebos, shortcut, sums
                )
                if grad_norm is not None:
                    grad_norms.append(grad_norm)
        metrics["time/update"] = time.perf_counter() - update_started
        metrics.update(self._update_metrics(sums, grad_norms, len(minibatches) * cfg.update.ppo_epochs, coach_active))
        if coach_active:
            self._remember_notes(episodes)

        # 7. bookkeeping
        self.state.step = step
        self._advance_cursor()
        metrics["time/step"] = time.perf_counter() - started
        if cfg.run.eval_every and step % cfg.run.eval_every == 0:
            metrics.update(self.evaluate())
        if cfg.run.dump_rollouts and self.accelerator.is_main_process:
            self._dump_rollouts(step, episodes)
        self._log(metrics)
        if cfg.run.save_every and step % cfg.run.save_every == 0:
            self.save_checkpoint(metrics)
        for callback in self.callbacks:
            callback(self, metrics)
        return metrics

    def _sync_engine(self) -> None:
        """Push the current weights into an engine that keeps its own copy (vLLM), once per weight version."""
        if hasattr(self.engine, "sync_weights"):
            self.engine.sync_weights(self.policy_model, version=self.state.step)

    # ------------------------------------------------------------------ data order

    def _seed(self, *parts: int) -> int:
        return int(np.random.default_rng([self.config.run.seed, *parts]).integers(0, 2**31 - 1))

    def _epoch_order(self, epoch: int) -> list[tuple[int, str]]:
        rng = np.random.default_rng([self.config.run.seed, 7, epoch])
        if self.config.rollout.mixture == "proportional":
            return [self.all_tasks[i] for i in rng.permutation(len(self.all_tasks))]
        per_env = [
            [(i, spec.train_tasks[j]) for j in rng.permutation(len(spec.train_tasks))]
            for i, spec in enumerate(self.envs)
        ]
        order: list[tuple[int, str]] = []
        for k in range(max(len(tasks) for tasks in per_env)):
            order.extend(tasks[k] for tasks in per_env if k < len(tasks))
        return order

    def _draw_groups(self, step: int) -> list[tuple[int, int, str, int]]:
        """``(group_index, env_index, task_id, reset_seed)`` for the batch at the current cursor."""
        epoch, cursor = self.state.epoch, self.state.cursor
        order = self._epoch_order(epoch)
        groups = []
        for g in range(self.config.rollout.prompts_per_batch):
            if cursor >= len(order):
                epoch, cursor = epoch + 1, 0
                order = self._epoch_order(epoch)
            env_index, task = order[cursor]
            cursor += 1
            seed = 0 if self.config.rollout.env_seed == "fixed" else self._seed(step, 4, g) % (2**31)
            groups.append((g, env_index, task, seed))
        self._next_cursor = (epoch, cursor)
        return groups

    def _advance_cursor(self) -> None:
        self.state.epoch, self.state.cursor = self._next_cursor

    def _group_requests(self, step: int, g: int, env_index: int, task: str, seed: int) -> list[EpisodeRequest]:
        spec = self.envs[env_index]
        group_id = f"{step}:{g}:{spec.name}:{task}:{seed}"
        return [
            EpisodeRequest(spec.factory, spec.name, task, seed, group_id, f"{step}:{g}:{m}")
            for m in range(self.config.rollout.group_size)
        ]

    def _gather_episodes(self, local: list[Episode]) -> list[Episode]:
        if self.world > 1:
            from accelerate.utils import gather_object

            gathered = gather_object(local)
        else:
            gathered = list(local)

        def key(episode: Episode) -> tuple[int, ...]:
            return tuple(int(part) for part in episode.rollout_id.split(":")[1:])

        return sorted(gathered, key=key)

    def _minibatches(self, episodes: list[Episode], rows: list[_Row]) -> list[list[int]]:
        """Row indices per mini-batch: consecutive groups, ``mini_batch_prompts`` groups each."""
        group_order: list[str] = []
        for episode in episodes:
            if episode.group_id not in group_order:
                group_order.append(episode.group_id)
        size = self.config.update.mini_batch_prompts
        chunks = [set(group_order[i : i + size]) for i in range(0, len(group_order), size)]
        return [[r for r, row in enumerate(rows) if episodes[row.episode].group_id in chunk] for chunk in chunks]

    def _share(self, episodes: list[Episode], rows: list[_Row], minibatch: list[int]) -> list[int]:
        """This rank's rows of a mini-batch (token-balanced, or the rows it collected)."""
        if self.world == 1:
            return list(minibatch)
        if self.config.update.balance:
            shares = balance([rows[i].length for i in minibatch], self.world)
            return [minibatch[j] for j in shares[self.rank]]
        group_index = [int(episodes[rows[i].episode].rollout_id.split(":")[1]) for i in minibatch]
        return [i for i, g in zip(minibatch, group_index, strict=True) if g % self.world == self.rank]

    # ------------------------------------------------------------------ scoring passes

    def _max_over_ranks(self, count: int) -> int:
        if self.world == 1:
            return count
        value = torch.tensor([count], device=self.accelerator.device)
        return int(self.accelerator.gather(value).max().item())

    def _score(
        self, sequences: list[list[int]], masks: list[list[int]], phase: str, scorer: Any = None
    ) -> list[list[float]]:
        """No-grad log-probs of ``sequences`` at mask-1 positions, micro-batched by the token budget.

        Every rank runs the same number of forwards (dummy rows where it has fewer), §6.3.
        """
        scorer = scorer or self.scorer
        lengths = [len(s) for s in sequences]
        plan = plan_micro_batches(lengths, self.config.update.micro_batch_tokens, packing=self.packing)
        results: list[list[float]] = [[] for _ in sequences]
        temperature = self.config.rollout.temperature
        with torch.no_grad():
            for k in range(self._max_over_ranks(len(plan))):
                group = plan[k] if k < len(plan) else []
                batch_rows = [sequences[i] for i in group] or [[self.pad_id, self.pad_id]]
                batch_masks = [masks[i] for i in group] or [[0, 1]]
                batch = collate(batch_rows, packing=self.packing, pad_id=self.pad_id, device=self.accelerator.device)
                score_mask = batch.place(batch_masks, dtype=torch.bool)
                logprobs, _ = scorer(batch.input_ids, score_mask, batch.position_ids, batch.attention_mask, temperature)
                self.counters[f"{phase}_forwards"] += 1
                for i, values in zip(group, batch.take(logprobs), strict=False):
                    results[i] = values
        return results

    def _old_logprobs(self, episodes: list[Episode], my_rows: list[_Row]) -> None:
        self.counters["old_logprob_passes"] += 1
        sequences = [episodes[r.episode].segments[r.segment].input_ids for r in my_rows]
        masks = [episodes[r.episode].segments[r.segment].loss_mask for r in my_rows]
        values = self._score(sequences, masks, "old_logprob")
        for row, logprobs in zip(my_rows, values, strict=True):
            episode = episodes[row.episode]
            if episode.old_logprobs is None:
                episode.old_logprobs = [[] for _ in episode.segments]
            episode.old_logprobs[row.segment] = logprobs

    def _sampler_old_logprobs(self, episodes: list[Episode], my_rows: list[_Row]) -> None:
        for row in my_rows:
            episode = episodes[row.episode]
            if episode.old_logprobs is None:
                episode.old_logprobs = [[] for _ in episode.segments]
            episode.old_logprobs[row.segment] = self._sampler_row(episode, row.segment)

    def _sampler_row(self, episode: Episode, segment: int) -> list[float]:
        values = [0.0] * len(episode.segments[segment].input_ids)
        for turn in episode.turns:
            if turn.segment == segment:
                start, end = turn.action_span
                for position, value in zip(range(start, end), turn.sampler_logprobs, strict=False):
                    values[position] = value
        return values

    def _information_gains(self, episodes: list[Episode], my_rows: list[_Row]) -> None:
        """InfoPO steps 1–2 on this rank's sequences; the gains are all-gathered (§6.3 step 4)."""
        placeholder = self.renderer.encode(self.config.advantage.placeholder)
        jobs = []
        for row in my_rows:
            episode = episodes[row.episode]
            for cf in counterfactual_rows(episode, placeholder):
                jobs.append((row.episode, cf))
        sequences = [cf.input_ids for _, cf in jobs]
        masks = [
            [1 if cf.score_span[0] <= k < cf.score_span[1] else 0 for k in range(len(cf.input_ids))] for _, cf in jobs
        ]
        values = self._score(sequences, masks, "counterfactual") if self._max_over_ranks(len(jobs)) else []
        gains: dict[str, list[float]] = {}
        for row in my_rows:
            episode = episodes[row.episode]
            mine = [(cf, v) for (e, cf), v in zip(jobs, values, strict=True) if e == row.episode]
            gains[episode.rollout_id] = information_gains(episode, [cf for cf, _ in mine], [v for _, v in mine])
        if self.world > 1:
            from accelerate.utils import gather_object

            merged: dict[str, list[float]] = {}
            for part in gather_object([gains]):
                merged.update(part)
            gains = merged
        for episode in episodes:
            episode.info_gain = gains.get(episode.rollout_id, [0.0] * max(0, len(episode.turns) - 1))

    # ------------------------------------------------------------------ advantages

    def _advantages(self, episodes: list[Episode]) -> dict[str, float]:
        cfg = self.config.advantage
        options = cfg.estimator_options(epoch=self.state.epoch)
        diagnostics: dict[str, Any] = {}
        if cfg.estimator == "infopo":
            options["diagnostics"] = diagnostics
        inputs = [episode.estimator_input() for episode in episodes]
        values = adv_lib.compute_advantages(inputs, cfg.estimator, **options) if inputs else []
        for episode, turn_values in zip(episodes, values, strict=True):
            episode.turn_advantages = [float(v) for v in turn_values]
        pairs = [(a, n) for e in episodes for a, n in zip(e.turn_advantages or [], e.turn_token_counts, strict=True)]
        tokens = sum(n for _, n in pairs)
        metrics: dict[str, float] = {}
        if tokens:
            mean = sum(a * n for a, n in pairs) / tokens
            metrics["adv/mean"] = mean
            metrics["adv/std"] = math.sqrt(sum(n * (a - mean) ** 2 for a, n in pairs) / tokens)
            metrics["adv/zero_token_frac"] = sum(n for a, n in pairs if a == 0) / tokens
        else:
            metrics.update({"adv/mean": 0.0, "adv/std": 0.0, "adv/zero_token_frac": 1.0})
        metrics["group/zero_std_frac"] = self._zero_std_frac(episodes)
        if cfg.estimator in ("grpo_multiturn", "infopo"):
            credit_kind = options["turn_credit"]
            sums = [
                sum(
                    c * n
                    for c, n in zip(
                        adv_lib._turn_credits(e.turn_rewards, credit_kind, cfg.gamma), e.turn_token_counts, strict=True
                    )
                )
                for e in episodes
            ]
            metrics["adv/credit_sum_min"] = float(min(sums)) if sums else 0.0
        if cfg.estimator == "infopo":
            metrics.update(self._infopo_metrics(episodes, inputs, diagnostics))
        return metrics

    def _episode_score(self, episode: Episode) -> float:
        cfg = self.config.advantage
        options = cfg.estimator_options()
        if cfg.estimator in ("grpo_multiturn", "infopo"):
            return adv_lib._trajectory_score(episode.turn_rewards, options["trajectory_score"], cfg.gamma)
        return adv_lib._outcome_score(episode.estimator_input(), cfg.score)

    def _zero_std_frac(self, episodes: list[Episode]) -> float:
        scores: dict[str, list[float]] = {}
        for episode in episodes:
            scores.setdefault(episode.group_id, []).append(self._episode_score(episode))
        if not scores:
            return 1.0
        return sum(1 for values in scores.values() if len(values) < 2 or max(values) == min(values)) / len(scores)

    def _infopo_metrics(
        self, episodes: list[Episode], inputs: list[dict[str, Any]], diagnostics: dict[str, Any]
    ) -> dict[str, float]:
        cfg = self.config.advantage
        options = cfg.estimator_options(epoch=self.state.epoch)
        outcome = adv_lib.grpo_multiturn(
            inputs, gamma=cfg.gamma, trajectory_score=options["trajectory_score"], turn_credit=options["turn_credit"]
        )
        out_abs = in_abs = 0.0
        for episode, out_row in zip(episodes, outcome, strict=True):
            for total, base, n in zip(episode.turn_advantages or [], out_row, episode.turn_token_counts, strict=True):
                out_abs += abs(base) * n
                in_abs += abs(total - base) * n
        gains = [g for e in episodes for g, t in zip(e.info_gain or [], e.turns, strict=False) if t.feedback_span]
        gates = list(diagnostics.get("gate", {}).values()) or [0.0]
        stds = list(diagnostics.get("group_std", {}).values()) or [0.0]
        ig_mean = sum(gains) / len(gains) if gains else 0.0
        return {
            "infopo/ig_mean": ig_mean,
            "infopo/ig_std": math.sqrt(sum((g - ig_mean) ** 2 for g in gains) / len(gains)) if gains else 0.0,
            "infopo/ig_pos_frac": sum(1 for g in gains if g > 0) / len(gains) if gains else 0.0,
            "infopo/ig_turns": float(len(gains)),
            "infopo/lambda": float(diagnostics.get("lambda_", 1.0)),
            "infopo/gate_mean": sum(gates) / len(gates),
            "infopo/gate_min": min(gates),
            "infopo/gate_max": max(gates),
            "infopo/group_std_mean": sum(stds) / len(stds),
            "infopo/beta": float(diagnostics.get("beta", cfg.beta0)),
            "infopo/intrinsic_share": in_abs / (out_abs + in_abs) if out_abs + in_abs else 0.0,
        }

    # ------------------------------------------------------------------ CSD plumbing

    def _coach_runner(self) -> Callable[[Any], Any]:
        if self._coach_loop is None:
            from mimesis_gym.core.asyncbridge import LoopThread

            self._coach_loop = LoopThread()
        return self._coach_loop.run

    def _assign_placebos(self, episodes: list[Episode], step: int) -> dict[tuple[str, int], str]:
        cfg = self.config.csd
        pool = list(self.state.placebo_pool)
        placebos: dict[tuple[str, int], str] = {}
        if len(pool) < cfg.placebo_min:
            return placebos
        rng = random.Random(self._seed(step, 5))
        for episode in episodes:
            others = [note for rollout, note in pool if rollout != episode.rollout_id]
            for turn in sorted(episode.notes):
                if others:
                    placebos[(episode.rollout_id, turn)] = rng.choice(others)
        return placebos

    def _remember_notes(self, episodes: list[Episode]) -> None:
        ring = deque(self.state.placebo_pool, maxlen=self.config.csd.placebo_pool)
        for episode in episodes:
            for turn in sorted(episode.notes):
                ring.append((episode.rollout_id, episode.notes[turn]))
        self.state.placebo_pool = list(ring)

    def _coached_turns(
        self, episodes: list[Episode], placebos: dict[tuple[str, int], str]
    ) -> dict[int, list[tuple[TeacherRow, TeacherRow | None]]]:
        """Per episode (batch index): the teacher rows (real, placebo) of every turn that trains with CSD."""
        rollout = self.config.rollout
        limit = rollout.max_prompt_tokens + rollout.max_response_tokens + self.config.csd.teacher_headroom
        coached: dict[int, list[tuple[TeacherRow, TeacherRow | None]]] = {}
        self._rows_skipped = self._placebo_turns = self._coached_turn_count = 0
        for e, episode in enumerate(episodes):
            for index in sorted(episode.notes):
                turn = episode.turns[index - 1]
                real = build_teacher_row(episode, turn, episode.notes[index], self.renderer)
                placebo_note = placebos.get((episode.rollout_id, index))
                placebo = build_teacher_row(episode, turn, placebo_note, self.renderer) if placebo_note else None
                if len(real.input_ids) > limit or (placebo is not None and len(placebo.input_ids) > limit):
                    self._rows_skipped += 1
                    continue
                self._placebo_turns += placebo is not None
                self._coached_turn_count += 1
                coached.setdefault(e, []).append((real, placebo))
        return coached

    def _teacher_logprobs(
        self, episodes: list[Episode], rows: list[_Row], coached: dict[int, list[tuple[TeacherRow, TeacherRow | None]]]
    ) -> tuple[list[list[float]], list[list[float]], list[list[int]], list[list[int]]]:
        """Per student row: teacher ℓ_T, placebo ℓ_T, coached mask and placebo mask (student positions)."""
        jobs: list[tuple[int, TeacherRow, bool]] = []
        for k, row in enumerate(rows):
            for real, placebo in coached.get(row.episode, []):
                if real.segment == row.segment:
                    jobs.append((k, real, False))
                    if placebo is not None:
                        jobs.append((k, placebo, True))
        sequences = [job[1].input_ids for job in jobs]
        masks = []
        for _, teacher, _ in jobs:
            start, end = teacher.teacher_span
            masks.append([1 if start <= i < end else 0 for i in range(len(teacher.input_ids))])
        values = self._score(sequences, masks, "teacher") if self._max_over_ranks(len(jobs)) else []
        teacher = [[0.0] * r.length for r in rows]
        placebo_values = [[0.0] * r.length for r in rows]
        coached_mask = [[0] * r.length for r in rows]
        placebo_mask = [[0] * r.length for r in rows]
        for (k, row_teacher, is_placebo), logprobs in zip(jobs, values, strict=True):
            start, end = row_teacher.student_span
            target = placebo_values if is_placebo else teacher
            target[k][start:end] = logprobs[start + row_teacher.shift : end + row_teacher.shift]
            mask_target = placebo_mask if is_placebo else coached_mask
            loss_mask = episodes[rows[k].episode].segments[rows[k].segment].loss_mask
            for i in range(start, end):
                mask_target[k][i] = loss_mask[i]
        return teacher, placebo_values, coached_mask, placebo_mask

    # ------------------------------------------------------------------ the update

    def _old_row(self, episode: Episode, row: _Row) -> list[float]:
        if episode.old_logprobs is None or not episode.old_logprobs[row.segment]:
            raise RuntimeError(f"no old log-probs for {episode.rollout_id} segment {row.segment} on rank {self.rank}")
        return episode.old_logprobs[row.segment]

    def _token_advantages(self, episode: Episode, segment: int) -> list[float]:
        seg = episode.segments[segment]
        values = episode.turn_advantages or []
        return [
            values[owner - 1] if m and owner else 0.0
            for m, owner in zip(seg.loss_mask, seg.turn_of_position, strict=True)
        ]

    def _update_minibatch(
        self,
        episodes: list[Episode],
        rows: list[_Row],
        minibatch: list[int],
        share: list[int],
        coached: dict[int, list[tuple[TeacherRow, TeacherRow | None]]],
        placebos: dict[tuple[str, int], str],
        shortcut: bool,
        sums: Counter[str],
    ) -> float | None:
        cfg = self.config
        all_rows = [rows[i] for i in minibatch]
        tokens = sum(r.action_tokens for r in all_rows)
        sequences = sum(1 for r in all_rows if r.action_tokens)
        coached_tokens = 0
        for row in all_rows:
            for real, _ in coached.get(row.episode, []):
                if real.segment == row.segment:
                    start, end = real.student_span
                    coached_tokens += sum(episodes[row.episode].segments[row.segment].loss_mask[start:end])
        sums["action_tokens_global"] += tokens
        sums["coached_tokens_global"] += coached_tokens
        if self._nothing_to_learn(episodes, all_rows, coached_tokens):
            # every advantage is 0 and no other term is on: the loss has no gradient. Skip the forwards
            # but still step AdamW with zero gradients, so the update equals the full computation.
            sums["skipped_forward_minibatches"] += 1
            for parameter in self.scorer.parameters():
                if parameter.requires_grad:
                    parameter.grad = torch.zeros_like(parameter)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            return 0.0
        mine = [rows[i] for i in share]
        plan = plan_micro_batches([r.length for r in mine], cfg.update.micro_batch_tokens, packing=self.packing)
        count = self._max_over_ranks(len(plan))
        for k in range(count):
            dummy = k >= len(plan)
            batch_rows = [mine[j] for j in plan[k]] if not dummy else [(mine or all_rows)[0]]
            last = k == count - 1
            context = contextlib.nullcontext() if last or self.world == 1 else self.accelerator.no_sync(self.scorer)
            with context:
                self._micro_step(
                    episodes,
                    batch_rows,
                    dummy=dummy,
                    micro_count=len(plan),
                    tokens=tokens,
                    sequences=sequences,
                    coached_tokens=coached_tokens,
                    coached=coached,
                    shortcut=shortcut,
                    sums=sums,
                )
        grad_norm = self.accelerator.clip_grad_norm_(self.scorer.parameters(), cfg.optim.grad_clip)
        grad_norm = float(grad_norm) if grad_norm is not None else float("nan")
        if math.isfinite(grad_norm):
            self.optimizer.step()
            self.scheduler.step()
        else:
            self.state.skipped_steps += 1
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def _nothing_to_learn(self, episodes: list[Episode], rows: list[_Row], coached_tokens: int) -> bool:
        loss = self.config.loss
        if coached_tokens or loss.kl_coef or loss.entropy_coef:
            return False
        for row in rows:
            episode = episodes[row.episode]
            values = episode.turn_advantages or []
            if any(values[t.index - 1] != 0 for t in episode.turns if t.segment == row.segment and t.action_tokens):
                return False
        return True

    def _micro_step(
        self,
        episodes: list[Episode],
        rows: list[_Row],
        *,
        dummy: bool,
        micro_count: int,
        tokens: int,
        sequences: int,
        coached_tokens: int,
        coached: dict[int, list[tuple[TeacherRow, TeacherRow | None]]],
        shortcut: bool,
        sums: Counter[str],
    ) -> None:
        cfg = self.config
        loss_cfg = cfg.loss
        device = self.accelerator.device
        segments = [episodes[r.episode].segments[r.segment] for r in rows]
        batch = collate([s.input_ids for s in segments], packing=self.packing, pad_id=self.pad_id, device=device)
        mask = batch.place([s.loss_mask for s in segments])
        scope_micro = loss_cfg.token_mean_scope == "microbatch"
        if scope_micro:
            local_tokens = sum(r.action_tokens for r in rows)
            local_sequences = sum(1 for r in rows if r.action_tokens)
            row_weights = [
                w / max(1, micro_count)
                for w in aggregation_weights(
                    [r.action_tokens for r in rows],
                    loss_cfg.loss_agg,
                    local_tokens,
                    local_sequences,
                    cfg.rollout.max_response_tokens,
                )
            ]
        else:
            row_weights = aggregation_weights(
                [r.action_tokens for r in rows], loss_cfg.loss_agg, tokens, sequences, cfg.rollout.max_response_tokens
            )
        if dummy:
            row_weights = [0.0] * len(rows)
        weights = batch.place([[w * m for m in s.loss_mask] for w, s in zip(row_weights, segments, strict=True)])
        advantage = batch.place([self._token_advantages(episodes[r.episode], r.segment) for r in rows])

        csd_active = bool(coached) and not dummy
        if csd_active:
            teacher, placebo, coached_mask, placebo_mask = self._teacher_logprobs(episodes, rows, coached)
            teacher_t, placebo_t = batch.place(teacher), batch.place(placebo)
            coached_t, placebo_m = batch.place(coached_mask), batch.place(placebo_mask)
        elif coached and self.world > 1:
            self._teacher_logprobs(episodes, [], coached)  # keep teacher forwards in step across ranks

        score_mask = mask > 0
        logprobs, entropy = self.scorer(
            batch.input_ids,
            score_mask,
            batch.position_ids,
            batch.attention_mask,
            cfg.rollout.temperature,
            loss_cfg.entropy_coef > 0,
        )
        self.counters["student_forwards"] += 1
        old = logprobs.detach() if shortcut else batch.place([self._old_row(episodes[r.episode], r) for r in rows])
        losses = token_losses(
            logprobs,
            old,
            advantage,
            clip_low=loss_cfg.clip_low,
            clip_high=loss_cfg.clip_high,
            dual_clip=loss_cfg.dual_clip,
        )
        sampler = batch.place([self._sampler_row(episodes[r.episode], r.segment) for r in rows])
        if loss_cfg.rollout_is == "token":
            losses = losses * torch.clamp(torch.exp(old - sampler), max=2.0).detach()
        losses = torch.where(score_mask, losses, torch.zeros_like(losses))
        pg = (losses * weights).sum()
        total = pg
        if entropy is not None:
            total = total - loss_cfg.entropy_coef * (torch.where(score_mask, entropy, 0.0) * weights).sum()
        kl_value = None
        if self.reference is not None:
            with torch.no_grad():
                reference, _ = self.reference(
                    batch.input_ids, score_mask, batch.position_ids, batch.attention_mask, cfg.rollout.temperature
                )
            kl = torch.where(score_mask, kl_penalty(logprobs, reference, loss_cfg.kl_estimator), 0.0)
            kl_value = (kl * weights).sum()
            total = total + loss_cfg.kl_coef * kl_value
        if csd_active:
            denominator = coached_tokens
            if scope_micro:
                local = int(coached_t.sum().item())
                denominator = max(1, local) * max(1, micro_count)
            reference_logp = torch.where(placebo_m > 0, placebo_t, logprobs.detach())
            term = csd_loss(
                logprobs,
                teacher_t,
                coached_t,
                beta=cfg.csd.beta,
                placebo_logp=reference_logp,
                estimator=cfg.csd.estimator,
                denominator=float(max(1, denominator)),
            )
            total = total + cfg.csd.alpha * term
            with torch.no_grad():
                on = coached_t > 0
                delta = (teacher_t - reference_logp)[on]
                gate = csd_gate(delta, cfg.csd.beta)
                sums["csd_tokens"] += int(on.sum().item())
                sums["csd_gate"] += float(gate.sum().item())
                sums["csd_gate_active"] += int((gate > 0.5).sum().item())
                sums["csd_delta"] += float(delta.sum().item())
                sums["csd_delta_sq"] += float((delta**2).sum().item())
                sums["csd_loss"] += float(term.item())
                release = gate * (teacher_t[on] - logprobs.detach()[on])
                sums["csd_release"] += float(release.sum().item()) / max(1, coached_tokens)
        self.accelerator.backward(total * self.world)
        if dummy:
            return
        with torch.no_grad():
            ratio = torch.exp(torch.clamp(logprobs - old, -20, 20))
            unclipped = -advantage * ratio
            clipped = -advantage * torch.clamp(ratio, 1 - loss_cfg.clip_low, 1 + loss_cfg.clip_high)
            bound = torch.maximum(unclipped, clipped) > loss_cfg.dual_clip * advantage.abs()
            sums["tokens"] += int(score_mask.sum().item())
            sums["clip"] += int(((clipped > unclipped) & score_mask).sum().item())
            sums["dual_clip"] += int(((advantage < 0) & bound & score_mask).sum().item())
            sums["ppo_kl"] += float(torch.where(score_mask, old - logprobs, 0.0).sum().item())
            sums["loss_pg"] += float(pg.item())
            sums["loss_total"] += float(total.item())
            sums["logprob_gap"] += float(torch.where(score_mask, (sampler - old).abs(), 0.0).sum().item())
            sums["real_tokens"] += batch.real_tokens
            sums["padded_tokens"] += batch.padded_tokens
            if entropy is not None:
                sums["entropy"] += float(torch.where(score_mask, entropy, 0.0).sum().item())
            if kl_value is not None:
                sums["kl"] += float(kl_value.item())

    def _update_metrics(
        self, sums: Counter[str], grad_norms: list[float], optimizer_steps: int, coach_active: bool
    ) -> dict[str, float]:
        names = sorted(sums)
        if self.world > 1:
            values = torch.tensor([float(sums[n]) for n in names], dtype=torch.float64, device=self.accelerator.device)
            values = self.accelerator.reduce(values, reduction="sum")
            totals = dict(zip(names, values.tolist(), strict=True))
            for name in ("action_tokens_global", "coached_tokens_global"):
                totals[name] = float(sums[name])  # identical on every rank: not summed
        else:
            totals = {n: float(sums[n]) for n in names}
        tokens = max(1.0, totals.get("tokens", 0.0))
        steps = max(1, optimizer_steps)
        metrics = {
            "loss/pg": totals.get("loss_pg", 0.0) / steps,
            "loss/total": totals.get("loss_total", 0.0) / steps,
            "pg_clipfrac": totals.get("clip", 0.0) / tokens,
            "pg_clipfrac_lower": totals.get("dual_clip", 0.0) / tokens,
            "ppo_kl": totals.get("ppo_kl", 0.0) / tokens,
            "grad_norm": float(np.mean(grad_norms)) if grad_norms else 0.0,
            "lr": float(self.scheduler.get_last_lr()[0]),
            "train/skipped_steps": float(self.state.skipped_steps),
            "batch/padding_frac": (totals.get("padded_tokens", 0.0) - totals.get("real_tokens", 0.0))
            / max(1.0, totals.get("real_tokens", 0.0)),
            "rollout/logprob_gap": totals.get("logprob_gap", 0.0) / tokens,
        }
        if self.config.loss.entropy_coef > 0:
            metrics["entropy"] = totals.get("entropy", 0.0) / tokens
        if self.reference is not None:
            metrics["loss/kl"] = totals.get("kl", 0.0) / steps
        if coach_active:
            coached = totals.get("csd_tokens", 0.0)
            gate_mean = totals.get("csd_gate", 0.0) / max(1.0, coached)
            delta_mean = totals.get("csd_delta", 0.0) / max(1.0, coached)
            variance = max(0.0, totals.get("csd_delta_sq", 0.0) / max(1.0, coached) - delta_mean**2)
            metrics.update(
                {
                    "csd/gate_mean": gate_mean,
                    "csd/gate_active_frac": totals.get("csd_gate_active", 0.0) / max(1.0, coached),
                    "csd/delta_mean": delta_mean,
                    "csd/delta_std": math.sqrt(variance),
                    "csd/coached_token_frac": totals.get("coached_tokens_global", 0.0)
                    / max(1.0, totals.get("action_tokens_global", 0.0)),
                    "csd/rows_skipped_len": float(self._rows_skipped),
                    "csd/placebo_frac": self._placebo_turns / max(1, self._coached_turn_count),
                    "csd/loss": totals.get("csd_loss", 0.0) / steps,
                    "csd/loss_release_form": totals.get("csd_release", 0.0) / steps,
                }
            )
        return metrics

    # ------------------------------------------------------------------ metrics, evaluation, checkpoints

    def _rollout_metrics(self, episodes: list[Episode]) -> dict[str, float]:
        if not episodes:
            return {"reward/mean": 0.0, "score/mean": 0.0}
        n = len(episodes)
        stepped = [t for e in episodes for t in e.turns if t.stepped]
        metrics: dict[str, float] = {
            "reward/mean": sum(e.reward_sum for e in episodes) / n,
            "score/mean": sum(e.episode_score for e in episodes) / n,
            "episode/turns_mean": sum(len(e.turns) for e in episodes) / n,
            "episode/truncated_frac": sum(e.truncated for e in episodes) / n,
            "episode/invalid_action_frac": sum(not t.valid_action for t in stepped) / max(1, len(stepped)),
            "episode/user_failure_frac": sum(e.user_failure is not None for e in episodes) / n,
            "tokens/action_mean": sum(e.action_tokens for e in episodes) / n,
            "tokens/obs_mean": sum(t.obs_span[1] - t.obs_span[0] for e in episodes for t in e.turns if t.obs_span) / n,
        }
        by_env: dict[str, list[float]] = {}
        for episode in episodes:
            by_env.setdefault(episode.env_id, []).append(episode.episode_score)
        for env_id, scores in by_env.items():
            metrics[f"score/{env_id}"] = sum(scores) / len(scores)
        return metrics

    def _coach_metrics(self, stats: Any) -> dict[str, float]:
        values = [stats.episodes, stats.requests, stats.notes, stats.none, stats.failed, stats.dropped_leak]
        if self.world > 1:
            tensor = torch.tensor(values, dtype=torch.float64, device=self.accelerator.device)
            values = self.accelerator.reduce(tensor, reduction="sum").tolist()
        episodes, requests, notes, none, failed, dropped = values
        return {
            "csd/notes_per_episode": notes / max(1, episodes),
            "csd/none_frac": none / max(1, requests),
            "csd/coach_fail_frac": failed / max(1, requests),
            "csd/notes_dropped_leak": float(dropped),
        }

    def evaluate(self, split: str | None = None, task_ids: Sequence[tuple[int, str]] | None = None) -> dict[str, float]:
        """Greedy episodes (one per task): the validation tasks, ``split``'s tasks of every env, or ``task_ids``.

        Returns ``val/score_mean`` (the mean of per-env mean episode scores) and ``val/score/<env_id>``.
        """
        specs = self.eval_envs or self.envs
        if task_ids is None:
            if split is not None:
                task_ids = []
                for i, spec in enumerate(specs):
                    probe = spec.eval_factory()
                    task_ids += [(i, task.id) for task in probe.unwrapped.task_pack.splits.get(split, ())]
                    probe.close()
            else:
                task_ids = [(i, task) for i, spec in enumerate(specs) for task in spec.val_tasks]
        requests = [
            EpisodeRequest(specs[i].eval_factory, specs[i].name, task, 0, f"eval:{i}:{task}", f"eval:{k}")
            for k, (i, task) in enumerate(task_ids)
        ]
        mine = requests[self.rank :: self.world]
        self._sync_engine()
        episodes = self.collector.collect(mine, sampling=Sampling(temperature=0.0), seed=self._seed(self.state.step, 6))
        results = [(e.env_id, e.episode_score) for e in episodes]
        if self.world > 1:
            from accelerate.utils import gather_object

            results = gather_object(results)
        by_env: dict[str, list[float]] = {}
        for env_id, score in results:
            by_env.setdefault(env_id, []).append(score)
        means = {env_id: sum(v) / len(v) for env_id, v in by_env.items()}
        metrics = {f"val/score/{env_id}": value for env_id, value in means.items()}
        metrics["val/score_mean"] = sum(means.values()) / len(means) if means else 0.0
        return metrics

    def _log(self, metrics: dict[str, Any]) -> None:
        self.history.append(metrics)
        if not self.accelerator.is_main_process:
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        if "jsonl" in self.config.run.loggers:
            with (self.output_dir / "metrics.jsonl").open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(metrics, sort_keys=True) + "\n")
        if any(name != "jsonl" for name in self.config.run.loggers):
            self.accelerator.log({k: v for k, v in metrics.items() if k != "step"}, step=metrics["step"])

    def _dump_rollouts(self, step: int, episodes: list[Episode]) -> None:
        directory = self.output_dir / "rollouts"
        directory.mkdir(parents=True, exist_ok=True)
        with (directory / f"step_{step}.jsonl").open("w", encoding="utf-8") as handle:
            for episode in episodes:
                handle.write(json.dumps(episode.dump(log_privileged=self.config.run.log_privileged)) + "\n")

    def save_checkpoint(self, metrics: dict[str, Any] | None = None) -> Path:
        """``checkpoints/step_N/``: HF model + tokenizer, accelerate state, ``trainer_state.json``; updates
        ``latest``, prunes to ``keep_last`` and refreshes ``best/`` on a new best ``val/score_mean``."""
        accelerator = self.accelerator
        root = self.output_dir / "checkpoints"
        directory = root / f"step_{self.state.step}"
        accelerator.wait_for_everyone()
        accelerator.save_state(str(directory / "accelerate"), safe_serialization=False)
        state_dict = accelerator.get_state_dict(self.scorer)
        if accelerator.is_main_process:
            weights = {k.removeprefix("model."): v for k, v in state_dict.items()}
            self.policy_model.save_pretrained(directory, state_dict=weights)
            self.tokenizer.save_pretrained(directory)
            score = (metrics or {}).get("val/score_mean")
            improved = score is not None and (self.state.best_metric is None or score > self.state.best_metric)
            if improved:
                self.state.best_metric, self.state.best_step = float(score), self.state.step
            (directory / "trainer_state.json").write_text(
                json.dumps(self._state_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            (root / "latest").write_text(directory.name + "\n", encoding="utf-8")
            if improved and self.config.run.keep_best:
                best = root / "best"
                if best.exists():
                    shutil.rmtree(best)
                shutil.copytree(directory, best)
            kept = sorted((p for p in root.glob("step_*") if p.is_dir()), key=lambda p: int(p.name.split("_")[1]))
            for old in kept[: -self.config.run.keep_last]:
                shutil.rmtree(old, ignore_errors=True)
        accelerator.wait_for_everyone()
        self.last_checkpoint = directory
        return directory

    def _state_dict(self) -> dict[str, Any]:
        return {
            "step": self.state.step,
            "epoch": self.state.epoch,
            "cursor": self.state.cursor,
            "best_metric": self.state.best_metric,
            "best_step": self.state.best_step,
            "skipped_steps": self.state.skipped_steps,
            "placebo_pool": self.state.placebo_pool,
            "config": json.loads(self.config.model_dump_json()),
        }

    def _resume(self) -> None:
        root = self.output_dir / "checkpoints"
        latest = root / "latest"
        if not latest.is_file():
            return
        directory = root / latest.read_text(encoding="utf-8").strip()
        state = json.loads((directory / "trainer_state.json").read_text(encoding="utf-8"))
        self.accelerator.load_state(str(directory / "accelerate"))
        self.state = _State(
            step=state["step"],
            epoch=state["epoch"],
            cursor=state["cursor"],
            best_metric=state["best_metric"],
            best_step=state["best_step"],
            skipped_steps=state["skipped_steps"],
            placebo_pool=[tuple(item) for item in state["placebo_pool"]],
        )
        self.last_checkpoint = directory
        metrics_file = self.output_dir / "metrics.jsonl"
        if metrics_file.is_file() and self.accelerator.is_main_process:
            kept = [line for line in metrics_file.read_text(encoding="utf-8").splitlines() if line.strip()]
            kept = [line for line in kept if json.loads(line)["step"] <= self.state.step]
            metrics_file.write_text("".join(line + "\n" for line in kept), encoding="utf-8")
        logger.info("resumed from %s (step %d)", directory, self.state.step)


def train(
    env_ids: Sequence[EnvLike],
    policy: Any = "tiny",
    user: Any = "scripted",
    algorithm: str | AlgorithmConfig | None = None,
    *,
    judge: Any = None,
    config: TrainerConfig | dict[str, Any] | str | Path | None = None,
    eval_env_ids: Sequence[EnvLike] | None = None,
    callbacks: Iterable[Callable[[Trainer, dict[str, Any]], None]] = (),
) -> TrainResult:
    """Train ``policy`` on ``env_ids`` (§6.1) and return a :class:`TrainResult`.

    ``env_ids``: registered ids, ``(id, kwargs)`` pairs or zero-argument env factories; envs are made
    with ``reward_profile=config.rollout.reward_profile`` and ``split="train"`` (and
    ``privileged=True`` when CSD is on) unless their kwargs say otherwise. ``algorithm``: ``"grpo"``,
    ``"grpo-outcome"``, ``"foldgrpo"``, ``"infopo"``, ``"csd"``, an :class:`AlgorithmConfig`, or
    ``None`` (the config's estimator and ``csd.enabled``).
    """
    trainer = Trainer(
        env_ids, policy, user, algorithm, judge=judge, config=config, eval_env_ids=eval_env_ids, callbacks=callbacks
    )
    return trainer.fit()
