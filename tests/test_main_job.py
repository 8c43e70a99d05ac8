"""The main job as a preset: ``mimesis-gym eval`` with no ``--agent`` builds ``EvalConfig(**MAIN_JOB)``, and a
flag replaces its own setting only (docs/evaluation.md, "The main job")."""

from __future__ import annotations

import asyncio
import json

import pytest

from mimesis_gym.cli import MAIN_JOB, build_parser, eval_config, main
from mimesis_gym.evaluation.presets import main_job_settings
from mimesis_gym.evaluation.runner import EvalConfig, run_eval

ROBUSTNESS = (["control", "B3", "B9"], ["scripted:baseline", "oracle"])
SCRIPTED = ["scripted:baseline", "oracle"]  # the main job's agents that need no model


def built(tmp_path, *flags: str) -> EvalConfig:
    """The config ``mimesis-gym eval FLAGS`` builds (nothing is run)."""
    out = tmp_path / "out"
    return eval_config(build_parser().parse_args(["eval", "--out", str(out), *flags]), out)


def test_python_gets_the_run_that_eval_builds(tmp_path, capsys):
    config = built(tmp_path)
    assert config == EvalConfig(**MAIN_JOB)
    assert (config.preset, config.limit, config.max_turns, config.agent_max_tokens) == ("main", 2, 6, 64)
    assert config.constrained_actions and (config.user_behaviors, config.behavior_agents) == ROBUSTNESS
    assert "embedded defaults (preset main): agents tiny, scripted:baseline" in capsys.readouterr().err


def test_a_flag_replaces_its_own_setting_and_keeps_the_others(tmp_path, capsys):
    config = built(tmp_path, "--limit", "3")
    assert config == EvalConfig(**{**MAIN_JOB, "limit": 3})
    assert (config.preset, config.max_turns, config.agent_max_tokens, config.constrained_actions) == (
        "main",
        6,
        64,
        True,
    )
    assert (config.user_behaviors, config.behavior_agents) == ROBUSTNESS
    err = capsys.readouterr().err
    assert "embedded defaults (preset main)" in err and "3 tasks per env" in err
    assert built(tmp_path, "--max-turns", "4", "--no-constrained-actions") == EvalConfig(
        **{**MAIN_JOB, "max_turns": 4, "constrained_actions": False}
    )


@pytest.mark.parametrize(
    ("flags", "robustness"),
    [
        (["--user-behaviors", "B13"], (["control", "B13"], None)),  # the user's conditions, for every agent
        (["--behavior-agents", "oracle"], (["control", "B3", "B9"], ["oracle"])),
        (["--agent", "tiny"], (["control"], None)),  # its agents are not in the run
    ],
)
def test_the_robustness_line_is_replaced_as_a_whole(tmp_path, flags, robustness):
    config = built(tmp_path, *flags)
    assert config.preset == "main" and (config.limit, config.max_turns) == (2, 6)
    assert (config.user_behaviors, config.behavior_agents) == robustness


def test_another_agent_plays_on_the_defaults(tmp_path, capsys):
    config = built(tmp_path, "--agent", "scripted:baseline")
    assert config == EvalConfig(agents=["scripted:baseline"]) and config.preset is None
    assert "embedded defaults" not in capsys.readouterr().err


def test_main_job_settings_leaves_the_preset_alone():
    settings = main_job_settings({"limit": 3, "max_turns": None})
    settings["agents"].append("extra")
    assert settings["limit"] == 3 and settings["max_turns"] == 6
    assert MAIN_JOB["agents"] == ["tiny", "scripted:baseline", "scripted:random", "oracle"]


def test_a_main_job_run_records_its_preset_and_an_old_run_resumes_as_it_was(tmp_path, capsys):
    new, old = tmp_path / "new", tmp_path / "old"
    scripted = {**MAIN_JOB, "agents": SCRIPTED, "envs": ["intention"], "limit": 1}
    asyncio.run(run_eval(EvalConfig(**scripted), new, progress=False, preflight=False))
    assert json.loads((new / "run.json").read_text())["config"]["preset"] == "main"
    # a run of the main job from before the preset: the same settings, no preset stored
    before = {key: value for key, value in scripted.items() if key != "preset"}
    asyncio.run(run_eval(EvalConfig(**before), old, progress=False, preflight=False))
    for run, preset in ((new, "main"), (old, None)):
        episodes = (run / "episodes.jsonl").read_text()
        assert main(["eval", "--resume", "--out", str(run), "--no-progress", "--no-preflight"]) == 0
        assert (run / "episodes.jsonl").read_text() == episodes  # nothing left to play
        assert json.loads((run / "run.json").read_text())["config"]["preset"] == preset
        assert "embedded defaults" not in capsys.readouterr().err
