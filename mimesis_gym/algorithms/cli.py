"""``mimesis-gym train --config FILE [--set key=value ...]`` (docs/algorithms.md, "Starting a run").

The file (JSON, YAML or TOML) holds the job and the trainer configuration side by side::

    envs: ["mimesis_testing/KeywordEcho-v0"]     # ids, or {"id": ..., "kwargs": {...}}
                                                 # (kwargs.user_behavior: the env's hard users)
    policy: tiny                                 # tiny | hf:<path> | <path> | factory:<module>:<function>
    user: scripted                               # a users-registry alias
    algorithm: grpo                              # grpo | grpo-outcome | foldgrpo | infopo | csd | sft | a
                                                 # plug-in learner's name | module:Class (optional)
    preset: cpu-tiny                             # optional: the base the groups below override
    run: {total_steps: 30, output_dir: runs/keyword}

``--set`` assigns job keys (``algorithm=csd``) or dotted config keys (``run.total_steps=2``).
``--dry-run`` resolves and checks the job, prints the plan and the per-GPU memory estimate
(:mod:`~mimesis_gym.algorithms.memory`; ``--accelerate-config FILE`` for the process layout) and
exits without loading weights or training.

User errors — a missing or unreadable file, bad JSON/YAML/TOML, an invalid config value, an unknown
algorithm, an env id gymnasium does not know, a ``user_behavior`` an env does not play (or a bad
condition or weight), a policy factory that cannot be imported, a policy path
that does not exist or a hub id not in the Hugging Face cache (a dry run plans such a hub id and says
it must be downloaded), an unknown user, judge or coach alias — print one line on stderr and exit with
status 2 before any model is loaded (:func:`check_job`), in a dry run too.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.algorithms.config import TrainerConfig, parse_assignment, read_config_file
from mimesis_gym.core.errors import validation_problems

__all__ = ["JOB_KEYS", "build_job", "check_env_ids", "check_job", "dry_run_plan", "one_line", "train_main"]

JOB_KEYS = ("envs", "policy", "user", "judge", "algorithm", "eval_envs")


def _envs(items: Sequence[Any] | None) -> list[Any] | None:
    if items is None:
        return None
    envs: list[Any] = []
    for item in items:
        if isinstance(item, str):
            envs.append(item)
        elif isinstance(item, dict) and "id" in item:
            envs.append((item["id"], dict(item.get("kwargs") or {})))
        else:
            raise ValueError(f"an env is an id or {{'id': ..., 'kwargs': {{...}}}}; got {item!r}")
    return envs


def _policy_factory(spec: Any) -> Any:
    """The factory of a ``factory:<module>:<function>`` policy (imported, not called), else ``None``."""
    if not (isinstance(spec, str) and spec.startswith("factory:")):
        return None
    from mimesis_gym.core.imports import import_object

    try:
        return import_object(spec.removeprefix("factory:"), setting="policy factory")
    except (ImportError, AttributeError) as error:
        raise ValueError(f"policy {spec!r}: {error}") from None


def check_env_ids(envs: Sequence[Any]) -> None:
    """Raise ``ValueError`` for an env id gymnasium does not know (``module:id`` imports the module first).

    The package's envs, the learners' test env (``mimesis_testing/KeywordEcho-v0``) and the envs of
    installed plug-in packages are registered.
    """
    import gymnasium as gym

    import mimesis_gym.algorithms.testing  # noqa: F401  (registers the package's env ids and KeywordEcho)
    from mimesis_gym.envs import load_env_plugins

    load_env_plugins()  # the ids of installed plug-in packages (entry-point group mimesis_gym.envs)
    for item in envs:
        env_id = item if isinstance(item, str) else item[0]
        module, _, name = str(env_id).rpartition(":")
        try:
            if module:
                importlib.import_module(module)
            gym.spec(name)
        except ImportError as error:
            raise ValueError(f"env {env_id!r}: {error}") from None
        except gym.error.Error as error:
            raise ValueError(f"unknown env id {env_id!r}: {error}") from None


def check_job(job: dict[str, Any], config: TrainerConfig, *, planning: bool = False) -> list[str]:
    """Everything about a job that can be checked before a model is loaded: algorithm, envs, policy factory,
    and every model the job names (:func:`~mimesis_gym.algorithms.model_specs.check_job_models`: the policy
    path or cached hub id, the user, judge and coach aliases). Returns the notes a dry run (``planning``) prints."""
    from mimesis_gym.algorithms.learners import select_learners
    from mimesis_gym.algorithms.model_specs import check_job_models
    from mimesis_gym.algorithms.tasks import check_env_behaviors

    algorithm = job.get("algorithm")
    if algorithm is not None and not isinstance(algorithm, str):
        raise ValueError(f"algorithm must be a name such as 'grpo' or 'csd', or 'module:Class'; got {algorithm!r}")
    resolved, _ = select_learners(config, algorithm)
    envs = [*(_envs(job["envs"]) or []), *(_envs(job.get("eval_envs")) or [])]
    check_env_ids(envs)
    check_env_behaviors(envs)
    _policy_factory(job.get("policy"))
    policy, user, judge = job.get("policy", "tiny"), job.get("user", "scripted"), job.get("judge")
    return check_job_models(policy, user, judge, resolved, planning=planning)


def one_line(error: BaseException) -> str:
    """An error message on one line (a pydantic validation error as ``field: message`` pairs)."""
    from pydantic import ValidationError

    if isinstance(error, ValidationError):
        return validation_problems(error)
    return " ".join(str(error).split())


def build_job(path: str | Path, assignments: Sequence[str] = ()) -> tuple[dict[str, Any], TrainerConfig]:
    """The job keys and the trainer config of a config file plus ``--set`` assignments."""
    data = read_config_file(path)
    job = {key: data.pop(key) for key in JOB_KEYS if key in data}
    config_overrides = []
    for assignment in assignments:
        key, value = parse_assignment(assignment)
        if key in JOB_KEYS or key == "preset":
            (job if key != "preset" else data)[key] = value
        else:
            config_overrides.append(assignment)
    config = TrainerConfig.load(data).with_overrides(config_overrides)
    if not job.get("envs"):
        raise ValueError(f"{path}: name the envs to train on ('envs': [...])")
    return job, config


def env_turn_limit(env_id: str, kwargs: dict[str, Any]) -> tuple[int, str] | None:
    """The env's own cap on an episode's turns and what sets it (its ``max_episode_steps``, or its turn
    budget: ``ConversationEnv.episode_turn_limit``), the smaller if both; ``None`` when neither caps it or
    the env cannot tell without data that is missing here. The id is one ``check_env_ids`` accepted."""
    import gymnasium as gym

    from mimesis_gym.envs.recipe import env_creator

    spec = gym.spec(str(env_id).rpartition(":")[2])
    limits: list[tuple[int, str]] = []
    steps = kwargs.get("max_episode_steps", spec.max_episode_steps)
    if steps:
        limits.append((int(steps), "its max_episode_steps"))
    creator = env_creator(env_id)
    hook = getattr(creator, "episode_turn_limit", None)
    try:
        own = hook(kwargs) if hook is not None else None
    except (OSError, ValueError):
        own = None  # e.g. an upstream pack whose data are not on this machine: the run itself will say
    if own:
        limits.append((own, "its turn budget"))
    return min(limits, default=None)


def turns_plan(envs: Sequence[Any], max_turns: int) -> str:
    """The plan's turn count: what one training episode lasts at most, ``rollout.max_turns`` or less
    where every env ends its episodes sooner, naming the envs that do (ABCDBehavior: 8 customer turns)."""
    capped: list[tuple[str, int, str]] = []
    for item in envs:
        env_id, kwargs = (item, {}) if isinstance(item, str) else (item[0], dict(item[1]))
        limit = env_turn_limit(env_id, kwargs)
        if limit is not None and limit[0] < max_turns:
            capped.append((env_id, *limit))
    if not capped:
        return f"{max_turns} turns"
    most = max_turns if len(capped) < len(envs) else max(turns for _, turns, _ in capped)
    notes = "; ".join(f"{env_id} ends episodes after {turns} turns, {why}" for env_id, turns, why in capped)
    return f"{most} turns ({notes}; rollout.max_turns {max_turns})"


def behaviors_plan(envs: Sequence[Any]) -> str:
    """The plan's line of user behaviours: each mixture (``control 50%, B3 12.5%, …``) and the envs that
    play it, the envs that set none playing control; empty when no env sets one.

    See docs/algorithms.md, "Training against hard users"."""
    from mimesis_gym.algorithms.tasks import check_env_behaviors

    mixes = check_env_behaviors(envs)
    if not any(mixes):
        return ""
    played: dict[str, list[str]] = {}
    for item, mix in zip(envs, mixes, strict=True):
        env_id = item if isinstance(item, str) else item[0]
        shares = zip(mix.conditions, mix.probabilities, strict=True) if mix else [("control", 1.0)]
        played.setdefault(", ".join(f"{name} {100 * share:.3g}%" for name, share in shares), []).append(env_id)
    groups = "; ".join(f"{mixture} on {', '.join(ids)}" for mixture, ids in played.items())
    return f"user behaviours (one condition drawn per group): {groups}"


def dry_run_plan(job: dict[str, Any], config: TrainerConfig, layout: Any = None) -> list[str]:
    """The lines ``--dry-run`` prints: the job, the resolved settings and the per-GPU memory estimate."""
    from mimesis_gym.algorithms.learners import select_learners
    from mimesis_gym.algorithms.memory import Layout, compute_dtype, estimate_memory, model_shape

    resolved, learners = select_learners(config, job.get("algorithm"))
    rollout, update, csd = resolved.rollout, resolved.update, resolved.csd
    envs = [item if isinstance(item, str) else item[0] for item in _envs(job["envs"]) or []]
    lines = [
        f"envs: {', '.join(envs)}",
        f"policy: {job.get('policy', 'tiny')}    user: {job.get('user', 'scripted')}",
        f"algorithm: {job.get('algorithm') or 'from the config'} (estimator {resolved.advantage.estimator}, "
        f"learners: {', '.join(learner.name for learner in learners) or 'none'})",
        f"rollouts: G {rollout.group_size} x {rollout.prompts_per_batch} prompts, "
        f"{turns_plan(_envs(job['envs']) or [], rollout.max_turns)}, "
        f"prompt {rollout.max_prompt_tokens:,} / response {rollout.max_response_tokens:,} tokens, "
        f"engine {rollout.engine}",
        f"updates: mini-batch {update.mini_batch_prompts} prompts, micro-batch {update.micro_batch_tokens:,} tokens, "
        f"lr {resolved.optim.lr:g}, clip {resolved.loss.clip_low}/{resolved.loss.clip_high}, "
        f"dual clip {resolved.loss.dual_clip}",
        f"length: {resolved.run.total_epochs} epochs" if resolved.run.total_epochs else "",
        f"length: {resolved.run.total_steps} steps" if not resolved.run.total_epochs else "",
        f"precision on GPUs: parameters {resolved.model.resolved_dtype(cuda=True)} "
        f"(model.dtype={resolved.model.dtype}), "
        f"compute {compute_dtype(resolved)} (run.dtype={resolved.run.dtype})",
    ]
    if csd.enabled:
        lines.append(f"csd: alpha {csd.alpha}, beta {csd.beta}, coach {csd.coach.style}, pairing {csd.pairing}")
    lines.append(behaviors_plan(_envs(job["envs"]) or []))
    lines = [line for line in lines if line]
    policy = job.get("policy", "tiny")
    if isinstance(policy, str) and policy.startswith("factory:"):
        return [*lines, "memory per GPU: unknown (a factory policy is only known once it is built)"]
    try:
        shape = model_shape(policy)
    except ValueError as error:
        return [*lines, f"memory per GPU: unknown ({error})"]
    lines.append(f"model: {shape.parameters:,} parameters, {shape.layers} layers, hidden {shape.hidden:,}")
    return [*lines, *estimate_memory(resolved, shape, layout or Layout()).lines()]


def train_main(argv: list[str]) -> int:
    """Entry point of ``mimesis-gym train``; returns the process exit status."""
    parser = argparse.ArgumentParser(prog="mimesis-gym train", description="Train an agent (docs/algorithms.md).")
    parser.add_argument("--config", required=True, help="job and trainer config: .json, .yaml/.yml or .toml")
    parser.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="override a job key or a dotted config key"
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="check the job, print the plan and per-GPU memory, train nothing"
    )
    parser.add_argument(
        "--accelerate-config", metavar="FILE", help="with --dry-run: the accelerate config the run will launch with"
    )
    args = parser.parse_args(argv)
    try:
        if args.accelerate_config and not args.dry_run:
            raise ValueError("--accelerate-config is read by --dry-run only (pass it to `accelerate launch`)")
        job, config = build_job(args.config, args.set)
        notes = check_job(job, config, planning=args.dry_run)
        if args.dry_run:
            from mimesis_gym.algorithms.memory import read_layout

            layout = read_layout(args.accelerate_config) if args.accelerate_config else None
            print("\n".join([*dry_run_plan(job, config, layout), *notes]))
            return 0
    except (OSError, ValueError) as error:
        print(f"mimesis-gym train: {one_line(error)}", file=sys.stderr)
        return 2
    from mimesis_gym.algorithms.trainer import train

    policy = job.get("policy", "tiny")
    factory = _policy_factory(policy)
    result = train(
        _envs(job["envs"]) or [],
        factory() if factory is not None else policy,
        job.get("user", "scripted"),
        job.get("algorithm"),
        judge=job.get("judge"),
        config=config,
        eval_env_ids=_envs(job.get("eval_envs")),
    )
    last = result.history[-1] if result.history else {}
    summary = {
        "output_dir": str(result.output_dir),
        "last_checkpoint": str(result.last_checkpoint) if result.last_checkpoint else None,
        "best_checkpoint": str(result.best_checkpoint) if result.best_checkpoint else None,
        "steps": last.get("step"),
        "reward/mean": last.get("reward/mean"),
        "score/mean": last.get("score/mean"),
    }
    from accelerate import PartialState

    if PartialState().is_main_process:
        print(json.dumps(summary, indent=2))
    return 0
