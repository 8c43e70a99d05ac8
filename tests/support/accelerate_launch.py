"""Launch a script under ``accelerate launch`` on two CPU processes (gloo DDP) for the trainer's multi-rank tests."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch_two_cpu_processes(script_text: str, tmp_path: Path, *args: str) -> None:
    """Run ``script_text`` as ``script tmp_path *args`` on two ranks; skip without the tiny model, fail on exit != 0."""
    from mimesis_gym.core.tiny import TinyModelUnavailable, ensure_tiny_model

    try:
        ensure_tiny_model()
    except TinyModelUnavailable as error:
        pytest.skip(str(error))
    script = tmp_path / "train_ddp.py"
    script.write_text(script_text)
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "PYTHONPATH": os.getcwd()}
    command = [
        sys.executable, "-m", "accelerate.commands.launch",
        "--multi_gpu", "--num_processes", "2", "--num_machines", "1", "--main_process_port", str(free_port()),
        "--mixed_precision", "no", "--dynamo_backend", "no",
        str(script), str(tmp_path), *args,
    ]  # fmt: skip
    completed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr[-4000:]
