"""CSD gate and loss (docs/algorithms.md)."""

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.learners.csd.loss import csd_gate, csd_loss, csd_loss_release_form  # noqa: E402


def test_gate_values():
    deltas = torch.tensor([-1, -0.4, -0.2, 0, 0.2, 0.4, 1], dtype=torch.float64)
    assert csd_gate(deltas, 5.0).tolist() == pytest.approx(
        [0.006693, 0.119203, 0.268941, 0.5, 0.731059, 0.880797, 0.993307], abs=1e-6
    )
    assert csd_gate(deltas, 0.0).tolist() == [0.5] * 7


def two_token_example():
    z1 = torch.tensor([2.0, 1.0, 0.0, -1.0], dtype=torch.float64, requires_grad=True)
    z2 = torch.zeros(4, dtype=torch.float64, requires_grad=True)
    logp = torch.stack([torch.log_softmax(z1, -1)[1], torch.log_softmax(z2, -1)[3]])
    teacher = (logp + torch.tensor([0.2, -0.4], dtype=torch.float64)).detach()
    return z1, z2, logp, teacher


def test_gradient_example_and_direction():
    z1, z2, logp, teacher = two_token_example()
    assert logp.tolist() == pytest.approx([-1.440190, -1.386294], abs=1e-6)
    loss = csd_loss(logp, teacher, torch.ones(2))
    assert loss.item() == pytest.approx(0.609057, abs=1e-6)
    loss.backward()
    assert z1.grad.tolist() == pytest.approx([0.235370, -0.278942, 0.031854, 0.011718], abs=1e-6)
    assert z2.grad.tolist() == pytest.approx([0.014900, 0.014900, 0.014900, -0.044701], abs=1e-6)
    assert z1.grad[1] < 0 and z2.grad[3] < 0  # a descent step raises the sampled ids' logits


def test_release_form_has_another_value_and_the_same_gradient():
    z1, z2, logp, teacher = two_token_example()
    release = csd_loss_release_form(logp, teacher, torch.ones(2))
    assert release.item() == pytest.approx(0.049265, abs=1e-6)
    release.backward()
    assert z1.grad.tolist() == pytest.approx([0.235370, -0.278942, 0.031854, 0.011718], abs=1e-6)


def test_empty_coached_set_gives_zero_with_a_graph():
    logp = torch.tensor([-1.0, -2.0], requires_grad=True)
    loss = csd_loss(logp, logp.detach(), torch.zeros(2))
    assert loss.item() == 0.0
    loss.backward()
    assert logp.grad.tolist() == [0.0, 0.0]


def test_placebo_difference():
    logp = torch.tensor([-1.5], dtype=torch.float64)
    real, placebo = torch.tensor([-1.0], dtype=torch.float64), torch.tensor([-1.3], dtype=torch.float64)
    with_placebo = csd_loss(logp, real, torch.ones(1), placebo_logp=placebo)
    without = csd_loss(logp, real, torch.ones(1))
    assert with_placebo.item() == pytest.approx(0.817574 * 1.5, abs=1e-6)  # g = σ(5 · 0.3)
    assert without.item() == pytest.approx(0.924142 * 1.5, abs=1e-6)  # g = σ(5 · 0.5)
