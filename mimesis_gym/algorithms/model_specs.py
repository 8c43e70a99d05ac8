"""The models a training job names, checked before any of them is loaded (docs/algorithms.md, "Starting a run").

A job names up to four models: the policy (``tiny``, ``hf:<path>``, a path, a ``(model, tokenizer)``
pair or a factory), the user and the judge (users-registry aliases) and, with CSD, the coach
(``csd.coach.model``, an alias). The KL reference and the CSD teacher are the policy itself, so they
name no model of their own. Nothing is downloaded at run time: a model given as a path must exist,
and one given as a hub id must already be in the Hugging Face cache — the rule every ``hf:`` spec
follows (:func:`~mimesis_gym.users.registry.check_local_model_path`). A user, judge or coach alias
is resolved without building its model (:func:`~mimesis_gym.users.registry.resolve_user`: an unknown
alias or an ``hf:`` path that is not there fails). Each check costs a few file-system calls and no
network.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.core.errors import ConfigurationError

__all__ = ["check_job_models", "check_policy_spec"]


def check_policy_spec(policy: Any, *, planning: bool = False) -> str | None:
    """``ConfigurationError`` unless ``policy`` can be loaded on this machine without the network.

    ``tiny``, a ``factory:`` spec and a ``(model, tokenizer)`` pair are not checked here. With
    ``planning`` (``train --dry-run``), an uncached hub id passes (a plan needs no weights; the memory
    estimate reads its shape from the cache or from
    :data:`~mimesis_gym.algorithms.memory.KNOWN_ARCHITECTURES`, or says it cannot), and the returned
    note says that training here needs it downloaded first; otherwise the result is ``None``. A local
    path that does not exist fails in both modes.
    """
    if not isinstance(policy, (str, Path)) or policy == "tiny" or str(policy).startswith("factory:"):
        return None
    from mimesis_gym.users.registry import check_local_model_path, is_hub_id

    spec = str(policy)
    path = spec[3:] if spec.startswith("hf:") else spec
    try:
        check_local_model_path(path, spec)
    except ConfigurationError as error:
        if planning and is_hub_id(path):
            return (
                f"policy weights: {path!r} is not in this machine's Hugging Face cache; training here needs it "
                f"downloaded first (`huggingface-cli download {path}`)"
            )
        raise ConfigurationError(f"policy: {error}") from None
    return None


def check_job_models(policy: Any, user: Any, judge: Any, config: TrainerConfig, *, planning: bool = False) -> list[str]:
    """Check every model a job names (module docstring); ``ConfigurationError`` naming the first bad one.

    ``config`` is the resolved config (``csd.enabled`` as the algorithm sets it). Returns the notes a
    dry run prints (see :func:`check_policy_spec`).
    """
    from mimesis_gym.users.registry import resolve_user

    note = check_policy_spec(policy, planning=planning)
    coach = config.csd.coach
    aliases = {"user": user, "judge": judge}
    if config.csd.enabled and coach.kind == "chat":
        aliases["csd.coach.model"] = coach.model
    for role, alias in aliases.items():
        if isinstance(alias, str):
            try:
                resolve_user(alias)
            except ValueError as error:  # ConfigurationError included
                raise ConfigurationError(f"{role}: {error}") from None
    return [note] if note else []
