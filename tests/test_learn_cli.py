"""``mimesis-gym train`` user errors (issue 13): one line on stderr, exit status 2, before any model is loaded."""

import subprocess
import sys

import pytest

from mimesis_gym.cli import main

GOOD = "envs: [mimesis_testing/KeywordEcho-v0]\npolicy: factory:tests.test_learn_cli:must_not_load\npreset: cpu-tiny\n"


def must_not_load():
    raise AssertionError("the policy was loaded although the job is invalid")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            GOOD + "algorithm: ppo\n",
            "unknown algorithm 'ppo'; known: grpo, grpo-outcome, foldgrpo, infopo, csd, sft, "
            "or a learner as 'module:Class'",
        ),
        (GOOD + "algorithm: [grpo]\n", "algorithm must be a name"),
        ("envs: [mimesis_testing/KeywordEcho-v0\npolicy: tiny\n", "is not valid YAML: expected ',' or ']'"),
        (
            GOOD.replace("mimesis_testing/KeywordEcho-v0", "mimesis/NoSuchGym-v0"),
            "unknown env id 'mimesis/NoSuchGym-v0'",
        ),
        (GOOD.replace("mimesis_testing/", "no_such_module:mimesis_testing/"), "No module named 'no_such_module'"),
        (GOOD + "run: {total_steps: 0}\n", "run.total_steps: Input should be greater than or equal to 1"),
        (GOOD + "run: {total_stepz: 2}\n", "run.total_stepz: unknown key"),
        (GOOD + "optim: {lr: .inf}\n", "optim.lr: Input should be a finite number"),
        (GOOD + "optim: {betas: [0.9, .nan]}\n", "optim.betas.1: Input should be a finite number"),
        (GOOD + "loss: {dual_clip: -.inf}\n", "loss.dual_clip: Input should be a finite number"),
        (GOOD.replace("must_not_load", "no_such_factory"), "has no attribute 'no_such_factory'"),
        (
            GOOD + "algorithm: csd\ncsd: {coach: {kind: scripted}}\n",
            "csd.coach: kind='scripted' needs csd.coach.callable",
        ),
        (
            GOOD.replace("factory:tests.test_learn_cli:must_not_load", "hf:/no/such/policy"),
            "policy: 'hf:/no/such/policy': no model at '/no/such/policy': hf: takes a local directory or a hub id "
            "already in the Hugging Face cache (download it first, e.g. `huggingface-cli download ORG/NAME`)",
        ),
        (
            GOOD.replace("factory:tests.test_learn_cli:must_not_load", "/no/such/policy"),
            "no model at '/no/such/policy'",
        ),
        (GOOD + "user: hf:/no/such/user\n", "user: 'hf:/no/such/user': no model at '/no/such/user'"),
        (GOOD + "judge: no-such-judge\n", "judge: unknown user alias 'no-such-judge'"),
        (
            GOOD + "algorithm: csd\ncsd: {coach: {model: hf:/no/such/coach}}\n",
            "csd.coach.model: 'hf:/no/such/coach': no model at '/no/such/coach'",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["train", "dry-run"])
def test_a_bad_job_prints_one_line_and_exits_2(tmp_path, capsys, text, message, dry_run):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    assert main(["train", "--config", str(path), *dry_run]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mimesis-gym train: "), captured.err
    assert message in lines[0]
    assert captured.out == ""


def test_a_bad_file_in_each_format_and_a_missing_file(tmp_path, capsys):
    for name, text, message in [
        ("job.json", '{"envs": [', "is not valid JSON"),
        ("job.toml", "envs = [", "is not valid TOML"),
        ("job.ini", "[job]", "use .json, .yaml, .yml or .toml"),
    ]:
        (tmp_path / name).write_text(text)
        assert main(["train", "--config", str(tmp_path / name)]) == 2
        assert message in capsys.readouterr().err
    assert main(["train", "--config", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml' does not exist" in capsys.readouterr().err


def test_the_command_line_shows_no_traceback(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(GOOD + "algorithm: ppo\n")
    completed = subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "train", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        "mimesis-gym train: unknown algorithm 'ppo'; known: grpo, grpo-outcome, foldgrpo, infopo, csd, sft, "
        "or a learner as 'module:Class'"
    ]


def test_an_implausible_size_warns_naming_the_setting_and_its_value(tmp_path, capsys):
    """``group_size: 1.0e+8`` is kept (a typo is still a valid number) but warned about before training."""
    from mimesis_gym.core.config import ImplausibleSettingWarning

    path = tmp_path / "job.yaml"
    path.write_text(
        GOOD.replace("factory:tests.test_learn_cli:must_not_load", "tiny") + "rollout: {group_size: 1.0e+8}\n"
    )
    with pytest.warns(
        ImplausibleSettingWarning, match=r"rollout\.group_size=100,000,000 is beyond the plausible bound 1,024"
    ):
        assert main(["train", "--config", str(path), "--dry-run"]) == 0
    assert "G 100000000 x 4 prompts" in capsys.readouterr().out
