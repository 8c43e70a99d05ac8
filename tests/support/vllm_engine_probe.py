"""Exercise the colocated vLLM engine on CPU; run by ``tests/test_learn_vllm_cpu.py`` inside ``.venv-vllm``.

Prints one JSON object: the sampled turns' finishes, the gap between the engine's log-probs and an
fp32 transformers recompute of the same ids, and whether greedy decoding after ``sync_weights``
follows the perturbed trainer model (and differs from the unperturbed one). Needs
``VLLM_ENABLE_V1_MULTIPROCESSING=0`` (the engine must share this process, as under accelerate).

    python tests/support/vllm_engine_probe.py MODEL_DIR DTYPE
"""

import json
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mimesis_gym.algorithms.config import VLLMConfig
from mimesis_gym.algorithms.engines.base import Sampling
from mimesis_gym.algorithms.engines.vllm_colocate import VLLMColocateEngine
from mimesis_gym.algorithms.logprobs import PolicyScorer
from mimesis_gym.algorithms.render import ChatRenderer

PROMPTS = ("Tell me a story.", "List some fruits.", "Describe the sea.", "Explain rain.")


def recompute_gaps(scorer, prompts, samples):
    gaps = []
    for prompt, sample in zip(prompts, samples, strict=True):
        ids = torch.tensor([prompt + sample.ids])
        mask = torch.zeros_like(ids, dtype=torch.bool)
        mask[0, len(prompt) :] = True
        with torch.no_grad():
            recomputed, _ = scorer(ids, mask)
        gaps += [abs(float(recomputed[0, len(prompt) + k]) - lp) for k, lp in enumerate(sample.logprobs)]
    return gaps


def greedy_hf(model, prompt, n):
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=n, do_sample=False)
    return out[0, len(prompt) :].tolist()


def main(path: str, dtype: str) -> None:
    tokenizer = AutoTokenizer.from_pretrained(path)
    renderer = ChatRenderer(tokenizer)
    engine = VLLMColocateEngine(
        path, stop_ids=renderer.stop_ids, end_of_turn_id=renderer.end_of_turn_id,
        config=VLLMConfig(sleep_level=0), dtype=dtype, max_model_len=1024,
    )  # fmt: skip
    prompts = [renderer.prompt_ids([{"role": "user", "content": text}])[0] for text in PROMPTS]
    samples = engine.generate(prompts, max_new_tokens=[64] * 4, sampling=Sampling(temperature=1.0), seed=0)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    gaps = recompute_gaps(PolicyScorer(model), prompts, samples)
    greedy = Sampling(temperature=0.0)
    before = [s.ids for s in engine.generate(prompts[:2], max_new_tokens=[16] * 2, sampling=greedy)]
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.02 * torch.randn(parameter.shape, generator=generator))
    engine.sync_weights(model, version=1)
    after = [s.ids for s in engine.generate(prompts[:2], max_new_tokens=[16] * 2, sampling=greedy)]
    expected = [greedy_hf(model, prompt, len(ids))[: len(ids)] for prompt, ids in zip(prompts[:2], after, strict=True)]
    result = {
        "finishes": [s.finish for s in samples],
        "tokens": [len(s.ids) for s in samples],
        "logprobs_per_token": [len(s.logprobs) == len(s.ids) for s in samples],
        "gap_mean": sum(gaps) / len(gaps),
        "gap_max": max(gaps),
        "synced_follows_trainer": after == expected,
        "synced_changed": after != before,
        "version": engine.version,
    }
    print("PROBE " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
