"""The trainer: collect → old log-probs → learners' passes → advantages → update → log.

See docs/algorithms.md, "The training loop".

:func:`train` is the one-call API; :class:`Trainer` exposes ``fit()``, ``step()`` and ``evaluate()``.
The loop is written against :class:`accelerate.Accelerator`, so the same script runs on one CPU or
under ``accelerate launch`` (DDP, FSDP) without changes. One step, read top to bottom in
:meth:`Trainer.step` (docs/algorithms.md, "One training step"):

1. draw ``prompts_per_batch`` tasks (``tasks.TaskSchedule``); each is a group of ``G`` episodes with
   the same task and reset seed; whole groups go to ranks; collect this rank's episodes
   token-exactly (``rollout.py``), all-gather them and cut them into mini-batches and rank shares
   (an offline learner, SFT, supplies the step's records instead: ``Learner.episodes``);
2. old log-probs of the rank's sequences, one no-grad pass per rollout batch (``services.py``);
3. the learners' passes (``learners/``: InfoPO's counterfactuals, CSD's coach notes and teacher rows);
4. advantages on the gathered per-turn metadata, identical on every rank (``advantage_step.py``);
5. per PPO epoch and mini-batch the update (``update.py``): per micro-batch the learners' no-grad
   passes, the student forward, the loss with the learners' terms and its backward; clip, step;
6. log metrics (``metrics.jsonl``), evaluate, checkpoint.

An algorithm is the estimator plus the learners it turns on; the loop never names one
(docs/writing-a-learner.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import shutil
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mimesis_gym.algorithms.advantage_step import advantage_metrics, assign, estimate, estimator_metrics
from mimesis_gym.algorithms.batching import minibatches, rank_share, training_rows
from mimesis_gym.algorithms.config import AlgorithmConfig, TrainerConfig
from mimesis_gym.algorithms.engines.base import Sampling
from mimesis_gym.algorithms.engines.local import LocalEngine
from mimesis_gym.algorithms.learners import Learner, RolloutBatch, select_learners
from mimesis_gym.algorithms.logprobs import PolicyScorer
from mimesis_gym.algorithms.losses import aggregation_weights
from mimesis_gym.algorithms.model_specs import check_job_models
from mimesis_gym.algorithms.policy import (
    DropoutError,
    check_no_dropout,
    frozen_reference,
    fused_adamw,
    load_policy,
    packing_supported,
    prefix_sharing_supported,
    update_precision_problem,
)
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.render import ChatRenderer
from mimesis_gym.algorithms.rollout import Collector, EpisodeRequest, by_condition, rollout_metrics
from mimesis_gym.algorithms.services import LoopServices, fill_old_logprobs
from mimesis_gym.algorithms.tasks import EnvLike, TaskSchedule, build_env_specs, check_env_behaviors
from mimesis_gym.algorithms.update import PolicyUpdate, lr_schedule

__all__ = [
    "DropoutError",
    "TrainResult",
    "Trainer",
    "aggregation_weights",
    "check_no_dropout",
    "load_policy",
    "train",
]

logger = logging.getLogger(__name__)

VAL_BEHAVIOR_STREAM = 31
"""Seed part of the validation tasks' condition draw (``tasks.BEHAVIOR_STREAM`` is the training groups')."""


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    output_dir: Path
    last_checkpoint: Path | None
    best_checkpoint: Path | None
    history: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class TrainerState:
    """What a checkpoint restores besides weights and optimizer: the step, the data cursor, the best score."""

    step: int = 0
    epoch: int = 0
    cursor: int = 0
    best_metric: float | None = None
    best_step: int | None = None
    skipped_steps: int = 0


@contextlib.contextmanager
def timed(metrics: dict[str, Any], key: str) -> Iterator[None]:
    """Store the wall time of the block in ``metrics[key]``."""
    started = time.perf_counter()
    try:
        yield
    finally:
        metrics[key] = time.perf_counter() - started


def chat_model(alias: Any) -> Any:
    """A users-registry alias as a chat model (``"scripted"`` for none); other objects pass through."""
    if alias is None or alias == "scripted":
        return "scripted"
    if isinstance(alias, str):
        from mimesis_gym.users.registry import make_chat_model

        return make_chat_model(alias) or "scripted"
    return alias


def rollout_order(episode: Episode) -> tuple[int, ...]:
    """Sort key of a gathered batch: ``(group, member)`` of the rollout id, the same on every rank."""
    return tuple(int(part) for part in episode.rollout_id.split(":")[1:])


class Trainer:
    """Trains a policy on conversation envs with GRPO / FoldGRPO / InfoPO / CSD or a registered learner.

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
        from accelerate.utils import set_seed

        self.config, learner_classes = select_learners(TrainerConfig.load(config), algorithm)
        cfg = self.config
        check_job_models(policy, user, judge, cfg)  # a missing model fails here, before any is loaded
        check_env_behaviors([*env_ids, *(eval_env_ids or [])])  # so does a user behaviour an env does not play
        self.callbacks = list(callbacks)
        self.accelerator = accelerator = self._accelerator() if accelerator is None else accelerator
        self.rank, self.world = accelerator.process_index, accelerator.num_processes
        self._validate()
        set_seed(cfg.run.seed)
        self.output_dir = Path(cfg.run.output_dir)

        dtype = cfg.model.resolved_dtype(cuda=accelerator.device.type == "cuda")
        problem = update_precision_problem(dtype, cfg.optim.lr)
        if problem and self.rank == 0:
            warnings.warn(problem, stacklevel=2)
        model, tokenizer = load_policy(policy, dtype)
        comparing = [learner.name for learner in learner_classes if learner.compares_forwards]
        if comparing:
            check_no_dropout(model, f"learners {', '.join(comparing)} compare forwards of the same weights")
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

        self.user_model = chat_model(user)
        self.judge_model = chat_model(judge) if judge is not None else None
        extra = {key: value for learner in learner_classes for key, value in learner.env_kwargs(cfg).items()}
        specs = {"user_model": self.user_model, "judge_model": self.judge_model, "train_kwargs": extra}
        self.envs = build_env_specs(env_ids, cfg, **specs)
        self.eval_envs = build_env_specs(eval_env_ids, cfg, eval_split="test", **specs) if eval_env_ids else None
        self.schedule = TaskSchedule(self.envs, cfg)
        self.total_steps = cfg.run.total_steps
        if cfg.run.total_epochs is not None:
            tasks = len(self.schedule.all_tasks)
            self.total_steps = math.ceil(cfg.run.total_epochs * tasks / cfg.rollout.prompts_per_batch)

        scorer = PolicyScorer(model)
        optimizer = torch.optim.AdamW(
            scorer.parameters(),
            lr=cfg.optim.lr,
            betas=tuple(cfg.optim.betas),
            weight_decay=cfg.optim.weight_decay,
            fused=fused_adamw(cfg.optim.fused, accelerator.device),
        )
        self.scorer, self.optimizer = accelerator.prepare(scorer, optimizer)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer.optimizer, lr_schedule(cfg, self.total_steps))
        accelerator.register_for_checkpointing(self.scheduler)
        self.policy_model = accelerator.unwrap_model(self.scorer).model
        self.reference = frozen_reference(self.policy_model) if cfg.loss.kl_coef > 0 else None
        mode = cfg.update.packing
        self.packing = (
            packing_supported(self.scorer, self.pad_id, accelerator.device) if mode == "auto" else mode == "on"
        )
        self.prefix_sharing = self._prefix_sharing(cfg.update.prefix_sharing, gradient_checkpointing)

        self.engine = self._engine()
        self.collector = Collector(self.engine, tokenizer, cfg.rollout)
        for spec in self.envs:  # the prefix check for every tool layout the run will render
            probe = spec.factory()
            probe.reset(seed=0, options={"task_id": spec.train_tasks[0]} if spec.train_tasks else None)
            renderer, _ = self.collector.renderer_for(probe.unwrapped.tools)
            renderer.check_incremental()
            probe.close()

        self.counters: Counter[str] = Counter()
        """Forward passes by phase (``old_logprob_passes``, ``old_logprob_forwards``, ``teacher_forwards``,
        ``student_forwards``, ``counterfactual_forwards``); tests read them."""
        self.services = LoopServices(
            cfg,
            accelerator,
            self.scorer,
            self.renderer,
            self.pad_id,
            self.packing,
            self.user_model,
            self.counters,
            prefix_sharing=self.prefix_sharing,
        )
        self.learners: list[Learner] = [learner(self.services) for learner in learner_classes]
        self.update = PolicyUpdate(self.services, self.optimizer, self.scheduler, self.reference, self.learners)

        self.state = TrainerState()
        self.history: list[dict[str, Any]] = []
        self.last_checkpoint: Path | None = None
        if cfg.run.resume == "auto":
            self._resume()

    # ------------------------------------------------------------------ setup helpers

    def _accelerator(self) -> Any:
        from accelerate import Accelerator

        cfg = self.config
        cuda = torch.cuda.is_available()
        precision = {"auto": "bf16" if cuda else "no", "float32": "no", "bfloat16": "bf16", "float16": "fp16"}
        trackers = [name for name in cfg.run.loggers if name != "jsonl"]
        accelerator = Accelerator(
            mixed_precision=precision[cfg.run.dtype], log_with=trackers or None, project_dir=cfg.run.output_dir
        )
        if trackers:
            accelerator.init_trackers("mimesis_gym", config=json.loads(cfg.model_dump_json()))
        return accelerator

    def _validate(self) -> None:
        cfg = self.config
        if cfg.rollout.prompts_per_batch % self.world:
            raise ValueError(
                f"rollout.prompts_per_batch={cfg.rollout.prompts_per_batch} must be divisible by the "
                f"world size {self.world}"
            )
        truncated_sampling = cfg.rollout.top_p < 1 or cfg.rollout.top_k is not None
        if cfg.rollout.engine == "vllm" and cfg.loss.old_logprob_source == "sampler" and truncated_sampling:
            raise ValueError(
                "old_logprob_source='sampler' with vLLM needs top_p=1 and no top_k: vLLM's log-probs are "
                "the sampler's only without truncation"
            )

    def _prefix_sharing(self, mode: str, gradient_checkpointing: bool) -> bool:
        """``update.prefix_sharing`` resolved: ``auto`` probes the model; off under gradient checkpointing.

        Checkpointed layers drop the key/value cache that the shared prefix is read from, so the two
        exclude each other: ``on`` with checkpointing is a configuration error.
        """
        if mode == "off":
            return False
        if gradient_checkpointing:
            if mode == "on":
                raise ValueError(
                    "update.prefix_sharing=on needs update.gradient_checkpointing=false: checkpointed layers drop "
                    "the key/value cache the shared prefix is read from (set prefix_sharing=auto or off)"
                )
            return False
        return mode == "on" or prefix_sharing_supported(self.scorer, self.pad_id, self.accelerator.device)

    def _engine(self) -> Any:
        if self.config.rollout.engine == "vllm":
            from mimesis_gym.algorithms.engines.vllm_colocate import VLLMColocateEngine

            return VLLMColocateEngine.from_model(self.policy_model, self.tokenizer, self.renderer, self.config.vllm)
        return LocalEngine(  # "hf": the policy's own weights on the local engine (one decode path with eval)
            self.policy_model,
            self.tokenizer,
            stop_ids=self.renderer.stop_ids,
            end_of_turn_id=self.renderer.end_of_turn_id,
            max_batch_size=self.config.rollout.max_concurrent_episodes,
        )

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

        # 1. collect this rank's groups; every rank gets every episode, cut into mini-batches and shares
        with timed(metrics, "time/sync"):
            self._sync_engine()
        with timed(metrics, "time/rollout"):
            batch, next_position = self._collect(step)
        metrics.update(rollout_metrics(batch.episodes))

        # 2. old log-probs: one no-grad pass per rollout batch, unless one update reuses the current ones
        shortcut = self._reuses_current_logprobs(batch)
        with timed(metrics, "time/old_logprob"):
            if not shortcut:
                fill_old_logprobs(self.services, batch.episodes, batch.my_rows)

        # 3. the learners' passes over the batch
        with timed(metrics, "time/prepare"):
            for learner in self.learners:
                metrics.update(learner.prepare(batch))

        # 4. advantages
        metrics.update(self._advantages(batch))

        # 5. losses and updates
        with timed(metrics, "time/update"):
            update_metrics, skipped = self.update.run(batch, shortcut=shortcut)
        self.state.skipped_steps += skipped
        metrics.update(update_metrics)
        metrics["train/skipped_steps"] = float(self.state.skipped_steps)
        for learner in self.learners:
            metrics.update(learner.metrics(batch))

        # 6. bookkeeping: log, evaluate, checkpoint
        self.state.step = step
        self.state.epoch, self.state.cursor = next_position
        metrics["time/step"] = time.perf_counter() - started
        if cfg.run.eval_every and step % cfg.run.eval_every == 0:
            metrics.update(self.evaluate())
        if cfg.run.dump_rollouts and self.accelerator.is_main_process:
            self._dump_rollouts(step, batch.episodes)
        self._log(metrics)
        if cfg.run.save_every and step % cfg.run.save_every == 0:
            self.save_checkpoint(metrics)
        for callback in self.callbacks:
            callback(self, metrics)
        return metrics

    def _sync_engine(self) -> None:
        """Tell the engine the weight version: vLLM copies the weights in, the local engine drops its prefix cache."""
        if hasattr(self.engine, "sync_weights"):
            self.engine.sync_weights(self.policy_model, version=self.state.step)

    def _collect(self, step: int) -> tuple[RolloutBatch, tuple[int, int]]:
        """This rank's groups collected and every rank's gathered; also the data cursor after this batch."""
        cfg = self.config
        position = (self.state.epoch, self.state.cursor)
        supplied = next((s for learner in self.learners if (s := learner.episodes(step, *position)) is not None), None)
        if supplied is not None:  # an offline learner's records, the same on every rank
            episodes, next_position = supplied
            local = episodes[self.rank :: self.world]
        else:
            groups, next_position = self.schedule.draw(step, *position)
            requests = [r for g in groups[self.rank :: self.world] for r in self.schedule.requests(step, g)]
            local = self.collector.collect(requests, seed=self.services.seed(step, 1, self.rank))
            if hasattr(self.engine, "sleep"):
                self.engine.sleep()  # free the engine's memory (vLLM's weights, the hf engine's prefix cache)
            episodes = sorted(self.services.gather(local), key=rollout_order)
        mine = {episode.rollout_id for episode in local}
        rows = training_rows(episodes)
        cut = minibatches(episodes, rows, cfg.update.mini_batch_prompts)
        shares = [
            rank_share(episodes, rows, mb, rank=self.rank, world=self.world, balanced=cfg.update.balance) for mb in cut
        ]
        batch = RolloutBatch(step, episodes, [e for e in episodes if e.rollout_id in mine], rows, cut, shares)
        batch.offline = supplied is not None
        return batch, next_position

    def _reuses_current_logprobs(self, batch: RolloutBatch) -> bool:
        """One optimizer step per batch, no learner reading ``ℓ_old`` (or offline records): the detached current
        log-probs are ``ℓ_old``."""
        cfg = self.config
        if batch.offline:  # no sampler: the PPO term of supplied records is not used
            return True
        return (
            len(batch.minibatches) == 1
            and cfg.update.ppo_epochs == 1
            and not any(learner.needs_old_logprobs for learner in self.learners)
            and cfg.loss.old_logprob_source == "recompute"
        )

    def _advantages(self, batch: RolloutBatch) -> dict[str, float]:
        """A learner's own advantages, else the configured estimator's; assigned per turn, with their metrics."""
        replaced = [values for learner in self.learners if (values := learner.advantages(batch)) is not None]
        if replaced:
            assign(batch.episodes, replaced[0])
            return advantage_metrics(batch.episodes)
        config = self.config.advantage
        assign(batch.episodes, estimate(batch.episodes, config, epoch=self.state.epoch, diagnostics=batch.diagnostics))
        return {**advantage_metrics(batch.episodes), **estimator_metrics(batch.episodes, config)}

    # ------------------------------------------------------------------ evaluation, logs, checkpoints

    def evaluate(self, split: str | None = None, task_ids: Sequence[tuple[int, str]] | None = None) -> dict[str, float]:
        """Greedy episodes (one per task): the validation tasks, ``split``'s tasks of every env, or ``task_ids``.

        Returns ``val/score_mean`` (the mean of per-env mean episode scores) and ``val/score/<env_id>``; under
        a user-behaviour mixture each task meets one condition, drawn from the run seed and the task's
        place (the same at every evaluation), and ``val/score/behavior/<condition>`` is added.
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
        seed = self.config.run.seed
        requests = [
            EpisodeRequest(
                specs[i].drawn(specs[i].eval_factory, np.random.default_rng([seed, VAL_BEHAVIOR_STREAM, k])),
                specs[i].name,
                task,
                0,
                f"eval:{i}:{task}",
                f"eval:{k}",
            )
            for k, (i, task) in enumerate(task_ids)
        ]
        mine = requests[self.rank :: self.world]
        self._sync_engine()
        episodes = self.collector.collect(
            mine, sampling=Sampling(temperature=0.0), seed=self.services.seed(self.state.step, 6)
        )
        results = [(e.env_id, e.episode_score, e.user_behavior) for e in episodes]
        results = self.services.gather(results)
        by_env: dict[str, list[float]] = {}
        for env_id, score, _ in results:
            by_env.setdefault(env_id, []).append(score)
        means = {env_id: sum(v) / len(v) for env_id, v in by_env.items()}
        metrics = {f"val/score/{env_id}": value for env_id, value in means.items()}
        metrics["val/score_mean"] = sum(means.values()) / len(means) if means else 0.0
        for condition, scores in by_condition((condition, score) for _, score, condition in results).items():
            metrics[f"val/score/behavior/{condition}"] = sum(scores) / len(scores)
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
            **{key: value for learner in self.learners for key, value in learner.state_dict().items()},
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
        self.state = TrainerState(
            step=state["step"],
            epoch=state["epoch"],
            cursor=state["cursor"],
            best_metric=state["best_metric"],
            best_step=state["best_step"],
            skipped_steps=state["skipped_steps"],
        )
        for learner in self.learners:
            learner.load_state_dict(state)
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
    """Train ``policy`` on ``env_ids`` and return a :class:`TrainResult`.

    ``env_ids``: registered ids, ``(id, kwargs)`` pairs or zero-argument env factories; envs are made
    with ``reward_profile=config.rollout.reward_profile`` and ``split="train"`` (and
    ``privileged=True`` when CSD is on) unless their kwargs say otherwise; a ``user_behavior`` in the kwargs
    (a condition, a list or weights) is checked before the policy loads and drawn once per group
    (docs/algorithms.md, "Training against hard users"). ``algorithm``: a name of
    :data:`~mimesis_gym.algorithms.config.ALGORITHMS` (``"grpo"``, ``"grpo-outcome"``, ``"foldgrpo"``,
    ``"infopo"``, ``"csd"``, ``"sft"``, or a learner registered with
    :func:`~mimesis_gym.algorithms.learners.registry.register_learner`), an :class:`AlgorithmConfig`, or
    ``None`` (the config's estimator and ``csd.enabled``).
    """
    trainer = Trainer(
        env_ids, policy, user, algorithm, judge=judge, config=config, eval_env_ids=eval_env_ids, callbacks=callbacks
    )
    return trainer.fit()
