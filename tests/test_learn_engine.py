"""The trainer's ``hf`` engine on the local engine: sampling, truncation, sampler log-probs, rows, weights.

See docs/algorithms.md, "Generation engines".
"""

import asyncio
import math

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.engines.base import Sampling, classify_finish  # noqa: E402
from mimesis_gym.algorithms.engines.local import LocalEngine, row_seed  # noqa: E402
from mimesis_gym.algorithms.testing import tiny_random_model  # noqa: E402
from mimesis_gym.core.local_lm import EngineRequest, choose_token  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401

PROBS = [0.5, 0.3, 0.2]


def request(**options):
    loop = asyncio.new_event_loop()
    made = EngineRequest([1], 1, options.pop("temperature", 1.0), None, loop, loop.create_future(), **options)
    loop.close()
    return made


def draws(n=6000, **options):
    """Frequencies of each id over ``n`` draws from PROBS, and the log-probs recorded."""
    row, generator, logits = (
        request(logprobs="sampler", **options),
        torch.Generator().manual_seed(0),
        torch.log(torch.tensor(PROBS)),
    )
    chosen = [choose_token(row, logits, generator) for _ in range(n)]
    frequencies = [sum(token == k for token, _ in chosen) / n for k in range(3)]
    return frequencies, {token: logprob for token, logprob in chosen}


def test_sampling_follows_the_distribution():
    frequencies, _ = draws()
    assert frequencies == pytest.approx(PROBS, abs=0.02)


def test_top_k_and_top_p_truncate():
    assert draws(top_k=1)[0] == [1.0, 0.0, 0.0]
    frequencies, _ = draws(top_p=0.6)  # 0.5 < 0.6 keeps the second id; 0.8 ≥ 0.6 drops the third
    assert frequencies[2] == 0.0 and frequencies[0] == pytest.approx(0.5 / 0.8, abs=0.02)


def test_greedy_and_recorded_log_probs_before_truncation():
    assert draws(n=4, temperature=0.0)[0] == [1.0, 0.0, 0.0]
    _, recorded = draws(n=2, temperature=2.0, top_k=1)
    expected = math.log(math.sqrt(0.5) / sum(math.sqrt(p) for p in PROBS))  # softmax(log p / 2), not truncated
    assert recorded == {0: pytest.approx(expected, abs=1e-6)}


def test_the_default_records_stay_the_evaluations():
    """Default options: multinomial draws from softmax(logits / T) and log-probs of the unscaled distribution."""
    logits = torch.randn(50, generator=torch.Generator().manual_seed(1)) * 3
    mine, theirs = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    log_probs = torch.log_softmax(logits, dim=-1)
    for _ in range(20):
        token, logprob = choose_token(request(temperature=0.7), logits, mine)
        assert token == int(torch.multinomial(torch.softmax(log_probs / 0.7, dim=-1), 1, generator=theirs))
        assert logprob == pytest.approx(float(log_probs[token]), abs=1e-6)


def test_finish_kinds():
    stops = frozenset({2, 0})
    assert classify_finish([5, 2], 2, stops) == "stop"
    assert classify_finish([5, 0], 2, stops) == "eos"
    assert classify_finish([5, 6], 2, stops) == "length"


@pytest.fixture(scope="module")
def chatty():
    """The tiny random model with a weak end-of-turn logit (turns run to their length), and its stop id."""
    model, tokenizer = tiny_random_model(seed=0, stop_logit=-4.0)
    return model, tokenizer, tokenizer.convert_tokens_to_ids("<|im_end|>")


def engine_for(chatty, **kwargs):
    model, tokenizer, stop = chatty
    return LocalEngine(model, tokenizer, stop_ids={stop}, end_of_turn_id=stop, **kwargs)


def prompts(*lengths, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randint(3, 5000, (n,), generator=generator).tolist() for n in lengths]


def test_a_rows_samples_depend_on_its_seed_and_row_not_on_its_batch_mates(chatty):
    a, b, c = prompts(30, 21, 12)
    sampling = Sampling(temperature=1.0)
    together = engine_for(chatty).generate([a, b, c], max_new_tokens=[8, 5, 3], sampling=sampling, seed=3)
    other_mate = engine_for(chatty).generate([a, c], max_new_tokens=[8, 2], sampling=sampling, seed=3)
    assert together[0].ids == other_mate[0].ids
    assert together[0].logprobs == pytest.approx(other_mate[0].logprobs, abs=1e-4)
    again = engine_for(chatty).generate([a, b, c], max_new_tokens=[8, 5, 3], sampling=sampling, seed=3)
    assert again == together  # the same seed, the same samples
    reseeded = engine_for(chatty).generate([a, b, c], max_new_tokens=[8, 5, 3], sampling=sampling, seed=4)
    assert reseeded[0].ids != together[0].ids
    assert [len(s.ids) for s in together] == [8, 5, 3] and all(s.finish == "length" for s in together)
    assert row_seed(3, 0) != row_seed(3, 1) and row_seed(3, 1) != row_seed(4, 0)


