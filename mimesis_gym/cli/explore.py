"""``mimesis-gym list``, ``play``, ``check`` and ``data``: look at the envs, play one, check them and
their upstream data (README.md, "Command line"; docs/data.md)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from mimesis_gym.cli.common import (
    conversation_env_id,
    conversation_env_ids,
    int_at_least,
    usage_error,
)
from mimesis_gym.core.redact import redact
from mimesis_gym.envs import ENV_TABLE, EnvEntry
from mimesis_gym.envs.recipe import EnvRecipe

__all__ = ["add_check", "add_data", "add_list", "add_play"]


def add_list(commands: Any) -> None:
    """The ``list`` sub-command."""
    listing = commands.add_parser("list", help="list envs (with task counts), users, agents or user behaviours")
    listing.add_argument(
        "what", nargs="?", choices=["envs", "users", "agents", "behaviors"], help="what to list (default: envs)"
    )
    listing.set_defaults(run=_cmd_list)


def add_play(commands: Any) -> None:
    """The ``play`` sub-command."""
    play = commands.add_parser("play", help="play the agent yourself against an env's user")
    play.add_argument("env", help="env id or short name, e.g. function")
    play.add_argument("--user", default="scripted", help="user alias (default: scripted)")
    play.add_argument("--task", help="task id (default: drawn from --split)")
    play.add_argument("--split", default="test", help="task split (default: test)")
    play.add_argument("--pack", default="original", help="task pack (default: original)")
    play.add_argument("--seed", type=int_at_least(0), default=None, help="reset seed")
    play.add_argument("--max-turns", type=int_at_least(1), default=16, help="turn cap (default: 16)")
    play.add_argument(
        "--as",
        dest="as_",
        choices=["agent", "user"],
        default="agent",
        help="play the agent (default) or the user (against --agent)",
    )
    play.add_argument("--agent", default="tiny", help="agent alias when playing the user (default: tiny)")
    play.add_argument("--agent-max-tokens", type=int_at_least(1), default=256, help="agent token budget per turn")
    play.set_defaults(run=_cmd_play)


def add_check(commands: Any) -> None:
    """The ``check`` sub-command."""
    check = commands.add_parser("check", help="run the env contract suite (non-zero exit on failure)")
    check.add_argument(
        "--envs", help="comma-separated env ids or short names; module:id imports module first (default: all)"
    )
    check.add_argument("--user", help="health-check this user alias: endpoint, one completion, one role call per env")
    check.add_argument("--agent", help="health-check this agent alias: one tool-call round trip")
    check.add_argument("--role-max-tokens", type=int_at_least(1), help="cap every role call's max_tokens (env kwarg)")
    check.set_defaults(run=_cmd_check)


def _cmd_list(args: argparse.Namespace) -> int:
    what = args.what or "envs"
    if what == "behaviors":
        from mimesis_gym.envs.behavior_table import applicability_markdown

        print(applicability_markdown())
        return 0
    if what == "agents":
        from mimesis_gym.agents.registry import (
            BUILTIN_AGENT_DESCRIPTIONS,
            KNOWN_AGENTS,
            RELEASED_AGENTS,
            plugin_agents,
        )

        print(f"{'alias':<28} {'label':<29} description")
        for alias in KNOWN_AGENTS:
            hub, label = RELEASED_AGENTS.get(alias, ("", ""))
            description = f"released agent {hub}" if hub else BUILTIN_AGENT_DESCRIPTIONS[alias]
            print(f"{alias:<28} {label:<29} {description}")
        for alias, description in plugin_agents().items():
            print(f"{alias:<28} {'(plug-in)':<29} {description}")
        return 0
    if what == "users":
        from mimesis_gym.users import list_users

        rows = [("alias", "backend", "label", "readiness", "description")]
        rows += [(row.alias, row.kind, row.label, row.readiness, row.description) for row in list_users()]
        widths = [max(len(row[column]) for row in rows) for column in range(4)]
        for row in rows:
            print(" ".join(f"{cell:<{width}}" for cell, width in zip(row, widths, strict=False)) + f" {row[4]}")
        return 0
    from mimesis_gym.evaluation.upstream_data import SOURCES

    upstream = any(os.environ.get(source.variable) for source in SOURCES.values())
    widths = (max(len(e.id) for e in ENV_TABLE), max(len(e.short) for e in ENV_TABLE))
    for entry in ENV_TABLE:
        _list_env(entry, widths, upstream)
    return 0


def _list_env(entry: EnvEntry, widths: tuple[int, int], upstream: bool) -> None:
    """``list``'s lines of one env: id, short name, then its action kinds and task counts (a
    conversation env) or its spaces (a view). With ``upstream`` (a data variable of
    :data:`~mimesis_gym.evaluation.upstream_data.SOURCES` is set), also the counts of
    ``pack="upstream"``, loaded as ``gym.make(id, pack="upstream")`` loads it (each env reads its own
    variables), or why it cannot be loaded."""
    env = gym.make(entry.id)
    unwrapped: Any = env.unwrapped
    head = f"{entry.id:<{widths[0]}} {entry.short:<{widths[1]}}"
    pad = " " * len(head)
    if entry.kind != "conversation":
        print(f"{head} {entry.kind}: actions {unwrapped.action_space}")
        print(f"{pad} observations {unwrapped.observation_space}")
        env.close()
        return
    print(f"{head} kinds: {', '.join(sorted(unwrapped.accepted_kinds))}")
    print(f"{pad} original pack: {_pack_counts(unwrapped.task_pack)}")
    if upstream:
        try:
            counts = _pack_counts(entry.env_class().task_pack_for({"pack": "upstream"}))
            print(f"{pad} upstream pack: {counts}")
        except (ValueError, OSError, ImportError) as error:
            print(f"{pad} upstream pack: unavailable ({error})")
    env.close()


def _pack_counts(pack: Any) -> str:
    """A task pack's split sizes as ``list`` prints them: ``train 400, test 100, demo 3``."""
    return ", ".join(f"{split} {n}" for split, n in pack.counts().items())


