"""The batched in-process transformers engine and chat model, on the tiny model (docs/users.md, "A local model")."""

import asyncio

import pytest

pytest.importorskip("transformers", reason="the local stack is installed by `make test`")

from mimesis_gym.core.local_lm import LocalLM
from mimesis_gym.core.tiny import ensure_tiny_model
from mimesis_gym.users.hf import HFChatModel
from tests.support.echo_env import EchoEnv

QUESTIONS = ["What is 2+2?", "Name a color.", "Say hello.", "What is the capital of France?"]


@pytest.fixture(scope="module")
def engine():
    lm = LocalLM(str(ensure_tiny_model()))
    lm.load()
    return lm


def prompts(engine):
    return [engine.render([{"role": "user", "content": q}]) for q in QUESTIONS]


def test_eight_concurrent_calls_share_decode_steps(engine):
    before = engine.stats.decode_steps

    async def run():
        return await asyncio.gather(
            *[engine.generate(p, max_tokens=4, temperature=0, seed=i) for i, p in enumerate(prompts(engine) * 2)]
        )

    results = asyncio.run(run())
    # Alone, each call needs 3 decode steps after its prefill: 24 in all; batched they share steps.
    assert len(results) == 8 and engine.stats.decode_steps - before < 12
    assert engine.stats.max_rows >= 4


def test_greedy_batch_equals_single(engine):
    async def run():
        alone = [await engine.generate(p, max_tokens=12, temperature=0, seed=0) for p in prompts(engine)]
        together = await asyncio.gather(
            *[engine.generate(p, max_tokens=12, temperature=0, seed=0) for p in prompts(engine)]
        )
        return alone, together

    alone, together = asyncio.run(run())
    assert [g.completion_ids for g in alone] == [g.completion_ids for g in together]


def test_seeded_sampling_does_not_depend_on_batch_mates(engine):
    first, second, third = prompts(engine)[:3]

    async def run():
        alone = await engine.generate(first, max_tokens=10, temperature=1.0, seed=5)
        mates = await asyncio.gather(
            engine.generate(first, max_tokens=10, temperature=1.0, seed=5),
            engine.generate(second, max_tokens=3, temperature=1.0, seed=9),
            engine.generate(third, max_tokens=10, temperature=0.0, seed=1),
        )
        return alone, mates

    alone, mates = asyncio.run(run())
    assert alone.completion_ids == mates[0].completion_ids


def test_each_row_keeps_its_own_token_limit(engine):
    async def run():
        return await asyncio.gather(
            *[engine.generate(prompts(engine)[2], max_tokens=n, temperature=0, seed=0) for n in (1, 3, 7)]
        )

    results = asyncio.run(run())
    assert [r.completion_tokens for r in results] == [1, 3, 7]
    assert all(r.finish_reason == "length" for r in results)
    assert all(len(r.logprobs) == r.completion_tokens and all(lp <= 0 for lp in r.logprobs) for r in results)


def test_hf_chat_model_round_trip_and_json_failure():
    model = HFChatModel(name="tiny")

    async def run():
        plain = await model.chat([{"role": "user", "content": "Say hi."}], max_tokens=16, temperature=0.0, seed=0)
        keyed = await model.chat(
            [{"role": "user", "content": "Say hi."}], max_tokens=4, temperature=0.0, seed=0, json_keys=["verdict"]
        )
        return plain, keyed

    plain, keyed = asyncio.run(run())
    assert plain.text and plain.failure is None and plain.usage.completion_tokens > 0
    assert keyed.failure is not None and keyed.failure.kind == "bad_json" and keyed.text == ""


def test_an_env_with_the_tiny_user_completes_turns():
    env = EchoEnv(user="tiny", role_max_tokens=16)
    env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("[action] Please answer in JSON.")
        assert isinstance(obs, str) and obs
        assert info["user_failure"] in (None, "listener:bad_json", "listener:invalid_value")
    env.close()


