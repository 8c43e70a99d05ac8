"""Trainer plumbing (docs/algorithms.md, "The training loop") on the tiny random model and KeywordEcho's parity rule."""

import json

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.losses import aggregate, aggregation_weights  # noqa: E402
from mimesis_gym.algorithms.policy import fused_adamw  # noqa: E402
from mimesis_gym.algorithms.render import TemplateNotIncrementalError  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, ReplayCollector, tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import DropoutError, Trainer  # noqa: E402
from mimesis_gym.algorithms.update import PolicyUpdate  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401
from tests.test_learner_golden import load_rollouts  # noqa: E402

ENVS = [(ENV_ID, {"reward_rule": "parity"})]
COMMON = {
    "rollout.group_size=4",
    "rollout.prompts_per_batch=4",
    "update.mini_batch_prompts=2",  # two mini-batches: the old-log-prob recompute path runs
    "optim.lr=1e-4",
    "run.total_steps=2",
    "run.eval_every=0",
    "run.save_every=0",
    "run.progress=false",
    "csd.coach.kind=scripted",
    "csd.coach.callable=mimesis_gym.algorithms.testing:keyword_echo_coach",
}
ROLLOUT_KEYS = {
    "reward/mean", "score/mean", f"score/{ENV_ID}", "episode/turns_mean", "episode/truncated_frac",
    "episode/invalid_action_frac", "episode/user_failure_frac", "tokens/action_mean", "tokens/obs_mean",
    "rollout/logprob_gap", "adv/mean", "adv/std", "adv/zero_token_frac", "group/zero_std_frac",
    "loss/pg", "loss/total", "pg_clipfrac", "pg_clipfrac_lower", "ppo_kl", "grad_norm", "lr",
    "train/skipped_steps", "batch/padding_frac", "time/rollout", "time/old_logprob", "time/update", "time/sync",
}  # fmt: skip
CSD_KEYS = {
    "csd/gate_mean", "csd/gate_active_frac", "csd/delta_mean", "csd/delta_std", "csd/coached_token_frac",
    "csd/notes_per_episode", "csd/none_frac", "csd/coach_fail_frac", "csd/notes_dropped_leak",
    "csd/rows_skipped_len", "csd/placebo_frac", "csd/loss", "csd/loss_release_form",
}  # fmt: skip
INFOPO_KEYS = {
    "infopo/ig_mean", "infopo/ig_std", "infopo/ig_pos_frac", "infopo/ig_turns", "infopo/lambda",
    "infopo/gate_mean", "infopo/gate_min", "infopo/gate_max", "infopo/group_std_mean", "infopo/beta",
    "infopo/intrinsic_share",
}  # fmt: skip


def config(tmp_path, *overrides):
    return TrainerConfig.preset("cpu-tiny").with_overrides([*COMMON, f"run.output_dir={tmp_path}", *overrides])


class ForwardCounter:
    """Counts the policy scorer's forwards with and without autograd (a forward pre-hook)."""

    def __init__(self, trainer):
        self.grad = self.no_grad = 0
        trainer.scorer.register_forward_pre_hook(self.hook)

    def hook(self, module, args):
        if torch.is_grad_enabled():
            self.grad += 1
        else:
            self.no_grad += 1


def run(tmp_path, algorithm, *overrides, model_seed=0):
    model, tokenizer = tiny_random_model(seed=model_seed)
    trainer = Trainer(ENVS, (model, tokenizer), algorithm=algorithm, config=config(tmp_path, *overrides))
    return trainer, model


def without_times(metrics):
    return {k: v for k, v in metrics.items() if not k.startswith("time/")}


