"""Generation engines for the collectors: token ids in, sampled ids and log-probs out.

See docs/algorithms.md, "Generation engines".

Every engine implements :class:`~mimesis_gym.algorithms.engines.base.GenerationEngine`:
``generate(prompts, max_new_tokens=..., sampling=..., seed=...) -> list[Sample]``. ``local`` (the
``rollout.engine="hf"`` value) runs the training model itself on the local engine
(:mod:`mimesis_gym.core.local_lm`); ``vllm_colocate`` runs a vLLM engine in the training process
(extra ``vllm``, GPU only).
"""

from mimesis_gym.algorithms.engines.base import GenerationEngine, Sample, Sampling

__all__ = ["GenerationEngine", "Sample", "Sampling"]
