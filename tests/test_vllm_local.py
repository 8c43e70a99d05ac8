"""The in-process vLLM chat model (docs/users.md, "Aliases"): GPU tests with the tiny model, plus the
behaviour without vLLM installed (the main test environment)."""

import asyncio

import pytest

from mimesis_gym.users.registry import make_chat_model
from mimesis_gym.users.vllm_local import VLLMChatModel, vllm_available

MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.mark.skipif(vllm_available(), reason="checks the behaviour without vLLM")
def test_without_vllm_a_call_fails_cleanly_naming_the_extra():
    model = make_chat_model("vllm:some/model")
    reply = asyncio.run(model.chat(MESSAGES, max_tokens=8, temperature=0.0, seed=0))
    assert reply.failure is not None and reply.failure.kind == "exception"
    assert "mimesis-gym[vllm]" in reply.failure.detail


@pytest.mark.gpu
def test_in_process_vllm_round_trip_and_seeds():
    torch = pytest.importorskip("torch")
    if not vllm_available() or not torch.cuda.is_available():
        pytest.skip("needs vLLM and a CUDA device")
    from mimesis_gym.core.tiny import ensure_tiny_model

    model = VLLMChatModel(str(ensure_tiny_model()), gpu_memory_utilization=0.3, max_model_len=2048)

    async def run():
        first = await model.chat(MESSAGES, max_tokens=16, temperature=1.0, seed=3)
        again = await model.chat(MESSAGES, max_tokens=16, temperature=1.0, seed=3)
        return first, again

    first, again = asyncio.run(run())
    assert first.failure is None and first.text and first.text == again.text
