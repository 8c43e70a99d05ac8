"""Per-GPU memory of a training run, estimated from the model's shape and the resolved config.

See docs/algorithms.md, "Precision and memory". :func:`model_shape` reads a policy's HF config and
counts its parameters on the ``meta`` device (no weights are read); :func:`estimate_memory` turns
a shape, a :class:`~mimesis_gym.algorithms.config.TrainerConfig` and a process layout into bytes per
GPU; :func:`read_layout` reads the layout from an ``accelerate`` config file.

The estimate, per GPU, with ``P`` parameters in ``b`` bytes (``model.dtype``), ``c`` bytes of compute
(``run.dtype``), ``S`` ranks sharing the state (the world size under FSDP, else 1), ``T`` tokens of a
micro-batch, ``L`` layers of width ``h``, MLP width ``i`` and vocabulary ``V``:

- parameters ``P·b/S``, gradients ``P·b/S``, AdamW ``2·P·b/S`` (two states shaped like the parameters);
- under FSDP, two layers gathered in the compute dtype (the one running and the one prefetched);
- activations of one micro-batch: with gradient checkpointing, every layer's input ``L·T·h·c`` plus
  one layer recomputed ``T·(8h + 3i)·c``; without it ``L·T·(8h + 3i)·c``; plus the log-prob head,
  which keeps each scored token's logits in the compute dtype and fp32 (``T·V·(c + 8)``, every token
  of the micro-batch counted as scored — an upper bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mimesis_gym.algorithms.config import TrainerConfig

__all__ = [
    "DTYPE_BYTES",
    "KNOWN_ARCHITECTURES",
    "Layout",
    "MemoryEstimate",
    "ModelShape",
    "compute_dtype",
    "estimate_memory",
    "model_shape",
    "read_layout",
]

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
GIB = 1024**3


@dataclass(frozen=True)
class ModelShape:
    """What the estimate needs to know about a model."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int
    vocab: int


@dataclass(frozen=True)
class Layout:
    """How many processes train and whether they shard the model state (FSDP)."""

    processes: int = 1
    sharded: bool = False
    source: str = "one process"


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU by part; ``lines()`` prints them."""

    parameters: float
    gradients: float
    optimizer: float
    gathered: float
    activations: float
    layout: Layout
    parameter_dtype: str
    compute_dtype: str
    checkpointing: bool
    micro_batch_tokens: int

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer + self.gathered + self.activations

    def lines(self) -> list[str]:
        """The estimate as aligned text lines (GiB)."""
        mode = "FSDP (sharded)" if self.layout.sharded else "replicated"
        rows = [
            ("parameters", self.parameters, self.parameter_dtype),
            ("gradients", self.gradients, self.parameter_dtype),
            ("optimizer", self.optimizer, f"AdamW, 2 states in {self.parameter_dtype}"),
        ]
        if self.layout.sharded:
            rows.append(("gathered layers", self.gathered, f"2 layers in {self.compute_dtype}"))
        checkpointing = "gradient checkpointing" if self.checkpointing else "no gradient checkpointing"
        rows += [
            ("activations", self.activations, f"{self.micro_batch_tokens:,}-token micro-batch, {checkpointing}"),
            ("total", self.total, ""),
        ]
        head = f"memory per GPU (estimate; {self.layout.processes} process(es), {mode}, from {self.layout.source}):"
        return [head] + [f"  {name:<16}{value / GIB:8.2f} GiB  {note}".rstrip() for name, value, note in rows]


def compute_dtype(config: TrainerConfig) -> str:
    """The dtype a GPU computes in: ``run.dtype`` (autocast), or the parameters' dtype without autocast."""
    parameter_dtype = config.model.resolved_dtype(cuda=True)
    run_dtype = config.run.dtype
    if run_dtype == "auto":
        return "bfloat16"  # the plan is for GPUs
    if run_dtype == "float32":
        return parameter_dtype
    return run_dtype


