"""User policies and the alias registry (users.md)."""

from mimesis_gym.users.registry import (
    UserSpec,
    list_users,
    make_chat_model,
    register_user,
    resolve_role_models,
    resolve_user,
)

__all__ = ["UserSpec", "list_users", "make_chat_model", "register_user", "resolve_role_models", "resolve_user"]
