"""The transformers engine's sampler: inverse-CDF sampling, truncation, greedy, log-probs.

See docs/algorithms.md, "Generation engines".
"""

import math

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.engines.base import Sampling, classify_finish  # noqa: E402
from mimesis_gym.algorithms.engines.hf import HFEngine, _Sampler  # noqa: E402

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


def test_repeated_prompts_are_prefilled_once_with_the_same_samples():
    from mimesis_gym.algorithms.testing import tiny_random_model

    model, tokenizer = tiny_random_model(seed=0)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    generator = torch.Generator().manual_seed(0)
    first, second = (torch.randint(3, 5000, (n,), generator=generator).tolist() for n in (30, 21))
    prompts = [first, second, first, first, second]
    results = {}
    for shared in (True, False):
        engine = HFEngine(model, tokenizer, stop_ids=frozenset({im_end}), end_of_turn_id=im_end)
        if not shared:
            engine._shared_prefill = lambda *args: {}
        for sampling in (Sampling(temperature=0.0), Sampling(temperature=1.0)):
            samples = engine.generate(prompts, max_new_tokens=[6] * 5, sampling=sampling, seed=3)
            results[shared, sampling.temperature] = samples
        assert engine.shared_prefills == (2 if shared else 0)
    for temperature in (0.0, 1.0):
        for once, full in zip(results[True, temperature], results[False, temperature], strict=True):
            assert once.ids == full.ids and once.finish == full.finish
            assert once.logprobs == pytest.approx(full.logprobs, abs=1e-4)
    greedy = results[True, 0.0]
    assert greedy[0].ids == greedy[2].ids == greedy[3].ids and greedy[1].ids == greedy[4].ids
    distinct = HFEngine(model, tokenizer, stop_ids=frozenset({im_end}), end_of_turn_id=im_end)
    distinct.generate([first, second], max_new_tokens=[2, 2], sampling=Sampling(temperature=0.0))
    assert distinct.shared_prefills == 0
