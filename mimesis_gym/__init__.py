"""mimesis_gym: Gymnasium environments in which an LLM agent converses with a simulated user.

Importing the package registers the ``mimesis/`` env ids (idempotent)::

    import gymnasium as gym
    import mimesis_gym

    env = gym.make("mimesis/FunctionGym-v0")

``gym.make("mimesis_gym:mimesis/FunctionGym-v0")`` works without the import. Importing the package
also makes every ``mimesis_gym`` log record pass through :func:`mimesis_gym.core.redact.redact`.
"""

import mimesis_gym.users  # noqa: F401  (installs the alias registry as the envs' role resolver)
from mimesis_gym.core import ChatModel, ChatReply, ConversationEnv, coerce_json, split_thought
from mimesis_gym.core.redact import install_log_redaction
from mimesis_gym.envs import ENV_IDS, EnvEntry, register_env, register_envs

__version__ = "0.1.0"

register_envs()
install_log_redaction()  # every mimesis_gym log record is redacted of API keys before a handler sees it

__all__ = [
    "ENV_IDS",
    "ChatModel",
    "ChatReply",
    "ConversationEnv",
    "EnvEntry",
    "__version__",
    "coerce_json",
    "register_env",
    "register_envs",
    "split_thought",
]
