"""``mimesis-gym train --dry-run``, the per-GPU memory estimate and the accelerate config files.

See docs/algorithms.md, "Precision and memory" and "Several processes: DDP and FSDP".
"""

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="the local stack is installed by `make test`")
pytest.importorskip("accelerate", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.cli import env_turn_limit, train_main, turns_plan
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.memory import GIB, Layout, estimate_memory, model_shape, read_layout
from mimesis_gym.algorithms.model_specs import check_policy_spec
from mimesis_gym.core.errors import ConfigurationError

CONFIGS = Path(__file__).parent.parent / "configs" / "accelerate"
QWEN3_8B = {  # Qwen3-8B's published architecture
    "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936, "hidden_size": 4096,
    "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "tie_word_embeddings": False,
}  # fmt: skip


@pytest.fixture(scope="module")
def qwen3_8b(tmp_path_factory):
    path = tmp_path_factory.mktemp("qwen3-8b")
    (path / "config.json").write_text(json.dumps(QWEN3_8B), encoding="utf-8")
    return path


def test_the_shape_is_counted_from_the_config_alone(qwen3_8b):
    shape = model_shape(str(qwen3_8b))  # a directory with only config.json: no weights are read
    assert shape.parameters == 8_190_735_360  # Qwen3-8B's parameter count
    assert (shape.layers, shape.hidden, shape.intermediate, shape.vocab) == (36, 4096, 12288, 151936)
    with pytest.raises(ValueError, match="cannot read the config of policy"):
        model_shape(str(qwen3_8b / "missing"))


def test_the_estimate_follows_its_formulas(qwen3_8b):
    shape = model_shape(str(qwen3_8b))
    ddp, fsdp = read_layout(CONFIGS / "ddp_8gpu.yaml"), read_layout(CONFIGS / "fsdp_8gpu.yaml")
    assert (ddp.processes, ddp.sharded, fsdp.processes, fsdp.sharded) == (8, False, 8, True)
    config = TrainerConfig()
    replicated, sharded = estimate_memory(config, shape, ddp), estimate_memory(config, shape, fsdp)
    p = shape.parameters
    assert (replicated.parameters, replicated.gradients, replicated.optimizer) == (4 * p, 4 * p, 8 * p)
    assert (sharded.parameters, sharded.optimizer) == (4 * p / 8, 8 * p / 8) and replicated.gathered == 0
    assert sharded.gathered == 2 * p / 36 * 2  # two layers in bf16
    tokens = 9344
    layer = tokens * (8 * 4096 + 3 * 12288) * 2
    assert sharded.activations == 36 * tokens * 4096 * 2 + layer + tokens * 151936 * (2 + 8)
    assert 30 < sharded.total / GIB < 40 < 80 < replicated.total / GIB  # 8B: FSDP fits 80 GB GPUs, DDP does not
    off = estimate_memory(config.with_overrides(["update.gradient_checkpointing=false"]), shape)
    assert off.activations == 36 * layer + tokens * 151936 * 10 and not off.checkpointing
    bf16 = estimate_memory(config.with_overrides(["model.dtype=auto"]), shape, Layout())
    assert (bf16.parameters, bf16.optimizer, bf16.parameter_dtype) == (2 * p, 4 * p, "bfloat16")


def test_the_accelerate_files_are_valid_for_accelerate():
    from accelerate.commands.config import cluster
    from accelerate.commands.config.config_args import ClusterConfig

    ddp = ClusterConfig.from_yaml_file(CONFIGS / "ddp_8gpu.yaml")  # unknown top-level keys raise
    fsdp = ClusterConfig.from_yaml_file(CONFIGS / "fsdp_8gpu.yaml")
    assert (ddp.distributed_type.value, ddp.num_processes, ddp.mixed_precision) == ("MULTI_GPU", 8, "bf16")
    assert (fsdp.distributed_type.value, fsdp.num_processes, fsdp.mixed_precision) == ("FSDP", 8, "bf16")
    known = set(re.findall(r'fsdp_config\["(\w+)"\]', Path(cluster.__file__).read_text(encoding="utf-8")))
    assert set(fsdp.fsdp_config) <= known, set(fsdp.fsdp_config) - known
    assert (
        fsdp.fsdp_config["fsdp_version"] == 2 and fsdp.fsdp_config["fsdp_auto_wrap_policy"] == "TRANSFORMER_BASED_WRAP"
    )


def job(tmp_path, policy):
    path = tmp_path / "job.json"
    config = {"envs": ["mimesis_testing/KeywordEcho-v0"], "policy": policy, "algorithm": "csd"}
    path.write_text(json.dumps({**config, "run": {"output_dir": str(tmp_path / "out")}}), encoding="utf-8")
    return str(path)


def test_dry_run_prints_the_plan_and_memory_and_trains_nothing(tmp_path, qwen3_8b, capsys):
    status = train_main(["--config", job(tmp_path, f"hf:{qwen3_8b}"), "--dry-run",
                         "--accelerate-config", str(CONFIGS / "fsdp_8gpu.yaml")])  # fmt: skip
    out = capsys.readouterr().out
    assert status == 0 and not (tmp_path / "out").exists()
    assert (
        "rollouts: G 8 x 64 prompts, 3 turns (mimesis_testing/KeywordEcho-v0 ends episodes after 3 turns, its "
        "max_episode_steps; rollout.max_turns 16), prompt 1,152 / response 8,192 tokens"
    ) in out
    assert "csd: alpha 0.01, beta 5.0, coach corrective, pairing reaction" in out
    assert "precision on GPUs: parameters float32 (model.dtype=float32), compute bfloat16 (run.dtype=auto)" in out
    assert "model: 8,190,735,360 parameters, 36 layers" in out
    assert "memory per GPU (estimate; 8 process(es), FSDP (sharded), from fsdp_8gpu.yaml):" in out
    total = estimate_memory(TrainerConfig(), model_shape(str(qwen3_8b)), read_layout(CONFIGS / "fsdp_8gpu.yaml"))
    assert f"  total           {total.total / GIB:8.2f} GiB" in out


def test_the_planned_turns_are_what_the_envs_let_an_episode_last():
    abcd, travel = "mimesis/ABCDBehavior-v0", "mimesis/TravelGym-v0"
    budget = f"{abcd} ends episodes after 8 turns, its turn budget"
    assert turns_plan([travel], 16) == "16 turns"
    assert turns_plan([abcd], 16) == f"8 turns ({budget}; rollout.max_turns 16)"
    five = f"5 turns ({abcd} ends episodes after 5 turns, its turn budget; rollout.max_turns 16)"
    assert turns_plan([(abcd, {"turn_budget": 5})], 16) == five
    assert turns_plan([abcd, travel], 16) == f"16 turns ({budget}; rollout.max_turns 16)"  # Travel goes on to 16
    assert turns_plan([abcd], 4) == "4 turns"  # the rollout cap is the smaller: nothing to add
    # an upstream pack whose data are not here: the env cannot tell, the run will say why
    assert env_turn_limit(abcd, {"pack": "upstream", "data_dir": "/nonexistent"}) == (16, "its max_episode_steps")


def test_dry_run_without_a_readable_model_config_says_why(tmp_path, capsys):
    (tmp_path / "no-config").mkdir()  # a directory, but no config.json in it
    assert train_main(["--config", job(tmp_path, str(tmp_path / "no-config")), "--dry-run"]) == 0
    assert "memory per GPU: unknown (cannot read the config of policy" in capsys.readouterr().out


@pytest.fixture
def empty_hub_cache(tmp_path, monkeypatch):
    """A Hugging Face cache of our own: a hub id is cached only when a test puts it there."""
    import huggingface_hub.constants

    cache = tmp_path / "hub-cache"
    cache.mkdir()
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def test_dry_run_refuses_a_policy_that_is_not_here(tmp_path, capsys, empty_hub_cache):
    """A missing path fails the dry run as it would fail training: one line, exit 2."""
    for policy, shown in [
        (f"hf:{tmp_path / 'nowhere'}", f"no model at '{tmp_path / 'nowhere'}'"),
        (str(tmp_path / "nowhere"), f"no model at '{tmp_path / 'nowhere'}'"),
        ("hf:./nowhere/model", "no model at './nowhere/model'"),
    ]:
        assert train_main(["--config", job(tmp_path, policy), "--dry-run"]) == 2
        captured = capsys.readouterr()
        assert captured.out == "" and captured.err.count("\n") == 1
        assert captured.err.startswith(f"mimesis-gym train: policy: {policy!r}: {shown}")
        assert "download it first, e.g. `huggingface-cli download ORG/NAME`" in captured.err


def test_dry_run_plans_a_known_uncached_hub_id_and_says_it_must_be_downloaded(tmp_path, capsys, empty_hub_cache):
    hub_id = "phanviethoang1512/Qwen3-8B-CSD-Agent"
    assert train_main(["--config", job(tmp_path, f"hf:{hub_id}"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "model: 8,190,735,360 parameters" in out  # planned from the known architecture, offline
    assert out.rstrip().endswith(
        f"policy weights: '{hub_id}' is not in this machine's Hugging Face cache; training here needs it "
        f"downloaded first (`huggingface-cli download {hub_id}`)"
    )
    (empty_hub_cache / f"models--{hub_id.replace('/', '--')}").mkdir()
    assert check_policy_spec(f"hf:{hub_id}", planning=True) is None  # cached: nothing to say


def test_dry_run_plans_an_unknown_uncached_hub_id_without_its_memory(tmp_path, capsys, empty_hub_cache):
    """A plan needs no weights: a hub id neither cached nor in the built-in table is planned, memory unknown."""
    hub_id = "some-org/uncached-model"
    assert train_main(["--config", job(tmp_path, f"hf:{hub_id}"), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "memory per GPU: unknown" in out
    assert out.rstrip().endswith(f"downloaded first (`huggingface-cli download {hub_id}`)")
    with pytest.raises(ConfigurationError, match=r"^policy: .*no model at 'some-org/uncached-model'"):
        check_policy_spec(f"hf:{hub_id}")  # training (not planning) refuses it


def test_training_refuses_a_policy_that_is_not_here_before_loading_anything(tmp_path, empty_hub_cache):
    """The library entry checks too: ``train()`` raises before any model (or the accelerator) is built."""
    from mimesis_gym.algorithms import train

    config = TrainerConfig.preset("cpu-tiny").with_overrides([f"run.output_dir={tmp_path / 'out'}"])
    for policy in (f"hf:{tmp_path / 'nowhere'}", "hf:phanviethoang1512/Qwen3-8B-CSD-Agent"):
        with pytest.raises(ConfigurationError, match=r"^policy: .*no model at .*download it first"):
            train(["mimesis_testing/KeywordEcho-v0"], policy, "scripted", "grpo", config=config)
    with pytest.raises(ConfigurationError, match=r"^user: 'hf:/no/such/user': no model at"):
        train(["mimesis_testing/KeywordEcho-v0"], "tiny", "hf:/no/such/user", "grpo", config=config)
    assert not (tmp_path / "out").exists()


def test_dry_run_user_errors_exit_2_on_one_line(tmp_path, capsys):
    assert train_main(["--config", job(tmp_path, "tiny"), "--accelerate-config", "x.yaml"]) == 2
    assert capsys.readouterr().err.strip() == (
        "mimesis-gym train: --accelerate-config is read by --dry-run only (pass it to `accelerate launch`)"
    )
    bad = tmp_path / "accelerate.yaml"
    bad.write_text("distributed_type: FSDP\nnum_processes: 0\n", encoding="utf-8")
    assert train_main(["--config", job(tmp_path, "tiny"), "--dry-run", "--accelerate-config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "num_processes must be a positive integer; got 0" in err
