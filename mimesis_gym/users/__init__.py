"""User policies and the alias registry (docs/users.md).

Importing this package installs :func:`resolve_role_models` as the core's role resolver, the seam
through which every ``ConversationEnv`` turns ``user=``/``judge=`` into chat models.
"""

from mimesis_gym.core.roles import install_role_resolver
from mimesis_gym.users.registry import (
    UserSpec,
    list_users,
    make_chat_model,
    register_user,
    resolve_role_models,
    resolve_user,
)

__all__ = ["UserSpec", "list_users", "make_chat_model", "register_user", "resolve_role_models", "resolve_user"]

install_role_resolver(resolve_role_models)