def _play_as_user(args: argparse.Namespace, env_id: str) -> int:
    """A person plays the user (``user="human"``) against ``--agent``; the judges stay scripted."""
    import asyncio

    from mimesis_gym.agents.base import is_privileged
    from mimesis_gym.agents.registry import make_agent

    agent = make_agent(args.agent, max_tokens=args.agent_max_tokens)
    env = _play_env(args, env_id, user="human")

    def episode() -> None:
        options = {"task_id": args.task} if args.task else None
        obs, info = env.reset(seed=args.seed, options=options)
        unwrapped: Any = env.unwrapped
        print(f"== {env_id} · task {info['task_id']} · you play the user against {args.agent} ==")
        conv = agent.start(unwrapped.system_prompt, unwrapped.tools, unwrapped.opening_messages)
        conv.env_id = env_id
        if is_privileged(agent):
            conv.env = unwrapped
        terminated = truncated = False
        turn = 0
        while not (terminated or truncated):
            decision = asyncio.run(agent.act(conv, seed=(args.seed or 0) * 1000 + turn))
            if decision.failure is not None:
                print(f"[agent failed: {decision.failure.kind}: {decision.failure.detail}]")
                break
            print(f"[agent] {decision.action}")
            obs, reward, terminated, truncated, info = env.step(decision.action)
            agent.observe(conv, decision, obs)
            print(f"[env]   {obs}\n        reward {reward}")
            if info["user_failure"] and "other" in info["user_failure"]:
                break  # the person quit
            turn += 1
        print(f"== episode score {info['episode_score']} after {info['turn']} turns ==")

    return _interruptible(env, episode)


def _interruptible(env: Any, episode: Callable[[], None]) -> int:
    """Play ``episode``; Ctrl-C ends it with exit 130 and no traceback; the env is closed either way."""
    try:
        episode()
    except KeyboardInterrupt:
        print("\n== interrupted ==")
        return 130
    finally:
        env.close()
    return 0


def _play_env(args: argparse.Namespace, env_id: str, user: str) -> Any:
    """The env of ``play`` (its :class:`~mimesis_gym.envs.recipe.EnvRecipe`, ``--max-turns`` as its turn
    limit), with ``--split``/``--task``/``--pack`` checked against its task pack first."""
    recipe = EnvRecipe(
        env_id=env_id, user=user, env_kwargs={"split": args.split, "pack": args.pack}, max_episode_steps=args.max_turns
    )
    env = recipe.build()
    pack = env.unwrapped.task_pack  # type: ignore[attr-defined]
    try:
        pack.pool(args.split)
        if args.task:
            pack.get(args.task)
    except ValueError as error:
        env.close()
        tasks = _pool_or_empty(pack, args.split)
        usage_error(f"{error} (tasks of {args.split!r}: {', '.join(t.id for t in tasks)})" if tasks else str(error))
    return env


def _pool_or_empty(pack: Any, split: str) -> tuple[Any, ...]:
    try:
        return tuple(pack.pool(split))[:10]
    except ValueError:
        return ()


