"""``mimesis-gym serve-user`` and ``serve-env``: serve a user model with vLLM, an env over OpenEnv
(docs/users.md, docs/integrations.md)."""

from __future__ import annotations

import argparse
import os
from typing import Any

import gymnasium as gym

from mimesis_gym.cli.common import (
    conversation_env_id,
    float_in,
    int_at_least,
    parse_assignments,
    port_number,
    usage_error,
)
from mimesis_gym.core.errors import validation_problems

__all__ = ["add_serve_env", "add_serve_user"]


def add_serve_user(commands: Any) -> None:
    """The ``serve-user`` sub-command (its arguments after ``--`` go to vLLM: :func:`~mimesis_gym.cli.main`)."""
    serve = commands.add_parser(
        "serve-user",
        help="serve a user alias or a released agent with vLLM's OpenAI server (arguments after -- go to vLLM)",
    )
    serve.add_argument(
        "alias", help="e.g. mimesis-9b, ditto-8b, tiny, vllm:<hub-id>, hf:<path>, or a released agent (csd-agent, …)"
    )
    serve.add_argument("--port", type=int_at_least(1), help="default: the port of the alias's base URL, else 8000")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--python", help="interpreter holding vLLM (default: $MIMESIS_VLLM_PYTHON, else this one)")
    serve.add_argument("--tp", type=int_at_least(1), help="tensor parallel size")
    serve.add_argument("--dp", type=int_at_least(1), help="data parallel size")
    serve.add_argument("--gpu-memory-utilization", type=float_in(0.0, 1.0, open_low=True))
    serve.add_argument("--max-model-len", type=int_at_least(1))
    serve.add_argument("--api-key-env", help="variable whose value vLLM requires as API key (non-loopback hosts)")
    serve.add_argument("--print", action="store_true", help="print the command and exit")
    serve.add_argument("--wait", type=float_in(0.0, open_low=True), default=900.0, help="health wait in seconds")
    serve.set_defaults(run=_cmd_serve_user)


def add_serve_env(commands: Any) -> None:
    """The ``serve-env`` sub-command."""
    serve_env = commands.add_parser(
        "serve-env", help="serve an env over OpenEnv's HTTP/WebSocket protocol (docs/integrations.md, OpenEnv)"
    )
    serve_env.add_argument("env", metavar="ENV_ID", help="env id (or 'module:id', or a short name, e.g. function)")
    serve_env.add_argument("--user", default="scripted", help="user alias (default: scripted)")
    serve_env.add_argument("--env-arg", action="append", help="KEY=VALUE passed to gym.make (repeatable)")
    serve_env.add_argument("--max-episode-steps", type=int_at_least(1), help="override the registered turn limit")
    serve_env.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_env.add_argument("--port", type=port_number, default=8000, help="port (default 8000; 0: any free port)")
    serve_env.add_argument(
        "--allow-remote", action="store_true", help="allow a non-loopback --host (requires --token-env)"
    )
    serve_env.add_argument(
        "--token-env", metavar="VAR", help="environment variable holding the bearer token every client must send"
    )
    serve_env.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="also serve web pages from ORIGIN (scheme://host[:port]; repeatable or comma-separated). By default a "
        "request with an Origin header (a browser's) is refused unless its host is localhost, 127.0.0.1, [::1] or "
        "--host; clients without one (OpenEnv's Python client) are not affected",
    )
    serve_env.add_argument("--max-sessions", type=int_at_least(1), default=64, help="concurrent sessions (default 64)")
    serve_env.add_argument(
        "--idle-timeout",
        type=float_in(0.0),
        default=600.0,
        help="close a session idle this many seconds (default 600; 0: never)",
    )
    serve_env.set_defaults(run=_cmd_serve_env)


def _cmd_serve_user(args: argparse.Namespace) -> int:
    from mimesis_gym.agents.registry import RELEASED_AGENTS
    from mimesis_gym.agents.serve import build_agent_serve_command
    from mimesis_gym.users.serve import build_serve_command, serve_user_main

    released = args.alias.strip().lower() in RELEASED_AGENTS
    try:
        command = (build_agent_serve_command if released else build_serve_command)(
            args.alias,
            port=args.port,
            host=args.host,
            python=args.python,
            tensor_parallel=args.tp,
            data_parallel=args.dp,
            gpu_memory_utilization=args.gpu_memory_utilization,
            max_model_len=args.max_model_len,
            api_key_env=args.api_key_env,
            passthrough=args.passthrough,
        )
    except ValueError as error:
        usage_error(str(error))
    return serve_user_main(command, print_only=args.print, wait_s=args.wait)


def _cmd_serve_env(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        from mimesis_gym.integrations.episode import EnvRecipe
        from mimesis_gym.integrations.openenv_server import serve
    except ImportError as error:
        usage_error(f"serve-env needs OpenEnv ({error}); install the extra: pip install 'mimesis-gym[openenv]'")
    env_id = args.env if ":" in args.env or args.env in gym.registry else conversation_env_id(args.env)
    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            usage_error(f"--token-env {args.token_env}: that environment variable is not set or empty")
    env_kwargs = parse_assignments(args.env_arg, "--env-arg", scoped=False) if args.env_arg else {}
    try:
        recipe = EnvRecipe(
            env_id=env_id, user=args.user, env_kwargs=env_kwargs, max_episode_steps=args.max_episode_steps
        )
        serve(
            recipe,
            host=args.host,
            port=args.port,
            allow_remote=args.allow_remote,
            token=token,
            max_sessions=args.max_sessions,
            idle_timeout_s=args.idle_timeout or None,
            allowed_origins=args.allow_origin or (),
        )
    except ValidationError as error:
        usage_error(validation_problems(error))
    except TypeError as error:  # a keyword value of a type the env cannot take
        usage_error(f"{env_id}: {error}")
    return 0