@pytest.mark.parametrize(
    "algorithm",
    [
        "grpo",
        "csd",
        pytest.param("grpo-outcome", marks=pytest.mark.slow),
        pytest.param("foldgrpo", marks=pytest.mark.slow),
        pytest.param("infopo", marks=pytest.mark.slow),
    ],
)
def test_two_steps_of_each_algorithm(tmp_path, algorithm):
    trainer, model = run(tmp_path, algorithm)
    counter = ForwardCounter(trainer)
    before = {name: p.detach().clone() for name, p in model.named_parameters() if p.requires_grad}
    result = trainer.fit()
    lines = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == [1, 2]
    expected = set(ROLLOUT_KEYS)
    expected |= CSD_KEYS if algorithm == "csd" else set()
    expected |= INFOPO_KEYS if algorithm == "infopo" else set()
    for line in lines:
        assert expected <= set(line), sorted(expected - set(line))
        assert line["group/zero_std_frac"] < 1
    unchanged = [n for n, p in model.named_parameters() if p.requires_grad and torch.equal(before[n], p.detach())]
    assert unchanged == []
    counters = trainer.counters
    assert counters["old_logprob_passes"] == 2  # once per rollout batch, not per mini-batch
    assert counter.grad == counters["student_forwards"]  # only the student forward builds a graph
    assert counter.no_grad == (
        counters["old_logprob_forwards"] + counters["teacher_forwards"] + counters["counterfactual_forwards"]
    )
    if algorithm == "csd":
        # one teacher forward per micro-batch with coached tokens (every turn is coached here)
        assert counters["teacher_forwards"] == counters["student_forwards"]
        assert all(line["csd/coached_token_frac"] == 1.0 for line in lines)
    else:
        assert counters["teacher_forwards"] == 0
    if algorithm == "infopo":
        assert counters["counterfactual_forwards"] >= 2
    assert (result.last_checkpoint / "model.safetensors").is_file()
    assert (tmp_path / "checkpoints" / "latest").read_text().strip() == "step_2"


SMALL = ("rollout.group_size=2", "rollout.prompts_per_batch=2", "run.total_steps=1")


def test_one_optimizer_step_per_batch_reuses_the_current_logprobs(tmp_path):
    trainer, _ = run(tmp_path, "grpo", *SMALL, "update.mini_batch_prompts=2")
    trainer.step()
    assert trainer.counters["old_logprob_passes"] == 0 and trainer.counters["student_forwards"] >= 1


@pytest.mark.slow
def test_resume_gives_identical_metrics_and_runs_are_reproducible(tmp_path):
    straight, _ = run(tmp_path / "a", "grpo", "run.total_steps=3")
    straight.fit()
    first, _ = run(tmp_path / "b", "grpo", "run.total_steps=2", "run.save_every=2")
    first.fit()
    resumed, _ = run(tmp_path / "b", "grpo", "run.total_steps=3", model_seed=1)  # weights come from the checkpoint
    assert resumed.state.step == 2
    resumed.fit()
    a = [json.loads(line) for line in (tmp_path / "a" / "metrics.jsonl").read_text().splitlines()]
    b = [json.loads(line) for line in (tmp_path / "b" / "metrics.jsonl").read_text().splitlines()]
    assert [without_times(m) for m in a] == [without_times(m) for m in b]


def test_alpha_zero_is_grpo_bit_for_bit(tmp_path):
    # both replay the recorded first step of the 2x2 golden scenario: one group with mixed rewards, on any CPU
    step_one = load_rollouts("grpo-sampler")[:1]
    grpo, grpo_model = run(tmp_path / "g", "grpo", *SMALL)
    grpo.collector = ReplayCollector(step_one)
    grpo.fit()
    control, control_model = run(tmp_path / "c", "csd", *SMALL, "csd.alpha=0")
    control.collector = ReplayCollector(step_one)
    control.fit()
    assert control.counters["teacher_forwards"] == 0
    assert control.history[0]["group/zero_std_frac"] < 1 and control.history[0]["loss/pg"] != 0  # a real update
    for (name, a), (_, b) in zip(grpo_model.named_parameters(), control_model.named_parameters(), strict=True):
        assert torch.equal(a, b), name


@pytest.mark.slow
def test_skipping_a_mini_batch_without_gradient_equals_the_full_update(tmp_path, monkeypatch):
    # the keyword rule: a random model never says the keyword, every group ties, every advantage is 0
    skipped, skipped_model = run(tmp_path / "s", "grpo", *SMALL, "optim.lr=1e-2")
    skipped.envs[0].factory = lambda: __import__("gymnasium").make(ENV_ID, split="train", reward_profile="train")
    metrics = skipped.step()
    assert metrics["group/zero_std_frac"] == 1.0 and skipped.counters["student_forwards"] == 0
    full, full_model = run(tmp_path / "f", "grpo", *SMALL, "optim.lr=1e-2")
    full.envs[0].factory = skipped.envs[0].factory
    monkeypatch.setattr(PolicyUpdate, "has_gradient", lambda *args: True)
    full.step()
    assert full.counters["student_forwards"] > 0
    for (name, a), (_, b) in zip(skipped_model.named_parameters(), full_model.named_parameters(), strict=True):
        assert torch.equal(a, b), name


