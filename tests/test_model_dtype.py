"""Parameters in the dtype ``model.dtype`` names (docs/algorithms.md, "Precision and memory")."""

import warnings

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import ModelConfig, TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.policy import load_policy, update_precision_problem  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, ReplayCollector, tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401
from tests.test_learner_golden import load_rollouts  # noqa: E402

ENVS = [(ENV_ID, {"reward_rule": "parity"})]
SMALL = [
    "rollout.group_size=2", "rollout.prompts_per_batch=2", "update.mini_batch_prompts=2", "optim.lr=1e-3",
    "run.total_steps=1", "run.eval_every=0", "run.save_every=0", "run.progress=false",
]  # fmt: skip


def test_fp32_parameters_by_default_and_auto_is_bf16_on_a_gpu_only():
    assert TrainerConfig().model.dtype == "float32"
    assert ModelConfig().resolved_dtype(cuda=True) == "float32"
    assert ModelConfig(dtype="auto").resolved_dtype(cuda=True) == "bfloat16"
    assert ModelConfig(dtype="auto").resolved_dtype(cuda=False) == "float32"
    with pytest.raises(ValueError, match=r"model\.dtype"):
        TrainerConfig().with_overrides(["model.dtype=int8"])


def test_16_bit_parameters_at_the_papers_learning_rate_are_flagged():
    problem = update_precision_problem("bfloat16", 1e-6)
    assert "model.dtype=bfloat16 with optim.lr=1e-06" in problem and "model.dtype=float32" in problem
    assert update_precision_problem("float16", 1e-6) is not None
    assert update_precision_problem("bfloat16", 1e-3) is None and update_precision_problem("float32", 1e-9) is None
    # what the check predicts: one AdamW step at lr 1e-6 leaves almost every bf16 weight of std 0.02 unchanged
    generator = torch.Generator().manual_seed(0)
    weights = (torch.randn(100_000, generator=generator) * 0.02).to(torch.bfloat16).requires_grad_()
    start = weights.detach().clone()
    weights.grad = torch.randn(100_000, generator=generator).to(torch.bfloat16)
    torch.optim.AdamW([weights], lr=1e-6).step()
    assert (weights.detach() != start).float().mean() < 0.05


def trainer(tmp_path, dtype, model, *extra):
    overrides = [*SMALL, f"run.output_dir={tmp_path}", f"model.dtype={dtype}", *extra]
    return Trainer(ENVS, model, algorithm="grpo", config=TrainerConfig.preset("cpu-tiny").with_overrides(overrides))


def test_bf16_parameters_train_in_bf16_with_bf16_optimizer_states(tmp_path):
    model, tokenizer = tiny_random_model(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # lr 1e-3 is large enough: no precision warning
        run = trainer(tmp_path, "bfloat16", (model, tokenizer))
    params = list(run.policy_model.parameters())
    assert {p.dtype for p in params} == {torch.bfloat16}
    before = [p.detach().clone() for p in params]
    run.collector = ReplayCollector(load_rollouts("grpo-sampler")[:1])  # recorded: mixed rewards on any CPU
    metrics = run.step()
    assert metrics["group/zero_std_frac"] < 1 and metrics["grad_norm"] > 0
    assert any(not torch.equal(p.detach(), b) for p, b in zip(params, before, strict=True))
    states = [s for s in run.optimizer.optimizer.state.values() if "exp_avg" in s]
    assert states and all(s["exp_avg"].dtype == s["exp_avg_sq"].dtype == torch.bfloat16 for s in states)


def test_a_given_model_is_cast_to_the_resolved_dtype_and_a_low_lr_warns(tmp_path):
    model, tokenizer = tiny_random_model(seed=0)
    run = trainer(tmp_path, "auto", (model.to(torch.bfloat16), tokenizer))  # auto on CPU: fp32
    assert {p.dtype for p in run.policy_model.parameters()} == {torch.float32}
    with pytest.warns(UserWarning, match=r"model\.dtype=bfloat16 with optim\.lr=1e-06"):
        low = trainer(tmp_path / "low", "bfloat16", tiny_random_model(seed=0), "optim.lr=1e-6")
    assert {p.dtype for p in low.policy_model.parameters()} == {torch.bfloat16}  # warned, not refused


def test_load_policy_loads_a_checkpoint_in_the_named_dtype_and_refuses_others(tmp_path):
    model, tokenizer = tiny_random_model(seed=0)
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    loaded, _ = load_policy(str(tmp_path), "bfloat16")
    assert {p.dtype for p in loaded.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in load_policy(f"hf:{tmp_path}")[0].parameters()} == {torch.float32}
    with pytest.raises(ValueError, match="must name a floating-point torch dtype"):
        load_policy((model, tokenizer), "int64")
