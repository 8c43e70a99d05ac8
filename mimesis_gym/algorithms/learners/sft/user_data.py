"""Human conversations → user-side SFT data: the paper's Stage I data (docs/algorithms.md, "User-side
SFT data from human conversations"; ``mimesis-gym sft-data``).

Each real conversation of :mod:`mimesis_gym.corpora` becomes one line of the SFT format
(:class:`~mimesis_gym.algorithms.learners.sft.data.SFTExample`) **seen from the simulator's side**, exactly as
the scorecard's replay (``mimesis/HumanReplay-v0``) shows it to the user under test:

- a ``system`` message: the replay user's prompt for the conversation's goal
  (:func:`~mimesis_gym.envs.replay.roles.user_system_prompt`);
- the human's turns as ``assistant`` messages (the trained side), the real replies as ``user``
  messages, built by :func:`~mimesis_gym.core.conventions.role_messages` as the replay builds them
  (so a conversation the human opens starts with its ``user`` opener, ``Hello.``);
- where the human ended after a reply, a last ``assistant`` message
  :data:`~mimesis_gym.envs.replay.roles.END_MARKER` alone (the replay's end probe), so the simulator
  learns when to stop; none where the conversation ends with the human's own turn;
- a conversation the human opened whose goal *is* that first message (``goal_kind="first_message"``)
  keeps the message as given context (``"train": false``): the replay gives it too, never asks for it.

Every other human turn is trained, all in one line: the SFT learner puts the loss on every message of
the trained role. The simulator's own lines are ``assistant`` messages, so the loss side is
``sft.side="agent"`` and every line says ``"side": "agent"`` (a run with ``sft.side="user"`` would
train the real replies instead, and is refused).

Styles: ``midtrain`` (thinking off: the human's text alone) and ``thoughttrace`` (a human turn with a
reason gets ``<think>reason</think>`` before its text, :func:`~mimesis_gym.algorithms.learners.sft.data.with_thought`;
a turn without a reason gets none).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from mimesis_gym.algorithms.learners.sft.data import with_thought, write_examples
from mimesis_gym.core.conventions import role_messages
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.redact import redact
from mimesis_gym.corpora import CORPORA, CorpusLoad, HumanConversation, HumanTurn, load_corpus, split_conversations
from mimesis_gym.corpora.conversation import Split
from mimesis_gym.envs.replay.roles import END_MARKER, user_system_prompt
from mimesis_gym.evaluation.rundir import write_text_atomic

__all__ = [
    "STYLES",
    "SFTDataError",
    "SourceCounts",
    "Style",
    "UserSideData",
    "meta_path_of",
    "replay_system_prompt",
    "user_side_example",
    "user_side_examples",
    "write_user_sft_data",
]

Style = Literal["midtrain", "thoughttrace"]
STYLES: tuple[Style, ...] = get_args(Style)
SIDE = "agent"
"""The SFT loss side of every line: the simulator's own lines are ``assistant`` messages."""


class SFTDataError(ConfigurationError):
    """A user error of ``sft-data`` (bad source, folder, style, split, an existing output); one line."""


def replay_system_prompt(conversation: HumanConversation) -> str:
    """The system message the replay's user under test gets for ``conversation``."""
    return user_system_prompt(conversation.goal, conversation.goal_kind, conversation.source)


def user_side_example(
    conversation: HumanConversation,
    *,
    style: Style = "midtrain",
    system_prompt: Callable[[HumanConversation], str] = replay_system_prompt,
) -> dict[str, Any] | None:
    """One SFT line of ``conversation`` from the simulator's side (module docstring); ``None`` when no
    message of it would be trained."""
    _check_style(style)
    history = [_spoken(turn, style) for turn in conversation.turns]
    messages: list[dict[str, Any]] = role_messages(system_prompt(conversation), history)
    given = _goal_is_first_turn(conversation)
    if given:
        first = next(i for i, message in enumerate(messages) if message["role"] == "assistant")
        messages[first] = {**messages[first], "train": False}
    ended = conversation.turns[-1].role == "assistant"
    if ended:
        messages.append({"role": "assistant", "content": END_MARKER})
    trained_turns = [turn for turn in conversation.turns if turn.role == "user"][int(given) :]
    if not trained_turns and not ended:
        return None
    meta = {
        "task_id": conversation.id,
        "source": conversation.source,
        "conv_id": conversation.conv_id,
        "split": conversation.split,
        "goal_kind": conversation.goal_kind,
        "style": style,
        "trained_user_turns": len(trained_turns),
        "thoughts": sum(1 for turn in trained_turns if turn.reason) if style == "thoughttrace" else 0,
        "human_ended": ended,
    }
    return {"messages": messages, "side": SIDE, "meta": meta}


@dataclass(frozen=True, slots=True)
class UserSideData:
    """The lines :func:`user_side_examples` built, and the ids of conversations with nothing to train."""

    examples: list[dict[str, Any]]
    empty: list[str] = field(default_factory=list)


def user_side_examples(
    conversations: Iterable[HumanConversation],
    *,
    style: Style = "midtrain",
    system_prompt: Callable[[HumanConversation], str] = replay_system_prompt,
) -> UserSideData:
    """One SFT line per conversation (:func:`user_side_example`), in order; a conversation with no
    trained message is left out and its id listed in :attr:`UserSideData.empty`."""
    _check_style(style)
    examples: list[dict[str, Any]] = []
    empty: list[str] = []
    for conversation in conversations:
        line = user_side_example(conversation, style=style, system_prompt=system_prompt)
        if line is None:
            empty.append(conversation.id)
        else:
            examples.append(line)
    return UserSideData(examples, empty)