def test_a_non_incremental_template_is_refused_at_start(tmp_path):
    import copy

    model, tokenizer = tiny_random_model()
    broken = copy.deepcopy(tokenizer)
    broken.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
        "{% if loop.last %} (latest){% endif %}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    with pytest.raises(TemplateNotIncrementalError):
        Trainer(ENVS, (model, broken), algorithm="grpo", config=config(tmp_path))


def test_csd_refuses_dropout_and_a_chat_coach_without_a_model(tmp_path):
    model, tokenizer = tiny_random_model()
    model.config.attention_dropout = 0.1
    with pytest.raises(DropoutError, match="attention_dropout"):
        Trainer(ENVS, (model, tokenizer), algorithm="csd", config=config(tmp_path))
    model.config.attention_dropout = 0.0
    with pytest.raises(ValueError, match=r"csd\.coach"):
        Trainer(ENVS, (model, tokenizer), algorithm="csd", config=config(tmp_path, "csd.coach.kind=chat"))


@pytest.mark.slow
def test_placebo_notes_join_after_the_ring_fills(tmp_path):
    trainer, _ = run(tmp_path, "csd", "csd.placebo=true")
    first, second = trainer.step(), trainer.step()
    assert first["csd/placebo_frac"] == 0.0  # the ring is empty during the first batch
    assert second["csd/placebo_frac"] > 0.0
    (csd,) = trainer.learners
    assert len(csd.placebo_pool) >= 8 and csd.state_dict()["placebo_pool"]


def test_evaluate_reports_per_env_and_mean_scores(tmp_path):
    trainer, _ = run(tmp_path, "grpo")
    metrics = trainer.evaluate(split="demo")
    assert set(metrics) == {"val/score_mean", f"val/score/{ENV_ID}"}
    assert metrics["val/score_mean"] == metrics[f"val/score/{ENV_ID}"]


@pytest.mark.parametrize(
    ("agg", "expected"),
    [
        ("token-mean", 4.833333),
        ("seq-mean-token-mean", 4.0),
        ("seq-mean-token-sum", 14.5),
        ("seq-mean-token-sum-norm", 3.625),
    ],
)
def test_aggregation_weights_reproduce_the_documented_table(agg, expected):
    losses = torch.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
    weights = aggregation_weights([2, 4], agg, tokens=6, sequences=2, max_response_tokens=4)
    total = sum(w * (losses[i] * mask[i]).sum().item() for i, w in enumerate(weights))
    assert total == pytest.approx(expected, abs=1e-6)
    assert total == pytest.approx(aggregate(losses, mask, agg, max_response_tokens=4).item(), abs=1e-9)


@pytest.mark.slow
def test_loss_options_and_per_turn_contexts_run(tmp_path):
    trainer, _ = run(
        tmp_path, "grpo", *SMALL, "loss.kl_coef=0.001", "loss.entropy_coef=0.001", "loss.rollout_is=token",
        "loss.token_mean_scope=microbatch", "loss.loss_agg=seq-mean-token-mean", "rollout.context_mode=per_turn",
        "update.packing=off", "optim.schedule=cosine", "optim.warmup_steps=1",
    )  # fmt: skip
    metrics = trainer.step()
    assert {"loss/kl", "entropy"} <= set(metrics) and metrics["grad_norm"] > 0
    sampler, _ = run(tmp_path / "s", "grpo", *SMALL, "loss.old_logprob_source=sampler", "update.mini_batch_prompts=1")
    assert sampler.step()["ppo_kl"] == pytest.approx(0.0, abs=1e-3)  # sampler and recompute agree


def test_adamw_is_fused_where_torch_has_the_kernel_unless_turned_off(tmp_path):
    assert (fused_adamw("auto", "cpu"), fused_adamw("auto", "meta"), fused_adamw("on", "meta")) == (True, None, True)
    assert fused_adamw("off", "cpu") is None
    fused, _ = run(tmp_path / "a", "grpo", *SMALL)
    loop, _ = run(tmp_path / "b", "grpo", *SMALL, "optim.fused=off")
    assert fused.optimizer.optimizer.param_groups[0]["fused"] is True
    assert not loop.optimizer.optimizer.param_groups[0]["fused"]
