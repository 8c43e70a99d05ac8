"""Regenerate tests/data/humanlike_reference_mirrorbench.json: MirrorBench's own lexical metrics on
the shipped human conversations, the numbers tests/test_humanlike_lexical.py holds ours to.

Run it OUTSIDE the project's environment, in a scratch venv where MirrorBench (a checkout of
SAP/mirrorbench, given as ``--mirrorbench``) and its dependencies are installed, with tiktoken's
``o200k_base`` file reachable offline (``TIKTOKEN_CACHE_DIR``, docs/humans.md "Lexical diversity")::

    TIKTOKEN_CACHE_DIR=/path/to/cache venv/bin/python scripts/humanlike_reference_mirrorbench.py \\
        --mirrorbench /path/to/mirrorbench --humans ../shared/data/humans

MirrorBench is imported from that path at run time only; nothing of it is kept in this repository.
Our own ``words`` tokenizer and dev/test split are read from this repository's stdlib-only modules
(loaded by file path, so the scratch venv needs none of our dependencies). The output holds ids and
numbers only, never human text.

This file is also the tests' minimal reader of the raw corpora (:func:`read_user_turns`): the user
turns of each conversation exactly as MirrorBench would see them (one string per user message).
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parents[1]
CHITCHAT_LIMIT = 200
"""How many two-speaker chitchat conversations (file order, i.e. sorted ids) are read."""

UserTurns = dict[str, list[str]]
"""Conversation id -> its user turns, in order."""


def _oasst1(humans: Path) -> Iterator[tuple[str, list[str]]]:
    """MirrorBench's OASST1 file: ``conversation_id`` and the ``user`` turns' ``content``."""
    with (humans / "oasst1" / "oasst1_mirror.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            yield record["conversation_id"], [t["content"] for t in record["turns"] if t["role"] == "user"]


def _thoughttrace(humans: Path) -> Iterator[tuple[str, list[str]]]:
    """ThoughtTrace: ``id`` and the ``user`` messages' ``content``."""
    with (humans / "thoughttrace" / "ThoughtTrace_examples.jsonl").open(encoding="utf-8") as lines:
        for line in lines:
            record = json.loads(line)
            yield record["id"], [m["content"] for m in record["messages"] if m["type"] == "user"]


def _simulatorarena(name: str) -> Callable[[Path], Iterator[tuple[str, list[str]]]]:
    """SimulatorArena file ``name``: list index as id, ``user_queries`` (a query given as a list of
    strings is joined by newlines)."""

    def read(humans: Path) -> Iterator[tuple[str, list[str]]]:
        records = json.loads((humans / "simulatorarena" / name).read_text(encoding="utf-8"))
        for index, record in enumerate(records):
            queries = record["user_queries"]
            yield str(index), [q if isinstance(q, str) else "\n".join(q) for q in queries]

    return read


def _chitchat(humans: Path) -> Iterator[tuple[str, list[str]]]:
    """Chitchat: the first :data:`CHITCHAT_LIMIT` conversations with two speakers; the first
    speaker is the user, each run of their consecutive messages one turn (joined by newlines)."""
    records = json.loads((humans / "chitchat" / "chitchat_subset.json").read_text(encoding="utf-8"))
    kept = 0
    for conv_id, record in records.items():
        groups = record["messages"]
        if kept == CHITCHAT_LIMIT or len({m["sender"] for g in groups for m in g}) < 2:
            continue
        user = groups[0][0]["sender"]
        kept += 1
        yield conv_id, ["\n".join(m["text"] for m in g) for g in groups if g[0]["sender"] == user]


READERS: dict[str, Callable[[Path], Iterator[tuple[str, list[str]]]]] = {
    "oasst1": _oasst1,
    "thoughttrace": _thoughttrace,
    "simulatorarena-doc": _simulatorarena("document_creation_annotations_for_benchmarking.json"),
    "simulatorarena-math": _simulatorarena("math_tutoring_annotations_redacted_for_benchmarking.json"),
    "chitchat": _chitchat,
}
"""Source name (the corpora registry's key, which the dev/test split hashes) -> its reader."""


def read_user_turns(humans: Path) -> dict[str, UserTurns]:
    """Source -> conversation id -> user turns, for every source of :data:`READERS`."""
    return {source: dict(read(humans)) for source, read in READERS.items()}


def _load_by_path(name: str, path: Path) -> ModuleType:
    """One of our stdlib-only modules, loaded from its file (no package import)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _reference(mirrorbench: Path) -> dict[str, Any]:
    """The MirrorBench pieces used: tokenisation, the three measure functions, the metric classes."""
    sys.path.insert(0, str(mirrorbench))
    from mirrorbench.core.models.messages import Message, Role
    from mirrorbench.core.models.run import MetricValue
    from mirrorbench.metrics.lexical import HDDMetric, MATTRMetric, TypeTokenRatioMetric, YulesKMetric
    from mirrorbench.metrics.lexical._shared import tokens_for_role
    from mirrorbench.metrics.lexical.hdd import _hdd
    from mirrorbench.metrics.lexical.mattr import _mattr
    from mirrorbench.metrics.lexical.yules_k import _yules_k

    def o200k_tokens(turns: list[str]) -> list[int]:
        return tokens_for_role([Message(role=Role.USER, content=t) for t in turns], Role.USER, model="gpt-4o")

    return {
        "o200k_tokens": o200k_tokens,
        "MetricValue": MetricValue,
        "classes": {"mattr": MATTRMetric(), "hdd": HDDMetric(), "yules_k": YulesKMetric()},
        "ttr": TypeTokenRatioMetric(),
        "measures": {"mattr": lambda t: _mattr(t, 50), "hdd": lambda t: _hdd(list(t), 42), "yules_k": _yules_k},
    }


def _aggregate_z(ref: dict[str, Any], simulated: list[list[Any]], human: list[list[Any]]) -> dict[str, Any]:
    """MirrorBench's aggregate of each measure on paired episodes (proxy = simulated[i], human = human[i])."""
    out = {}
    for metric, instance in ref["classes"].items():
        values = [
            ref["MetricValue"](metric_name=metric, metadata={"proxy_tokens": s, "human_tokens": h})
            for s, h in zip(simulated, human, strict=True)
        ]
        aggregate = instance.aggregate(values)
        out[metric] = {
            "mean_z": aggregate.mean,
            "sd_z": aggregate.standard_deviation,
            "n": aggregate.sample_size,
            "baseline_mean": aggregate.extras["baseline_mean"],
            "baseline_sd": aggregate.extras["baseline_std"],
            "baseline_n": aggregate.extras["baseline_sample_size"],
        }
    return out


