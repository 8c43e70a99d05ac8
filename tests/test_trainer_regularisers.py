"""The entropy bonus and the KL penalty move the policy the way their signs say.

See docs/algorithms.md, "The PPO-clip core".

KeywordEcho's keyword rule gives the tiny random model no reward at all, so every group ties, every
advantage is 0 and the policy-gradient term has no gradient: whatever the update changes comes from
the regulariser under test. Each test records the episodes of the step and measures on exactly those
action tokens before and after it.
"""

import copy

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.logprobs import PolicyScorer  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401

NO_REWARD = [(ENV_ID, {"reward_rule": "keyword"})]
OVERRIDES = [
    "rollout.group_size=2", "rollout.prompts_per_batch=2", "update.mini_batch_prompts=2", "run.total_steps=1",
    "optim.lr=1e-3", "optim.weight_decay=0.0", "run.eval_every=0", "run.save_every=0", "run.progress=false",
]  # fmt: skip


def trainer_recording_episodes(tmp_path, *overrides):
    """A GRPO trainer on the no-reward env, and the list its collector's episodes are appended to."""
    model, tokenizer = tiny_random_model(seed=0)
    config = TrainerConfig.preset("cpu-tiny").with_overrides([*OVERRIDES, f"run.output_dir={tmp_path}", *overrides])
    trainer = Trainer(NO_REWARD, (model, tokenizer), algorithm="grpo", config=config)
    seen = []
    collect = trainer.collector.collect

    def recording(requests, **kwargs):
        episodes = collect(requests, **kwargs)
        seen.extend(episodes)
        return episodes

    trainer.collector.collect = recording
    return trainer, model, seen


@torch.no_grad()
def action_stats(model, episodes, reference=None):
    """(mean entropy, mean k3 KL to ``reference``) over the action tokens of ``episodes``."""
    scorer, ref_scorer = PolicyScorer(model), PolicyScorer(reference) if reference is not None else None
    entropies, kls = [], []
    for episode in episodes:
        for segment in episode.segments:
            ids = torch.tensor([segment.input_ids])
            mask = torch.tensor([segment.loss_mask], dtype=torch.bool)
            logp, entropy = scorer(ids, mask, with_entropy=True)
            entropies.append(entropy[mask])
            if ref_scorer is not None:
                ref_logp, _ = ref_scorer(ids, mask)
                diff = logp[mask] - ref_logp[mask]
                kls.append(torch.exp(-diff) + diff - 1.0)
    mean_kl = torch.cat(kls).mean().item() if kls else None
    return torch.cat(entropies).mean().item(), mean_kl


def test_episodes_give_no_policy_gradient(tmp_path):
    trainer, model, seen = trainer_recording_episodes(tmp_path)
    metrics = trainer.step()
    assert metrics["reward/mean"] == 0.0 and metrics["group/zero_std_frac"] == 1.0
    assert metrics["adv/zero_token_frac"] == 1.0 and sum(segment.action_tokens for e in seen for segment in e.segments)


def test_entropy_bonus_raises_the_entropy_of_the_sampled_tokens(tmp_path):
    trainer, model, seen = trainer_recording_episodes(tmp_path, "loss.entropy_coef=1.0")
    before_model = copy.deepcopy(model)
    metrics = trainer.step()
    before, _ = action_stats(before_model, seen)
    after, _ = action_stats(model, seen)
    assert metrics["entropy"] == pytest.approx(before, rel=1e-3)  # the logged entropy is the pre-update one
    assert after > before + 1e-3


def test_kl_penalty_is_zero_at_the_reference_and_pulls_a_moved_policy_back(tmp_path):
    trainer, model, seen = trainer_recording_episodes(tmp_path, "loss.kl_coef=1.0", "run.total_steps=2")
    assert trainer.step()["loss/kl"] == pytest.approx(0.0, abs=1e-6)  # the reference is a frozen copy
    reference = trainer.reference.model
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn(parameter.shape, generator=generator))
    seen.clear()
    before_model = copy.deepcopy(model)
    metrics = trainer.step()
    _, before = action_stats(before_model, seen, reference)
    _, after = action_stats(model, seen, reference)
    assert metrics["loss/kl"] == pytest.approx(before, rel=1e-3) and before > 1e-3
    assert after < before
    assert all(p.requires_grad is False for p in reference.parameters())
