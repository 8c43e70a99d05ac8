"""The mimesis-gym command: list, play, check, --version."""

import os
import re
import subprocess
import sys

import pytest

import mimesis_gym
from mimesis_gym.cli import main
from tests.conftest import SHARED_DATA


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"mimesis-gym {mimesis_gym.__version__}"


def test_list_envs_shows_counts(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "mimesis/FunctionGym-v0" in out and "train 400, test 100, demo 3" in out


@pytest.mark.parametrize("only_abcd", [False, True])
def test_list_reads_each_envs_own_data_variable(monkeypatch, capsys, only_abcd):
    """``list`` loads pack="upstream" as gym.make does: TauGym from $MIMESIS_GYM_TAU_DIR, ABCD from
    $MIMESIS_GYM_ABCD_DIR (not from $MIMESIS_GYM_USERRL_DIR), an env whose variable is unset says so."""

    folders = {name: SHARED_DATA / name for name in ("userrl", "tau-bench", "abcd")}
    if not all(folder.is_dir() for folder in folders.values()):
        pytest.skip(f"reference data not found under {SHARED_DATA} (expected ../shared/data/{{userrl,tau-bench,abcd}})")
    monkeypatch.setenv("MIMESIS_GYM_ABCD_DIR", str(folders["abcd"]))
    for variable, name in (("MIMESIS_GYM_TAU_DIR", "tau-bench"), ("MIMESIS_GYM_USERRL_DIR", "userrl")):
        if only_abcd:
            monkeypatch.delenv(variable, raising=False)
        else:
            monkeypatch.setenv(variable, str(folders[name]))
    assert main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()

    def upstream_line(env_id):
        start = next(i for i, line in enumerate(lines) if line.startswith(env_id))
        return lines[start + 2].strip()

    assert upstream_line("mimesis/ABCDBehavior-v0") == "upstream pack: sample 2"
    if only_abcd:
        assert "set $MIMESIS_GYM_TAU_DIR" in upstream_line("mimesis/TauGym-v0")
        assert "set $MIMESIS_GYM_USERRL_DIR" in upstream_line("mimesis/TurtleGym-v0")
    else:
        assert upstream_line("mimesis/TauGym-v0") == "upstream pack: train 500, test 165"
        assert upstream_line("mimesis/TurtleGym-v0") == "upstream pack: train 423, test 48"


def test_list_users(capsys):
    assert main(["list", "users"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["alias", "backend", "label", "readiness", "description"]
    assert lines[1].split()[:4] == ["scripted", "scripted", "Scripted", "ready"]
    assert any(line.startswith("mimesis-9b") for line in lines)


def test_play_reads_actions_and_prints_the_score(monkeypatch, capsys):
    lines = iter(["[action] 1 1 1 1", "[search] test", "[answer] 29"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(lines))
    assert main(["play", "function", "--split", "demo", "--task", "fn-demo-01"]) == 0
    out = capsys.readouterr().out
    assert "For numbers [1.0, 1.0, 1.0, 1.0], the result is 1.0." in out
    assert out.rstrip().endswith("== episode score 1.0 after 3 turns ==")


def test_play_stops_on_end_of_input(monkeypatch, capsys):
    def eof(prompt=""):
        raise EOFError

    monkeypatch.setattr("builtins.input", eof)
    assert main(["play", "mimesis/FunctionGym-v0"]) == 0
    assert "episode score 0.0 after 0 turns" in capsys.readouterr().out


def test_unknown_env_names_the_known_ones(capsys):
    assert main(["play", "nope"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert re.search(r"unknown env 'nope'; known: travel \(mimesis/TravelGym-v0\), turtle", line)
    assert "abcd" in line and "telepathy-discrete" not in line  # a view env would be refused: not offered


def test_an_unknown_flag_points_at_its_subcommands_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["eval", "--agents", "oracle"])
    (line,) = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2
    assert line == "mimesis-gym eval: error: unrecognized arguments: --agents oracle (see mimesis-gym eval --help)"


def test_check_passes_as_a_console_script():
    out = subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "check", "--envs", "function"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip().splitlines()[-1] == "7 passed, 0 failed"


def test_check_fails_with_a_nonzero_exit(monkeypatch, capsys):
    from mimesis_gym.envs.function.env import FunctionEnv

    monkeypatch.setattr(FunctionEnv, "oracle_action", lambda self: "[finish]")
    assert main(["check", "--envs", "function"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_play_as_the_user_against_an_agent(monkeypatch, capsys):
    answers = iter(["Yes", "/quit"])
    monkeypatch.setattr("builtins.input", lambda prompt="": next(answers))
    assert (
        main(["play", "turtle", "--as", "user", "--agent", "scripted:noop", "--split", "demo", "--max-turns", "3"]) == 0
    )
    out = capsys.readouterr().out
    assert "you play the user against scripted:noop" in out
    assert "=== you are playing: oracle (turn 1) ===" in out and "[env]   Yes" in out
    assert "episode score 0.0 after 2 turns" in out


def test_list_agents(capsys):
    assert main(["list", "agents"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split() == ["alias", "label", "description"] and rows[0].startswith("tiny ")
    assert any("csd-agent" in row and "phanviethoang1512/Qwen3-8B-CSD-Agent" in row for row in rows)
    assert all(len(row.split()) >= 2 for row in rows)  # every alias is described


def test_the_cli_lets_openmp_threads_sleep_unless_told_otherwise(monkeypatch, capsys):
    """OMP_WAIT_POLICY=PASSIVE before torch loads (docs/users.md, "A local model"); a set value is kept."""
    from mimesis_gym.cli import OPENMP_WAIT_VARIABLE

    monkeypatch.delenv(OPENMP_WAIT_VARIABLE, raising=False)
    assert main(["list"]) == 0
    assert os.environ[OPENMP_WAIT_VARIABLE] == "PASSIVE"
    monkeypatch.setenv(OPENMP_WAIT_VARIABLE, "ACTIVE")
    assert main(["list"]) == 0
    assert os.environ[OPENMP_WAIT_VARIABLE] == "ACTIVE"
    monkeypatch.delenv(OPENMP_WAIT_VARIABLE)
    main(["serve-user", "tiny", "--print"])  # the vLLM it starts binds its own threads
    assert OPENMP_WAIT_VARIABLE not in os.environ
    capsys.readouterr()


def test_validation_problems_read_as_one_line_for_a_person():
    from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

    from mimesis_gym.core.errors import validation_problems

    class Inner(BaseModel):
        model_config = ConfigDict(extra="forbid")
        size: int = 1

        @model_validator(mode="after")
        def _small(self) -> "Inner":
            if self.size > 3:
                raise ValueError("size must be at most 3")
            return self

    class Outer(BaseModel):
        @model_validator(mode="after")
        def _inner(self) -> "Outer":
            try:
                Inner(size=5)
            except ValidationError as error:
                raise ValueError(validation_problems(error)) from None
            return self

    with pytest.raises(ValidationError) as nested:
        Outer()
    assert validation_problems(nested.value) == "size must be at most 3"  # no "Value error, " left
    with pytest.raises(ValidationError) as extra:
        Inner(colour="red")
    assert validation_problems(extra.value) == "colour: unknown key"


@pytest.mark.parametrize(
    ("argument", "problem"),
    [
        ("timeout_s=abc", "timeout_s: Input should be a valid number, unable to parse string as a number"),
        ("max_retries=-1", "max_retries: Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_user_arg_value_is_one_line_naming_the_field(tmp_path, capsys, argument, problem):
    user = "openai:m@http://127.0.0.1:9/v1"
    args = ["eval", "--users", user, "--agent", "oracle", "--envs", "turtle", "--limit", "1", "--no-progress",
            "--out", str(tmp_path / "run"), "--user-arg", argument]  # fmt: skip
    assert main(args) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"mimesis-gym eval: bad user_kwargs for '{user}': {problem}"
    assert not (tmp_path / "run").exists()


# ------------------------------------------------------------------------------------ eval --user-behaviors

EVAL = ["eval", "--envs", "function", "--agent", "oracle", "--limit", "1", "--max-turns", "2", "--no-progress"]


def one_line(capsys) -> str:
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--user-behaviors", "B3,B99"], "--user-behaviors: unknown user behavior 'B99'; known: control, B1, B2"),
        (["--user-behaviors", "B3"], "--user-behaviors B3: no env of this run (function) plays it; what each env"),
        (["--env-arg", "function.user_behavior=B3"], "set by the runner from its own flags: use --user-behaviors"),
    ],
)
def test_user_behavior_mistakes_are_one_line_and_write_nothing(tmp_path, capsys, flags, message):
    assert main([*EVAL, "--out", str(tmp_path / "run"), *flags]) == 2
    assert message in one_line(capsys)
    assert not (tmp_path / "run").exists()


def test_resume_refuses_other_user_behaviors(clean_env_table, tmp_path, capsys):
    from tests.support.behavior_env import ASK_ID, register

    register()
    out = tmp_path / "run"
    flags = ["eval", "--envs", f"function,{ASK_ID}", "--agent", "oracle", "--limit", "1", "--no-progress"]
    assert main([*flags, "--user-behaviors", "B3", "--out", str(out)]) == 0
    assert capsys.readouterr().err.startswith("user behaviours not applicable, skipped: B3 on function\n")
    before = (out / "episodes.jsonl").read_text()
    assert main(["eval", "--resume", "--out", str(out), "--user-behaviors", "B3,B9"]) == 2
    line = one_line(capsys)
    assert (
        "cannot change what it plays (user_behaviors: stored ['control', 'B3'], given ['control', 'B3', 'B9'])" in line
    )
    assert (out / "episodes.jsonl").read_text() == before
    assert main(["eval", "--resume", "--out", str(out), "--user-behaviors", "b3,control", "--no-progress"]) == 0
    assert (out / "episodes.jsonl").read_text() == before  # the same conditions, written another way: nothing to play
