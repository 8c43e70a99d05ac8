"""``mimesis-gym serve-user <released agent>``: the vLLM command that serves a released agent.

See docs/users.md, "Plugging in MIMESIS". A released agent (``RELEASED_AGENTS``) is served from its
hub checkpoint under its alias, on the port of ``$MIMESIS_AGENT_<KEY>_BASE_URL`` (default 8100, where
the agent client looks), with vLLM's tool calling on and the ``hermes`` parser: the agents answer
with ``<tool_call>`` blocks, which the server turns into the ``tool_calls`` the agent client reads.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from mimesis_gym.agents.registry import RELEASED_AGENTS
from mimesis_gym.users.builtin import alias_env_key
from mimesis_gym.users.registry import ServeSpec
from mimesis_gym.users.serve import ServeCommand, ServeOptions, serve_spec_command

__all__ = ["AGENT_PORT", "TOOL_CALL_ARGS", "agent_base_url_variable", "build_agent_serve_command"]

AGENT_PORT = 8100
"""The port of the released agents' default base URL."""
TOOL_CALL_ARGS = ("--enable-auto-tool-choice", "--tool-call-parser", "hermes")
"""What vLLM needs to return the agents' ``<tool_call>`` blocks as OpenAI tool calls."""


def agent_base_url_variable(alias: str) -> str:
    """``MIMESIS_AGENT_<KEY>_BASE_URL``, where the agent client reads a released agent's server."""
    return f"MIMESIS_AGENT_{alias_env_key(alias)}_BASE_URL"


def build_agent_serve_command(alias: str, **options: Any) -> ServeCommand:
    """The vLLM command for released agent ``alias`` (``ValueError`` for any other name).

    ``options`` are the fields of :class:`~mimesis_gym.users.serve.ServeOptions`.
    """
    key = alias.strip().lower()
    if key not in RELEASED_AGENTS:
        raise ValueError(f"{alias!r} is not a released agent; known: {', '.join(RELEASED_AGENTS)}")
    variable = agent_base_url_variable(key)
    configured = urlsplit(os.environ.get(variable, "")).port
    hub_id = RELEASED_AGENTS[key][0]
    spec = ServeSpec(model=hub_id, served_model_name=key, port=configured or AGENT_PORT, extra_args=TOOL_CALL_ARGS)
    return serve_spec_command(spec, hub_id, key, variable, ServeOptions(**options))
