"""The transformers engine's sampler: inverse-CDF sampling, truncation, greedy, log-probs.

See docs/algorithms.md, "Generation engines".
"""

import math

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.engines.base import Sampling, classify_finish  # noqa: E402
from mimesis_gym.algorithms.engines.hf import _Sampler  # noqa: E402

PROBS = [0.5, 0.3, 0.2]


def draws(sampling, n=6000):
    sampler = _Sampler(sampling, torch.Generator().manual_seed(0))
    scores = torch.log(torch.tensor([PROBS] * n))
    out = sampler(torch.zeros((n, 1), dtype=torch.long), scores)
    chosen = out.argmax(-1)
    assert torch.isinf(out).sum() == n * 2  # one finite score per row: the loop picks exactly that id
    return [(chosen == k).float().mean().item() for k in range(3)], sampler


def test_sampling_follows_the_distribution():
    frequencies, _ = draws(Sampling(temperature=1.0))
    assert frequencies == pytest.approx(PROBS, abs=0.02)


def test_top_k_and_top_p_truncate():
    assert draws(Sampling(top_k=1))[0] == [1.0, 0.0, 0.0]
    frequencies, _ = draws(Sampling(top_p=0.6))  # 0.5 < 0.6 keeps the second id; 0.8 ≥ 0.6 drops the third
    assert frequencies[2] == 0.0 and frequencies[0] == pytest.approx(0.5 / 0.8, abs=0.02)


def test_greedy_and_recorded_log_probs_before_truncation():
    frequencies, sampler = draws(Sampling(temperature=0.0), n=4)
    assert frequencies == [1.0, 0.0, 0.0]
    _, sampler = draws(Sampling(temperature=2.0, top_k=1), n=2)
    recorded = sampler.finish(torch.tensor([0, 0]))
    expected = math.log(math.sqrt(0.5) / sum(math.sqrt(p) for p in PROBS))  # softmax(log p / 2), not truncated
    assert recorded[:, 0].tolist() == pytest.approx([expected] * 2, abs=1e-6)


def test_finish_kinds():
    stops = frozenset({2, 0})
    assert classify_finish([5, 2], 2, stops) == "stop"
    assert classify_finish([5, 0], 2, stops) == "eos"
    assert classify_finish([5, 6], 2, stops) == "length"
