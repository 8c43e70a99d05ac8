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
