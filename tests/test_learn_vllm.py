"""The colocated vLLM engine (docs/algorithms.md, "vLLM"): GPU only, extra ``vllm``."""

import pytest

pytestmark = pytest.mark.gpu


def test_colocated_engine_log_probs_match_an_fp32_recompute():
    torch = pytest.importorskip("torch")
    pytest.importorskip("vllm", reason="the vllm extra is not installed")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from mimesis_gym.algorithms.config import VLLMConfig
    from mimesis_gym.algorithms.engines.base import Sampling
    from mimesis_gym.algorithms.engines.vllm_colocate import VLLMColocateEngine
    from mimesis_gym.algorithms.logprobs import PolicyScorer
    from mimesis_gym.algorithms.render import ChatRenderer
    from mimesis_gym.core.tiny import ensure_tiny_model

    path = str(ensure_tiny_model())
    tokenizer = AutoTokenizer.from_pretrained(path)
    renderer = ChatRenderer(tokenizer)
    engine = VLLMColocateEngine(
        path, stop_ids=frozenset(), end_of_turn_id=renderer.end_of_turn_id, config=VLLMConfig(sleep_level=0)
    )
    prompts = [
        renderer.prompt_ids([{"role": "user", "content": text}])[0]
        for text in ("Tell me a story.", "List some fruits.", "Describe the sea.", "Explain rain.")
    ]
    samples = engine.generate(prompts, max_new_tokens=[64] * 4, sampling=Sampling(temperature=1.0), seed=0)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).cuda().eval()
    scorer = PolicyScorer(model)
    gaps = []
    for prompt, sample in zip(prompts, samples, strict=True):
        ids = torch.tensor([prompt + sample.ids], device="cuda")
        mask = torch.zeros_like(ids, dtype=torch.bool)
        mask[0, len(prompt) :] = True
        with torch.no_grad():
            recomputed, _ = scorer(ids, mask)
        gaps += [abs(float(recomputed[0, len(prompt) + k]) - lp) for k, lp in enumerate(sample.logprobs)]
    assert sum(gaps) / len(gaps) <= 0.05 and max(gaps) <= 0.5
