"""The optional Turing-test judge of the human-likeness scorecard (docs/humans.md, "Turing test (optional judge)").

For one item the judge reads the user's goal, the real conversation so far (its last
``CONTEXT_TURNS`` turns, each cut to ``CONTEXT_CHARS``) and two candidate next user turns, A and B
(each cut to ``CANDIDATE_CHARS``): one the real human wrote, one the simulator. Which of the two
stands at A is drawn per item from ``random.Random(f"{seed}:{key}")`` (:func:`human_at_a`), so it
does not depend on the order or number of items. The judge answers one JSON object,
``{"human": "A"}`` or ``{"human": "B"}``: the candidate it believes a real person wrote.

The judge is an env-style :class:`~mimesis_gym.core.roles.LLMRole` called through a
:class:`~mimesis_gym.core.roles.RoleSession` per item (temperature 0, a seed per item drawn from the
same generator, ``role_max_tokens`` applied), like the users report's judge: it gets the role
machinery's JSON coercion and failure kinds, and an unusable endpoint raises
:class:`~mimesis_gym.core.errors.EndpointUnavailableError` at once. Calls run ``concurrency`` at a
time.

The result counts: items whose two candidates are the same text after whitespace normalisation are
not sent (``identical``); a failed call or an answer that is not such an object is a failure, by
its kind, never a pick; the rest are ``judged``, and ``pick_rate`` is the share of them in which the
judge named the real human (50 %: the judge cannot tell them apart), with a 95 % Wilson interval.
"""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mimesis_gym.core.chat import ChatModel, ChatReply
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleSession

__all__ = [
    "CANDIDATE_CHARS",
    "CONTEXT_CHARS",
    "CONTEXT_TURNS",
    "TuringItem",
    "TuringJudge",
    "TuringResult",
    "human_at_a",
    "make_turing_judge",
    "turing_messages",
    "turing_test",
    "wilson_interval",
]

CONTEXT_TURNS = 6
"""The judge sees at most this many of the latest turns before the candidates."""
CONTEXT_CHARS = 600
"""Each context turn is cut to this many characters (the last one an ellipsis)."""
CANDIDATE_CHARS = 1200
"""Each candidate is cut to this many characters; both are cut the same way."""
WILSON_Z = 1.959963984540054
"""The standard normal quantile of a two-sided 95 % interval."""

Position = Literal["A", "B"]

INSTRUCTIONS = """You will read the start of a conversation between a USER, a real person with a goal, \
and the OTHER side (an AI assistant, a support agent or another person), then two candidate next \
messages of the USER, A and B. A real person wrote one of them; a computer program imitating users \
wrote the other. Decide which one the real person wrote.

Answer with one JSON object and nothing else: {"human": "A"} or {"human": "B"}."""


@dataclass(frozen=True)
class TuringItem:
    """One question for the judge: the context a human and a simulator answered, and their two turns.

    ``key`` names the item (unique among the items judged together; it seeds the order);
    ``context`` holds ``(role, text)`` pairs, ``role`` ``"user"`` or ``"assistant"``, oldest first.
    """

    key: str
    goal: str
    context: tuple[tuple[str, str], ...]
    human: str
    simulated: str

    def __post_init__(self) -> None:
        roles = sorted({role for role, _ in self.context} - {"user", "assistant"})
        if roles:
            raise ConfigurationError(
                f"Turing item {self.key!r}: context roles must be 'user' or 'assistant', got {roles}"
            )


class TuringResult(BaseModel):
    """How often the judge named the real human; ``items == identical + judged + sum(failures.values())``."""

    model_config = ConfigDict(frozen=True)

    items: int
    """Items given."""
    identical: int
    """Items not sent: the two candidates are the same text after whitespace normalisation."""
    judged: int
    """Items whose answer named A or B."""
    human_picked: int
    """Judged items in which the judge named the real human's turn."""
    pick_rate: float | None
    """``human_picked / judged``; ``None`` when nothing was judged."""
    ci_low: float | None
    """Lower end of the 95 % Wilson interval of ``pick_rate``."""
    ci_high: float | None
    """Upper end of the 95 % Wilson interval of ``pick_rate``."""
    failures: dict[str, int]
    """Items without a usable answer, by failure kind (``bad_json``, ``invalid_value``, ``timeout``, ...)."""


def human_at_a(seed: int, key: str) -> bool:
    """Whether the human's turn is candidate A of the item ``key`` under ``seed`` (a fair coin per item)."""
    return _draw(seed, key)[0]


def _draw(seed: int, key: str) -> tuple[bool, int]:
    """The item's draws from ``random.Random(f"{seed}:{key}")``: whether the human stands at A, then
    the seed of its call."""
    rng = random.Random(f"{seed}:{key}")
    return rng.random() < 0.5, rng.randrange(2**31)


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same_text(first: str, second: str) -> bool:
    return first.split() == second.split()


