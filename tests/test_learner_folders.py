"""Each learner is one folder (docs/writing-a-learner.md): the old module paths still work, and the
torch-free helpers (the CSD coach and notes, the teacher rows, InfoPO's rows, SFT's data) load without torch."""

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MOVED = {
    "mimesis_gym.algorithms.csd": "mimesis_gym.algorithms.learners.csd.loss",
    "mimesis_gym.algorithms.coach_runner": "mimesis_gym.algorithms.learners.csd.coach",
    "mimesis_gym.algorithms.coach_notes": "mimesis_gym.algorithms.learners.csd.notes",
    "mimesis_gym.algorithms.teacher": "mimesis_gym.algorithms.learners.csd.teacher",
    "mimesis_gym.algorithms.infopo": "mimesis_gym.algorithms.learners.infopo.counterfactual",
    "mimesis_gym.algorithms.sft_data": "mimesis_gym.algorithms.learners.sft.data",
    "mimesis_gym.algorithms.user_sft_data": "mimesis_gym.algorithms.learners.sft.user_data",
}
TORCH_FREE = {old: new for old, new in MOVED.items() if not new.endswith(".loss")}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_the_old_path_re_exports_every_public_name(old):
    if old not in TORCH_FREE:
        pytest.importorskip("torch", reason="the local stack is installed by `make test`")
    before, now = importlib.import_module(old), importlib.import_module(MOVED[old])
    assert before.__all__ == now.__all__
    assert all(getattr(before, name) is getattr(now, name) for name in now.__all__)


def test_the_torch_free_helpers_and_the_packages_load_without_torch():
    modules = [*TORCH_FREE, *TORCH_FREE.values(), "mimesis_gym.algorithms.learners", "mimesis_gym.evaluation.collect"]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('torch.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == "[]", result.stdout
