"""The ``mimesis-gym`` command (README.md, "Command line"): ``list``, ``play``, ``eval``, ``report``, ``view``, …

Exit codes: 0 success; 1 a check failed; 2 a usage or configuration error (one line on stderr, no
traceback: a bad flag or value, an unknown alias, an unusable endpoint found by the pre-flight, a
run directory in use); 3 a run finished with agent or env errors; 4 a run in which some (agent,
user, env) cell is nothing but user failures; 74 a run stopped by a full disk (one line on stderr;
``run.json`` marked interrupted where it could still be written: free space and ``--resume``);
130/143 interrupted by SIGINT/SIGTERM (``view``, which runs until stopped, exits 0 on either).

The package holds one module per family of sub-commands (:mod:`~mimesis_gym.cli.explore`,
:mod:`~mimesis_gym.cli.serve`, :mod:`~mimesis_gym.cli.evaluate`, :mod:`~mimesis_gym.cli.users_report`,
:mod:`~mimesis_gym.cli.datasets`) and what they share (:mod:`~mimesis_gym.cli.common`); each family
module adds its sub-commands to the parser and holds their handlers.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import mimesis_gym
from mimesis_gym.cli import datasets, evaluate, explore, serve, users_report
from mimesis_gym.cli.common import (
    EXIT_ALL_USER_FAILURES,
    EXIT_DISK_FULL,
    EXIT_RUN_ERRORS,
    EXIT_USAGE,
    OneLineParser,
    UsageError,
)
from mimesis_gym.cli.evaluate import eval_config
from mimesis_gym.core.errors import MimesisGymError
from mimesis_gym.core.redact import redact
from mimesis_gym.evaluation.presets import (
    DEMO_MAX_TURNS,
    MAIN_JOB,
    MAIN_JOB_AGENTS,
    MAIN_JOB_BEHAVIOR_AGENTS,
    MAIN_JOB_BEHAVIORS,
)

__all__ = [
    "DEMO_MAX_TURNS",
    "EXIT_ALL_USER_FAILURES",
    "EXIT_DISK_FULL",
    "EXIT_RUN_ERRORS",
    "EXIT_USAGE",
    "MAIN_JOB",
    "MAIN_JOB_AGENTS",
    "MAIN_JOB_BEHAVIORS",
    "MAIN_JOB_BEHAVIOR_AGENTS",
    "OPENMP_WAIT_VARIABLE",
    "UsageError",
    "build_parser",
    "eval_config",
    "main",
    "prefer_passive_openmp",
]


def build_parser() -> argparse.ArgumentParser:
    """The ``mimesis-gym`` parser: its sub-commands in the order ``--help`` lists them."""
    parser = OneLineParser(
        prog="mimesis-gym", description="Conversation environments with simulated users (MIMESIS / UserRL)."
    )
    parser.add_argument("--version", action="version", version=f"mimesis-gym {mimesis_gym.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    explore.add_list(commands)
    explore.add_play(commands)
    serve.add_serve_user(commands)
    evaluate.add_eval(commands)
    evaluate.add_report(commands)
    evaluate.add_view(commands)
    serve.add_serve_env(commands)
    users_report.add_users_report(commands)
    datasets.add_collect(commands)
    datasets.add_sft_data(commands)
    datasets.add_train(commands)
    explore.add_check(commands)
    explore.add_data(commands)
    datasets.add_verl_data(commands)
    return parser


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
