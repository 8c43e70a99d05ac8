"""Exercise the colocated vLLM engine on CPU; run by ``tests/test_learn_vllm_cpu.py`` inside ``.venv-vllm``.

Prints one JSON object: the sampled turns' finishes, the gap between the engine's log-probs and an
fp32 transformers recompute of the same ids, and whether greedy decoding after ``sync_weights``
follows the perturbed trainer model — every chosen token is the trainer's best or, in bf16, within
a near-tie of it — while the tokens chosen before the push do not. Needs
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


def greedy_margin(model, prompt, ids):
    """The largest gap, over the generated positions, between the model's best log-prob and the chosen token's.

    0 when ``ids`` is exactly the model's greedy continuation; a small gap is a near-tie decided the
    other way by a lower-precision engine (bf16), a large one means another model chose the tokens.
    """
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids])).logits[0].float()
    logprobs = torch.log_softmax(logits[len(prompt) - 1 : len(prompt) - 1 + len(ids)], dim=-1)
    chosen = logprobs[torch.arange(len(ids)), torch.tensor(ids)]
    return float((logprobs.max(dim=-1).values - chosen).max())


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
    margins_after = [greedy_margin(model, prompt, ids) for prompt, ids in zip(prompts[:2], after, strict=True)]
    margins_before = [greedy_margin(model, prompt, ids) for prompt, ids in zip(prompts[:2], before, strict=True)]
    tolerance = 1e-3 if dtype == "float32" else 0.3  # bf16 logits decide near-ties differently
    result = {
        "finishes": [s.finish for s in samples],
        "tokens": [len(s.ids) for s in samples],
        "logprobs_per_token": [len(s.logprobs) == len(s.ids) for s in samples],
        "gap_mean": sum(gaps) / len(gaps),
        "gap_max": max(gaps),
        "synced_follows_trainer": max(margins_after) <= tolerance,
        "unsynced_follows_trainer": max(margins_before) <= tolerance,
        "greedy_margins": {"after_sync": margins_after, "before_sync": margins_before},
        "synced_changed": after != before,
        "version": engine.version,
    }
    print("PROBE " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
