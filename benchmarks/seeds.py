"""The learning benchmarks' seeds: one after another here, or side by side in spawned processes.

Imported by the scripts beside it (``python benchmarks/learning_grpo.py`` puts this folder on the path).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import multiprocessing
from collections.abc import Callable
from typing import TypeVar

Result = TypeVar("Result")


def run_seeds(run_seed: Callable[[int, argparse.Namespace], Result], args: argparse.Namespace) -> list[Result]:
    """``run_seed(seed, args)`` for every ``args.seeds``, in order; ``args.jobs`` > 1 runs that many processes."""
    if args.jobs > 1:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(args.jobs, mp_context=context) as pool:
            return list(pool.map(run_seed, args.seeds, [args] * len(args.seeds)))
    return [run_seed(seed, args) for seed in args.seeds]
