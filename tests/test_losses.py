"""The PPO-clip core (docs/algorithms.md)."""

import math

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.losses import aggregate, kl_penalty, policy_loss, token_losses  # noqa: E402

DEFAULT = {"clip_low": 0.2, "clip_high": 0.28, "dual_clip": 10.0}
RELEASE = {"clip_low": 0.2, "clip_high": 0.2, "dual_clip": 3.0}


@pytest.mark.parametrize(
    ("advantage", "ratio", "default", "release"),
    [
        (1, 0.5, (-0.5, -0.5), (-0.5, -0.5)),
        (1, 1.25, (-1.25, -1.25), (-1.2, 0)),
        (1, 1.5, (-1.28, 0), (-1.2, 0)),
        (-1, 0.5, (0.8, 0), (0.8, 0)),
        (-1, 0.9, (0.9, 0.9), (0.9, 0.9)),
        (-1, 1.5, (1.5, 1.5), (1.5, 1.5)),
        (-1, 4.0, (4.0, 4.0), (3.0, 0)),
        (-1, 12.0, (10.0, 0), (3.0, 0)),
        (-2, 12.0, (20.0, 0), (6.0, 0)),
        (0.5, 1.5, (-0.64, 0), (-0.6, 0)),
    ],
)
def test_token_loss_and_gradient_table(advantage, ratio, default, release):
    for settings, (loss_value, grad_value) in ((DEFAULT, default), (RELEASE, release)):
        logp = torch.tensor([math.log(ratio)], dtype=torch.float64, requires_grad=True)
        loss = token_losses(
            logp, torch.zeros(1, dtype=torch.float64), torch.tensor([float(advantage)], dtype=torch.float64), **settings
        )
        loss.sum().backward()
        assert loss.item() == pytest.approx(loss_value, abs=1e-6)
        assert logp.grad.item() == pytest.approx(grad_value, abs=1e-6)


LOSSES = torch.tensor([[1.0, 2, 3, 4], [5, 6, 7, 8]], dtype=torch.float64)
MASK = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize(
    ("agg", "expected"),
    [
        ("token-mean", 4.833333),
        ("seq-mean-token-mean", 4.0),
        ("seq-mean-token-sum", 14.5),
        ("seq-mean-token-sum-norm", 3.625),
    ],
)
def test_aggregation_modes(agg, expected):
    assert aggregate(LOSSES, MASK, agg, max_response_tokens=4).item() == pytest.approx(expected, abs=1e-6)


def test_masked_values_never_change_the_gradient():
    values = LOSSES.clone().requires_grad_(True)
    aggregate(values, MASK).backward()
    first = values.grad.clone()
    changed = LOSSES.clone()
    changed[0, 2:] = float("nan")
    changed = changed.requires_grad_(True)
    aggregate(changed, MASK).backward()
    assert torch.equal(first, changed.grad)
    assert first[0, 2:].abs().sum() == 0


def test_policy_loss_end_to_end_and_kl_estimators():
    logp = torch.log(torch.tensor([[0.5, 1.25]], dtype=torch.float64))
    loss = policy_loss(logp, torch.zeros_like(logp), torch.ones_like(logp), torch.ones_like(logp), **DEFAULT)
    assert loss.item() == pytest.approx((-0.5 - 1.25) / 2, abs=1e-9)
    current, reference = torch.tensor([-1.0], dtype=torch.float64), torch.tensor([-1.2], dtype=torch.float64)
    assert kl_penalty(current, reference, "k1").item() == pytest.approx(0.2)
    assert kl_penalty(current, reference, "k2").item() == pytest.approx(0.02)
    assert kl_penalty(current, reference, "k3").item() == pytest.approx(0.018731, abs=1e-6)


def test_dual_clip_must_exceed_one():
    with pytest.raises(ValueError, match="dual_clip must be > 1"):
        token_losses(torch.zeros(1), torch.zeros(1), torch.zeros(1), dual_clip=1.0)