def estimate_memory(config: TrainerConfig, shape: ModelShape, layout: Layout = Layout()) -> MemoryEstimate:
    """The per-GPU estimate of the module docstring for ``config`` on GPUs laid out as ``layout``."""
    parameter_dtype = config.model.resolved_dtype(cuda=True)
    compute = compute_dtype(config)
    b, c = DTYPE_BYTES[parameter_dtype], DTYPE_BYTES[compute]
    share = layout.processes if layout.sharded else 1
    state = shape.parameters * b / share
    checkpointing = config.update.gradient_checkpointing is not False  # None: on for GPUs
    tokens = config.update.micro_batch_tokens
    layer = tokens * (8 * shape.hidden + 3 * shape.intermediate) * c
    layers = shape.layers * tokens * shape.hidden * c + layer if checkpointing else shape.layers * layer
    head = tokens * shape.vocab * (c + 8)
    gathered = 2 * shape.parameters / max(shape.layers, 1) * c if layout.sharded else 0.0
    return MemoryEstimate(
        parameters=state,
        gradients=state,
        optimizer=2 * state,
        gathered=gathered,
        activations=layers + head,
        layout=layout,
        parameter_dtype=parameter_dtype,
        compute_dtype=compute,
        checkpointing=checkpointing,
        micro_batch_tokens=tokens,
    )


QWEN3_8B_ARCHITECTURE: dict[str, Any] = {
    "model_type": "qwen3",
    "vocab_size": 151936,
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "tie_word_embeddings": False,
}
"""Qwen3-8B's published architecture: the base of the paper's agents."""

KNOWN_ARCHITECTURES: dict[str, dict[str, Any]] = {
    hub.lower(): QWEN3_8B_ARCHITECTURE
    for hub in (
        "Qwen/Qwen3-8B",
        "phanviethoang1512/Qwen3-8B-Base-Agent",
        "phanviethoang1512/Qwen3-8B-UserRL-Agent",
        "phanviethoang1512/Qwen3-8B-UserRL-Plus-Agent",
        "phanviethoang1512/Qwen3-8B-InfoPO-Agent",
        "phanviethoang1512/Qwen3-8B-CSD-Agent",
    )
}
"""Hub ids whose shape a dry run knows without their ``config.json`` (offline, or not cached): the
paper's recipes plan memory on any machine."""


def model_shape(policy: Any) -> ModelShape:
    """The shape of a ``"tiny"``, ``"hf:<path>"`` or path policy from its HF config (no weights read).

    A local path or a cached hub config is read first; an uncached hub id in
    :data:`KNOWN_ARCHITECTURES` uses that shape without going to the network (offline, the hub
    client's retries took about 27 s); any other id is fetched. Raises ``ValueError`` when nothing
    gives a config (an unknown id without network, a path without ``config.json``).
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from mimesis_gym.algorithms.policy import policy_path

    path = policy_path(policy)
    known = KNOWN_ARCHITECTURES.get(str(path).lower())
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=known is not None)
    except (OSError, ValueError) as error:
        if known is None:
            raise ValueError(f"cannot read the config of policy {policy!r}: {' '.join(str(error).split())}") from None
        fields = dict(known)
        config = AutoConfig.for_model(fields.pop("model_type"), **fields)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return ModelShape(
        parameters=sum(p.numel() for p in model.parameters()),
        layers=int(text.num_hidden_layers),
        hidden=int(text.hidden_size),
        intermediate=int(getattr(text, "intermediate_size", 4 * text.hidden_size)),
        vocab=int(text.vocab_size),
    )


def read_layout(path: str | Path) -> Layout:
    """The process count (over all machines) and sharding of an ``accelerate`` config file (YAML or JSON)."""
    from mimesis_gym.algorithms.config import read_config_file

    data = read_config_file(path)
    processes = data.get("num_processes", 1)
    if not isinstance(processes, int) or processes < 1:
        raise ValueError(
            f"accelerate config {str(path)!r}: num_processes must be a positive integer; got {processes!r}"
        )
    distributed = str(data.get("distributed_type", "NO")).upper()
    return Layout(processes=processes, sharded=distributed == "FSDP", source=Path(path).name)
