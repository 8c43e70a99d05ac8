"""Training against hard users (docs/algorithms.md, "Training against hard users"): an env's
``user_behavior`` in the trainer's env kwargs, checked at config load, drawn per group, logged apart."""

import json

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.tasks import TaskSchedule, build_env_specs  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID as KEYWORD_ECHO  # noqa: E402
from mimesis_gym.algorithms.testing import tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from mimesis_gym.cli import main  # noqa: E402
from tests.support.hard_echo import CLI_ENV_ID, ENV_ID, PLAYED  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401

MIXTURE = {"control": 2, "B12": 1, "B13": 1}
APPLICABLE = "applicable: control, " + ", ".join(PLAYED)
JOB = "policy: factory:tests.test_learn_cli:must_not_load\npreset: cpu-tiny\nenvs:\n"


def job(tmp_path, *envs: str) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(JOB + "".join(f"  - {env}\n" for env in envs), encoding="utf-8")
    return str(path)


def hard_echo(user_behavior: str) -> str:
    return f'{{id: "{CLI_ENV_ID}", kwargs: {{user_behavior: {user_behavior}}}}}'


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (hard_echo("B99"), f"env '{CLI_ENV_ID}': user_behavior 'B99': unknown user behavior 'B99'; known: control"),
        (hard_echo("{B3: -1}"), "user_behavior {'B3': -1}: user behavior weight of 'B3' must be >= 0; got -1"),
        (hard_echo("{B3: .nan}"), "user behavior weight of 'B3' must be a finite number"),
        (hard_echo("{B3: 0}"), "user behavior weights must not all be 0"),
        (hard_echo("[control, B2]"), f"user behavior B2 does not apply to {CLI_ENV_ID}: HardEcho's user has no task "),
        (hard_echo("B2"), APPLICABLE),
        (
            f"{{id: {KEYWORD_ECHO}, kwargs: {{user_behavior: B3}}}}",
            f"user behavior B3 does not apply to {KEYWORD_ECHO}: the env has no user who talks: nothing to play; "
            "applicable: control",
        ),
    ],
)
@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["train", "dry-run"])
def test_a_bad_user_behavior_fails_at_config_load_in_one_line(tmp_path, capsys, env, message, dry_run):
    assert main(["train", "--config", job(tmp_path, KEYWORD_ECHO, env), *dry_run]) == 2
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mimesis-gym train: "), captured.err
    assert message in lines[0]
    assert captured.out == ""


def test_the_train_api_refuses_it_before_loading_the_policy():
    def must_not_load():
        raise AssertionError("the policy was loaded although an env's user behaviour is invalid")

    with pytest.raises(ValueError, match=f"does not apply to {KEYWORD_ECHO}"):
        Trainer([(KEYWORD_ECHO, {"user_behavior": "B13"})], must_not_load, config=TrainerConfig.preset("cpu-tiny"))


def test_the_dry_run_shows_each_envs_mixture(tmp_path, capsys):
    path = job(tmp_path, hard_echo("{control: 2, B12: 1, B13: 1}"), KEYWORD_ECHO)
    assert main(["train", "--config", path, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        f"user behaviours (one condition drawn per group): control 50%, B12 25%, B13 25% on {CLI_ENV_ID}; "
        f"control 100% on {KEYWORD_ECHO}"
    ) in out.splitlines()
    assert main(["train", "--config", job(tmp_path, KEYWORD_ECHO), "--dry-run"]) == 0
    assert "user behaviours" not in capsys.readouterr().out  # a run without hard users plans none


def conditions(schedule: TaskSchedule, steps: range) -> list[list[str]]:
    """The condition of every episode of each group of ``steps``, as the env made for it reports it."""
    found = []
    for step in steps:
        groups, _ = schedule.draw(step, 0, 0)
        for group in groups:
            members = []
            for request in schedule.requests(step, group):
                env = request.make_env()
                _, info = env.reset(seed=request.seed, options={"task_id": request.task_id})
                members.append(info["user_behavior"]["id"])
                env.close()
            found.append(members)
    return found


def test_one_condition_is_drawn_per_group_and_the_mixture_is_played():
    """Under env_seed=fixed every reset has seed 0, so an env drawing per reset would play one condition
    for the whole run; the schedule draws per group instead, from the run seed, step and group."""
    config = TrainerConfig.preset("cpu-tiny").with_overrides(["rollout.group_size=2", "run.val_fraction=0"])
    specs = build_env_specs([(ENV_ID, {"user_behavior": MIXTURE})], config, user_model="scripted")
    mix = specs[0].behaviors
    assert dict(zip(mix.conditions, mix.probabilities, strict=True)) == {"control": 0.5, "B12": 0.25, "B13": 0.25}
    first = conditions(TaskSchedule(specs, config), range(1, 9))
    assert all(len(set(members)) == 1 for members in first)  # a group's G episodes meet the same user
    assert {members[0] for members in first} == set(MIXTURE)
    assert first == conditions(TaskSchedule(specs, config), range(1, 9))  # the same run draws the same
    fixed = build_env_specs([(ENV_ID, {"user_behavior": "B13"})], config, user_model="scripted")
    assert {members[0] for members in conditions(TaskSchedule(fixed, config), range(1, 3))} == {"B13"}


def test_a_short_run_logs_each_conditions_reward_and_enacted_share(tmp_path):
    overrides = [
        "rollout.group_size=2", "rollout.prompts_per_batch=4", "update.mini_batch_prompts=4", "run.total_steps=2",
        "run.eval_every=2", "run.save_every=0", "run.progress=false", "run.dump_rollouts=true",
        f"run.output_dir={tmp_path}",
    ]  # fmt: skip
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    envs = [(ENV_ID, {"user_behavior": MIXTURE, "reward_rule": "parity"})]
    Trainer(envs, tiny_random_model(seed=0), config=config).fit()
    logged = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    for metrics in logged:
        episodes = [json.loads(line) for line in (tmp_path / "rollouts" / f"step_{metrics['step']}.jsonl").open()]
        played = sorted({e["user_behavior"] for e in episodes})
        expected = {}
        for condition in played:
            own = [e for e in episodes if e["user_behavior"] == condition]
            expected[f"reward/behavior/{condition}"] = sum(t["reward"] for e in own for t in e["turns"]) / len(own)
            if condition != "control":
                expected[f"enacted/behavior/{condition}"] = sum(e["behavior_enacted"] for e in own) / len(own)
        assert {k: v for k, v in metrics.items() if k.startswith(("reward/behavior/", "enacted/behavior/"))} == (
            pytest.approx(expected)
        )
        assert set(played) <= set(MIXTURE) and len(played) > 1
    assert any(
        metrics[f"enacted/behavior/{c}"] > 0
        for metrics in logged
        for c in ("B12", "B13")
        if f"enacted/behavior/{c}" in metrics
    )
    validated = {key.rpartition("/")[2] for key in logged[-1] if key.startswith("val/score/behavior/")}
    assert validated and validated <= set(MIXTURE)  # each validation task met one condition of the mixture


def test_a_run_without_hard_users_logs_no_condition(tmp_path):
    overrides = [
        "rollout.group_size=2", "rollout.prompts_per_batch=2", "update.mini_batch_prompts=2", "run.total_steps=1",
        "run.eval_every=0", "run.save_every=0", "run.progress=false", f"run.output_dir={tmp_path}",
    ]  # fmt: skip
    config = TrainerConfig.preset("cpu-tiny").with_overrides(overrides)
    metrics = Trainer([ENV_ID], tiny_random_model(seed=0), config=config).step()
    assert not [key for key in metrics if "/behavior/" in key]
