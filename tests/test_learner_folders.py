"""Each learner is one folder (docs/writing-a-learner.md): its modules have that path only (the old ones
are gone), and the torch-free helpers (the CSD coach and notes, the teacher rows, InfoPO's rows, SFT's
data) load without torch."""

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

MOVED = {
    # the old path -> the one path now
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
def test_a_moved_module_has_its_new_path_only(old):
    if MOVED[old] not in TORCH_FREE.values():
        pytest.importorskip("torch", reason="the local stack is installed by `make test`")
    assert importlib.import_module(MOVED[old]).__all__
    assert importlib.util.find_spec(old) is None, f"{old} is back: import {MOVED[old]}"


def test_no_module_of_the_package_shadows_a_learner_folder():
    """Every learner module is under ``algorithms/learners/<name>/``; nothing directly under
    ``algorithms/`` carries a learner's module name again."""
    learners = ROOT / "mimesis_gym" / "algorithms" / "learners"
    folders = {path.parent.name for path in learners.glob("*/learner.py")}
    assert folders >= {"csd", "infopo", "sft"}
    flat = {path.stem for path in (ROOT / "mimesis_gym" / "algorithms").glob("*.py")}
    assert flat.isdisjoint({old.rsplit(".", 1)[1] for old in MOVED} | folders), sorted(flat)


def test_the_torch_free_helpers_and_the_packages_load_without_torch():
    modules = [*TORCH_FREE.values(), "mimesis_gym.algorithms.learners", "mimesis_gym.evaluation.collect"]
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
