"""``mimesis-gym collect``, ``sft-data``, ``verl-data`` and ``train``: data for the learners and the
entry of training (docs/algorithms.md, docs/integrations.md; ``train`` parses its own flags in
:mod:`mimesis_gym.algorithms.cli`)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from mimesis_gym.cli.common import (
    SKIP_CORRUPT_HELP,
    check_out_dir,
    conversation_env_id,
    int_at_least,
    parse_assignments,
    stderr_line,
    usage_error,
)
from mimesis_gym.core.errors import validation_problems

__all__ = ["add_collect", "add_sft_data", "add_train", "add_verl_data"]


def add_collect(commands: Any) -> None:
    """The ``collect`` sub-command: eval records -> SFT conversations (docs/evaluation.md, "Collect")."""
    gather = commands.add_parser("collect", help="turn eval runs into SFT conversations (JSONL) for algorithm sft")
    gather.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="directories written by `mimesis-gym eval`")
    gather.add_argument("--out", required=True, metavar="FILE.jsonl", help="the SFT data file to write")
    gather.add_argument("--top-k", type=int_at_least(1), help="best records kept per env and task (agent default 1)")
    gather.add_argument("--min-score", type=float, help="keep records whose episode score is at least this")
    gather.add_argument("--side", choices=["agent", "user"], default="agent", help="whose turns carry the loss")
    gather.add_argument("--skip-corrupt", action="store_true", help=SKIP_CORRUPT_HELP)
    gather.set_defaults(run=_cmd_collect)


def add_sft_data(commands: Any) -> None:
    """The ``sft-data`` sub-command: human conversations -> user-side SFT data (docs/algorithms.md)."""
    from mimesis_gym.algorithms.learners.sft.user_data import STYLES as SFT_STYLES

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
    sft_data.add_argument("--limit", type=int_at_least(1), help="at most this many conversations per source")
    sft_data.add_argument("--force", action="store_true", help="replace an existing --out")
    sft_data.set_defaults(run=_cmd_sft_data)


def add_train(commands: Any) -> None:
    """``train`` in the listing of sub-commands; :func:`~mimesis_gym.cli.main` hands its arguments to the learners."""
    commands.add_parser(
        "train", help="train an agent (docs/algorithms.md): --config FILE [--set key=value ...]", add_help=False
    )


def add_verl_data(commands: Any) -> None:
    """The ``verl-data`` sub-command."""
    verl = commands.add_parser(
        "verl-data", help="write verl's parquet prompts and tool/agent-loop YAML for envs (docs/integrations.md)"
    )
    verl.add_argument("envs", nargs="+", metavar="ENV_ID", help="env ids or short names, e.g. travel turtle")
    verl.add_argument("--out", required=True, help="output directory: SPLIT.parquet, tool_config.yaml, agent_loop.yaml")
    verl.add_argument("--split", action="append", help="task split, repeatable (default: train)")
    verl.add_argument("--limit", type=int_at_least(1), help="tasks per env and split (default: all)")
    verl.add_argument(
        "--seeds",
        type=_seed_list,
        default=[0],
        help="comma-separated reset seeds, one row per task and seed (default: 0)",
    )
    verl.add_argument("--user", default="scripted", help="user alias of the rollouts (default: scripted)")
    verl.add_argument("--max-turns", type=int_at_least(1), help="override of the envs' turn limit")
    verl.add_argument("--env-arg", action="append", help="KEY=VALUE passed to every env (repeatable)")
    verl.add_argument("--reward", choices=["episode_score", "turn_rewards"], default="episode_score")
    verl.set_defaults(run=_cmd_verl_data)


def _seed_list(text: str) -> list[int]:
    """``--seeds``: comma-separated integers >= 0."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts or not all(part.isdigit() for part in parts):
        raise argparse.ArgumentTypeError(f"wants comma-separated integers >= 0, got {text!r}")
    return [int(part) for part in parts]


def _cmd_verl_data(args: argparse.Namespace) -> int:
    """Write verl's parquet prompts (one file per split) and its tool and agent-loop YAML into ``--out``."""
    from pathlib import Path

    from pydantic import ValidationError

    from mimesis_gym.integrations.verl_data import ToolSettings, dataset_rows, write_configs, write_dataset

    env_ids = list(dict.fromkeys(conversation_env_id(name) for name in args.envs))
    splits = list(dict.fromkeys(args.split or ["train"]))
    try:
        settings = ToolSettings(
            env_ids=env_ids,
            user=args.user,
            env_kwargs=parse_assignments(args.env_arg, "--env-arg", scoped=False) if args.env_arg else {},
            max_episode_steps=args.max_turns,
            reward=args.reward,
        )
    except ValidationError as error:
        usage_error(validation_problems(error))
    out = Path(args.out)
    check_out_dir(out)
    schema = None
    for split in splits:
        rows, schema = dataset_rows(settings, split=split, limit=args.limit, seeds=args.seeds)
        path = write_dataset(rows, out / f"{split}.parquet")
        print(f"{path}: {len(rows)} rows", file=sys.stderr)
    tool_path, loop_path = write_configs(settings, schema, out)
    print(f"{tool_path}\n{loop_path}", file=sys.stderr)
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    """``collect``: write the selected records as SFT lines; a CollectError is one line, exit 2."""
    from mimesis_gym.evaluation.collect import collect

    if args.min_score is not None and not math.isfinite(args.min_score):
        usage_error(f"--min-score must be a finite number, got {args.min_score}")
    try:
        counts = collect(
            args.run_dirs, args.out, side=args.side, top_k=args.top_k, min_score=args.min_score,
            skip_corrupt=args.skip_corrupt, log=stderr_line,
        )  # fmt: skip
    except OSError as error:
        usage_error(f"--out {args.out} cannot be written: {error.strerror or error}")
    print(
        f"{counts['written']} conversation(s) of {counts['tasks']} task(s) from {counts['records']} record(s), "
        f"mean episode score {counts['mean_score']:.3f} -> {args.out}"
    )
    return 0


def _cmd_sft_data(args: argparse.Namespace) -> int:
    """``sft-data``: write the user side of human conversations as SFT lines; user errors one line, exit 2."""
    from mimesis_gym.algorithms.learners.sft.user_data import write_user_sft_data
    from mimesis_gym.envs.replay.tasks import normalise_sources

    if args.split == "test":
        stderr_line("warning: --split test writes the half the scorecard replays (users-report --humans)")
    try:
        meta = write_user_sft_data(
            normalise_sources(args.sources), args.out, humans_dir=args.humans, style=args.style, split=args.split,
            limit=args.limit, force=args.force, command=_sft_data_command(args),
        )  # fmt: skip
    except OSError as error:
        usage_error(f"--out {args.out} cannot be written: {error.strerror or error}")
    print(f"{meta['written']} conversation(s) of the {args.split} half, style {args.style} -> {args.out}")
    return 0


def _sft_data_command(args: argparse.Namespace) -> list[str]:
    """The ``sft-data`` command line that writes the same data (every setting spelled out)."""
    command = ["mimesis-gym", "sft-data", "--style", args.style, "--split", args.split, "--out", args.out]
    for flag, value in (("--humans", args.humans), ("--sources", args.sources), ("--limit", args.limit)):
        if value is not None:
            command += [flag, str(value)]
    return command
