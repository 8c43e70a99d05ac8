"""Trainer configuration, presets and the ``mimesis-gym train`` entry.

See docs/algorithms.md, "Defaults and presets", "Starting a run".
"""

import json

import pytest

from mimesis_gym.algorithms.cli import build_job, train_main
from mimesis_gym.algorithms.config import AdvantageConfig, AlgorithmConfig, TrainerConfig


def test_library_defaults_are_the_paper_preset():
    config = TrainerConfig()
    assert config == TrainerConfig.preset("paper")
    assert (config.loss.clip_low, config.loss.clip_high, config.loss.dual_clip) == (0.2, 0.28, 10.0)
    assert (config.rollout.group_size, config.rollout.prompts_per_batch, config.update.mini_batch_prompts) == (8, 64, 8)
    assert (config.rollout.max_prompt_tokens, config.rollout.max_response_tokens, config.rollout.max_turns) == (
        1152, 8192, 16,
    )  # fmt: skip
    assert (config.optim.lr, config.optim.weight_decay, config.optim.grad_clip) == (1e-6, 0.01, 1.0)
    assert (config.csd.alpha, config.csd.beta, config.csd.placebo) == (0.01, 5.0, False)
    assert (config.csd.coach.style, config.csd.pairing) == ("corrective", "reaction")  # the paper's coach
    assert config.update.micro_batch_tokens == 9344 and config.advantage.gamma == 0.8
    assert config.advantage.estimator_options()["turn_credit"] == "r2g"
    assert config.rollout.reward_profile == "train" and not config.csd.enabled


def test_presets():
    release = TrainerConfig.preset("mimesis-release")
    assert (release.loss.clip_high, release.loss.dual_clip, release.loss.token_mean_scope) == (0.2, 3.0, "microbatch")
    assert release.csd.placebo and release.csd.skip_envs == ["function", "tau"]  # the envs declare it
    assert (release.csd.coach.style, release.csd.pairing) == ("prospective", "answered")
    coach = TrainerConfig.preset("csd-release-coach")
    assert (coach.csd.coach.style, coach.csd.pairing) == ("prospective", "answered")
    assert coach.model_copy(update={"csd": TrainerConfig().csd}) == TrainerConfig()  # nothing else changes
    assert release.rollout.end_on_invalid_action and release.run.total_epochs == 5
    userrl = TrainerConfig.preset("userrl")
    assert userrl.advantage.estimator_options() == {
        "gamma": 0.8, "trajectory_score": "mean", "turn_credit": "equalized", "std_normalize": True,
    }  # fmt: skip
    assert (userrl.rollout.prompts_per_batch, userrl.update.mini_batch_prompts, userrl.run.total_epochs) == (
        128,
        16,
        15,
    )
    infopo = TrainerConfig.preset("infopo-official")
    assert infopo.advantage.estimator == "infopo" and infopo.rollout.group_size == 5
    assert (infopo.optim.lr, infopo.loss.entropy_coef, infopo.update.mini_batch_prompts) == (3e-7, 0.001, 16)
    simulator = TrainerConfig.preset("mimesis-simulator")
    assert simulator.advantage.estimator == "foldgrpo" and simulator.run.total_steps == 500
    assert (simulator.rollout.max_prompt_tokens, simulator.rollout.max_response_tokens) == (8192, 16384)
    tiny = TrainerConfig.preset("cpu-tiny")
    assert (tiny.rollout.group_size, tiny.rollout.prompts_per_batch, tiny.update.mini_batch_prompts) == (4, 4, 4)
    assert (tiny.optim.lr, tiny.rollout.max_tokens_per_turn, tiny.update.micro_batch_tokens) == (5e-5, 16, 4096)
    assert tiny.run.dtype == "float32" and tiny.run.total_steps == 30
    with pytest.raises(ValueError, match="known: paper"):
        TrainerConfig.preset("nope")


def test_algorithm_overrides_exactly_the_estimator_and_csd_switch():
    base = TrainerConfig.preset("userrl")
    csd = base.with_algorithm("csd")
    assert csd.csd.enabled and csd.advantage.estimator == "grpo_multiturn"
    assert csd.advantage.turn_credit == "equalized" and csd.rollout.prompts_per_batch == 128  # the rest is kept
    assert base.with_algorithm(None) == base
    custom = base.with_algorithm(AlgorithmConfig(advantage=AdvantageConfig(estimator="foldgrpo"), csd=False))
    assert custom.advantage.estimator == "foldgrpo" and not custom.csd.enabled
    with pytest.raises(ValueError, match="unknown algorithm"):
        base.with_algorithm("ppo")


