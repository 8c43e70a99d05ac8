"""scripts/gpu_check.sh: the GPU check refuses to pretend on a machine without CUDA."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"


def test_the_script_parses() -> None:
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


def test_without_a_cuda_device_it_exits_2_and_says_so(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device: run the script itself")
    env = {**os.environ, "PYTHON": sys.executable, "GPU_CHECK_LOGS": str(tmp_path)}
    result = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 2
    assert "no usable CUDA torch" in result.stderr
    assert "| check | status |" not in result.stdout  # no table of checks that never ran


def bf16_step_source() -> str:
    """The Python the script runs for its "bf16 train step" check (the heredoc after its run_check line)."""
    text = SCRIPT.read_text(encoding="utf-8")
    start = text.index("\n", text.index('run_check "bf16 train step')) + 1
    return text[start : text.index("\nPY\n", start)]


def test_the_bf16_step_trains_bf16_parameters_and_checks_that_it_did() -> None:
    """The check claims a step "in bf16 parameters": its overrides must make them so (model.dtype, not only
    run.dtype's autocast), at a learning rate bf16 weights can follow, and it must fail when they are not."""
    import ast

    from mimesis_gym.algorithms.config import TrainerConfig
    from mimesis_gym.algorithms.policy import update_precision_problem

    source = bf16_step_source()
    call = next(
        node
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "with_overrides"
    )
    overrides = [item.value for item in call.args[0].elts if isinstance(item, ast.Constant)]  # type: ignore[attr-defined]
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    assert (config.model.resolved_dtype(cuda=True), config.run.dtype) == ("bfloat16", "bfloat16")
    assert update_precision_problem("bfloat16", config.optim.lr) is None  # the step's update does not round away
    assert "assert dtypes == {torch.bfloat16}" in source
