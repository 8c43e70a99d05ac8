"""What the trainer trains on: the envs, their task splits and the order of tasks.

See docs/algorithms.md, "One training step".

:func:`build_env_specs` turns env ids, ``(id, kwargs)`` pairs or factories into :class:`EnvSpec`
(factories for training and evaluation, training and validation task ids, the env's ``user_behavior``
mixture). :class:`TaskSchedule` draws the groups of a rollout batch from a seeded order of all
training tasks (an epoch is one pass) and turns a group into its ``G`` episode requests, under one
condition of the mixture drawn per group (docs/algorithms.md, "Training against hard users").
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.rollout import EpisodeRequest
from mimesis_gym.algorithms.services import derive_seed
from mimesis_gym.behaviors.spec import BehaviorMix
from mimesis_gym.envs import load_env_plugins
from mimesis_gym.envs.recipe import EnvRecipe, env_creator

__all__ = [
    "EnvLike",
    "EnvSpec",
    "Group",
    "TaskSchedule",
    "behavior_mix",
    "build_env_specs",
    "check_env_behaviors",
]

EnvLike = str | tuple[str, dict[str, Any]] | Callable[[], Any]
Group = tuple[int, int, str, int]
"""``(group_index, env_index, task_id, reset_seed)``."""
BEHAVIOR_STREAM = 29
"""Seed part of the per-group condition draw, apart from every other stream of the run."""


@dataclass
class EnvSpec:
    """One env of the run: ``factory`` makes training envs, ``eval_factory`` validation/evaluation envs
    (both take ``user_behavior=`` to fix one condition); ``behaviors`` is the mixture its kwargs set."""

    name: str
    factory: Callable[..., Any]
    eval_factory: Callable[..., Any]
    train_tasks: list[str]
    val_tasks: list[str]
    behaviors: BehaviorMix | None = None

    def drawn(self, factory: Callable[..., Any], rng: np.random.Generator) -> Callable[[], Any]:
        """``factory`` with one condition of the mixture, drawn from ``rng``, fixed; ``factory`` itself when
        the env's condition is fixed or unset. Every episode made by the result meets the same user."""
        if self.behaviors is None or self.behaviors.fixed is not None:
            return factory
        return functools.partial(factory, user_behavior=self.behaviors.draw(rng))


def behavior_mix(env_id: str, kwargs: Mapping[str, Any]) -> BehaviorMix | None:
    """The ``user_behavior`` an env's kwargs set (``None``: none), read as ``BehaviorMix.parse`` reads it
    and checked against the conditions the env's user plays. ``ValueError`` naming the env, the value and
    the applicable conditions for a bad condition or weight, or one the env does not play."""
    if "user_behavior" not in kwargs:
        return None
    value = kwargs["user_behavior"]
    try:
        mix = BehaviorMix.parse(value)
    except ValueError as error:
        raise ValueError(f"env {env_id!r}: user_behavior {value!r}: {error}") from None
    played = getattr(env_creator(env_id), "user_behaviors", None)
    if played is None:
        raise ValueError(f"env {env_id!r} takes no user_behavior: it is not a conversation env with a user")
    mix.check_applicable(played.applicable, env_id, played.not_applicable)
    return mix


def check_env_behaviors(envs: Sequence[EnvLike]) -> list[BehaviorMix | None]:
    """The ``user_behavior`` mixture of each env, checked before anything is built (:func:`behavior_mix`);
    ``None`` for an env whose kwargs set none, an id alone and a factory."""
    return [None if isinstance(item, str) or callable(item) else behavior_mix(item[0], item[1]) for item in envs]


def _build(recipe: EnvRecipe, **fixed: Any) -> Any:
    """A training or validation env: ``recipe`` with ``fixed`` (a drawn ``user_behavior``) laid over its kwargs."""
    return (recipe.with_kwargs(**fixed) if fixed else recipe).build()


def _env_name(env: Any, fallback: str) -> str:
    spec = getattr(env, "spec", None)
    return getattr(spec, "id", None) or fallback