def _cmd_play(args: argparse.Namespace) -> int:
    env_id = conversation_env_id(args.env)
    if args.as_ == "user":
        if args.user != "scripted":
            usage_error(
                f"--user {args.user} has no effect with --as user: you are the user (choose the agent with --agent)"
            )
        return _play_as_user(args, env_id)
    env = _play_env(args, env_id, user=args.user)

    def episode() -> None:
        options = {"task_id": args.task} if args.task else None
        obs, info = env.reset(seed=args.seed, options=options)
        unwrapped: Any = env.unwrapped
        print(f"== {env_id} · task {info['task_id']} · up to {args.max_turns} turns ==")
        print(unwrapped.system_prompt)
        print(f"\n[user] {obs}")
        print("Type actions such as `[action] …`, `[answer] …`, `[finish]`; /quit to stop.")
        terminated = truncated = False
        while not (terminated or truncated):
            try:
                line = input("> ")
            except EOFError:
                break
            if line.strip() == "/quit":
                break
            obs, reward, terminated, truncated, info = env.step(line)
            flag = "" if info["valid_action"] else "  (invalid action)"
            print(f"[user] {obs}\n       reward {reward}{flag}")
        print(f"== episode score {info['episode_score']} after {info['turn']} turns ==")

    return _interruptible(env, episode)


def _cmd_check(args: argparse.Namespace) -> int:
    from mimesis_gym.evaluation.contract import run_checks

    if args.user is not None or args.agent is not None:
        from mimesis_gym.evaluation.health import check_agent, check_user

        results = []
        if args.user is not None:
            results += check_user(args.user, conversation_env_ids(args.envs), role_max_tokens=args.role_max_tokens)
        if args.agent is not None:
            results += check_agent(args.agent)
    else:
        results = run_checks(conversation_env_ids(args.envs))
    for result in results:
        status = "ok  " if result.ok else "FAIL"
        print(f"{status} {result.env_id:<28} {result.check:<16} {redact(result.detail)}")
    failed = sum(not result.ok for result in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


# ---------------------------------------------------------------------------------------------
# mimesis-gym data check | pull: the upstream repositories (docs/data.md)


def _cmd_data_check(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mimesis_gym.evaluation.upstream_data import SOURCES, check_source, summarise

    chosen = {
        name: getattr(args, name.replace("-", "_")) or os.environ.get(source.variable)
        for name, source in SOURCES.items()
    }
    if not any(chosen.values()):
        flags = " / ".join(f"{source.flag} DIR" for source in SOURCES.values())
        names = ", ".join(f"${source.variable}" for source in SOURCES.values())
        usage_error(f"nothing to check: pass {flags} or set {names}")
    for name, directory in chosen.items():
        if directory and not Path(directory).expanduser().is_dir():
            usage_error(f"{SOURCES[name].flag} {directory} is not a directory")
    userrl = Path(chosen["userrl"]).expanduser() if chosen["userrl"] else None
    findings = []
    for name, directory in chosen.items():
        source = SOURCES[name]
        if not directory:
            print(f"{'skipped':<8} {name:<9} pass {source.flag} DIR or set ${source.variable}")
            continue
        for finding in check_source(name, Path(directory).expanduser(), userrl=userrl):
            print(finding.line())
            findings.append(finding)
    needed, optional = summarise(findings)
    if needed:
        print(f"{needed} needed item(s) missing or wrong (MISSING lines above)")
        return 1
    extra = f"; {optional} optional item(s) absent" if optional else ""
    print(f"everything the envs read is present{extra}")
    return 0


def _cmd_data_pull(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mimesis_gym.evaluation.upstream_data import SOURCES, pull

    source = SOURCES[args.source]
    destination = Path(args.to).expanduser()
    try:
        root = pull(args.source, destination, url=args.url)
    except ValueError as error:
        usage_error(str(error))
    print(f"cloned {args.url or source.url} into {destination}")
    print(f"export {source.variable}={root.resolve()}")
    print(f"check it: mimesis-gym data check {source.flag} {destination}")
    return 0


def add_data(commands: Any) -> None:
    """The ``data`` sub-command and its actions ``check`` and ``pull``."""
    from mimesis_gym.evaluation.upstream_data import SOURCES

    data = commands.add_parser("data", help="check or clone the upstream data (UserRL, tau-bench, ABCD)")
    actions = data.add_subparsers(dest="data_command", required=True)
    check = actions.add_parser("check", help="verify every upstream file the envs read (exit 1 if any is missing)")
    for name, source in SOURCES.items():
        check.add_argument(
            source.flag,
            dest=name.replace("-", "_"),
            metavar="DIR",
            help=f"{name} checkout (default ${source.variable})",
        )
    check.set_defaults(run=_cmd_data_check)
    pull = actions.add_parser("pull", help="clone a public upstream repository with git")
    pull.add_argument("source", choices=list(SOURCES), help="which repository")
    pull.add_argument("--to", required=True, metavar="DIR", help="new (or empty) directory for the clone")
    pull.add_argument("--url", help="clone from this URL instead of the public repository (a mirror)")
    pull.set_defaults(run=_cmd_data_pull)
