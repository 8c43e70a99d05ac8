"""SFT data: the JSONL conversation format and its token-exact encoding with a trained-side loss mask.

See docs/algorithms.md, "SFT: the warm start".

One line of a data file is one :class:`SFTExample`: ``messages`` in the chat format (``system``,
``user``, ``assistant`` with optional ``tool_calls``, ``tool``), optional ``tools`` (the JSON schemas
the template renders), optional ``side`` (which side the line was collected for) and free ``meta``.
A message may carry ``"train": false`` to keep it out of the loss although it belongs to the
trained side (``mimesis-gym collect --side user`` marks the task's opening message so).
:func:`write_examples` writes a data file (``collect`` and ``sft-data`` both write through it).

:func:`encode_conversation` tokenises a conversation the way a rollout does — every message's
rendering is the difference of two renderings of the conversation (the template must only append),
and the untrained text between two trained bodies is tokenised as one piece, as the trainer's
observation deltas are — and marks with 1 exactly the trained side's tokens: for every message of
the trained role, its body (``<think>`` block, text and tool calls, as the template writes them) and
the end-of-turn marker that closes it; the role header, every other message and the text after
the marker get 0.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mimesis_gym.algorithms.records import Episode, Segment, Turn
from mimesis_gym.algorithms.render import ChatRenderer, TemplateNotIncrementalError
from mimesis_gym.core.conventions import THINK_TAG_FAMILIES
from mimesis_gym.evaluation.rundir import write_text_atomic

__all__ = [
    "SIDE_ROLES",
    "EncodedConversation",
    "SFTExample",
    "SFTMessage",
    "encode_conversation",
    "load_examples",
    "to_episode",
    "with_thought",
    "write_examples",
]

MISSING_DATA_FIX = "write one with `mimesis-gym collect` or `mimesis-gym sft-data`"
"""How to make an SFT data file, ending the error for a missing one."""

Side = Literal["agent", "user"]
SIDE_ROLES: dict[str, str] = {"agent": "assistant", "user": "user"}
"""The message role whose turns carry the loss, per trained side."""

_SENTINEL = "\x00SFT-BODY\x00"


class SFTMessage(BaseModel):
    """One chat message; ``train=False`` keeps a message of the trained role out of the loss."""

    model_config = ConfigDict(extra="allow")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = Field("", description="None (an OpenAI tool-call message) reads as empty")
    tool_calls: list[dict[str, Any]] | None = None
    train: bool = True

    def chat(self) -> dict[str, Any]:
        """The message as the chat template receives it (without ``train``; ``content`` always a string)."""
        return {**self.model_dump(exclude={"train"}, exclude_none=True), "content": self.content or ""}


class SFTExample(BaseModel):
    """One conversation of an SFT data file."""

    model_config = ConfigDict(extra="forbid")

    messages: list[SFTMessage] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    side: Side | None = Field(None, description="the side the line was collected for (checked against sft.side)")
    meta: dict[str, Any] = Field(default_factory=dict)


def load_examples(paths: Iterable[str | Path]) -> list[SFTExample]:
    """Every line of every file, in order; ``ValueError`` naming the file and line of an invalid one."""
    examples: list[SFTExample] = []
    for path in map(Path, paths):
        if not path.is_file():
            raise ValueError(f"sft.data: {path} is not a file ({MISSING_DATA_FIX})")
        with path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    examples.append(SFTExample.model_validate(json.loads(line)))
                except (ValueError, ValidationError) as error:
                    summary = str(error).splitlines()[0] if isinstance(error, ValidationError) else str(error)
                    raise ValueError(f"{path}:{number}: not an SFT conversation ({summary})") from None
    return examples


def with_thought(text: str, thought: str | None) -> str:
    """A trained message's content with its private thought first: ``<think>thought</think>text``, the
    inline form the simulators' chat templates use (:data:`~mimesis_gym.core.conventions.THINK_TAG_FAMILIES`,
    whose first family every user's reply is split by); ``text`` alone when there is no thought."""
    if not thought:
        return text
    opener, closer = THINK_TAG_FAMILIES[0]
    return f"{opener}{thought}{closer}{text}"


def write_examples(path: str | Path, lines: Iterable[Mapping[str, Any]]) -> int:
    """Write SFT lines (dicts of the :class:`SFTExample` shape), one JSON object a line, to ``path``; the
    number written. The file is written whole or not at all (a temporary file renamed over ``path``), its
    folder created when missing; an ``OSError`` propagates with ``path`` named."""
    texts = [json.dumps(dict(line), ensure_ascii=False) + "\n" for line in lines]
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(target, "".join(texts))
    return len(texts)


