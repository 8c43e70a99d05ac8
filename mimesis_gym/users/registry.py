"""The user alias registry: ``user=`` / ``judge=`` resolution (users.md §5, DESIGN §2.3).

A user is named by an alias (``"scripted"``, and every alias registered with
:func:`register_user`) or given as a chat-model object. Resolution is cheap and happens at env
construction, so a mistyped alias fails at ``gym.make`` with the list of known aliases; chat
models create their clients and load weights lazily, at the first call.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.chat import ChatModel
from mimesis_gym.core.roles import RoleModels

__all__ = [
    "UserSpec",
    "list_users",
    "make_chat_model",
    "register_user",
    "resolve_role_models",
    "resolve_user",
]

UserKind = Literal["scripted", "human", "http", "hf", "vllm", "custom"]


class UserSpec(BaseModel):
    """What an alias stands for: a display label and the kind of backend behind it."""

    model_config = ConfigDict(frozen=True)

    alias: str
    label: str
    kind: UserKind
    thinking: bool = False
    description: str = ""


UserFactory = Callable[..., Any]
"""``factory(**overrides)`` returns a :class:`ChatModel` (or a :class:`UserSpec`)."""

_SCRIPTED = UserSpec(
    alias="scripted",
    label="Scripted",
    kind="scripted",
    description="each env's deterministic scripted user and judges",
)
_lock = threading.Lock()
_specs: dict[str, UserSpec] = {"scripted": _SCRIPTED}
_factories: dict[str, UserFactory] = {}


def register_user(
    alias: str,
    factory: UserFactory,
    *,
    label: str | None = None,
    kind: UserKind = "custom",
    thinking: bool = False,
    description: str = "",
    overwrite: bool = False,
) -> UserSpec:
    """Register ``alias`` (case-insensitive) for ``factory(**overrides) -> ChatModel``."""
    key = alias.lower()
    with _lock:
        if key in _specs and not overwrite:
            raise ValueError(f"user alias {alias!r} is already registered; pass overwrite=True to replace it")
        spec = UserSpec(alias=key, label=label or alias, kind=kind, thinking=thinking, description=description)
        _specs[key] = spec
        _factories[key] = factory
    return spec


def list_users() -> list[UserSpec]:
    """Every known alias, in registration order."""
    with _lock:
        return list(_specs.values())


def _is_chat_model(value: Any) -> bool:
    return not isinstance(value, (str, UserSpec)) and callable(getattr(value, "chat", None))


def resolve_user(spec: str | ChatModel | UserSpec) -> UserSpec:
    """The :class:`UserSpec` of an alias, a chat-model object or a spec.

    Raises ``ValueError`` for an unknown alias (the message lists the known ones) and
    ``TypeError`` for a value that is none of the three.
    """
    if isinstance(spec, UserSpec):
        return spec
    if isinstance(spec, str):
        found = _specs.get(spec.strip().lower())
        if found is None:
            known = ", ".join(s.alias for s in list_users())
            raise ValueError(f"unknown user alias {spec!r}; known: {known} (or pass a chat-model object)")
        return found
    if _is_chat_model(spec):
        name = getattr(spec, "name", None) or type(spec).__name__
        return UserSpec(alias=str(name), label=str(name), kind="custom", thinking=False)
    raise TypeError(f"user must be an alias string or a chat-model object with chat(); got {type(spec).__name__}")


def make_chat_model(spec: str | ChatModel | UserSpec, **overrides: Any) -> ChatModel | None:
    """The chat model for ``spec``; ``None`` for ``scripted`` (the env uses its scripted roles).

    A chat-model object is returned as is (``overrides`` must then be empty).
    """
    if _is_chat_model(spec):
        if overrides:
            raise ValueError("user_kwargs apply to aliases only, not to a chat-model object")
        return spec  # type: ignore[return-value]
    resolved = resolve_user(spec)  # type: ignore[arg-type]
    if resolved.kind == "scripted":
        return None
    factory = _factories[resolved.alias]
    model = factory(**overrides)
    if isinstance(model, UserSpec) or not callable(getattr(model, "chat", None)):
        raise TypeError(
            f"the factory of user alias {resolved.alias!r} returned {type(model).__name__}, not a chat model"
        )
    return model


def resolve_role_models(
    user: Any = "scripted",
    judge: Any = None,
    user_kwargs: Mapping[str, Any] | None = None,
) -> RoleModels:
    """The chat models behind an env's user and judge roles (DESIGN §2.3).

    ``judge=None`` means the user's model also judges (J-self); with a scripted or human user the
    judges are scripted. ``judge="scripted"`` forces scripted judges.
    """
    user_spec = resolve_user(user)
    user_model = make_chat_model(user, **dict(user_kwargs or {}))
    owned: list[ChatModel] = []
    if user_model is not None and user_model is not user:
        owned.append(user_model)
    if judge is None:
        is_human = user_spec.kind == "human" or bool(getattr(user_model, "is_human", False))
        judge_model = None if is_human else user_model
    else:
        judge_model = make_chat_model(judge)
        if judge_model is not None and judge_model is not judge:
            owned.append(judge_model)
    return RoleModels(user=user_model, judge=judge_model, owned=tuple(owned))