def test_log_probs_are_the_samplers_of_the_current_weights_and_the_flag_is_restored(chatty):
    model = chatty[0]
    model.train()
    engine = engine_for(chatty)
    (prompt,) = prompts(25)
    sampling = Sampling(temperature=0.7, top_k=5)
    first = engine.generate([prompt], max_new_tokens=[6], sampling=sampling, seed=0)[0]
    assert model.training and all(p.grad is None for p in model.parameters())

    def recomputed(ids, sample):
        with torch.no_grad():
            logits = model(torch.tensor([ids + sample.ids])).logits[0, len(ids) - 1 : -1]
        log_probs = torch.log_softmax(logits / sampling.temperature, dim=-1)  # before the top-k truncation
        return log_probs.gather(-1, torch.tensor(sample.ids)[:, None]).squeeze(-1).tolist()

    model.eval()
    assert first.logprobs == pytest.approx(recomputed(prompt, first), abs=1e-4)
    # the weights change in place (enough to move these log-probs by ~0.04 through the cached keys and
    # values): the next turn, whose prefix the engine cached, must see the new ones
    saved = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.v_proj.weight.mul_(30.0)
            layer.self_attn.o_proj.weight.mul_(30.0)
    try:
        engine.sync_weights(model, version=1)
        turn = prompt + first.ids + prompts(4, seed=9)[0]
        second = engine.generate([turn], max_new_tokens=[6], sampling=sampling, seed=1)[0]
        assert engine.lm.stats.reused_tokens == 0  # nothing of the old weights' cache was reused
        assert second.logprobs == pytest.approx(recomputed(turn, second), abs=1e-4)
    finally:
        model.load_state_dict(saved)


def test_the_prefix_cache_carries_turns_and_is_dropped_once_per_new_version(chatty):
    engine = engine_for(chatty)
    (prompt,) = prompts(40)
    first = engine.generate([prompt], max_new_tokens=[5], sampling=Sampling(temperature=0.0), seed=0)[0]
    engine.generate([prompt + first.ids], max_new_tokens=[5], sampling=Sampling(temperature=0.0), seed=0)
    assert engine.lm.stats.reused_tokens == len(prompt) + len(first.ids) - 1  # the next turn prefilled one id
    engine.sync_weights(chatty[0], version=1)
    assert len(engine.lm.prefix_cache) == 0
    engine.generate([prompt], max_new_tokens=[5], sampling=Sampling(temperature=0.0), seed=0)
    engine.sync_weights(chatty[0], version=1)  # the same version: the weights did not change
    assert len(engine.lm.prefix_cache) == 1
    engine.sleep()  # after a rollout: the update is about to change the weights
    assert len(engine.lm.prefix_cache) == 0
    with pytest.raises(ValueError, match="generates with the model it was made with"):
        engine.sync_weights(tiny_random_model(seed=1)[0], version=2)


def test_generate_works_from_inside_an_event_loop(chatty):
    engine = engine_for(chatty)
    a, b = prompts(10, 14)
    direct = engine.generate([a, b], max_new_tokens=[4, 4], sampling=Sampling(temperature=1.0), seed=5)

    async def inside():
        return engine.generate([a, b], max_new_tokens=[4, 4], sampling=Sampling(temperature=1.0), seed=5)

    assert [s.ids for s in asyncio.run(inside())] == [s.ids for s in direct]


def test_misconfiguration_fails_loudly(chatty):
    model, tokenizer, stop = chatty
    with pytest.raises(ValueError, match="not one of the stop ids"):
        LocalEngine(model, tokenizer, stop_ids={stop}, end_of_turn_id=stop + 1)
    engine = engine_for(chatty)
    with pytest.raises(ValueError, match="max_tokens must be positive"):
        engine.generate(prompts(5), max_new_tokens=[0], sampling=Sampling())


@pytest.mark.parametrize("scale", [0.1, 3.0, 12.0])  # flat (the nucleus needs most ids) to peaked (a few)
def test_the_nucleus_search_equals_a_full_sort(scale):
    from mimesis_gym.core.local_lm import truncate

    probs = torch.softmax(torch.randn(5000, generator=torch.Generator().manual_seed(2)) * scale, dim=-1)
    for top_p in (0.3, 0.9, 0.999):
        ordered, order = torch.sort(probs, descending=True)
        keep = (torch.cumsum(ordered, dim=-1) - ordered) < top_p * probs.sum()
        expected = torch.zeros_like(probs).scatter_(-1, order, torch.where(keep, ordered, torch.zeros_like(ordered)))
        assert torch.equal(truncate(probs, top_p=top_p) > 0, expected > 0)