def turing_messages(item: TuringItem, *, human_first: bool) -> list[dict[str, Any]]:
    """The judge's chat for one item: instructions, goal, the cut context, candidates A and B."""
    shown = item.context[-CONTEXT_TURNS:]
    left_out = len(item.context) - len(shown)
    lines = [f"The USER's goal: {_clip(item.goal, CONTEXT_CHARS) or '(not stated)'}", ""]
    if not item.context:
        lines.append("The conversation has not started yet: the candidates are the USER's first message.")
    else:
        earlier = f" ({left_out} earlier turn(s) left out)" if left_out else ""
        lines.append(f"The conversation so far{earlier}:")
        lines += [f"{'USER' if role == 'user' else 'OTHER'}: {_clip(text, CONTEXT_CHARS)}" for role, text in shown]
    first, second = (item.human, item.simulated) if human_first else (item.simulated, item.human)
    for label, text in (("A", first), ("B", second)):
        lines += ["", f"Candidate {label}:", "<<<", _clip(text, CANDIDATE_CHARS), ">>>"]
    lines += ["", "Which candidate did the real person write?"]
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": "\n".join(lines)}]


class TuringJudge(LLMRole[Position | None]):
    """The role: ``item=`` and ``human_first=`` in, the position named (``"A"``/``"B"``) out; ``None``
    when the call fails or the answer names neither."""

    name = "turing_judge"
    json_keys = ("human",)
    max_tokens = 256

    def build_messages(self, *, item: TuringItem, human_first: bool, **_: Any) -> list[dict[str, Any]]:
        return turing_messages(item, human_first=human_first)

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> Position:
        assert parsed is not None
        value = parsed["human"]
        answer = value.strip().upper() if isinstance(value, str) else None
        if answer not in ("A", "B"):
            raise RoleOutputError(f"'human' names neither candidate: {value!r}")
        return answer

    def fallback(self, **_: Any) -> None:
        return None


def make_turing_judge(spec: str) -> ChatModel:
    """The judge's chat model for a user ``spec`` (docs/users.md, Aliases), built as a ``judge`` party;
    :class:`~mimesis_gym.core.errors.ConfigurationError` for ``scripted``, which cannot judge."""
    from mimesis_gym.users import make_chat_model

    model = make_chat_model(spec, party="judge")
    if model is None:
        raise ConfigurationError(f"judge {spec!r} is scripted: the Turing test needs a model spec, e.g. openai:<model>")
    return model


def wilson_interval(successes: int, trials: int, z: float = WILSON_Z) -> tuple[float, float] | None:
    """The Wilson score interval of ``successes / trials`` (95 % by default); ``None`` for no trials."""
    if trials == 0:
        return None
    rate = successes / trials
    scale = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / scale
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


def _check(items: Sequence[TuringItem], concurrency: int, role_max_tokens: int | None) -> None:
    if concurrency < 1:
        raise ConfigurationError(f"concurrency must be at least 1, got {concurrency}")
    if role_max_tokens is not None and role_max_tokens < 1:
        raise ConfigurationError(f"role_max_tokens must be at least 1 or None, got {role_max_tokens}")
    repeated = sorted(key for key, count in Counter(item.key for item in items).items() if count > 1)
    if repeated:
        raise ConfigurationError(f"Turing items need unique keys (they seed the order); repeated: {repeated[:5]}")


async def turing_test(
    model: ChatModel,
    items: Sequence[TuringItem],
    *,
    concurrency: int = 8,
    role_max_tokens: int | None = None,
    seed: int = 0,
) -> TuringResult:
    """Ask ``model`` which candidate of each item a real person wrote; count its answers.

    Raises :class:`~mimesis_gym.core.errors.ConfigurationError` for repeated keys or bad limits
    (before any call) and :class:`~mimesis_gym.core.errors.EndpointUnavailableError` when the
    judge's endpoint cannot be used. ``model`` is not closed here.
    """
    _check(items, concurrency, role_max_tokens)
    judge = TuringJudge(model)
    gate = asyncio.Semaphore(concurrency)

    async def ask(item: TuringItem) -> bool | str:
        """``True``/``False``: the judge named / did not name the human; a string: the failure kind."""
        human_first, call_seed = _draw(seed, item.key)
        session = RoleSession(episode_id=f"turing-{item.key}", llm_seed_base=call_seed, role_max_tokens=role_max_tokens)
        async with gate:
            result = await judge(session, item=item, human_first=human_first)
        if result.value is None:
            return session.step_failures[-1][1].kind  # the role records every failure it falls back on
        return result.value == ("A" if human_first else "B")

    sent = [item for item in items if not _same_text(item.human, item.simulated)]
    outcomes = await asyncio.gather(*(ask(item) for item in sent))
    answers = [outcome for outcome in outcomes if isinstance(outcome, bool)]
    picked = sum(answers)
    interval = wilson_interval(picked, len(answers))
    return TuringResult(
        items=len(items),
        identical=len(items) - len(sent),
        judged=len(answers),
        human_picked=picked,
        pick_rate=picked / len(answers) if answers else None,
        ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None,
        failures=dict(sorted(Counter(o for o in outcomes if isinstance(o, str)).items())),
    )