def conversation_records(engine, temperature_of):
    """Three concurrent conversations of different lengths, three turns each; every turn's Generation."""
    openings = ["Name a color.", "What is the capital of France? Answer briefly, please.", "Say hello."]

    async def talk(index, opening):
        messages = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": opening}]
        turns = []
        for turn in range(3):
            generation = await engine.generate(
                engine.render(messages),
                max_tokens=6 + 3 * index,
                temperature=temperature_of(index),
                seed=10 * index + turn,
            )
            turns.append(generation)
            messages += [
                {"role": "assistant", "content": generation.text},
                {"role": "user", "content": "Why?" * (turn + 1)},
            ]
        return turns

    async def run():
        return await asyncio.gather(*[talk(i, opening) for i, opening in enumerate(openings)])

    return [generation for turns in asyncio.run(run()) for generation in turns]


def test_reusing_the_kv_cache_keeps_token_exact_records(engine):
    engine.clear_cache()
    without = LocalLM(engine.path, cache_budget_mb=0)
    before = engine.stats.reused_tokens
    for temperature_of in (lambda i: 0.0, lambda i: 0.0 if i == 1 else 1.0):
        reused = conversation_records(engine, temperature_of)
        fresh = conversation_records(without, temperature_of)
        assert [g.prompt_ids for g in reused] == [g.prompt_ids for g in fresh]
        assert [g.completion_ids for g in reused] == [g.completion_ids for g in fresh]
        for a, b in zip(reused, fresh, strict=True):
            assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
    assert engine.stats.reused_tokens - before > 200  # later turns really came from the cache
    assert without.stats.reused_tokens == 0 and len(without.prefix_cache) == 0


LONG = [{"role": "user", "content": "Write a long story about a dragon who learns to bake bread."}]


def test_a_short_request_joins_a_running_long_one_and_leaves_first(engine):
    long_prompt, short_prompt = engine.render(LONG), prompts(engine)[0]

    async def run():
        alone_long = await engine.generate(long_prompt, max_tokens=40, temperature=0, seed=0)
        alone_short = await engine.generate(short_prompt, max_tokens=3, temperature=0, seed=0)
        engine.clear_cache()
        start = engine.stats.decode_steps
        long_task = asyncio.ensure_future(engine.generate(long_prompt, max_tokens=40, temperature=0, seed=0))
        while engine.stats.decode_steps < start + 3:
            await asyncio.sleep(0.005)
        short = await engine.generate(short_prompt, max_tokens=3, temperature=0, seed=0)
        long_was_running = not long_task.done()
        return alone_long, alone_short, short, long_was_running, await long_task, engine.stats.decode_steps - start

    alone_long, alone_short, short, long_was_running, long, steps = asyncio.run(run())
    assert alone_long.completion_tokens == 40  # the premise: the long request does run 40 tokens
    assert long_was_running and short.completion_ids == alone_short.completion_ids
    assert long.completion_ids == alone_long.completion_ids
    assert steps == 39  # the short row's two decode steps were shared with the long one's


def test_a_cancelled_request_leaves_the_batch(engine):
    long_prompt = engine.render(LONG)

    async def run():
        start = engine.stats.decode_steps
        task = asyncio.ensure_future(engine.generate(long_prompt, max_tokens=200, temperature=0, seed=0))
        while engine.stats.decode_steps < start + 2:
            await asyncio.sleep(0.005)
        task.cancel()
        after = await engine.generate(prompts(engine)[1], max_tokens=2, temperature=0, seed=0)
        return after, engine.stats.decode_steps - start

    after, steps = asyncio.run(run())
    assert after.completion_tokens == 2 and steps < 20


def test_a_bad_cache_budget_in_the_environment_fails_naming_it(monkeypatch):
    from mimesis_gym.core.local_lm import CACHE_ENV, cache_budget_from_env

    for bad in ("lots", "-5", "nan"):
        monkeypatch.setenv(CACHE_ENV, bad)
        with pytest.raises(ValueError, match=CACHE_ENV):
            cache_budget_from_env()
    monkeypatch.setenv(CACHE_ENV, "0")
    assert cache_budget_from_env() == 0
    monkeypatch.delenv(CACHE_ENV)
    assert cache_budget_from_env() == 2048


