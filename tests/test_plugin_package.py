"""examples/plugin: an env, a learner and an agent from a package of their own, with no edit to the library.

The package is installed offline into a temporary directory and the real CLI runs in subprocesses with
that directory on ``PYTHONPATH`` (the entry-point groups ``mimesis_gym.envs``, ``.learners``,
``.agents``); then the same parts are named as ``module:…`` with the package's sources on ``PYTHONPATH``
and nothing installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mimesis_gym.agents.registry import make_agent
from mimesis_gym.agents.scripted import NoopAgent, RandomAgent
from mimesis_gym.core.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "examples" / "plugin"
ENV_ID = "mimesis_guess/GuessNumber-v0"
BY_MODULE = f"mimesis_guess:{ENV_ID}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plug-in, installed with pip into a temporary directory (built from a copy: a build writes
    files beside the sources)."""
    root = tmp_path_factory.mktemp("plugin")
    shutil.copytree(PLUGIN, root / "src", ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    pip = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "--quiet"]
    done = subprocess.run([*pip, "--target", str(root / "site"), str(root / "src")], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root / "site"


def cli(path: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``mimesis-gym ARGS`` in a subprocess with ``path`` (and the library) on ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(path)])}
    return subprocess.run([sys.executable, "-m", "mimesis_gym.cli", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)  # fmt: skip


def records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


def job(path: Path, env: str, algorithm: str, out: Path) -> Path:
    """A one-step CPU train job on the 2-layer random test model (tests/test_learn_config.py's)."""
    path.write_text(json.dumps({
        "envs": [env],
        "policy": "factory:mimesis_gym.algorithms.testing:tiny_random_model",
        "algorithm": algorithm,
        "preset": "cpu-tiny",
        "run": {"total_steps": 1, "output_dir": str(out), "progress": False},
    }))  # fmt: skip
    return path


def test_an_installed_plugin_is_listed_checked_and_evaluated(installed: Path, tmp_path: Path) -> None:
    listed = cli(installed, "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:2] == [ENV_ID, "guess-number"] for line in listed.stdout.splitlines()), listed.stdout
    agents = cli(installed, "list", "agents", cwd=tmp_path)
    assert any(line.split()[:2] == ["guess-bisect", "(plug-in)"] for line in agents.stdout.splitlines()), agents.stdout

    checked = cli(installed, "check", "--envs", "guess-number", cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.rstrip().endswith("7 passed, 0 failed"), checked.stdout

    out = tmp_path / "run"
    args = ["--envs", ENV_ID, "--limit", "1", "--workers", "2", "--no-progress", "--out", str(out)]
    played = cli(installed, "eval", "--agent", "oracle,guess-bisect", *args, cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    got = sorted((r["agent"], r["env"], r["env_id"], r["status"], r["episode_score"]) for r in records(out))
    assert got == [(agent, "guess-number", ENV_ID, "ok", 1.0) for agent in ("guess-bisect", "oracle")]
    assert "| guess-bisect | **100.00** |" in (out / "summary.md").read_text()


def test_an_installed_plugin_learner_is_an_algorithm(installed: Path, tmp_path: Path) -> None:
    planned = cli(installed, "train", "--config", str(job(tmp_path / "job.json", ENV_ID, "rloo", tmp_path / "run")),
                  "--dry-run", cwd=tmp_path)  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert "algorithm: rloo (estimator grpo_multiturn, learners: rloo)" in planned.stdout.splitlines()


@pytest.mark.slow
def test_an_installed_plugin_learner_trains_one_step(installed: Path, tmp_path: Path) -> None:
    trained = cli(installed, "train", "--config", str(job(tmp_path / "job.json", ENV_ID, "rloo", tmp_path / "run")),
                  cwd=tmp_path)  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    assert json.loads(trained.stdout)["steps"] == 1
    metrics = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["rloo/groups"] == 4.0 and f"score/{ENV_ID}" in metrics  # cpu-tiny: 4 prompts


def test_module_names_work_without_installing(tmp_path: Path) -> None:
    unknown = cli(PLUGIN, "eval", "--envs", "guess-number", "--agent", "oracle", "--limit", "1", cwd=tmp_path)
    assert (
        unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "unknown env 'guess-number'" in unknown.stderr
    )

    checked = cli(PLUGIN, "check", "--envs", BY_MODULE, cwd=tmp_path)
    assert checked.returncode == 0 and checked.stdout.rstrip().endswith("7 passed, 0 failed"), checked.stdout

    out = tmp_path / "run"
    args = ["eval", "--envs", BY_MODULE, "--agent", "mimesis_guess.agent:BisectAgent", "--limit", "2"]
    played = cli(PLUGIN, *args, "--workers", "2", "--no-progress", "--out", str(out), cwd=tmp_path)
    assert played.returncode == 0, played.stderr
    assert {(r["env"], r["env_id"], r["status"], r["episode_score"]) for r in records(out)} == {
        ("guess-number", BY_MODULE, "ok", 1.0)  # the recorded id keeps the module: workers import it again
    }
    assert json.loads((out / "run.json").read_text())["config"]["envs"] == [BY_MODULE]
    resumed = cli(PLUGIN, *args, "--no-progress", "--out", str(out), "--resume", cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert len(records(out)) == 2

    planned = cli(PLUGIN, "train", "--config",
                  str(job(tmp_path / "job.json", BY_MODULE, "mimesis_guess.learner:RLOO", tmp_path / "train")),
                  "--dry-run", cwd=tmp_path)  # fmt: skip
    assert planned.returncode == 0, planned.stderr
    assert "algorithm: mimesis_guess.learner:RLOO (estimator grpo_multiturn, learners: rloo)" in planned.stdout


def test_a_broken_plugin_fails_loudly_naming_its_entry_point(tmp_path: Path) -> None:
    """A distribution on the path whose env entry point fails to import stops every env lookup with one line."""
    site = tmp_path / "site"
    (site / "broken_guess-0.1.dist-info").mkdir(parents=True)
    (site / "broken_guess-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: broken-guess\nVersion: 0.1\n"
    )
    (site / "broken_guess-0.1.dist-info" / "entry_points.txt").write_text(
        "[mimesis_gym.envs]\nbroken = broken_guess:ENTRY\n"
    )
    (site / "broken_guess.py").write_text("raise RuntimeError('the plug-in is broken')\n")
    for args in (["list"], ["eval", "--envs", "function", "--agent", "oracle", "--limit", "1"]):
        failed = cli(site, *args, cwd=tmp_path)
        assert failed.returncode == 2 and failed.stderr.count("\n") == 1, failed.stderr
        assert "plug-in 'broken' = 'broken_guess:ENTRY' of entry-point group mimesis_gym.envs (from broken-guess)" in (
            failed.stderr
        )
        assert "RuntimeError: the plug-in is broken" in failed.stderr and "Traceback" not in failed.stderr


def test_agents_by_module_path() -> None:
    assert isinstance(make_agent("mimesis_gym.agents.scripted:NoopAgent"), NoopAgent)
    assert isinstance(make_agent("mimesis_gym.agents.scripted:RandomAgent"), RandomAgent)  # takes no option
    with pytest.raises(
        ConfigurationError, match=re.escape("agent 'mimesis_gym.agents.scripted:Nope': cannot import it")
    ):
        make_agent("mimesis_gym.agents.scripted:Nope")
    with pytest.raises(ConfigurationError, match="or an agent class as 'module:Class'"):
        make_agent("scripted:nope")


def test_the_adapters_recipe_takes_an_installed_plugins_env(installed: Path, tmp_path: Path) -> None:
    code = (
        "from mimesis_gym.integrations.episode import EnvRecipe\n"
        f"env = EnvRecipe(env_id={ENV_ID!r}).make()\n"
        "print(type(env.unwrapped).__name__, env.reset(seed=0)[0][:13])\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(installed)])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["GuessNumberEnv", "I", "am", "thinking"]
