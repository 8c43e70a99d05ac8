"""``mimesis-gym eval``, ``report`` and ``view``: score agents, summarise runs, serve a run's page
(docs/evaluation.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from mimesis_gym.cli.common import (
    EXIT_ALL_USER_FAILURES,
    EXIT_DISK_FULL,
    EXIT_RUN_ERRORS,
    SKIP_CORRUPT_HELP,
    check_out_dir,
    comma_names,
    float_in,
    int_at_least,
    parse_assignments,
    port_number,
    stderr_line,
    usage_error,
)
from mimesis_gym.core.errors import MimesisGymError, validation_problems
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.presets import MAIN_JOB_AGENTS, main_job_settings

__all__ = [
    "add_eval",
    "add_report",
    "add_view",
    "eval_config",
    "plays_main_job",
]


def add_eval(commands: Any) -> None:
    """The ``eval`` sub-command."""
    ev = commands.add_parser("eval", help="score agents across envs and users (the paper's protocol)")
    ev.add_argument(
        "--envs",
        help="short env names or ids, comma-separated (default, or all: the paper's eight envs; "
        "`mimesis-gym list` shows the others, e.g. abcd, and installed plug-ins'; module:id imports module first)",
    )
    ev.add_argument(
        "--agent",
        help="agent aliases or module:Class, comma-separated (default: tiny, scripted:baseline, scripted:random, "
        "oracle)",
    )
    ev.add_argument("--users", help="user aliases, comma-separated (default: scripted)")
    ev.add_argument("--judge", help="judge alias for every user (default: each user judges itself)")
    ev.add_argument("--trials", type=int_at_least(1), help="episodes per task (default 1)")
    ev.add_argument("--seed", type=int_at_least(0), help="seed of trial 0 (default 0)")
    ev.add_argument("--split", help="task split (default test)")
    ev.add_argument("--limit", type=int_at_least(1), help="tasks per env (default: all; the main job: 2)")
    ev.add_argument("--max-turns", type=int_at_least(1), help="turn cap per episode (default 16; the main job: 6)")
    ev.add_argument("--concurrency", type=int_at_least(1), help="episodes in flight (default 8)")
    ev.add_argument("--agent-concurrency", type=int_at_least(1))
    ev.add_argument("--user-concurrency", type=int_at_least(1))
    ev.add_argument("--step-timeout", type=float_in(0.0, open_low=True), help="seconds per env step (default 120)")
    ev.add_argument(
        "--agent-max-tokens",
        type=int_at_least(1),
        help="agent token budget per turn (default 2048; the main job: 64)",
    )
    ev.add_argument("--temperature", type=float_in(0.0, 2.0), help="agent temperature (default 0)")
    ev.add_argument("--role-max-tokens", type=int_at_least(1), help="cap on every user/judge call's max_tokens")
    ev.add_argument("--user-failures", choices=["exclude", "include"], help="scoring mode (default exclude)")
    ev.add_argument("--on-no-tool-call", choices=["grammar", "end"], help="HTTP agents without a tool call")
    ev.add_argument(
        "--constrained-actions", action=argparse.BooleanOptionalAction, default=None,
        help="decode local agents' turns under the action grammar, ask HTTP agents for structured outputs "
        "(default: on for the main job, off otherwise)",
    )  # fmt: skip
    ev.add_argument("--data-dir", help="UserRL root: evaluate on the upstream task sets (pack='upstream')")
    ev.add_argument("--paper", action="store_true", help="the paper's preset (needs --data-dir)")
    ev.add_argument("--workers", type=int_at_least(1), help="worker processes sharing the units (default 1)")
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
        "--drain-timeout", type=float_in(0.0), default=60.0, help="seconds running episodes get after Ctrl-C"
    )
    ev.set_defaults(run=_cmd_eval)


def add_report(commands: Any) -> None:
    """The ``report`` sub-command."""
    report = commands.add_parser("report", help="summary tables (Avg, MR) from runs or from a table of env scores")
    report.add_argument("runs", nargs="*", metavar="RUN_DIR", help="eval output directories to merge")
    report.add_argument("--from-scores", metavar="FILE.csv", help="columns user, agent, the eight envs (×100)")
    report.add_argument("--user-failures", choices=["exclude", "include"], help="default: the runs' mode")
    report.add_argument("--force", action="store_true", help="merge runs whose plans differ")
    report.add_argument("--skip-corrupt", action="store_true", help=SKIP_CORRUPT_HELP)
    report.add_argument("--out", help="output directory (default: the RUN_DIR when there is one)")
    report.add_argument("--weights", help="Avg weights, e.g. travel=471,turtle=48,… (default: upstream test counts)")
    report.set_defaults(run=_cmd_report)


def add_view(commands: Any) -> None:
    """The ``view`` sub-command."""
    view = commands.add_parser(
        "view",
        help="serve a run's report.html on 127.0.0.1 (for an SSH tunnel)",
        description="Serve RUN_DIR/report.html over HTTP (only that page). It answers only requests whose Host "
        "header is localhost, 127.0.0.1 or [::1] (any port) or the --host it listens on (any IP address "
        "on 0.0.0.0/::); other names get 403, so a DNS-rebinding web page cannot read the run.",
    )
    view.add_argument("run_dir", metavar="RUN_DIR", help="a directory holding report.html (eval or report wrote it)")
    view.add_argument("--port", type=port_number, default=8765, help="port (default 8765; 0: any free port)")
    view.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    view.add_argument("--allow-remote", action="store_true", help="allow a --host that is not a loopback address")
    view.set_defaults(run=_cmd_view)


def _user_behaviors(text: str | None) -> list[str] | None:
    """``--user-behaviors``: the run's conditions as ``EvalConfig`` stores them (control first), so that a
    resume compares like with like; an unknown id is a usage error naming the known ones."""
    if text is None:
        return None
    from mimesis_gym.evaluation.conditions import run_conditions

    try:
        return run_conditions(comma_names(text) or ())
    except ValueError as error:
        usage_error(f"--user-behaviors: {error}")


def _given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The run settings this command line states (``None``: not given, the stored/default value stands)."""
    envs = ENV_TABLE.canonical_names(comma_names(args.envs) or ()) if args.envs and args.envs != "all" else None
    return {
        "agents": comma_names(args.agent),
        "users": comma_names(args.users),
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
        "env_args": parse_assignments(args.env_arg, "--env-arg", scoped=True) if args.env_arg else None,
        "user_kwargs": parse_assignments(args.user_arg, "--user-arg", scoped=False) if args.user_arg else None,
        "preset": "paper" if args.paper else None,
        "user_behaviors": _user_behaviors(args.user_behaviors),
        "behavior_agents": comma_names(args.behavior_agents),
    }


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
            usage_error(f"{out} is not empty (use --resume to continue it)")
        chosen = {key: value for key, value in given.items() if value is not None}
        if args.paper:
            from mimesis_gym.evaluation.presets import PAPER_EVAL

            if not args.data_dir:
                usage_error("--paper evaluates on the upstream UserRL test sets: pass --data-dir")
            settings = {**PAPER_EVAL, **chosen}
        elif plays_main_job(given["agents"]):
            settings = main_job_settings(given)
        else:
            settings = chosen
        config = EvalConfig(**settings)
        if args.paper:
            from mimesis_gym.evaluation.presets import paper_env_args

            config.env_args = paper_env_args(config.envs, config.env_args)
    except ValidationError as error:
        usage_error(validation_problems(error))
    if config.preset == "main":
        _state_main_job(config)
    return config