def _corpus_ttr(ref: dict[str, Any], token_lists: list[list[Any]]) -> float:
    """MirrorBench's corpus-level TTR over the token lists."""
    values = [ref["MetricValue"](metric_name="ttr", metadata={"token_ids": t}) for t in token_lists]
    return ref["ttr"].aggregate(values).mean


def _tokenizer_block(
    ref: dict[str, Any], corpora: dict[str, UserTurns], tokens_of: Callable[[list[str]], list[Any]], split_of: Any
) -> dict[str, Any]:
    """Per-conversation values, corpus TTR and dev-vs-test z-scores of every source, one tokenizer."""
    conversations: dict[str, dict[str, Any]] = {}
    corpus_ttr: dict[str, float] = {}
    zscores: dict[str, Any] = {}
    for source, turns_by_id in corpora.items():
        tokens = {conv_id: tokens_of(turns) for conv_id, turns in turns_by_id.items()}
        for conv_id, toks in tokens.items():
            row = {name: (fn(toks) if toks else None) for name, fn in ref["measures"].items()}
            conversations[f"{source}/{conv_id}"] = {"tokens": len(toks), **row}
        corpus_ttr[source] = _corpus_ttr(ref, list(tokens.values()))
        dev = [toks for conv_id, toks in tokens.items() if split_of(source, conv_id) == "dev"]
        test = [toks for conv_id, toks in tokens.items() if split_of(source, conv_id) == "test"]
        pairs = min(len(dev), len(test))
        zscores[source] = {"pairs": pairs, **_aggregate_z(ref, test[:pairs], dev[:pairs])}
    return {"conversations": conversations, "corpus_ttr": corpus_ttr, "zscores": zscores}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrorbench", type=Path, required=True, help="a checkout of SAP/mirrorbench")
    parser.add_argument("--humans", type=Path, default=REPO.parent / "shared" / "data" / "humans")
    parser.add_argument("--mirrorbench-commit", default="", help="its commit, when the checkout is not a git repo")
    parser.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "humanlike_reference_mirrorbench.json")
    args = parser.parse_args(argv)
    for folder, what in ((args.mirrorbench / "mirrorbench", "--mirrorbench"), (args.humans, "--humans")):
        if not folder.is_dir():
            parser.error(f"{what}: no folder {folder}")
    lexical = _load_by_path("_lexical", REPO / "mimesis_gym" / "evaluation" / "humanlike" / "lexical.py")
    conversation = _load_by_path("_conversation", REPO / "mimesis_gym" / "corpora" / "conversation.py")
    ref = _reference(args.mirrorbench)
    corpora = read_user_turns(args.humans)
    commit = (
        args.mirrorbench_commit
        or subprocess.run(
            ["git", "-C", str(args.mirrorbench), "rev-parse", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
    )
    result = {
        "how_made": {
            "command": "TIKTOKEN_CACHE_DIR=<cache> <scratch venv>/bin/python "
            "scripts/humanlike_reference_mirrorbench.py --mirrorbench <mirrorbench checkout> "
            "--mirrorbench-commit <commit> --humans ../shared/data/humans",
            "mirrorbench_commit": commit or "unknown (not a git checkout)",
            "date": datetime.date.today().isoformat(),
            "python": sys.version.split()[0],
            "reference": "mirrorbench.metrics.lexical: _mattr(window 50), _hdd(sample 42), _yules_k per conversation; "
            "MATTRMetric/HDDMetric/YulesKMetric.aggregate for z; TypeTokenRatioMetric.aggregate for corpus TTR",
            "tokenizers": {
                "o200k": "MirrorBench's own tokenize(model='gpt-4o') = tiktoken o200k_base, file rebuilt offline "
                "from the npm package tiktoken 1.0.22 (SHA-256 " + lexical.O200K_SHA256 + ")",
                "words": "our mimesis_gym.evaluation.humanlike.lexical.tokenize(text, 'words'), the token strings "
                "fed to MirrorBench's functions",
            },
            "data": "user turns of humans/oasst1, humans/thoughttrace, humans/simulatorarena (both files), the first "
            f"{CHITCHAT_LIMIT} two-speaker chitchat conversations; turns joined by a space as MirrorBench does",
            "zscores": "per source, the i-th test-half conversation (file order) paired with the i-th dev-half one "
            "(split_of), i < min of the halves' sizes: proxy = test, human baseline = dev",
        },
        "tokenizers": {
            "o200k": _tokenizer_block(ref, corpora, ref["o200k_tokens"], conversation.split_of),
            "words": _tokenizer_block(
                ref, corpora, lambda turns: lexical.conversation_tokens(turns, "words"), conversation.split_of
            ),
        },
    }
    args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