@dataclass(frozen=True)
class EncodedConversation:
    """Token ids, the loss mask and the ``[start, end)`` span of every trained message."""

    input_ids: list[int]
    loss_mask: list[int]
    spans: list[tuple[int, int]]


def _render(renderer: ChatRenderer, messages: Sequence[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
    kwargs: dict[str, Any] = {"tokenize": False}
    if tools:
        kwargs["tools"] = tools
    return renderer.tokenizer.apply_chat_template(list(messages), **kwargs)


def _check_tool_calls(renderer: ChatRenderer, message: dict[str, Any], tools: list[dict[str, Any]] | None) -> None:
    without = {key: value for key, value in message.items() if key != "tool_calls"}
    if _render(renderer, [message], tools) == _render(renderer, [without], tools):
        raise ValueError(
            f"the chat template of {renderer.name!r} does not render tool calls, so the assistant's calls would "
            "vanish from its targets: write them as text ('[choice] content') or train a model whose template "
            "renders tool calls"
        )


def encode_conversation(example: SFTExample, renderer: ChatRenderer, side: Side) -> EncodedConversation:
    """Ids and loss mask of ``example`` with the loss on ``side``'s messages (see the module docstring).

    Raises ``ValueError`` when the template re-renders earlier messages (e.g. drops past ``<think>``
    blocks), does not render the tool calls of a trained message, or closes a trained message without
    its end-of-turn marker, and when no message is trained.
    """
    role = SIDE_ROLES[side]
    messages = [message.chat() for message in example.messages]
    tools = example.tools if example.tools and renderer.renders_tools(example.tools) else None
    marker = renderer.end_of_turn
    pieces: list[tuple[str, bool]] = []
    rendered = ""
    for i, (message, spec) in enumerate(zip(messages, example.messages, strict=True)):
        full = _render(renderer, messages[: i + 1], tools)
        if not full.startswith(rendered):
            raise TemplateNotIncrementalError(
                f"the chat template of {renderer.name!r} re-renders earlier messages when message {i} "
                f"({spec.role}) is appended (e.g. it drops past <think> blocks): SFT targets would not match "
                "what the model sees at generation time"
            )
        delta = full[len(rendered) :]
        rendered = full
        if spec.role != role or not spec.train:
            pieces.append((delta, False))
            continue
        if spec.tool_calls:
            _check_tool_calls(renderer, message, tools)
        probe = _render(renderer, [*messages[:i], {**message, "content": _SENTINEL}], tools)
        header = probe[len(full) - len(delta) : probe.index(_SENTINEL)]
        end = delta.rfind(marker)
        if not delta.startswith(header) or end < len(header):
            raise ValueError(
                f"the chat template of {renderer.name!r} does not close message {i} ({spec.role}) with "
                f"{marker!r} after its body: its trained tokens cannot be located"
            )
        end += len(marker)
        pieces += [(header, False), (delta[len(header) : end], True), (delta[end:], False)]
    ids: list[int] = []
    mask: list[int] = []
    spans: list[tuple[int, int]] = []
    pending = ""
    for text, trained in pieces:
        if not trained:
            pending += text
            continue
        ids += renderer.encode(pending)
        pending = ""
        body = renderer.encode(text)
        spans.append((len(ids), len(ids) + len(body)))
        ids += body
    ids += renderer.encode(pending)
    mask = [0] * len(ids)
    for start, end in spans:
        mask[start:end] = [1] * (end - start)
    if not spans:
        raise ValueError(f"the conversation has no trained {role} message (side {side!r})")
    return EncodedConversation(ids, mask, spans)


def to_episode(encoded: EncodedConversation, example: SFTExample, *, step: int, index: int, group: int) -> Episode:
    """A training record of the trainer: one segment, one turn per trained message, no rewards.

    ``rollout_id`` is ``'{step}:{group}:0'`` and every conversation is its own group.
    """
    owner = [0] * len(encoded.input_ids)
    turns = []
    for t, (start, end) in enumerate(encoded.spans, start=1):
        owner[start:end] = [t] * (end - start)
        turns.append(Turn(index=t, action_span=(start, end), gen_prompt_len=0, stepped=False))
    rollout_id = f"{step}:{group}:0"
    env_id = str(example.meta.get("env_id", "sft"))
    task_id = str(example.meta.get("task_id", index))
    segment = Segment(
        rollout_id=rollout_id,
        input_ids=encoded.input_ids,
        prompt_len=encoded.spans[0][0],
        loss_mask=encoded.loss_mask,
        turn_of_position=owner,
    )
    return Episode(
        rollout_id=rollout_id,
        group_id=f"{step}:{group}:{env_id}:{task_id}:{index}",
        env_id=env_id,
        task_id=task_id,
        seed=index,
        segments=[segment],
        turns=turns,
        messages=[message.chat() for message in example.messages],
    )
