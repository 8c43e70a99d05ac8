"""The human conversation corpora this library reads, by name, and :func:`load_corpus` (docs/humans.md).

A corpus *spec* is a registry name (``oasst1``), read from its usual place under the folder that holds
the corpora (``humans_dir``), or ``NAME:PATH`` for a file elsewhere (``abcd:/data/abcd_v1.1.json``);
``jsonl:PATH`` reads your own corpus (:mod:`mimesis_gym.corpora.jsonl`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from mimesis_gym.corpora import abcd, chitchat, jsonl, oasst1, simulatorarena, thoughttrace
from mimesis_gym.corpora.assemble import CorpusLoad
from mimesis_gym.corpora.conversation import SPLITS, HumanConversation, Split

__all__ = ["CORPORA", "CorpusSpec", "load_corpus", "shipped_corpora", "split_conversations"]


@dataclass(frozen=True, slots=True)
class CorpusSpec:
    """One registered corpus: how to read it, where it usually lies, its licence, what it is."""

    name: str
    load: Callable[[Path], CorpusLoad]
    locations: tuple[str, ...]
    """Where to look, relative to ``humans_dir``, first found wins; empty: only ``NAME:PATH`` reads it."""
    licence: str
    description: str


CORPORA: dict[str, CorpusSpec] = {
    spec.name: spec
    for spec in (
        CorpusSpec(
            "oasst1",
            oasst1.load,
            ("oasst1/oasst1_mirror.jsonl",),
            "Apache-2.0",
            "OpenAssistant conversations as MirrorBench prepared them, with a task description each",
        ),
        CorpusSpec(
            "simulatorarena-doc",
            simulatorarena.load_doc,
            ("simulatorarena/document_creation_annotations_for_benchmarking.json",),
            "MIT",
            "SimulatorArena: real users writing a document with an AI assistant",
        ),
        CorpusSpec(
            "simulatorarena-math",
            simulatorarena.load_math,
            ("simulatorarena/math_tutoring_annotations_redacted_for_benchmarking.json",),
            "MIT",
            "SimulatorArena: real students asking an AI tutor for help with a math problem (problems redacted)",
        ),
        CorpusSpec(
            "thoughttrace",
            thoughttrace.load,
            ("thoughttrace/ThoughtTrace_examples.jsonl",),
            "Apache-2.0 (dataset card: CC-BY-4.0)",
            "ThoughtTrace: human-AI chats with each user's reasons for their messages and reactions to replies",
        ),
        CorpusSpec(
            "chitchat",
            chitchat.load,
            ("chitchat/chitchat_subset.json",),
            "MIT",
            "BYU PCCL chitchat: open-domain chat between two people given a conversation starter",
        ),
        CorpusSpec(
            "abcd",
            abcd.load,
            ("abcd/abcd_sample.json", "../abcd/abcd_sample.json"),
            "MIT",
            "ABCD: customers and support agents of an online clothing store",
        ),
        CorpusSpec(
            "jsonl",
            jsonl.load,
            (),
            "yours",
            "your own corpus: one conversation a line, OpenAI/OASST messages or ShareGPT conversations",
        ),
    )
}


def shipped_corpora() -> list[str]:
    """The names of the corpora read from a usual place under the humans folder (every one but ``jsonl``)."""
    return [name for name, entry in CORPORA.items() if entry.locations]


def load_corpus(spec: str, humans_dir: Path | None = None) -> CorpusLoad:
    """Read the corpus ``spec`` names: ``NAME`` (from its place under ``humans_dir``) or ``NAME:PATH``.

    ``ValueError`` for an unknown name (naming the known ones) or a spec that needs what it lacks;
    ``FileNotFoundError`` naming every path tried and how to fix it."""
    name, colon, path = spec.partition(":")
    entry = CORPORA.get(name)
    if entry is None:
        raise ValueError(f"unknown corpus {spec!r}; known: {', '.join(CORPORA)} (NAME or NAME:PATH, e.g. jsonl:PATH)")
    if colon:
        return entry.load(_given(entry, path))
    return entry.load(_located(entry, humans_dir))


def split_conversations(conversations: Iterable[HumanConversation], split: Split) -> list[HumanConversation]:
    """The conversations of one half (``dev`` or ``test``), in their order."""
    if split not in SPLITS:
        raise ValueError(f"split {split!r} is not one of {', '.join(SPLITS)}")
    return [conversation for conversation in conversations if conversation.split == split]


def _given(entry: CorpusSpec, path: str) -> Path:
    if not path:
        raise ValueError(f"corpus spec {entry.name}: names no file; write {entry.name}:PATH")
    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"corpus {entry.name}: no file at {file}; give the path of an existing file")
    return file


def _located(entry: CorpusSpec, humans_dir: Path | None) -> Path:
    if not entry.locations:
        raise ValueError(f"corpus {entry.name} has no usual place; give its file as {entry.name}:PATH")
    if humans_dir is None:
        raise ValueError(
            f"corpus {entry.name} is read from the folder that holds the corpora: pass that folder"
            f" (humans_dir), or give the file as {entry.name}:PATH"
        )
    tried = [humans_dir / location for location in entry.locations]
    for path in tried:
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"corpus {entry.name}: no file at {' or '.join(str(path) for path in tried)}; pass the folder that"
        f" holds the corpora (with {entry.locations[0].split('/')[0]}/ in it), or give the file as {entry.name}:PATH"
    )