def test_models_with_sliding_window_caches_are_refused_at_load():
    from transformers import MistralConfig

    from mimesis_gym.core.running_batch import check_cache_layout

    config = MistralConfig(
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        vocab_size=64,
        sliding_window=8,
    )
    with pytest.raises(RuntimeError, match=r"full attention only.*vllm"):
        check_cache_layout(config, "some/model")
    check_cache_layout(MistralConfig(sliding_window=None, num_hidden_layers=1), "plain/model")


SYSTEM = "You are an agent in a conversation with a user who holds a hidden task; ask short questions. " * 3


def test_a_prefix_that_joining_prompts_share_is_prefilled_once(engine):
    engine.clear_cache()
    without = LocalLM(engine.path, cache_budget_mb=0)
    chats = [engine.render([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}]) for q in QUESTIONS]
    shared = len(SYSTEM) // 8  # the system prompt is far more than a few tokens, common to every chat

    async def run(lm):
        return await asyncio.gather(*[lm.generate(p, max_tokens=6, temperature=0, seed=0) for p in chats])

    before = engine.stats.prefill_tokens
    together, alone = asyncio.run(run(engine)), asyncio.run(run(without))
    assert engine.stats.prefill_tokens - before < sum(map(len, chats)) - (len(chats) - 1) * shared
    assert without.stats.prefill_tokens == sum(map(len, chats))
    assert [g.completion_ids for g in together] == [g.completion_ids for g in alone]
    for a, b in zip(together, alone, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_an_engine_on_cpu_packs_its_linear_layers_and_keeps_its_records(engine, monkeypatch):
    from mimesis_gym.core.packed_linear import PACK_ENV, packing_from_env

    monkeypatch.setenv(PACK_ENV, "off")
    plain = LocalLM(engine.path)
    plain.load()
    assert engine.packed_layers > 0 and plain.packed_layers == 0
    records = [conversation_records(lm, lambda i: 0.0 if i == 1 else 1.0) for lm in (engine, plain)]
    assert [g.completion_ids for g in records[0]] == [g.completion_ids for g in records[1]]
    for a, b in zip(*records, strict=True):
        assert a.logprobs == pytest.approx(b.logprobs, abs=2e-4)
    monkeypatch.setenv(PACK_ENV, "fast")
    with pytest.raises(ValueError, match=PACK_ENV):
        packing_from_env()


def test_sibling_layers_are_packed_as_one_product_with_the_same_outputs(monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM

    from mimesis_gym.core import packed_linear

    path = str(ensure_tiny_model())
    models = [AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval() for _ in range(2)]
    assert packed_linear.pack_linear_layers(models[0]) > 0
    monkeypatch.setattr(packed_linear, "SIBLINGS", ())
    assert packed_linear.pack_linear_layers(models[1]) == sum(
        1 for m in models[0].modules() if hasattr(m, "product") or hasattr(m, "packed_weight")
    )
    attention, mlp = models[0].model.layers[0].self_attn, models[0].model.layers[0].mlp
    assert attention.q_proj.product is attention.k_proj.product is attention.v_proj.product
    assert mlp.gate_proj.product is mlp.up_proj.product
    inputs = torch.randn((2, 5, attention.q_proj.in_features), generator=torch.Generator().manual_seed(1))
    separate = models[1].model.layers[0].self_attn
    with torch.inference_mode():
        # any order, and a sibling asking twice gets a fresh product
        for name in ("v_proj", "q_proj", "k_proj", "k_proj"):
            assert torch.equal(getattr(attention, name)(inputs), getattr(separate, name)(inputs))
        ids = torch.arange(100, 160).unsqueeze(0)
        assert torch.equal(models[0](input_ids=ids).logits, models[1](input_ids=ids).logits)
