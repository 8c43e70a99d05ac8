"""The ``mimesis-gym`` command (README.md, "Command line"): ``list``, ``play``, ``eval``, ``report``, ``view``, …

Exit codes: 0 success; 1 a check failed; 2 a usage or configuration error (one line on stderr, no
traceback: a bad flag or value, an unknown alias, an unusable endpoint found by the pre-flight, a
run directory in use); 3 a run finished with agent or env errors; 4 a run in which some (agent,
user, env) cell is nothing but user failures; 74 a run stopped by a full disk (one line on stderr;
``run.json`` marked interrupted where it could still be written: free space and ``--resume``);
130/143 interrupted by SIGINT/SIGTERM (``view``, which runs until stopped, exits 0 on either).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import gymnasium as gym

import mimesis_gym
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError, validation_problems
from mimesis_gym.core.redact import redact
from mimesis_gym.envs import ENV_IDS, ENV_TABLE, EnvEntry

__all__ = ["EXIT_ALL_USER_FAILURES", "EXIT_DISK_FULL", "EXIT_RUN_ERRORS", "EXIT_USAGE", "UsageError", "main"]

EXIT_USAGE = 2
EXIT_RUN_ERRORS = 3
EXIT_ALL_USER_FAILURES = 4
EXIT_DISK_FULL = 74
"""A run stopped by a full disk (``EX_IOERR`` of sysexits.h): resumable, like an interrupted run."""


class UsageError(ConfigurationError):
    """The command line asks for something that cannot be done; printed as one line, exit 2."""


class _Parser(argparse.ArgumentParser):
    """``argparse`` with one-line errors (exit 2), for every sub-command too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """``argparse``'s, but an unknown flag is reported by the sub-command it was given to, whose
        ``--help`` lists the right flags."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(parsed, "command", None)
            subcommands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
            owner = subcommands[0].choices.get(command, self) if subcommands and command else self
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    return parse


def _float_in(low: float, high: float | None = None, *, open_low: bool = False) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        too_low = value <= low if open_low else value < low
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            bound = f"> {low:g}" if open_low else f">= {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be a number {bound}{f' and <= {high:g}' if high is not None else ''}, got {text}"
            )
        return value

    return parse


def _port(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535."""
    port = _int_at_least(0)(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {port}")
    return port


def _usage(message: str) -> NoReturn:
    raise UsageError(message)


def _stderr_line(line: str) -> None:
    print(line, file=sys.stderr)


def _env_id(name: str) -> str:
    """A conversation env's id from an id or a short name (``function``); :class:`UsageError` naming the known ones."""
    try:
        entry = ENV_TABLE.find(name, listed_kind="conversation")
    except ValueError as error:
        _usage(str(error))
    if entry.kind != "conversation":
        _usage(f"{entry.id} is a {entry.kind} env, not a conversation env")
    return entry.id


def _env_ids(spec: str | None) -> list[str]:
    if spec is None or spec == "all":
        return list(ENV_IDS)
    return [_env_id(part.strip()) for part in spec.split(",") if part.strip()]


def _cmd_list(args: argparse.Namespace) -> int:
    what = args.what or "envs"
    if what == "behaviors":
        from mimesis_gym.envs.behavior_table import applicability_markdown

        print(applicability_markdown())
        return 0
    if what == "agents":
        from mimesis_gym.agents.registry import BUILTIN_AGENT_DESCRIPTIONS, KNOWN_AGENTS, RELEASED_AGENTS

        print(f"{'alias':<28} {'label':<29} description")
        for alias in KNOWN_AGENTS:
            hub, label = RELEASED_AGENTS.get(alias, ("", ""))
            description = f"released agent {hub}" if hub else BUILTIN_AGENT_DESCRIPTIONS[alias]
            print(f"{alias:<28} {label:<29} {description}")
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


def _play_env(args: argparse.Namespace, env_id: str, **kwargs: Any) -> Any:
    """The env of ``play``, with ``--split``/``--task``/``--pack`` checked against its task pack first."""
    env = gym.make(env_id, max_episode_steps=args.max_turns, split=args.split, pack=args.pack, **kwargs)
    pack = env.unwrapped.task_pack  # type: ignore[attr-defined]
    try:
        pack.pool(args.split)
        if args.task:
            pack.get(args.task)
    except ValueError as error:
        env.close()
        tasks = _pool_or_empty(pack, args.split)
        _usage(f"{error} (tasks of {args.split!r}: {', '.join(t.id for t in tasks)})" if tasks else str(error))
    return env


def _pool_or_empty(pack: Any, split: str) -> tuple[Any, ...]:
    try:
        return tuple(pack.pool(split))[:10]
    except ValueError:
        return ()


def _cmd_play(args: argparse.Namespace) -> int:
    env_id = _env_id(args.env)
    if args.as_ == "user":
        if args.user != "scripted":
            _usage(f"--user {args.user} has no effect with --as user: you are the user (choose the agent with --agent)")
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
            results += check_user(args.user, _env_ids(args.envs), role_max_tokens=args.role_max_tokens)
        if args.agent is not None:
            results += check_agent(args.agent)
    else:
        results = run_checks(_env_ids(args.envs))
    for result in results:
        status = "ok  " if result.ok else "FAIL"
        print(f"{status} {result.env_id:<28} {result.check:<16} {redact(result.detail)}")
    failed = sum(not result.ok for result in results)
    print(f"{len(results) - failed} passed, {failed} failed")
    return 1 if failed else 0


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
        _usage(str(error))
    return serve_user_main(command, print_only=args.print, wait_s=args.wait)


def _parse_assignments(items: list[str], flag: str, *, scoped: bool) -> dict[str, Any]:
    """``KEY=VALUE`` (or ``ENV.KEY=VALUE`` when ``scoped``) items; values are JSON when they parse as JSON."""
    import json as _json

    parsed: dict[str, Any] = {}
    for item in items:
        target, eq, value = item.partition("=")
        if scoped:
            env, dot, key = target.partition(".")
            if not (eq and dot and env and key):
                _usage(f"{flag} wants ENV.KEY=VALUE, got {item!r}")
        elif not (eq and target):
            _usage(f"{flag} wants KEY=VALUE, got {item!r}")
        try:
            decoded = _json.loads(value)
        except ValueError:
            decoded = value
        if scoped:
            parsed.setdefault(env, {})[key] = decoded
        else:
            parsed[target] = decoded
    return parsed


def _names(text: str | None) -> list[str] | None:
    """A comma-separated list, stripped, empty parts dropped, duplicates collapsed (first kept)."""
    if text is None:
        return None
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        _usage(f"empty list {text!r}")
    return names


def _played_by_any(envs: list[str], behaviors: tuple[str, ...]) -> list[str]:
    """Those of ``behaviors`` that some env of ``envs`` plays (an unknown env plays none: the run's own
    check names it), so the main job's robustness line never refuses a run of other envs."""
    plays: set[str] = set()
    for name in envs:
        try:
            plays.update(ENV_TABLE.find(name).env_class().user_behaviors.applicable)
        except (ValueError, AttributeError):
            continue
    return [behavior for behavior in behaviors if behavior in plays]


def _user_behaviors(text: str | None) -> list[str] | None:
    """``--user-behaviors``: the run's conditions as ``EvalConfig`` stores them (control first), so that a
    resume compares like with like; an unknown id is a usage error naming the known ones."""
    if text is None:
        return None
    from mimesis_gym.evaluation.conditions import run_conditions

    try:
        return run_conditions(_names(text) or ())
    except ValueError as error:
        _usage(f"--user-behaviors: {error}")


def _given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings this command line states (``None``: not given, the stored/default value stands)."""
    envs = ENV_TABLE.canonical_names(_names(args.envs) or ()) if args.envs and args.envs != "all" else None
    return {
        "agents": _names(args.agent),
        "users": _names(args.users),
        "envs": envs,
        "judge": args.judge,
        "trials": args.trials,
        "seed": args.seed,
        "split": args.split,
        "limit": args.limit,
        "max_turns": args.max_turns,
        "concurrency": args.concurrency,
        "agent_concurrency": args.agent_concurrency,
        "user_concurrency": args.user_concurrency,
        "step_timeout": args.step_timeout,
        "agent_max_tokens": args.agent_max_tokens,
        "temperature": args.temperature,
        "role_max_tokens": args.role_max_tokens,
        "user_failures": args.user_failures,
        "on_no_tool_call": args.on_no_tool_call,
        "constrained_actions": args.constrained_actions,
        "data_dir": args.data_dir,
        "workers": args.workers,
        "ray_address": args.ray_address,
        "privileged": True if args.privileged else None,
        "env_args": _parse_assignments(args.env_arg, "--env-arg", scoped=True) if args.env_arg else None,
        "user_kwargs": _parse_assignments(args.user_arg, "--user-arg", scoped=False) if args.user_arg else None,
        "preset": "paper" if args.paper else None,
        "user_behaviors": _user_behaviors(args.user_behaviors),
        "behavior_agents": _names(args.behavior_agents),
    }


def _seed_list(text: str) -> list[int]:
    """``--seeds``: comma-separated integers >= 0."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"wants comma-separated integers >= 0, got {text!r}")
    return [int(part) for part in parts]


def _check_out_dir(out: Any) -> None:
    """Create ``--out`` (and parents) and prove it writable; :class:`UsageError` with the reason otherwise."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        _usage(f"--out {out} cannot be used: {error.strerror or error}")


def eval_config(args: argparse.Namespace, out: Any) -> Any:
    """The run's :class:`~mimesis_gym.evaluation.runner.EvalConfig`: the stored one on ``--resume`` (only pace
    flags may change), else built."""
    from pydantic import ValidationError

    from mimesis_gym.evaluation.rundir import check_credentials_given, check_resume_overrides, stored_config
    from mimesis_gym.evaluation.runner import EvalConfig

    given = _given_settings(args)
    try:
        if args.resume:
            resumed = check_resume_overrides(stored_config(out), given)
            check_credentials_given(resumed)
            return EvalConfig.model_validate(resumed)
        if out.is_dir() and any(out.iterdir()):
            _usage(f"{out} is not empty (use --resume to continue it)")
        settings: dict[str, Any] = {}
        if args.paper:
            from mimesis_gym.evaluation.presets import PAPER_EVAL

            if not args.data_dir:
                _usage("--paper evaluates on the upstream UserRL test sets: pass --data-dir")
            settings.update(PAPER_EVAL)
        settings.update({key: value for key, value in given.items() if value is not None})
        settings.setdefault("agents", list(MAIN_JOB_AGENTS))
        settings.setdefault("users", ["scripted"])
        demo = settings["agents"] in (["tiny"], list(MAIN_JOB_AGENTS)) and args.limit is None and not args.paper
        if demo:
            # 8 turns measured 8 min 11 s with eight envs on 2 quiet cores (bench_demo.py); above
            # 8 minutes the demo's turn cap is lowered, never its 10-minute bound raised.
            settings.setdefault("max_turns", DEMO_MAX_TURNS)
            settings.setdefault("agent_max_tokens", 64)
            settings.setdefault("constrained_actions", True)
            settings["limit"] = 2
            hard = _played_by_any(settings.get("envs") or ENV_TABLE.main_job(), MAIN_JOB_BEHAVIORS[1:])
            if settings["agents"] == list(MAIN_JOB_AGENTS) and "user_behaviors" not in settings and hard:
                settings["user_behaviors"] = [MAIN_JOB_BEHAVIORS[0], *hard]
                settings.setdefault("behavior_agents", list(MAIN_JOB_BEHAVIOR_AGENTS))
        config = EvalConfig(**settings)
        if args.paper:
            from mimesis_gym.evaluation.presets import paper_env_args

            config.env_args = paper_env_args(config.envs, config.env_args)
    except ValidationError as error:
        _usage(validation_problems(error))
    if demo:
        hard = config.user_behaviors[1:]
        robustness = (
            f"; {' and '.join(config.behavior_agents or config.agents)} also against users playing {', '.join(hard)}"
            if hard
            else ""
        )
        print(
            f"embedded defaults: agents {', '.join(config.agents)}, {config.limit} tasks per env, agent max_tokens "
            f"{config.agent_max_tokens}, {config.max_turns} turns{robustness} (lift with --limit, "
            "--agent-max-tokens, --max-turns, --user-behaviors)",
            file=sys.stderr,
        )
    return config


def _cmd_eval(args: argparse.Namespace) -> int:
    import asyncio
    import datetime as dt
    import signal
    from pathlib import Path

    from mimesis_gym.evaluation.rundir import DiskFullError
    from mimesis_gym.evaluation.runner import Interrupted, all_user_failure_cells, build_plan, run_eval
    from mimesis_gym.evaluation.store import ResultsStore

    out = (
        Path(args.out) if args.out else Path("runs") / dt.datetime.now(dt.timezone.utc).strftime("eval-%Y%m%dT%H%M%SZ")
    )
    if args.resume and not args.out:
        _usage("--resume needs --out pointing at an earlier run")
    if args.skip_corrupt and not args.resume:
        _usage("--skip-corrupt reads past corrupt lines of an earlier run's episodes.jsonl: use it with --resume")
    if out.exists() and not out.is_dir():
        _usage(f"--out {out} is a file, not a directory")
    config = eval_config(args, out)
    created = not out.exists()
    if not args.resume:
        build_plan(config)  # the envs, --env-arg and --data-dir's files: checked before --out is created
        _check_out_dir(out)
    try:
        _, counts = asyncio.run(
            run_eval(
                config,
                out,
                resume=args.resume,
                progress=not args.no_progress,
                argv=sys.argv,
                handle_signals=True,
                drain_timeout=args.drain_timeout,
                preflight=not args.no_preflight,
                log=_stderr_line,
                skip_corrupt=args.skip_corrupt,
            )
        )
    except Interrupted as stopped:
        print(f"interrupted; resume with: mimesis-gym eval --resume --out {out}", file=sys.stderr)
        return 130 if stopped.signum == signal.SIGINT else 143
    except DiskFullError as error:
        print(f"mimesis-gym eval: {error}", file=sys.stderr)
        return EXIT_DISK_FULL
    except MimesisGymError:
        if created and not any(out.iterdir()):
            out.rmdir()  # stopped before anything was written (e.g. by the pre-flight): leave no trace
        raise
    print((out / "summary.md").read_text(encoding="utf-8"), end="")
    print(f"results in {out}; the report page: {out / 'report.html'} (or `mimesis-gym view {out}`)", file=sys.stderr)
    if counts.get("agent_error") or counts.get("env_error"):
        return EXIT_RUN_ERRORS
    records = ResultsStore(out / "episodes.jsonl", skip_corrupt=args.skip_corrupt).latest().values()
    empty = all_user_failure_cells(list(records))
    for agent, user, env in empty:
        print(f"every episode of agent {agent}, user {user}, env {env} is a user failure", file=sys.stderr)
    return EXIT_ALL_USER_FAILURES if empty else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mimesis_gym.evaluation.report import report_from_scores

    if not args.from_scores:
        import contextlib

        from mimesis_gym.evaluation.rundir import RunLock
        from mimesis_gym.evaluation.runner import report_runs

        if not args.runs:
            _usage("give RUN_DIR… or --from-scores FILE.csv")
        if args.out is None and len(args.runs) > 1:
            _usage("several RUN_DIRs are merged into --out DIR: pass --out")
        runs = [Path(r) for r in args.runs]
        for run in runs:
            if not (run / "run.json").is_file():
                what = "does not exist" if not run.exists() else "is not an eval run directory (no run.json)"
                _usage(f"{run} {what}; give the --out directory of a `mimesis-gym eval` run")
        out = Path(args.out) if args.out is not None else runs[0]
        # writing into a run directory: not while an eval holds it
        in_run = any(out.resolve() == run.resolve() for run in runs)
        try:
            with RunLock(out) if in_run else contextlib.nullcontext():
                report_runs(
                    runs, out, mode=args.user_failures, force=args.force, skip_corrupt=args.skip_corrupt,
                    log=_stderr_line,
                )  # fmt: skip
        except (ValueError, OSError, KeyError) as error:
            _usage(str(error))
        print((out / "summary.md").read_text(encoding="utf-8"), end="")
        print(f"the report page: {out / 'report.html'} (or `mimesis-gym view {out}`)", file=sys.stderr)
        return 0
    if args.out is None:
        _usage("--from-scores needs --out DIR")
    if not Path(args.from_scores).is_file():
        _usage(f"--from-scores {args.from_scores}: no such file")
    weights = None
    if args.weights:
        weights = {}
        for part in args.weights.split(","):
            name, _, value = part.partition("=")
            if name.strip() not in ENV_TABLE.column_names():
                _usage(f"unknown column {name!r} in --weights")
            try:
                weights[name.strip()] = _float_in(0.0, open_low=True)(value.strip())
            except argparse.ArgumentTypeError as error:
                _usage(f"--weights {name.strip()}: {error}")
    try:
        report_from_scores(Path(args.from_scores), Path(args.out), weights)
    except (ValueError, OSError) as error:
        _usage(str(error))
    print((Path(args.out) / "summary.md").read_text(encoding="utf-8"), end="")
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    import signal
    import threading
    from pathlib import Path

    from mimesis_gym.evaluation.report_server import make_report_server

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        _usage(f"{run_dir} is not a directory")
    server = make_report_server(run_dir, args.host, args.port, allow_remote=args.allow_remote)
    port = server.server_address[1]
    print(f"serving {run_dir / 'report.html'} at {server.url} (Ctrl-C to stop)", file=sys.stderr, flush=True)
    print(f"from another machine: ssh -L {port}:127.0.0.1:{port} <this host>, then open {server.url}", file=sys.stderr,
          flush=True)  # fmt: skip

    def stop(signum: int, frame: Any) -> None:  # Ctrl-C or SIGTERM: stop serving, exit 0
        threading.Thread(target=server.shutdown, daemon=True).start()

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        server.server_close()
    print("stopped", file=sys.stderr)
    return 0


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
        _usage(f"nothing to check: pass {flags} or set {names}")
    for name, directory in chosen.items():
        if directory and not Path(directory).expanduser().is_dir():
            _usage(f"{SOURCES[name].flag} {directory} is not a directory")
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
        _usage(str(error))
    print(f"cloned {args.url or source.url} into {destination}")
    print(f"export {source.variable}={root.resolve()}")
    print(f"check it: mimesis-gym data check {source.flag} {destination}")
    return 0


def _add_data_commands(commands: Any) -> None:
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


def _cmd_users_report(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from pydantic import ValidationError

    from mimesis_gym.evaluation.runner import Interrupted
    from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report, silent_users

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        _usage(f"--out {out} is a file, not a directory")
    if not args.resume and out.is_dir() and any(out.iterdir()):
        _usage(f"{out} is not empty (use --resume to continue it)")
    if args.humans is not None:
        return _humans_scorecard(args, out)
    if args.sources is not None or args.tokenizer is not None:
        _usage("--sources and --tokenizer belong to the scorecard against humans: add --humans DIR")
    reference = Path(args.reference) if args.reference else None
    if reference is not None and not reference.is_dir():
        _usage(f"--reference {reference} is not a directory (an ABCD folder with abcd_v1.1.json or abcd_sample.json)")
    keys = ("agent", "limit", "trials", "max_turns", "concurrency", "agent_max_tokens", "role_max_tokens")
    settings = {key: getattr(args, key) for key in keys}
    settings = {key: value for key, value in settings.items() if value is not None}
    if args.envs:
        settings["envs"] = [ENV_TABLE.find(_env_id(name)).short for name in _names(args.envs) or []]
    if args.env_arg:
        settings["env_args"] = _parse_assignments(args.env_arg, "--env-arg", scoped=True)
    if args.user_behaviors:
        settings["user_behaviors"] = _names(args.user_behaviors)
    if args.embedder:
        from mimesis_gym.evaluation.embeddings import embedder_path

        try:
            embedder_path(args.embedder)
        except ConfigurationError as error:
            _usage(f"--embedder: {error}")
        settings["embedder"] = args.embedder
    if args.judge:
        from mimesis_gym.users import resolve_user

        if resolve_user(args.judge).kind == "scripted":  # an unknown spec raises its own one-line error
            _usage(f"--judge {args.judge}: the users report's judge is an LLM; give a model spec, not scripted")
        settings["judge"] = args.judge
    try:
        config = UsersReportConfig(users=_names(args.users), **settings)
    except ValidationError as error:
        _usage(validation_problems(error))
    _check_out_dir(out)
    try:
        report = run_users_report(
            config,
            out,
            resume=args.resume,
            reference_dir=reference,
            progress=not args.no_progress,
            log=_stderr_line,
        )
        measured = asyncio.run(report)
    except Interrupted:
        print(f"interrupted; resume with: mimesis-gym users-report --resume --out {out} …", file=sys.stderr)
        return 130
    except (FileNotFoundError, ValueError) as error:
        if isinstance(error, MimesisGymError):
            raise
        _usage(str(error))
    print((out / "users_report.md").read_text(encoding="utf-8"), end="")
    print(f"report in {out / 'users_report.md'} (json, plots beside it)", file=sys.stderr)
    silent = silent_users(measured)
    for line in silent:
        print(line, file=sys.stderr)
    return EXIT_ALL_USER_FAILURES if silent else 0


HUMANS_ONLY_NOT = ("agent", "envs", "trials", "agent_max_tokens", "env_arg", "reference", "embedder", "user_behaviors")
"""users-report flags of the env probe that the scorecard against humans does not take."""


def _humans_scorecard(args: argparse.Namespace, out: Path) -> int:
    """``users-report --humans DIR``: the scorecard against real people (docs/humans.md)."""
    import asyncio

    from pydantic import ValidationError

    from mimesis_gym.evaluation.humanlike.lexical import TokenizerUnavailable
    from mimesis_gym.evaluation.humanlike.scorecard import ScorecardConfig, run_scorecard
    from mimesis_gym.evaluation.runner import Interrupted

    stray = [name for name in HUMANS_ONLY_NOT if getattr(args, name) not in (None, False)]
    if stray:
        flag = "--" + stray[0].replace("_", "-")
        _usage(f"{flag} belongs to the env probe; the scorecard against humans (--humans) does not take it")
    humans = Path(args.humans)
    if not humans.is_dir():
        _usage(f"--humans {humans} is not a directory (the folder that holds the corpora, e.g. ../shared/data/humans)")
    if args.judge:
        from mimesis_gym.users import resolve_user

        if resolve_user(args.judge).kind == "scripted":
            _usage(f"--judge {args.judge}: the Turing-test judge is an LLM; give a model spec, not scripted")
    keys = ("limit", "max_turns", "concurrency", "role_max_tokens", "judge", "tokenizer")
    settings = {key: getattr(args, key) for key in keys if getattr(args, key) is not None}
    if args.sources:
        settings["sources"] = _names(args.sources)
    try:
        config = ScorecardConfig(users=_names(args.users), humans_dir=str(humans), **settings)
        config.source_names()
    except ValidationError as error:
        _usage(validation_problems(error))
    except (ConfigurationError, ValueError) as error:
        _usage(str(error))
    _check_out_dir(out)
    try:
        report = asyncio.run(
            run_scorecard(config, out, resume=args.resume, progress=not args.no_progress, log=_stderr_line)
        )
    except Interrupted:
        print(
            f"interrupted; resume with: mimesis-gym users-report --humans {humans} --resume --out {out} …",
            file=sys.stderr,
        )
        return 130
    except (FileNotFoundError, ValueError, TokenizerUnavailable) as error:
        if isinstance(error, MimesisGymError):
            raise
        _usage(str(error))
    print((out / "users_report.md").read_text(encoding="utf-8"), end="")
    print(f"scorecard in {out / 'users_report.md'} (json, plots, report.html beside it)", file=sys.stderr)
    silent = [user for user in report["users"][:-1] if not report["overall"][user]["turns"]]  # the last: the ceiling
    for user in silent:
        print(f"no turns from user {user}: {report['overall'][user]['failed_calls']} call(s) failed", file=sys.stderr)
    return EXIT_ALL_USER_FAILURES if silent else 0


def _cmd_serve_env(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        from mimesis_gym.integrations.episode import EnvRecipe
        from mimesis_gym.integrations.openenv_server import serve
    except ImportError as error:
        _usage(f"serve-env needs OpenEnv ({error}); install the extra: pip install 'mimesis-gym[openenv]'")
    env_id = args.env if ":" in args.env or args.env in gym.registry else _env_id(args.env)
    token = None
    if args.token_env is not None:
        token = os.environ.get(args.token_env)
        if not token:
            _usage(f"--token-env {args.token_env}: that environment variable is not set or empty")
    env_kwargs = _parse_assignments(args.env_arg, "--env-arg", scoped=False) if args.env_arg else {}
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
        _usage(validation_problems(error))
    except TypeError as error:  # a keyword value of a type the env cannot take
        _usage(f"{env_id}: {error}")
    return 0


def _add_serve_env(commands: Any) -> None:
    serve_env = commands.add_parser(
        "serve-env", help="serve an env over OpenEnv's HTTP/WebSocket protocol (docs/integrations.md, OpenEnv)"
    )
    serve_env.add_argument("env", metavar="ENV_ID", help="env id (or 'module:id', or a short name, e.g. function)")
    serve_env.add_argument("--user", default="scripted", help="user alias (default: scripted)")
    serve_env.add_argument("--env-arg", action="append", help="KEY=VALUE passed to gym.make (repeatable)")
    serve_env.add_argument("--max-episode-steps", type=_int_at_least(1), help="override the registered turn limit")
    serve_env.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    serve_env.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any free port)")
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
    serve_env.add_argument("--max-sessions", type=_int_at_least(1), default=64, help="concurrent sessions (default 64)")
    serve_env.add_argument(
        "--idle-timeout",
        type=_float_in(0.0),
        default=600.0,
        help="close a session idle this many seconds (default 600; 0: never)",
    )
    serve_env.set_defaults(run=_cmd_serve_env)


def _cmd_verl_data(args: argparse.Namespace) -> int:
    """Write verl's parquet prompts (one file per split) and its tool and agent-loop YAML into ``--out``."""
    from pathlib import Path

    from pydantic import ValidationError

    from mimesis_gym.integrations.verl_data import ToolSettings, dataset_rows, write_configs, write_dataset

    env_ids = list(dict.fromkeys(_env_id(name) for name in args.envs))
    splits = list(dict.fromkeys(args.split or ["train"]))
    try:
        settings = ToolSettings(
            env_ids=env_ids,
            user=args.user,
            env_kwargs=_parse_assignments(args.env_arg, "--env-arg", scoped=False) if args.env_arg else {},
            max_episode_steps=args.max_turns,
            reward=args.reward,
        )
    except ValidationError as error:
        _usage(validation_problems(error))
    out = Path(args.out)
    _check_out_dir(out)
    schema = None
    for split in splits:
        rows, schema = dataset_rows(settings, split=split, limit=args.limit, seeds=args.seeds)
        path = write_dataset(rows, out / f"{split}.parquet")
        print(f"{path}: {len(rows)} rows", file=sys.stderr)
    tool_path, loop_path = write_configs(settings, schema, out)
    print(f"{tool_path}\n{loop_path}", file=sys.stderr)
    return 0


