"""Sentence embeddings for the users report's homogeneity (docs/users-report.md, "Homogeneity").

:class:`TextEmbedder` turns texts into vectors with a local transformers model: the mean of its last
hidden states over the text's tokens (the pooling sentence-transformers models use, so such a model's
directory works as is), and compares two texts by the cosine of their vectors. The model is named by
a spec: ``tiny`` (the embedded SmolLM2-135M, a causal LM and a weak sentence encoder, but always
there) or ``hf:PATH``, read as for users (a local directory, or a hub id already in the Hugging Face
cache). Nothing is downloaded. Vectors are computed once per distinct text
(:meth:`TextEmbedder.prepare` embeds many in batches), in float32 under inference mode; texts are
cut at ``max_tokens`` tokens.

torch and transformers are imported inside functions only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.users.registry import check_local_model_path

__all__ = ["TextEmbedder", "embedder_path"]


def embedder_path(spec: str) -> str:
    """The model ``spec`` names: ``tiny`` (the embedded model's directory) or ``hf:PATH`` under the users'
    rule (a local directory, or a hub id already in the Hugging Face cache); ``ConfigurationError``
    otherwise."""
    name = spec.strip()
    if name == "tiny":
        from mimesis_gym.core.tiny import ensure_tiny_model

        return str(ensure_tiny_model())
    if not name.startswith("hf:") or not name[3:]:
        raise ConfigurationError(
            f"embedder {spec!r}: give `tiny` or `hf:PATH` (a local model directory or a cached hub id)"
        )
    check_local_model_path(name[3:], name)
    return name[3:]


class TextEmbedder:
    """Mean-pooled last hidden states of a local model; cosine similarity between texts."""

    def __init__(self, spec: str, *, batch_size: int = 16, max_tokens: int = 256) -> None:
        self.spec = spec
        self.path = embedder_path(spec)
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        self._vectors: dict[str, Any] = {}
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._model is not None:
            return
        import torch
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(self.path)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "right"
        self._tokenizer = tokenizer
        self._model = AutoModel.from_pretrained(self.path, dtype=torch.float32).eval()

    def prepare(self, texts: Iterable[str]) -> None:
        """Embed every text not embedded yet, ``batch_size`` at a time."""
        import torch

        waiting = list(dict.fromkeys(text for text in texts if text not in self._vectors))
        if not waiting:
            return
        self._load()
        with torch.inference_mode():
            for start in range(0, len(waiting), self.batch_size):
                chunk = waiting[start : start + self.batch_size]
                batch = self._tokenizer(
                    chunk, padding=True, truncation=True, max_length=self.max_tokens, return_tensors="pt"
                )
                hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
                vectors = torch.nn.functional.normalize(pooled.float(), dim=-1)
                self._vectors.update(zip(chunk, vectors, strict=True))

    def similarity(self, first: str, second: str) -> float:
        """Cosine similarity of the two texts' vectors, in [-1, 1] (1.0 for the same text)."""
        self.prepare((first, second))
        return max(-1.0, min(1.0, float(self._vectors[first] @ self._vectors[second])))