def plays_main_job(agents: list[str] | None) -> bool:
    """Whether ``eval`` without ``--paper`` plays the main job (:data:`~mimesis_gym.evaluation.presets.MAIN_JOB`):
    no ``--agent``, its four agents, or ``tiny`` alone (its model agent on its settings, without the
    robustness line); any other ``--agent`` plays on the defaults of ``EvalConfig``."""
    return agents is None or agents in (["tiny"], list(MAIN_JOB_AGENTS))


def _state_main_job(config: Any) -> None:
    """The stderr line that names the preset of a main-job run and its settings."""
    hard = config.user_behaviors[1:]
    robustness = (
        f"; {' and '.join(config.behavior_agents or config.agents)} also against users playing {', '.join(hard)}"
        if hard
        else ""
    )
    print(
        f"embedded defaults (preset {config.preset}): agents {', '.join(config.agents)}, {config.limit} tasks per "
        f"env, agent max_tokens {config.agent_max_tokens}, {config.max_turns} turns{robustness} (lift with --limit, "
        "--agent-max-tokens, --max-turns, --user-behaviors)",
        file=sys.stderr,
    )


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
        usage_error("--resume needs --out pointing at an earlier run")
    if args.skip_corrupt and not args.resume:
        usage_error("--skip-corrupt reads past corrupt lines of an earlier run's episodes.jsonl: use it with --resume")
    if out.exists() and not out.is_dir():
        usage_error(f"--out {out} is a file, not a directory")
    config = eval_config(args, out)
    created = not out.exists()
    if not args.resume:
        build_plan(config)  # the envs, --env-arg and --data-dir's files: checked before --out is created
        check_out_dir(out)
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
                log=stderr_line,
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
            usage_error("give RUN_DIR… or --from-scores FILE.csv")
        if args.out is None and len(args.runs) > 1:
            usage_error("several RUN_DIRs are merged into --out DIR: pass --out")
        runs = [Path(r) for r in args.runs]
        for run in runs:
            if not (run / "run.json").is_file():
                what = "does not exist" if not run.exists() else "is not an eval run directory (no run.json)"
                usage_error(f"{run} {what}; give the --out directory of a `mimesis-gym eval` run")
        out = Path(args.out) if args.out is not None else runs[0]
        # writing into a run directory: not while an eval holds it
        in_run = any(out.resolve() == run.resolve() for run in runs)
        try:
            with RunLock(out) if in_run else contextlib.nullcontext():
                report_runs(
                    runs, out, mode=args.user_failures, force=args.force, skip_corrupt=args.skip_corrupt,
                    log=stderr_line,
                )  # fmt: skip
        except (ValueError, OSError, KeyError) as error:
            usage_error(str(error))
        print((out / "summary.md").read_text(encoding="utf-8"), end="")
        print(f"the report page: {out / 'report.html'} (or `mimesis-gym view {out}`)", file=sys.stderr)
        return 0
    if args.out is None:
        usage_error("--from-scores needs --out DIR")
    if not Path(args.from_scores).is_file():
        usage_error(f"--from-scores {args.from_scores}: no such file")
    weights = None
    if args.weights:
        weights = {}
        for part in args.weights.split(","):
            name, _, value = part.partition("=")
            if name.strip() not in ENV_TABLE.column_names():
                usage_error(f"unknown column {name!r} in --weights")
            try:
                weights[name.strip()] = float_in(0.0, open_low=True)(value.strip())
            except argparse.ArgumentTypeError as error:
                usage_error(f"--weights {name.strip()}: {error}")
    try:
        report_from_scores(Path(args.from_scores), Path(args.out), weights)
    except (ValueError, OSError) as error:
        usage_error(str(error))
    print((Path(args.out) / "summary.md").read_text(encoding="utf-8"), end="")
    return 0


def _cmd_view(args: argparse.Namespace) -> int:
    import signal
    import threading
    from pathlib import Path

    from mimesis_gym.evaluation.report_server import make_report_server

    run_dir = Path(args.run_dir)
    if not run_dir.is_dir():
        usage_error(f"{run_dir} is not a directory")
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