SKIP_CORRUPT_HELP = "skip (and count on stderr) lines of episodes.jsonl that hold no valid record"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mimesis-gym", description="Conversation environments with simulated users (MIMESIS / UserRL)."
    )
    parser.add_argument("--version", action="version", version=f"mimesis-gym {mimesis_gym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    listing = commands.add_parser("list", help="list envs (with task counts), users, agents or user behaviours")
    listing.add_argument(
        "what", nargs="?", choices=["envs", "users", "agents", "behaviors"], help="what to list (default: envs)"
    )
    listing.set_defaults(run=_cmd_list)

    play = commands.add_parser("play", help="play the agent yourself against an env's user")
    play.add_argument("env", help="env id or short name, e.g. function")
    play.add_argument("--user", default="scripted", help="user alias (default: scripted)")
    play.add_argument("--task", help="task id (default: drawn from --split)")
    play.add_argument("--split", default="test", help="task split (default: test)")
    play.add_argument("--pack", default="original", help="task pack (default: original)")
    play.add_argument("--seed", type=_int_at_least(0), default=None, help="reset seed")
    play.add_argument("--max-turns", type=_int_at_least(1), default=16, help="turn cap (default: 16)")
    play.add_argument(
        "--as",
        dest="as_",
        choices=["agent", "user"],
        default="agent",
        help="play the agent (default) or the user (against --agent)",
    )
    play.add_argument("--agent", default="tiny", help="agent alias when playing the user (default: tiny)")
    play.add_argument("--agent-max-tokens", type=_int_at_least(1), default=256, help="agent token budget per turn")
    play.set_defaults(run=_cmd_play)

    serve = commands.add_parser(
        "serve-user",
        help="serve a user alias or a released agent with vLLM's OpenAI server (arguments after -- go to vLLM)",
    )
    serve.add_argument(
        "alias", help="e.g. mimesis-9b, ditto-8b, tiny, vllm:<hub-id>, hf:<path>, or a released agent (csd-agent, …)"
    )
    serve.add_argument("--port", type=_int_at_least(1), help="default: the port of the alias's base URL, else 8000")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--python", help="interpreter holding vLLM (default: $MIMESIS_VLLM_PYTHON, else this one)")
    serve.add_argument("--tp", type=_int_at_least(1), help="tensor parallel size")
    serve.add_argument("--dp", type=_int_at_least(1), help="data parallel size")
    serve.add_argument("--gpu-memory-utilization", type=_float_in(0.0, 1.0, open_low=True))
    serve.add_argument("--max-model-len", type=_int_at_least(1))
    serve.add_argument("--api-key-env", help="variable whose value vLLM requires as API key (non-loopback hosts)")
    serve.add_argument("--print", action="store_true", help="print the command and exit")
    serve.add_argument("--wait", type=_float_in(0.0, open_low=True), default=900.0, help="health wait in seconds")
    serve.set_defaults(run=_cmd_serve_user)

    ev = commands.add_parser("eval", help="score agents across envs and users (the paper's protocol)")
    ev.add_argument(
        "--envs",
        help="short env names or ids, comma-separated (default, or all: the paper's eight envs; "
        "`mimesis-gym list` shows the others, e.g. abcd)",
    )
    ev.add_argument(
        "--agent", help="agent aliases, comma-separated (default: tiny, scripted:baseline, scripted:random, oracle)"
    )
    ev.add_argument("--users", help="user aliases, comma-separated (default: scripted)")
    ev.add_argument("--judge", help="judge alias for every user (default: each user judges itself)")
    ev.add_argument("--trials", type=_int_at_least(1), help="episodes per task (default 1)")
    ev.add_argument("--seed", type=_int_at_least(0), help="seed of trial 0 (default 0)")
    ev.add_argument("--split", help="task split (default test)")
    ev.add_argument("--limit", type=_int_at_least(1), help="tasks per env")
    ev.add_argument(
        "--max-turns", type=_int_at_least(1), help="turn cap per episode (default 16; the embedded demo: 6)"
    )
    ev.add_argument("--concurrency", type=_int_at_least(1), help="episodes in flight (default 8)")
    ev.add_argument("--agent-concurrency", type=_int_at_least(1))
    ev.add_argument("--user-concurrency", type=_int_at_least(1))
    ev.add_argument("--step-timeout", type=_float_in(0.0, open_low=True), help="seconds per env step (default 120)")
    ev.add_argument(
        "--agent-max-tokens",
        type=_int_at_least(1),
        help="agent token budget per turn (default 2048; the embedded demo: 64)",
    )
    ev.add_argument("--temperature", type=_float_in(0.0, 2.0), help="agent temperature (default 0)")
    ev.add_argument("--role-max-tokens", type=_int_at_least(1), help="cap on every user/judge call's max_tokens")
    ev.add_argument("--user-failures", choices=["exclude", "include"], help="scoring mode (default exclude)")
    ev.add_argument("--on-no-tool-call", choices=["grammar", "end"], help="HTTP agents without a tool call")
    ev.add_argument(
        "--constrained-actions", action=argparse.BooleanOptionalAction, default=None,
        help="decode local agents' turns under the action grammar, ask HTTP agents for structured outputs "
        "(default: on for the embedded demo, off otherwise)",
    )  # fmt: skip
    ev.add_argument("--data-dir", help="UserRL root: evaluate on the upstream task sets (pack='upstream')")
    ev.add_argument("--paper", action="store_true", help="the paper's preset (needs --data-dir)")
    ev.add_argument("--workers", type=_int_at_least(1), help="worker processes sharing the units (default 1)")
    ev.add_argument(
        "--ray", dest="ray_address", metavar="ADDRESS",
        help="run the --workers as Ray actors on the cluster at ADDRESS (host:port or auto; extra `ray`)",
    )  # fmt: skip
    ev.add_argument(
        "--privileged",
        action="store_true",
        help="also record the roles' thoughts, the task's hidden data and per-turn role outputs",
    )
    ev.add_argument(
        "--user-behaviors", metavar="CONDITIONS",
        help="user behaviours to play, comma-separated: control, B1 … B13 (default control); each condition is "
        "its own set of episodes, on the envs whose user plays it, control always included; summary.md adds a "
        "Robustness table (Δ vs control, enacted share)",
    )  # fmt: skip
    ev.add_argument(
        "--behavior-agents", metavar="AGENTS",
        help="the agents that play the --user-behaviors other than control, comma-separated (default: every agent)",
    )  # fmt: skip
    ev.add_argument("--env-arg", action="append", help="ENV.KEY=VALUE passed to that env (repeatable)")
    ev.add_argument(
        "--user-arg", action="append", help="KEY=VALUE for every HTTP user, e.g. timeout_s=30 or fail_fast=false"
    )
    ev.add_argument(
        "--no-preflight", action="store_true", help="skip probing every user, judge and agent endpoint first"
    )
    ev.add_argument("--out", help="output directory (default runs/eval-<UTC time>)")
    ev.add_argument("--resume", action="store_true", help="continue the run in --out")
    ev.add_argument("--skip-corrupt", action="store_true", help=SKIP_CORRUPT_HELP + "; their episodes play again")
    ev.add_argument("--no-progress", action="store_true")
    ev.add_argument(
        "--drain-timeout", type=_float_in(0.0), default=60.0, help="seconds running episodes get after Ctrl-C"
    )
    ev.set_defaults(run=_cmd_eval)

    report = commands.add_parser("report", help="summary tables (Avg, MR) from runs or from a table of env scores")
    report.add_argument("runs", nargs="*", metavar="RUN_DIR", help="eval output directories to merge")
    report.add_argument("--from-scores", metavar="FILE.csv", help="columns user, agent, the eight envs (×100)")
    report.add_argument("--user-failures", choices=["exclude", "include"], help="default: the runs' mode")
    report.add_argument("--force", action="store_true", help="merge runs whose plans differ")
    report.add_argument("--skip-corrupt", action="store_true", help=SKIP_CORRUPT_HELP)
    report.add_argument("--out", help="output directory (default: the RUN_DIR when there is one)")
    report.add_argument("--weights", help="Avg weights, e.g. travel=471,turtle=48,… (default: upstream test counts)")
    report.set_defaults(run=_cmd_report)

    view = commands.add_parser(
        "view",
        help="serve a run's report.html on 127.0.0.1 (for an SSH tunnel)",
        description="Serve RUN_DIR/report.html over HTTP (only that page). It answers only requests whose Host "
        "header is localhost, 127.0.0.1 or [::1] (any port) or the --host it listens on (any IP address "
        "on 0.0.0.0/::); other names get 403, so a DNS-rebinding web page cannot read the run.",
    )
    view.add_argument("run_dir", metavar="RUN_DIR", help="a directory holding report.html (eval or report wrote it)")
    view.add_argument("--port", type=_port, default=8765, help="port (default 8765; 0: any free port)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    view.add_argument("--allow-remote", action="store_true", help="allow a --host that is not a loopback address")
    view.set_defaults(run=_cmd_view)
    _add_serve_env(commands)

    users_report = commands.add_parser(
        "users-report", help="how do user models behave? disclosure, role fidelity, homogeneity (docs/users-report.md)"
    )
    users_report.add_argument("--users", required=True, help="user specs under test, comma-separated")
    users_report.add_argument("--agent", help="the probing agent (default scripted:baseline)")
    users_report.add_argument("--envs", help="short env names, comma-separated (default: the nine envs with a user)")
    users_report.add_argument(
        "--limit", type=_int_at_least(1), help="tasks per env (default 2); --humans: conversations per source (6)"
    )
    users_report.add_argument("--trials", type=_int_at_least(1), help="episodes per task (default 1)")
    users_report.add_argument(
        "--max-turns", type=_int_at_least(1), help="turn cap (default 6); --humans: real replies replayed (8)"
    )
    users_report.add_argument("--concurrency", type=_int_at_least(1), help="episodes in flight (default 8)")
    users_report.add_argument("--agent-max-tokens", type=_int_at_least(1), help="the agent's max tokens (default 256)")
    users_report.add_argument("--role-max-tokens", type=_int_at_least(1), help="cap on every user/judge call")
    users_report.add_argument("--env-arg", action="append", help="ENV.KEY=VALUE passed to that env (repeatable)")
    users_report.add_argument(
        "--user-behaviors",
        metavar="CONDITIONS",
        help="also probe each user under these behaviours, e.g. control,B3,B9 (docs/behaviors.md): one column per "
        "user and behaviour (`tiny [B3]`) with its enacted share, on the envs that play it (default: control)",
    )
    users_report.add_argument("--reference", metavar="ABCD_DIR", help="add a human column from ABCD's real dialogues")
    users_report.add_argument(
        "--embedder", metavar="MODEL", help="also compare replies by embedding cosine: tiny or hf:PATH"
    )
    users_report.add_argument(
        "--judge",
        metavar="SPEC",
        help="also flag role faults and contradictions with an LLM judge (any user spec); --humans: the Turing test",
    )
    users_report.add_argument(
        "--humans",
        metavar="DIR",
        help="score the users against real people instead: replay the corpora in DIR (docs/humans.md)",
    )
    users_report.add_argument(
        "--sources", help="--humans: corpus names or jsonl:PATH, comma-separated (default: every shipped corpus)"
    )
    users_report.add_argument("--tokenizer", help="--humans: the lexical metrics' tokenizer (docs/humans.md)")
    users_report.add_argument("--out", required=True, help="output directory")
    users_report.add_argument("--resume", action="store_true", help="continue the report in --out")
    users_report.add_argument("--no-progress", action="store_true")
    users_report.set_defaults(run=_cmd_users_report)

    # ---- collect: eval records -> SFT conversations (docs/evaluation.md, "Collect")
    gather = commands.add_parser("collect", help="turn eval runs into SFT conversations (JSONL) for algorithm sft")
    gather.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="directories written by `mimesis-gym eval`")
    gather.add_argument("--out", required=True, metavar="FILE.jsonl", help="the SFT data file to write")
    gather.add_argument("--top-k", type=_int_at_least(1), help="best records kept per env and task (agent default 1)")
    gather.add_argument("--min-score", type=float, help="keep records whose episode score is at least this")
    gather.add_argument("--side", choices=["agent", "user"], default="agent", help="whose turns carry the loss")
    gather.add_argument("--skip-corrupt", action="store_true", help=SKIP_CORRUPT_HELP)
    gather.set_defaults(run=_cmd_collect)

    # ---- sft-data: human conversations -> user-side SFT data (docs/algorithms.md)
    from mimesis_gym.algorithms.user_sft_data import STYLES as SFT_STYLES

    sft_data = commands.add_parser("sft-data", help="turn human conversations into user-side SFT data (Stage I)")
    sft_data.add_argument("--humans", metavar="DIR", help="the folder that holds the corpora (../shared/data/humans)")
    sft_data.add_argument(
        "--sources", help="corpus names or NAME:PATH / jsonl:PATH, comma-separated (default: every shipped corpus)"
    )
    sft_data.add_argument(
        "--style",
        choices=list(SFT_STYLES),
        default="midtrain",
        help="midtrain: thinking off; thoughttrace: reasons as thoughts",
    )
    sft_data.add_argument(
        "--split", choices=["dev", "test"], default="dev", help="the half to write (test: the scorecard's)"
    )
    sft_data.add_argument(
        "--out", required=True, metavar="FILE.jsonl", help="the SFT data file (and FILE.jsonl.meta.json)"
    )
    sft_data.add_argument("--limit", type=_int_at_least(1), help="at most this many conversations per source")
    sft_data.add_argument("--force", action="store_true", help="replace an existing --out")
    sft_data.set_defaults(run=_cmd_sft_data)

    commands.add_parser(
        "train", help="train an agent (docs/algorithms.md): --config FILE [--set key=value ...]", add_help=False
    )
    check = commands.add_parser("check", help="run the env contract suite (non-zero exit on failure)")
    check.add_argument("--envs", help="comma-separated env ids or short names (default: all)")
    check.add_argument("--user", help="health-check this user alias: endpoint, one completion, one role call per env")
    check.add_argument("--agent", help="health-check this agent alias: one tool-call round trip")
    check.add_argument("--role-max-tokens", type=_int_at_least(1), help="cap every role call's max_tokens (env kwarg)")
    check.set_defaults(run=_cmd_check)
    _add_data_commands(commands)

    verl = commands.add_parser(
        "verl-data", help="write verl's parquet prompts and tool/agent-loop YAML for envs (docs/integrations.md)"
    )
    verl.add_argument("envs", nargs="+", metavar="ENV_ID", help="env ids or short names, e.g. travel turtle")
    verl.add_argument("--out", required=True, help="output directory: SPLIT.parquet, tool_config.yaml, agent_loop.yaml")
    verl.add_argument("--split", action="append", help="task split, repeatable (default: train)")
    verl.add_argument("--limit", type=_int_at_least(1), help="tasks per env and split (default: all)")
    verl.add_argument(
        "--seeds",
        type=_seed_list,
        default=[0],
        help="comma-separated reset seeds, one row per task and seed (default: 0)",
    )
    verl.add_argument("--user", default="scripted", help="user alias of the rollouts (default: scripted)")
    verl.add_argument("--max-turns", type=_int_at_least(1), help="override of the envs' turn limit")
    verl.add_argument("--env-arg", action="append", help="KEY=VALUE passed to every env (repeatable)")
    verl.add_argument("--reward", choices=["episode_score", "turn_rewards"], default="episode_score")
    verl.set_defaults(run=_cmd_verl_data)
    return parser


def _cmd_collect(args: argparse.Namespace) -> int:
    """``collect``: write the selected records as SFT lines; a CollectError is one line, exit 2."""
    from mimesis_gym.evaluation.collect import collect

    if args.min_score is not None and not math.isfinite(args.min_score):
        _usage(f"--min-score must be a finite number, got {args.min_score}")
    try:
        counts = collect(
            args.run_dirs, args.out, side=args.side, top_k=args.top_k, min_score=args.min_score,
            skip_corrupt=args.skip_corrupt, log=_stderr_line,
        )  # fmt: skip
    except OSError as error:
        _usage(f"--out {args.out} cannot be written: {error.strerror or error}")
    print(
        f"{counts['written']} conversation(s) of {counts['tasks']} task(s) from {counts['records']} record(s), "
        f"mean episode score {counts['mean_score']:.3f} -> {args.out}"
    )
    return 0


def _cmd_sft_data(args: argparse.Namespace) -> int:
    """``sft-data``: write the user side of human conversations as SFT lines; user errors one line, exit 2."""
    from mimesis_gym.algorithms.user_sft_data import write_user_sft_data
    from mimesis_gym.envs.replay.tasks import normalise_sources

    if args.split == "test":
        _stderr_line("warning: --split test writes the half the scorecard replays (users-report --humans)")
    try:
        meta = write_user_sft_data(
            normalise_sources(args.sources), args.out, humans_dir=args.humans, style=args.style, split=args.split,
            limit=args.limit, force=args.force, command=_sft_data_command(args),
        )  # fmt: skip
    except OSError as error:
        _usage(f"--out {args.out} cannot be written: {error.strerror or error}")
    print(f"{meta['written']} conversation(s) of the {args.split} half, style {args.style} -> {args.out}")
    return 0


def _sft_data_command(args: argparse.Namespace) -> list[str]:
    """The ``sft-data`` command line that writes the same data (every setting spelled out)."""
    command = ["mimesis-gym", "sft-data", "--style", args.style, "--split", args.split, "--out", args.out]
    for flag, value in (("--humans", args.humans), ("--sources", args.sources), ("--limit", args.limit)):
        if value is not None:
            command += [flag, str(value)]
    return command


DEMO_MAX_TURNS = 6
"""Turn cap of the embedded-defaults demo (``mimesis-gym eval`` with no arguments)."""

MAIN_JOB_BEHAVIORS = ("control", "B3", "B9")
"""The main job's user conditions: control (the paper's table) and two hard users, refusing to clarify
(B3) and impatient (B9), for its robustness line (docs/behaviors.md)."""

MAIN_JOB_BEHAVIOR_AGENTS = ("scripted:baseline", "oracle")
"""The main job's agents that also meet the hard users: scripted, so the line costs about a second."""

MAIN_JOB_AGENTS = ("tiny", "scripted:baseline", "scripted:random", "oracle")
"""The agents ``mimesis-gym eval`` compares when no ``--agent`` is given: the embedded tiny model, the
fair scripted baseline, and the random floor and privileged oracle ceiling on the same tasks."""


OPENMP_WAIT_VARIABLE = "OMP_WAIT_POLICY"
"""Set to ``PASSIVE`` (unless already set) before torch loads: docs/users.md, "A local model"."""


def prefer_passive_openmp(command: str | None) -> None:
    """Let PyTorch's OpenMP threads sleep, not spin, while they wait (unless the variable is set).

    On a small CPU the in-process engine's threads share the cores with the event loop, the envs
    and any other job; spinning threads then wait on each other for whole time slices, and a decode
    step of the tiny model took 2.3 s instead of 0.09 s with one other busy process on two cores
    (docs/users.md, "A local model"). ``serve-user`` is left alone: the vLLM it starts inherits the
    environment and binds its own threads.
    """
    if command != "serve-user":
        os.environ.setdefault(OPENMP_WAIT_VARIABLE, "PASSIVE")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    prefer_passive_openmp(argv[0] if argv else None)
    if argv[:1] == ["train"]:  # the learners parse their own flags (docs/algorithms.md)
        from mimesis_gym.algorithms.cli import train_main

        return train_main(argv[1:])
    passthrough: list[str] = []
    if "--" in argv:  # serve-user: everything after -- goes to vLLM verbatim
        at = argv.index("--")
        argv, passthrough = argv[:at], argv[at + 1 :]
    args = build_parser().parse_args(argv)
    args.passthrough = passthrough
    try:
        return int(args.run(args))
    except MimesisGymError as error:  # misconfiguration, an unusable endpoint, a run in use: one line
        print(redact(f"mimesis-gym {args.command}: {error}"), file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