def test_validation_and_overrides():
    with pytest.raises(ValueError, match="dual_clip"):
        TrainerConfig.model_validate({"loss": {"dual_clip": 1.0}})
    with pytest.raises(ValueError):
        TrainerConfig.model_validate({"rollout": {"group_sise": 4}})
    config = TrainerConfig().with_overrides(["loss.clip_high=0.2", "csd.skip_envs=[tau]", "run.dtype=bfloat16"])
    assert (config.loss.clip_high, config.csd.skip_envs, config.run.dtype) == (0.2, ["tau"], "bfloat16")


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ("vllm.mode=server", "vllm.mode: 'server' (an external vLLM policy server) is not implemented; use 'colocate'"),
        ("vllm.server_url=http://127.0.0.1:8000", "vllm.server_url: unknown key"),
        ("vllm.weight_sync=auto", "vllm.weight_sync: unknown key"),
    ],
)
def test_a_vllm_setting_the_trainer_would_not_read_is_refused(tmp_path, capsys, setting, problem):
    """No server mode exists: ``vllm.mode="server"`` and its settings fail at config time, never train colocated."""
    with pytest.raises(ValueError, match=setting.split("=")[0].split(".")[1]):
        TrainerConfig().with_overrides([setting])
    path = tmp_path / "job.yaml"
    path.write_text("envs: [mimesis_testing/KeywordEcho-v0]\npolicy: tiny\nalgorithm: grpo\npreset: cpu-tiny\n")
    assert train_main(["--config", str(path), "--set", setting, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mimesis-gym train: {problem}") and err.count("\n") == 1
    assert TrainerConfig().with_overrides(["vllm.mode=colocate"]).vllm.mode == "colocate"


def test_files_in_three_formats(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({"preset": "cpu-tiny", "run": {"total_steps": 3}}))
    (tmp_path / "a.yaml").write_text("preset: cpu-tiny\nrun:\n  total_steps: 3\n")
    (tmp_path / "a.toml").write_text('preset = "cpu-tiny"\n[run]\ntotal_steps = 3\n')
    loaded = [TrainerConfig.load(tmp_path / name) for name in ("a.json", "a.yaml", "a.toml")]
    assert loaded[0] == loaded[1] == loaded[2]
    assert loaded[0].run.total_steps == 3 and loaded[0].rollout.group_size == 4


def test_cli_job_file_and_sets(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(
        "envs: [mimesis_testing/KeywordEcho-v0]\npolicy: tiny\nalgorithm: grpo\n"
        "preset: cpu-tiny\nrun: {total_steps: 5}\n"
    )
    job, config = build_job(path, ["algorithm=csd", "run.total_steps=2", "csd.coach.kind=scripted"])
    assert job == {"envs": ["mimesis_testing/KeywordEcho-v0"], "policy": "tiny", "algorithm": "csd"}
    assert config.run.total_steps == 2 and config.csd.coach.kind == "scripted" and config.rollout.group_size == 4
    (tmp_path / "empty.json").write_text("{}")
    assert train_main(["--config", str(tmp_path / "empty.json")]) == 2


@pytest.mark.slow
def test_cli_trains_one_step(tmp_path, capsys, monkeypatch):
    torch = pytest.importorskip("torch")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setattr(torch, "set_num_threads", lambda n: None)  # keep one thread for this small model
    path = tmp_path / "job.json"
    path.write_text(json.dumps({
        "envs": [{"id": "mimesis_testing/KeywordEcho-v0", "kwargs": {"reward_rule": "parity"}}],
        "policy": "factory:mimesis_gym.algorithms.testing:tiny_random_model",
        "algorithm": "grpo",
        "preset": "cpu-tiny",
        "run": {"total_steps": 1, "output_dir": str(tmp_path / "run"), "progress": False},
    }))  # fmt: skip
    assert train_main(["--config", str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["steps"] == 1 and summary["last_checkpoint"].endswith("step_1")
    assert (tmp_path / "run" / "metrics.jsonl").is_file()
    monkeypatch.undo()
    torch.set_num_threads(threads)


def test_the_cpu_simulator_preset_is_the_simulator_preset_scaled_down():
    """``mimesis-simulator-cpu`` (the simulator example and benchmark): the paper's simulator RL, small."""
    full, cpu = TrainerConfig.preset("mimesis-simulator"), TrainerConfig.preset("mimesis-simulator-cpu")
    assert cpu.advantage.estimator == full.advantage.estimator == "foldgrpo"
    assert cpu.loss == full.loss and cpu.rollout.max_prompt_tokens == full.rollout.max_prompt_tokens
    assert (cpu.rollout.group_size, cpu.rollout.prompts_per_batch, cpu.update.mini_batch_prompts) == (4, 4, 4)
    assert (cpu.rollout.max_turns, cpu.rollout.max_tokens_per_turn, cpu.optim.lr) == (1, 48, 5e-5)
    assert (cpu.run.total_steps, cpu.run.dtype) == (16, "float32")
    assert full.optim.lr == 8e-6 and full.rollout.group_size == 8  # the full preset is untouched


def _float_settings(model_class, prefix=""):
    """Every float setting of a pydantic settings model, as (dotted path, a non-finite value to try)."""
    from pydantic import BaseModel

    for name, field in model_class.model_fields.items():
        annotation = str(field.annotation)
        if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from _float_settings(field.annotation, f"{prefix}{name}.")
        elif annotation.startswith("tuple[float"):
            yield f"{prefix}{name}", [float("inf"), 0.5]
        elif "float" in annotation and "Literal" not in annotation:
            yield f"{prefix}{name}", float("nan")


TRAINER_FLOATS = list(_float_settings(TrainerConfig))


def test_the_walk_finds_every_kind_of_float_setting():
    paths = [path for path, _ in TRAINER_FLOATS]
    assert {"optim.lr", "optim.betas", "loss.dual_clip", "csd.coach.temperature", "vllm.gpu_memory_utilization"} <= set(
        paths
    )
    assert len(paths) >= 20


@pytest.mark.parametrize(("path", "value"), TRAINER_FLOATS, ids=[path for path, _ in TRAINER_FLOATS])
def test_every_float_setting_refuses_non_finite_values(path, value):
    """One shared rule (core.config.ConfigModel, allow_inf_nan=False): .inf / .nan fail naming the setting."""
    data: dict = {}
    node = data
    *groups, name = path.split(".")
    for group in groups:
        node = node.setdefault(group, {})
    node[name] = value
    with pytest.raises(ValueError, match=rf"{path}(\.0)?\n  Input should be a finite number"):
        TrainerConfig.load(data)
    config = TrainerConfig()
    target = config
    for group in groups:
        target = getattr(target, group)
    with pytest.raises(ValueError, match="finite number"):  # assignment is validated too
        setattr(target, name, value)


def test_eval_and_endpoint_configs_refuse_non_finite_floats():
    from mimesis_gym.core.http import EndpointConfig
    from mimesis_gym.evaluation.runner import EvalConfig

    for model, fields in ((EvalConfig, {}), (EndpointConfig, {"base_url": "http://127.0.0.1:1/v1", "model": "m"})):
        for path, value in _float_settings(model):
            with pytest.raises(ValueError, match=rf"{path}\n  Input should be a finite number"):
                model(**fields, **{path: value})


@pytest.mark.parametrize(
    ("data", "setting"),
    [
        ({"rollout": {"group_size": 10**8}}, "rollout.group_size=100,000,000 is beyond the plausible bound 1,024"),
        (
            {"rollout": {"prompts_per_batch": 5000}},
            "rollout.prompts_per_batch=5,000 is beyond the plausible bound 4,096",
        ),
        ({"rollout": {"max_tokens_per_turn": 2**21}}, "rollout.max_tokens_per_turn=2,097,152 is beyond"),
        ({"update": {"micro_batch_tokens": 2**30}}, "update.micro_batch_tokens=1,073,741,824 is beyond"),
        ({"csd": {"coach": {"max_tokens": 2**21}}}, "csd.coach.max_tokens=2,097,152 is beyond"),
    ],
)
def test_implausible_sizes_warn_and_are_kept(data, setting):
    from mimesis_gym.core.config import ImplausibleSettingWarning

    with pytest.warns(ImplausibleSettingWarning, match=setting.replace(".", r"\.")):
        config = TrainerConfig.load(data)
    assert _holds(config.model_dump(), data)


def _holds(dump, data):
    """Whether every value of the nested ``data`` is in ``dump`` unchanged."""
    return all(
        _holds(dump[key], value) if isinstance(value, dict) else dump[key] == value for key, value in data.items()
    )


def test_the_presets_and_defaults_warn_about_nothing(recwarn):
    from mimesis_gym.algorithms.config import PRESETS
    from mimesis_gym.core.config import ImplausibleSettingWarning
    from mimesis_gym.evaluation.runner import EvalConfig

    for name in PRESETS:
        TrainerConfig.preset(name)
    EvalConfig()
    assert not [w for w in recwarn if issubclass(w.category, ImplausibleSettingWarning)]
