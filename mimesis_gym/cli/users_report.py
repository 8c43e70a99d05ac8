"""``mimesis-gym users-report``: how user models behave in the envs, or against real people with
``--humans`` (docs/users-report.md, docs/humans.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from mimesis_gym.cli.common import (
    EXIT_ALL_USER_FAILURES,
    check_out_dir,
    comma_names,
    conversation_env_id,
    int_at_least,
    parse_assignments,
    stderr_line,
    usage_error,
)
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError, validation_problems
from mimesis_gym.envs import ENV_TABLE

__all__ = ["HUMANS_ONLY_NOT", "add_users_report", "report_envs"]


def add_users_report(commands: Any) -> None:
    """The ``users-report`` sub-command."""
    users_report = commands.add_parser(
        "users-report", help="how do user models behave? disclosure, role fidelity, homogeneity (docs/users-report.md)"
    )
    users_report.add_argument("--users", required=True, help="user specs under test, comma-separated")
    users_report.add_argument("--agent", help="the probing agent (default scripted:baseline)")
    users_report.add_argument(
        "--envs",
        help="env short names or ids (module:id for a plug-in's), comma-separated (default: the nine envs with a user)",
    )
    users_report.add_argument(
        "--limit", type=int_at_least(1), help="tasks per env (default 2); --humans: conversations per source (6)"
    )
    users_report.add_argument("--trials", type=int_at_least(1), help="episodes per task (default 1)")
    users_report.add_argument(
        "--max-turns", type=int_at_least(1), help="turn cap (default 6); --humans: real replies replayed (8)"
    )
    users_report.add_argument("--concurrency", type=int_at_least(1), help="episodes in flight (default 8)")
    users_report.add_argument("--agent-max-tokens", type=int_at_least(1), help="the agent's max tokens (default 256)")
    users_report.add_argument("--role-max-tokens", type=int_at_least(1), help="cap on every user/judge call")
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


def _cmd_users_report(args: argparse.Namespace) -> int:
    import asyncio
    from pathlib import Path

    from pydantic import ValidationError

    from mimesis_gym.evaluation.runner import Interrupted
    from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report, silent_users

    out = Path(args.out)
    if out.exists() and not out.is_dir():
        usage_error(f"--out {out} is a file, not a directory")
    if not args.resume and out.is_dir() and any(out.iterdir()):
        usage_error(f"{out} is not empty (use --resume to continue it)")
    if args.humans is not None:
        return _humans_scorecard(args, out)
    if args.sources is not None or args.tokenizer is not None:
        usage_error("--sources and --tokenizer belong to the scorecard against humans: add --humans DIR")
    reference = Path(args.reference) if args.reference else None
    if reference is not None and not reference.is_dir():
        usage_error(
            f"--reference {reference} is not a directory (an ABCD folder with abcd_v1.1.json or abcd_sample.json)"
        )
    keys = ("agent", "limit", "trials", "max_turns", "concurrency", "agent_max_tokens", "role_max_tokens")
    settings = {key: getattr(args, key) for key in keys}
    settings = {key: value for key, value in settings.items() if value is not None}
    if args.envs:
        settings["envs"] = report_envs(comma_names(args.envs) or [])
    if args.env_arg:
        settings["env_args"] = parse_assignments(args.env_arg, "--env-arg", scoped=True)
    if args.user_behaviors:
        settings["user_behaviors"] = comma_names(args.user_behaviors)
    if args.embedder:
        from mimesis_gym.evaluation.embeddings import embedder_path

        try:
            embedder_path(args.embedder)
        except ConfigurationError as error:
            usage_error(f"--embedder: {error}")
        settings["embedder"] = args.embedder
    if args.judge:
        from mimesis_gym.users import resolve_user

        if resolve_user(args.judge).kind == "scripted":  # an unknown spec raises its own one-line error
            usage_error(f"--judge {args.judge}: the users report's judge is an LLM; give a model spec, not scripted")
        settings["judge"] = args.judge
    try:
        config = UsersReportConfig(users=comma_names(args.users), **settings)
    except ValidationError as error:
        usage_error(validation_problems(error))
    check_out_dir(out)
    try:
        report = run_users_report(
            config,
            out,
            resume=args.resume,
            reference_dir=reference,
            progress=not args.no_progress,
            log=stderr_line,
        )
        measured = asyncio.run(report)
    except Interrupted:
        print(f"interrupted; resume with: mimesis-gym users-report --resume --out {out} …", file=sys.stderr)
        return 130
    except (FileNotFoundError, ValueError) as error:
        if isinstance(error, MimesisGymError):
            raise
        usage_error(str(error))
    print((out / "users_report.md").read_text(encoding="utf-8"), end="")
    print(f"report in {out / 'users_report.md'} (json, plots beside it)", file=sys.stderr)
    silent = silent_users(measured)
    for line in silent:
        print(line, file=sys.stderr)
    return EXIT_ALL_USER_FAILURES if silent else 0


def report_envs(names: list[str]) -> list[str]:
    """``--envs`` as ``eval --envs`` records them (:meth:`~mimesis_gym.envs.table.EnvTable.canonical_names`):
    a table env by its short name, a plug-in env named ``module:id`` with its ``module:`` kept, so that the
    probe run and a ``--resume`` in a new process import the module again. An unknown name or a view env
    is a one-line usage error."""
    for name in names:
        conversation_env_id(name)
    return ENV_TABLE.canonical_names(names)


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
        usage_error(f"{flag} belongs to the env probe; the scorecard against humans (--humans) does not take it")
    humans = Path(args.humans)
    if not humans.is_dir():
        usage_error(
            f"--humans {humans} is not a directory (the folder that holds the corpora, e.g. ../shared/data/humans)"
        )
    if args.judge:
        from mimesis_gym.users import resolve_user

        if resolve_user(args.judge).kind == "scripted":
            usage_error(f"--judge {args.judge}: the Turing-test judge is an LLM; give a model spec, not scripted")
    keys = ("limit", "max_turns", "concurrency", "role_max_tokens", "judge", "tokenizer")
    settings = {key: getattr(args, key) for key in keys if getattr(args, key) is not None}
    if args.sources:
        settings["sources"] = comma_names(args.sources)
    try:
        config = ScorecardConfig(users=comma_names(args.users), humans_dir=str(humans), **settings)
        config.source_names()
    except ValidationError as error:
        usage_error(validation_problems(error))
    except (ConfigurationError, ValueError) as error:
        usage_error(str(error))
    check_out_dir(out)
    try:
        report = asyncio.run(
            run_scorecard(config, out, resume=args.resume, progress=not args.no_progress, log=stderr_line)
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
        usage_error(str(error))
    print((out / "users_report.md").read_text(encoding="utf-8"), end="")
    print(f"scorecard in {out / 'users_report.md'} (json, plots, report.html beside it)", file=sys.stderr)
    silent = [user for user in report["users"][:-1] if not report["overall"][user]["turns"]]  # the last: the ceiling
    for user in silent:
        print(f"no turns from user {user}: {report['overall'][user]['failed_calls']} call(s) failed", file=sys.stderr)
    return EXIT_ALL_USER_FAILURES if silent else 0
