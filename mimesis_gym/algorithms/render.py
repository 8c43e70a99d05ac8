"""Chat-template deltas: the ids appended after a turn, never a re-tokenised history.

See docs/algorithms.md, "Rendered deltas".

The observation after ``y_t`` is appended as the tokenisation of a **rendered delta** computed on a
fixed reference conversation, so nothing the policy sampled is ever re-rendered:

* ``base = [system "S", user "U", assistant "A"]`` (the assistant message carries a tool call of the
  same shape when ``y_t`` had one); ``r0 = render(base)``; ``E`` is the template's end-of-turn marker
  and ``cut`` the index just after the last ``E`` in ``r0``;
* ``r1 = render(base + [observation], add_generation_prompt=True)`` must start with ``r0[:cut]``
  (else :class:`TemplateNotIncrementalError`); the delta is ``r1[cut:]`` (closing suffix of the
  assistant message, the observation message, the generation prompt).

The **note delta** of a CSD teacher row is what one more user message adds to a conversation that
ends with a complete user (or tool) message: ``render(b + [note])[len(render(b)):]``.

For ChatML (the tiny model) the delta of a user reply ``hi`` is
``"\\n<|im_start|>user\\nhi<|im_end|>\\n<|im_start|>assistant\\n"`` with a generation prompt of 4 ids,
and the note delta of ``N`` is ``"<|im_start|>user\\nN<|im_end|>\\n"``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ChatRenderer",
    "ObservationDelta",
    "TemplateNotIncrementalError",
    "probe_tool_call",
    "strip_reward_line",
]

_REWARD_LINE = re.compile(r"\nReward: [^\n]*\Z")
_PROBE_TOOL_CALL = {"choice": "action", "content": "x"}


class TemplateNotIncrementalError(ValueError):
    """The chat template re-renders earlier messages when one is appended: deltas cannot be exact."""


def strip_reward_line(obs: str) -> str:
    """``obs`` without the trailing ``"\\nReward: …"`` line of ``reward_profile="train"``."""
    return _REWARD_LINE.sub("", obs)


def probe_tool_call(arguments: dict[str, Any] | None = None, *, call_id: str = "call_0") -> dict[str, Any]:
    """An OpenAI-format tool call of ``interact_with_env`` (the shape every env's tool has)."""
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "interact_with_env", "arguments": dict(arguments or _PROBE_TOOL_CALL)},
    }


@dataclass(frozen=True)
class ObservationDelta:
    """The ids appended after a turn; ``feedback_span`` is relative to ``ids`` (``None``: not locatable)."""

    ids: list[int]
    gen_prompt_len: int
    feedback_span: tuple[int, int] | None
    text: str


