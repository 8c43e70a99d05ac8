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


def test_eight_concurrent_calls_run_in_at_most_two_batches(engine):
    before = engine.forward_batches

    async def run():
        return await asyncio.gather(
            *[engine.generate(p, max_tokens=4, temperature=0, seed=i) for i, p in enumerate(prompts(engine) * 2)]
        )

    results = asyncio.run(run())
    assert len(results) == 8 and engine.forward_batches - before <= 2


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