def build_env_specs(
    env_ids: Sequence[EnvLike],
    config: TrainerConfig,
    *,
    user_model: Any,
    judge_model: Any = None,
    train_kwargs: Mapping[str, Any] | None = None,
    eval_split: str | None = None,
) -> list[EnvSpec]:
    """The envs of a run. Registered ids are built from an :class:`~mimesis_gym.envs.recipe.EnvRecipe` (the
    env under its ``TimeLimit``, which ends an episode) with the user (and judge) model, ``split="train"`` and
    ``reward_profile=config.rollout.reward_profile`` unless their kwargs say otherwise; ``train_kwargs``
    (the learners' extras, e.g. ``privileged=True``) apply to training envs only, under the id's own kwargs.
    A factory is called as it is.

    Without ``eval_split``, ``run.val_fraction`` of each env's train tasks (at least one) is held out for
    validation; with it, that split's tasks are all validation tasks. A ``user_behavior`` in an id's kwargs
    is checked against what the env plays (:func:`behavior_mix`) and kept in ``EnvSpec.behaviors``.
    """
    load_env_plugins()  # ids of installed plug-in packages (entry-point group mimesis_gym.envs)
    specs = []
    for index, item in enumerate(env_ids):
        mix = None
        if callable(item) and not isinstance(item, str):
            factory = eval_factory = item
            probe = item()
            name = _env_name(probe, f"env{index}")
        else:
            env_id, extra = (item, {}) if isinstance(item, str) else (item[0], dict(item[1]))
            mix = behavior_mix(env_id, extra)
            kwargs: dict[str, Any] = {"split": "train"}
            if judge_model is not None:
                kwargs["judge"] = judge_model
            kwargs["reward_profile"] = config.rollout.reward_profile
            kwargs.update(extra)
            user = kwargs.pop("user", user_model)
            train = EnvRecipe(env_id=env_id, user=user, env_kwargs={**(train_kwargs or {}), **kwargs})
            factory = functools.partial(_build, train)
            eval_factory = functools.partial(_build, EnvRecipe(env_id=env_id, user=user, env_kwargs=kwargs))
            name = env_id
            probe = factory()
        pack = probe.unwrapped.task_pack
        probe.close()
        split = eval_split or "train"
        tasks = [task.id for task in pack.splits.get(split, ())]
        if not tasks:
            raise ValueError(f"env {name!r} has no {split!r} tasks (pack splits: {', '.join(pack.splits)})")
        val: list[str] = []
        if eval_split is None and config.run.val_fraction > 0:
            count = max(1, round(config.run.val_fraction * len(tasks)))
            order = np.random.default_rng(42).permutation(len(tasks))
            chosen = set(order[:count].tolist())
            val = [task for i, task in enumerate(tasks) if i in chosen]
            tasks = [task for i, task in enumerate(tasks) if i not in chosen]
        elif eval_split is not None:
            val, tasks = tasks, []
        specs.append(EnvSpec(name, factory, eval_factory, tasks, val, mix))
    return specs


class TaskSchedule:
    """The seeded order of the training tasks of ``envs`` and the groups drawn from it."""

    def __init__(self, envs: Sequence[EnvSpec], config: TrainerConfig) -> None:
        self.envs = list(envs)
        self.config = config
        self.all_tasks = [(i, task) for i, spec in enumerate(self.envs) for task in spec.train_tasks]
        if not self.all_tasks:
            raise ValueError("no training tasks: every env's train split is empty or went to validation")

    def epoch_order(self, epoch: int) -> list[tuple[int, str]]:
        """``(env_index, task_id)`` of epoch ``epoch``: one permutation of all tasks, or envs interleaved (uniform)."""
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

    def draw(self, step: int, epoch: int, cursor: int) -> tuple[list[Group], tuple[int, int]]:
        """The ``prompts_per_batch`` groups of ``step`` from position ``(epoch, cursor)``, and the next position."""
        order = self.epoch_order(epoch)
        groups = []
        for g in range(self.config.rollout.prompts_per_batch):
            if cursor >= len(order):
                epoch, cursor = epoch + 1, 0
                order = self.epoch_order(epoch)
            env_index, task = order[cursor]
            cursor += 1
            seed = 0 if self.config.rollout.env_seed == "fixed" else derive_seed(self.config.run.seed, step, 4, g)
            groups.append((g, env_index, task, seed % (2**31)))
        return groups, (epoch, cursor)

    def requests(self, step: int, group: Group) -> list[EpisodeRequest]:
        """The ``G`` episode requests of a group (same task, reset seed and user behaviour: under a mixture
        one condition is drawn per group from the run seed, the step and the group index)."""
        g, env_index, task, seed = group
        spec = self.envs[env_index]
        group_id = f"{step}:{g}:{spec.name}:{task}:{seed}"
        make_env = spec.drawn(spec.factory, np.random.default_rng([self.config.run.seed, BEHAVIOR_STREAM, step, g]))
        return [
            EpisodeRequest(make_env, spec.name, task, seed, group_id, f"{step}:{g}:{m}")
            for m in range(self.config.rollout.group_size)
        ]