class ChatRenderer:
    """Renders prompts and deltas for one tokenizer (and the tool list it renders, if any).

    ``tools`` is passed to the template on every call when not ``None``: give it only when the
    template renders tools (see :meth:`renders_tools`).
    """

    def __init__(self, tokenizer: Any, *, tools: Sequence[dict[str, Any]] | None = None) -> None:
        self.tokenizer = tokenizer
        self.tools = list(tools) if tools else None
        self.name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
        self.end_of_turn = self._find_end_of_turn()
        end_id = tokenizer.convert_tokens_to_ids(self.end_of_turn)
        self.end_of_turn_id: int = int(end_id)
        eos = tokenizer.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        self.stop_ids: frozenset[int] = frozenset({self.end_of_turn_id, *eos_ids})

    # -- rendering ------------------------------------------------------------------------------

    def render(self, messages: Sequence[dict[str, Any]], *, add_generation_prompt: bool = False) -> str:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": add_generation_prompt}
        if self.tools:
            kwargs["tools"] = self.tools
        return self.tokenizer.apply_chat_template(list(messages), **kwargs)

    def encode(self, text: str) -> list[int]:
        return [int(i) for i in self.tokenizer(text, add_special_tokens=False)["input_ids"]]

    def renders_tools(self, tools: Sequence[dict[str, Any]]) -> bool:
        """Whether the template shows ``tools`` (a probe rendered with and without them differs)."""
        if not tools:
            return False
        probe = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
        plain = self.tokenizer.apply_chat_template(probe, tokenize=False)
        try:
            with_tools = self.tokenizer.apply_chat_template(probe, tools=list(tools), tokenize=False)
        except Exception:  # a template that rejects tools does not render them
            return False
        return plain != with_tools

    def prompt_ids(self, messages: Sequence[dict[str, Any]]) -> tuple[list[int], int]:
        """The first prompt (the only tokenisation of a whole conversation) and its generation-prompt length."""
        text = self.render(messages, add_generation_prompt=True)
        return self.encode(text), self._gen_prompt_len(messages, text)

    def _gen_prompt_len(self, messages: Sequence[dict[str, Any]], with_prompt: str) -> int:
        without = self.render(messages, add_generation_prompt=False)
        if not with_prompt.startswith(without):
            raise TemplateNotIncrementalError(
                f"chat template of {self.name!r}: the generation prompt is not appended at the end of the rendering"
            )
        return len(self.encode(with_prompt[len(without) :]))

    # -- deltas ---------------------------------------------------------------------------------

    def _base(self, tool_call: dict[str, Any] | None) -> list[dict[str, Any]]:
        assistant: dict[str, Any] = {"role": "assistant", "content": "A"}
        if tool_call is not None:
            assistant["tool_calls"] = [tool_call]
        return [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}, assistant]

    def _find_end_of_turn(self) -> str:
        rendered = self.tokenizer.apply_chat_template(self._base(None), tokenize=False)
        start = rendered.rfind("A")
        specials = set(getattr(self.tokenizer, "all_special_tokens", []) or [])
        for token in getattr(self.tokenizer, "added_tokens_decoder", {}).values():
            if getattr(token, "special", False):
                specials.add(str(token.content if hasattr(token, "content") else token))
        found = [(rendered.find(s, start), s) for s in specials if s and rendered.find(s, start) != -1]
        if not found:
            raise TemplateNotIncrementalError(
                f"chat template of {self.name!r}: no special end-of-turn marker follows the assistant message"
            )
        return min(found, key=lambda item: (item[0], -len(item[1])))[1]

    def observation_delta(
        self,
        content: str,
        *,
        tool_call: dict[str, Any] | None = None,
        feedback: str | None = None,
    ) -> ObservationDelta:
        """The ids that follow ``y_t``'s stop id when the env answered ``content``.

        The observation is a ``tool`` message (with the call's id) when ``tool_call`` is given, else
        a ``user`` message. ``feedback`` is the part of ``content`` to locate as ``feedback_span``
        (default: ``content`` without its reward line).
        """
        base = self._base(tool_call)
        if tool_call is not None:
            message = {"role": "tool", "tool_call_id": tool_call.get("id"), "content": content}
            message["name"] = tool_call.get("function", {}).get("name")
        else:
            message = {"role": "user", "content": content}
        r0 = self.render(base)
        cut = r0.rfind(self.end_of_turn)
        if cut == -1:
            raise TemplateNotIncrementalError(f"chat template of {self.name!r}: no end-of-turn marker in {r0!r}")
        cut += len(self.end_of_turn)
        r1 = self.render([*base, message], add_generation_prompt=True)
        if r1[:cut] != r0[:cut]:
            raise TemplateNotIncrementalError(
                f"chat template of {self.name!r} re-renders earlier messages when an observation is appended "
                f"(the rendered-delta prefix check failed); use context_mode='per_turn'"
            )
        delta = r1[cut:]
        gen_prompt_len = self._gen_prompt_len([*base, message], r1)
        ids, span = self._encode_with_span(delta, feedback if feedback is not None else strip_reward_line(content))
        return ObservationDelta(ids=ids, gen_prompt_len=gen_prompt_len, feedback_span=span, text=delta)

    def _encode_with_span(self, text: str, feedback: str) -> tuple[list[int], tuple[int, int] | None]:
        try:
            encoded = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
            offsets = encoded["offset_mapping"]
        except (NotImplementedError, ValueError, TypeError, KeyError):  # slow tokenizers: no offsets
            ids = self.encode(text)
            return ids, (0, len(ids))
        ids = [int(i) for i in encoded["input_ids"]]
        start = text.find(feedback) if feedback else -1
        if start == -1:
            return ids, None
        end = start + len(feedback)
        inside = [k for k, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
        if not inside:
            return ids, None
        return ids, (inside[0], inside[-1] + 1)

    def note_delta(self, content: str, *, after_tool: bool = False) -> list[int]:
        """Ids of one more user message (``content``) after a complete user (or tool) message (a CSD teacher row)."""
        base: list[dict[str, Any]] = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
        if after_tool:
            call = probe_tool_call()
            base += [
                {"role": "assistant", "content": "A", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": call["id"], "name": "interact_with_env", "content": "T"},
            ]
        q0 = self.render(base)
        q1 = self.render([*base, {"role": "user", "content": content}])
        if not q1.startswith(q0):
            raise TemplateNotIncrementalError(
                f"chat template of {self.name!r} re-renders earlier messages when a user message is appended"
            )
        return self.encode(q1[len(q0) :])

    def check_incremental(self) -> None:
        """The start-up probe: raise :class:`TemplateNotIncrementalError` unless every delta is exact."""
        self.observation_delta("probe reply")
        self.note_delta("probe note")
        if self.tools:
            self.observation_delta("probe result", tool_call=probe_tool_call())
            self.note_delta("probe note", after_tool=True)