@dataclass(frozen=True, slots=True)
class SourceCounts:
    """What one source gave: read, in the split, kept (``--limit``), written and left out."""

    load: CorpusLoad
    in_split: int
    kept: int
    data: UserSideData

    def as_dict(self) -> dict[str, Any]:
        examples = self.data.examples
        return {
            "path": str(self.load.path),
            "conversations": len(self.load.conversations),
            "in_split": self.in_split,
            "kept": self.kept,
            "written": len(examples),
            "empty_user_side": len(self.data.empty),
            "empty_ids": list(self.data.empty),
            "trained_user_turns": sum(line["meta"]["trained_user_turns"] for line in examples),
            "end_markers": sum(1 for line in examples if line["meta"]["human_ended"]),
            "thoughts": sum(line["meta"]["thoughts"] for line in examples),
        }


def write_user_sft_data(
    sources: Sequence[str],
    out: str | Path,
    *,
    humans_dir: str | Path | None = None,
    style: Style = "midtrain",
    split: Split = "dev",
    limit: int | None = None,
    force: bool = False,
    command: Sequence[str] = (),
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Read ``sources`` (corpus specs: ``NAME`` under ``humans_dir``, ``NAME:PATH``, ``jsonl:PATH``), keep
    ``split`` (at most ``limit`` conversations per source, file order), write their user-side lines to
    ``out`` and the account of them to ``<out>.meta.json`` (both atomically); returns that account.

    ``log`` gets each source's :meth:`CorpusLoad.summary` line. :class:`SFTDataError` (before anything is
    written) for an unknown source, a missing file or folder, a bad style or split, an existing ``out``
    without ``force``, or nothing to write; an ``OSError`` of the writes propagates.
    """
    _check_style(style)
    path = Path(out)
    if path.exists() and not force:
        raise SFTDataError(f"--out {path} exists; pass --force to replace it (and its .meta.json)")
    if humans_dir is not None and not Path(humans_dir).is_dir():
        raise SFTDataError(f"--humans {humans_dir} is not a directory (the folder that holds the corpora)")
    if not sources:
        raise SFTDataError("no source given (e.g. --sources oasst1,chitchat)")
    bare = [spec for spec in sources if spec in CORPORA and CORPORA[spec].locations]  # others: load_corpus says
    if humans_dir is None and bare:
        raise SFTDataError(f"--humans DIR is needed to read {bare[0]} (or give its file as {bare[0]}:PATH)")
    counts: dict[str, SourceCounts] = {}
    for spec in dict.fromkeys(sources):
        counts[spec] = _source(spec, humans_dir, split, limit, style)
        log(counts[spec].load.summary())
    lines = [line for entry in counts.values() for line in entry.data.examples]
    if not lines:
        held = ", ".join(f"{spec} {entry.kept}" for spec, entry in counts.items())
        raise SFTDataError(
            f"nothing to write: no conversation of the {split} half has a user turn to train (conversations: {held})"
        )
    meta = _meta(counts, style=style, split=split, limit=limit, command=command)
    write_examples(path, lines)
    try:
        write_text_atomic(meta_path_of(path), json.dumps(meta, indent=2, ensure_ascii=False) + "\n")
    except BaseException:
        path.unlink(missing_ok=True)  # never a data file without its account
        raise
    return meta


def meta_path_of(out: str | Path) -> Path:
    """Where the account of the data file ``out`` is written: ``<out>.meta.json``."""
    path = Path(out)
    return path.with_name(path.name + ".meta.json")


def _source(spec: str, humans_dir: str | Path | None, split: Split, limit: int | None, style: Style) -> SourceCounts:
    try:
        load = load_corpus(spec, None if humans_dir is None else Path(humans_dir))
        half = split_conversations(load.conversations, split)
    except (ValueError, FileNotFoundError) as error:
        raise SFTDataError(str(error)) from None
    except OSError as error:  # not the output's fault: say which corpus could not be read
        raise SFTDataError(f"corpus {spec} cannot be read: {error.strerror or error} ({error.filename})") from None
    kept = half[:limit]
    return SourceCounts(load, len(half), len(kept), user_side_examples(kept, style=style))


def _meta(
    counts: dict[str, SourceCounts], *, style: Style, split: Split, limit: int | None, command: Sequence[str]
) -> dict[str, Any]:
    per_source = {spec: entry.as_dict() for spec, entry in counts.items()}
    return {
        "sources": list(counts),
        "split": split,
        "style": style,
        "side": SIDE,
        "limit": limit,
        "written": sum(entry["written"] for entry in per_source.values()),
        "counts": per_source,
        "dropped": {spec: dict(entry.load.dropped) for spec, entry in counts.items()},
        "skipped": {spec: dict(entry.load.skipped) for spec, entry in counts.items()},
        "first_seen": {spec: dict(entry.load.first_seen) for spec, entry in counts.items()},
        "command": redact(" ".join(command)),
    }


def _check_style(style: str) -> None:
    if style not in STYLES:
        raise SFTDataError(f"style {style!r} is not one of {', '.join(STYLES)}")


def _goal_is_first_turn(conversation: HumanConversation) -> bool:
    return conversation.goal_kind == "first_message" and conversation.turns[0].role == "user"


def _spoken(turn: HumanTurn, style: Style) -> tuple[str, str]:
    """A turn as the replay's history holds it: ``("self", text)`` for the human, ``("other", text)``
    for the reply; in the ``thoughttrace`` style the human's reason goes first as a thought."""
    if turn.role == "assistant":
        return "other", turn.text
    return "self", with_thought(turn.text, turn.reason if style == "thoughttrace" else None)
