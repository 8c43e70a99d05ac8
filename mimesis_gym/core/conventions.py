"""Conventions shared by every chat model: the role frame, think handling, refusal detection and the
retry loop of :class:`BaseChatModel`, which every backend inherits so that the conventions live in
exactly one place. What they promise: docs/users.md, "What every chat model guarantees".
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mimesis_gym.core.chat import DETAIL_MAX_CHARS, ChatFailure, ChatReply, FailureKind, Usage, current_call_context
from mimesis_gym.core.errors import MimesisGymError
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json
from mimesis_gym.core.redact import redact
from mimesis_gym.core.retry_ledger import TRACKED_KINDS, RetryLedger
from mimesis_gym.core.text import clean_text

__all__ = [
    "DEFAULT_OPENER",
    "DEFAULT_REFUSAL_PATTERNS",
    "THINK_TAG_FAMILIES",
    "AttemptError",
    "BaseChatModel",
    "RawCompletion",
    "RetryPolicy",
    "detect_refusal",
    "has_think_tag",
    "reinline_reasoning",
    "repair_messages",
    "reply_schema",
    "role_messages",
    "split_thought",
]

THINK_TAG_FAMILIES: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
)
"""Tag families stripped from every reply, in this order (exact lower-case tags)."""

logger = logging.getLogger(__name__)

DEFAULT_OPENER = "Hello."
"""Inserted as the first ``user`` message when a role's own chat would open with ``assistant``."""

_BLOCK_PATTERNS = tuple(
    re.compile(re.escape(opener) + r"(.*?)" + re.escape(closer), re.DOTALL) for opener, closer in THINK_TAG_FAMILIES
)


def has_think_tag(text: str) -> bool:
    """True when ``text`` contains any opener or closer of a think tag family."""
    return any(opener in text or closer in text for opener, closer in THINK_TAG_FAMILIES)


def split_thought(raw: str) -> tuple[str, str | None]:
    """Split a raw completion into ``(utterance, thought)``.

    For each tag family in order: (a) remove every complete ``opener…closer`` block (shortest
    match); (b) if a closer remains (the template pre-filled the opener), remove everything from
    the start through that first closer; (c) if an opener remains (the token cap hit mid-thought),
    remove it and everything after it. The utterance is what is left, stripped. The thought is the
    removed texts without tags, in textual order, trimmed and joined by a blank line, or ``None``
    when no tag occurred or all of it is whitespace.
    """
    pieces: list[tuple[int, str]] = []  # (position in ``raw``, removed text without tags)
    text = raw
    origin = list(range(len(raw)))  # origin[i] = position in ``raw`` of text[i]

    def cut(start: int, end: int, inner_start: int, inner_end: int) -> None:
        nonlocal text, origin
        if inner_end > inner_start:
            pieces.append((origin[inner_start], text[inner_start:inner_end]))
        text = text[:start] + text[end:]
        origin = origin[:start] + origin[end:]

    for (opener, closer), block in zip(THINK_TAG_FAMILIES, _BLOCK_PATTERNS, strict=True):
        # (a) complete blocks, removed right to left so earlier offsets stay valid
        for match in reversed(list(block.finditer(text))):
            cut(match.start(), match.end(), match.start(1), match.end(1))
        # (b) a dangling closer: the opener was pre-filled by the chat template
        closer_at = text.find(closer)
        if closer_at != -1:
            cut(0, closer_at + len(closer), 0, closer_at)
        # (c) a dangling opener: the token cap hit mid-thought
        opener_at = text.find(opener)
        if opener_at != -1:
            cut(opener_at, len(text), opener_at + len(opener), len(text))

    utterance = text.strip()
    thoughts = [_without_tags(piece).strip() for _, piece in sorted(pieces, key=lambda item: item[0])]
    thoughts = [piece for piece in thoughts if piece]
    return utterance, ("\n\n".join(thoughts) if thoughts else None)


def _without_tags(text: str) -> str:
    for opener, closer in THINK_TAG_FAMILIES:
        text = text.replace(opener, "").replace(closer, "")
    return text


def reinline_reasoning(content: str, reasoning: str | None) -> str:
    """Rebuild ``<think>reasoning</think>content`` from a separate reasoning field.

    Applied only when ``reasoning`` is non-empty and ``content`` holds no closing think tag, so both
    server set-ups (reasoning parser on or off) look the same afterwards.
    """
    if not reasoning or any(closer in content for _, closer in THINK_TAG_FAMILIES):
        return content
    return f"<think>{reasoning}</think>{content}"


def role_messages(
    system: str,
    turns: Iterable[tuple[str, str]],
    opener: str | None = DEFAULT_OPENER,
) -> list[dict[str, str]]:
    """Build a role's own chat: the simulated party is ``assistant``, its counterpart ``user``.

    ``turns`` are ``(speaker, text)`` pairs with speaker ``"self"`` (→ assistant) or ``"other"``
    (→ user). Consecutive messages of one role are merged with a blank line (several chat
    templates reject them). When the first non-system message would be ``assistant``, ``opener``
    is inserted as a ``user`` message (unless ``opener`` is ``None``).
    """
    messages: list[dict[str, str]] = [{"role": "system", "content": system}]
    for speaker, text in turns:
        if speaker not in ("self", "other"):
            raise ValueError(f"speaker must be 'self' or 'other', got {speaker!r}")
        role = "assistant" if speaker == "self" else "user"
        if len(messages) == 1 and role == "assistant" and opener is not None:
            messages.append({"role": "user", "content": opener})
        if messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": messages[-1]["content"] + "\n\n" + text}
        else:
            messages.append({"role": role, "content": text})
    return messages


# ---------------------------------------------------------------------------------------------
# Refusal detection

_REFUSAL_VERBS = (
    r"help|assist|comply|continue|participate|engage|role[- ]?play|pretend|"
    r"take on (?:this|that|the|such a) role|play (?:this|that|the) role|fulfil+|provide that|do that"
)
DEFAULT_REFUSAL_PATTERNS: tuple[str, ...] = (
    # "I can't / cannot / won't / am unable to" + a verb about the request, within one sentence.
    r"\bi\s*(?:can(?:no|')t|cannot|won't|will not|am unable to|'m unable to|am not able to|'m not able to|"
    r"must decline to|have to decline to)\b[^.!?\n]{0,80}?\b(?:" + _REFUSAL_VERBS + r")\b",
    # an opening "As an AI"
    r"^\W*as an ai\b",
)
"""Assistant-style refusals; in-character disagreement ("I can't agree with you") must not match."""

_REFUSAL_MAX_CHARS = 600
_REFUSAL_WINDOW = 200


def detect_refusal(text: str, patterns: Sequence[str] | None = None) -> str | None:
    """The matched snippet when ``text`` reads as an assistant-style refusal, else ``None``.

    Only utterances of at most 600 characters are checked, and only their first 200 characters.
    """
    if not text or len(text) > _REFUSAL_MAX_CHARS:
        return None
    window = text[:_REFUSAL_WINDOW].replace("’", "'").lower()
    for pattern in patterns or DEFAULT_REFUSAL_PATTERNS:
        match = re.search(pattern, window, re.IGNORECASE)
        if match is not None:
            return match.group(0)
    return None


# ---------------------------------------------------------------------------------------------
# The shared retry loop

TRANSPORT_KINDS = frozenset({"timeout", "connection", "rate_limited", "server_error"})
CONTENT_KINDS = frozenset({"bad_response", "empty", "bad_json"})
REPAIRABLE_KINDS = frozenset({"empty", "bad_json", "refusal"})
"""Faults of the model's own reply: retried at once with a repair turn and another seed, never resent as is."""
REPAIR_SEED_STRIDE = 7919
"""Added to the seed per retry (times the retry number), so a sampled retry draws differently."""
REPAIR_QUOTE_CHARS = 1200


def reply_schema(keys: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a role's reply: an object that holds every key (their values unconstrained)."""
    return {"type": "object", "properties": {key: {} for key in keys}, "required": list(keys)}


def repair_messages(
    messages: list[dict[str, Any]],
    failure: AttemptError,
    json_keys: Sequence[str] | None,
    *,
    original: list[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The retry's request: the original chat plus the rejected reply and one instruction about it.

    Built from ``original`` each time (repairs do not pile up). A chat that already ends with an
    ``assistant`` message gets no repair turn (two in a row would break many templates): only the seed
    changes then.
    """
    if not original or original[-1].get("role") == "assistant":
        return list(original)
    if failure.kind == "refusal":
        instruction = (
            "That reply stepped out of your role. Stay in character as the person described in your instructions "
            "and answer their counterpart's last message."
        )
    elif failure.kind == "empty":
        instruction = "That reply was empty. Answer the last message."
    else:
        keys = ", ".join(f'"{key}"' for key in json_keys or ())
        cut = " It was cut off at the length limit, so keep it short." if "token limit" in failure.detail else ""
        instruction = f"That reply was not a JSON object with the keys {keys}.{cut} Answer again with only that object."
    quoted = (failure.reply or "").strip()[:REPAIR_QUOTE_CHARS] or "(empty)"
    return [*original, {"role": "assistant", "content": quoted}, {"role": "user", "content": instruction}]


class AttemptError(Exception):
    """One attempt failed with a classified kind (raised by ``BaseChatModel._attempt``)."""

    def __init__(
        self,
        kind: FailureKind,
        detail: str = "",
        *,
        status: int | None = None,
        retry_after: float | None = None,
        config_fault: bool = False,
        reply: str | None = None,
    ) -> None:
        detail = redact(clean_text(detail))  # before any cut: a cut key no longer matches
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail[:DETAIL_MAX_CHARS]
        self.status = status
        self.retry_after = retry_after
        self.reply = reply
        """The utterance that was rejected (content faults), quoted back by the repair turn of the retry."""
        self.config_fault = config_fault
        """A fault that means the endpoint is misconfigured when it has never answered (connection
        refused, unknown host, no key, HTTP 401/403/404); see :mod:`mimesis_gym.core.errors`."""


@dataclass(frozen=True, slots=True)
class RawCompletion:
    """What one backend attempt returned, before the conventions are applied."""

    text: str
    reasoning: str | None = None
    finish_reason: str | None = None
    refusal: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0


@dataclass
class RetryPolicy:
    """Retry bounds and backoff. ``rng`` and ``sleep`` are injectable for tests.

    ``content_retry_window``: a content fault (bad body, empty, bad JSON, refusal, only a thought) stops
    being retried for a role once that many retried calls in a row rescued nothing, and every
    ``content_retry_probe_every``-th call that meets it then retries it once to check
    (:class:`~mimesis_gym.core.retry_ledger.RetryLedger`); 0 always retries.
    """

    max_retries: int = 5
    content_retries: int = 2
    refusal_retries: int = 1
    content_retry_window: int = 8
    content_retry_probe_every: int = 32
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0
    max_tokens_ceiling: int = 32768
    rng: random.Random = field(default_factory=random.Random, repr=False)
    sleep: Callable[[float], Awaitable[None]] = field(default=asyncio.sleep, repr=False)

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1, 2, …): full jitter, capped."""
        jittered = self.rng.uniform(0.0, min(self.backoff_cap_s, self.backoff_base_s * 2 ** (retry - 1)))
        if retry_after is not None:
            return min(self.backoff_cap_s * 2, max(retry_after, jittered))
        return jittered

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["sleep"] = None  # restored to asyncio.sleep: an injected sleep is a test-time object
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self.sleep is None:
            self.sleep = asyncio.sleep


class _Rescues:
    """One ``chat()`` call's dealings with its model's :class:`RetryLedger`: which tracked kinds it may
    retry (asked once per kind) and, at its end, whether the ones it retried rescued the reply."""

    def __init__(self, ledger: RetryLedger, role: str | None) -> None:
        self.ledger = ledger
        self.role = role
        self.grants: dict[str, int | None] = {}
        self.counts: dict[str, int] = {}

    def allows(self, kind: str) -> bool:
        """Whether the ledger lets this call retry ``kind`` once more (the policy's bounds apply besides)."""
        if kind not in self.grants:
            self.grants[kind] = self.ledger.grant(self.role, kind)
        cap = self.grants[kind]
        return cap is None or self.counts.get(kind, 0) < cap

    def retried(self, kind: str) -> None:
        if kind in TRACKED_KINDS:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def settle(self, name: str, reply: ChatReply) -> None:
        """Tell the ledger how the call ended, unless it ended on a fault its retries could not have met."""
        if self.counts and (reply.failure is None or reply.failure.kind in TRACKED_KINDS):
            self.ledger.settle(name, self.role, self.counts, rescued=reply.failure is None)


class BaseChatModel:
    """``chat()`` for every backend: one primitive ``_attempt`` plus the shared conventions.

    Subclasses implement ``_attempt(messages, max_tokens, temperature, seed, json_schema)`` returning
    a :class:`RawCompletion` or raising :class:`AttemptError`. ``chat()`` then applies
    re-inlining, think stripping with the doubled-budget retry, refusal detection, JSON coercion
    and the retry loop (content retries stop per role and kind while they rescue nothing:
    :attr:`retry_ledger`), and never raises for model or transport problems (a misconfigured endpoint
    raises :class:`~mimesis_gym.core.errors.EndpointUnavailableError` from ``_attempt``, one that never
    answered from :meth:`gave_up`).
    """

    name: str = ""
    is_human: bool = False
    thinking: bool = False

    def __init__(
        self,
        *,
        name: str | None = None,
        retry_policy: RetryPolicy | None = None,
        refusal_check: bool = True,
        refusal_patterns: Sequence[str] | None = None,
    ) -> None:
        self.name = name or self.name or type(self).__name__
        self.retry_policy = retry_policy or RetryPolicy()
        self.retry_ledger = RetryLedger(
            self.retry_policy.content_retry_window, self.retry_policy.content_retry_probe_every
        )
        """Whether content retries still rescue replies, per role and kind (shared by every call of this model)."""
        self.refusal_check = refusal_check
        self.refusal_patterns = tuple(refusal_patterns) if refusal_patterns else None

    # -- backend primitive -------------------------------------------------------------------

    async def _attempt(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_schema: dict[str, Any] | None,
    ) -> RawCompletion:
        """One request. ``json_schema`` (see :func:`reply_schema`) is set when the backend should constrain
        the reply to a JSON object holding the role's keys (its JSON mode); ``None`` otherwise."""
        raise NotImplementedError

    def _wants_json_mode(self, json_keys: Sequence[str] | None) -> bool:
        """Whether to request the backend's JSON mode for this call (HTTP clients override)."""
        return False

    def _dropped_params(self) -> tuple[str, ...]:
        return ()

    async def aclose(self) -> None:
        """Release clients; idempotent."""

    def gave_up(self, failure: AttemptError) -> None:
        """Called when a call stops retrying after ``failure``, before it becomes the reply's failure.

        A backend whose endpoint may be unusable raises
        :class:`~mimesis_gym.core.errors.EndpointUnavailableError` here (the HTTP client does when a
        transient fault outlasted every retry of an endpoint that never answered); by default nothing.
        """

    # -- the shared loop -----------------------------------------------------------------------

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_keys: Sequence[str] | None = None,
    ) -> ChatReply:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        policy = self.retry_policy
        started = time.perf_counter()
        tokens = [0, 0, 0]
        attempts = retries = content_retries = refusal_retries = 0
        budget_doubled = False
        json_schema = reply_schema(json_keys) if json_keys is not None and self._wants_json_mode(json_keys) else None
        original_messages = messages
        rescues = _Rescues(self.retry_ledger, current_call_context().role)
        while True:
            attempts += 1
            failure: AttemptError | None = None
            try:
                raw = await self._attempt(messages, max_tokens, temperature, seed, json_schema)
            except AttemptError as error:
                failure = error
            except (asyncio.CancelledError, MimesisGymError):
                raise  # a dead or misconfigured endpoint is an error, not a failed reply
            except Exception as error:  # a backend bug must not escape chat()
                logger.warning("%s: unexpected %s in a chat attempt", self.name, type(error).__name__)
                failure = AttemptError("exception", f"{type(error).__name__}: {error}")
            else:
                tokens[0] += raw.prompt_tokens
                tokens[1] += raw.completion_tokens
                tokens[2] += raw.reasoning_tokens
                outcome = self._judge(raw, json_keys)
                if isinstance(outcome, ChatReply):
                    rescues.settle(self.name, outcome)
                    return self._finish(outcome, tokens, attempts, started)
                if outcome.kind == "empty_after_think" and not budget_doubled and rescues.allows(outcome.kind):
                    budget_doubled = True  # the think-budget retry: extra and immediate
                    rescues.retried(outcome.kind)
                    max_tokens = min(max_tokens * 2, policy.max_tokens_ceiling)
                    logger.info("%s: only a thought came back; retrying with max_tokens=%d", self.name, max_tokens)
                    continue
                failure = outcome
            kind = failure.kind
            if kind in TRANSPORT_KINDS:
                allowed = retries < policy.max_retries
            elif kind in CONTENT_KINDS:
                allowed = retries < policy.max_retries and content_retries < policy.content_retries
                allowed = allowed and rescues.allows(kind)
                content_retries += allowed
            elif kind == "refusal":
                allowed = retries < policy.max_retries and refusal_retries < policy.refusal_retries
                allowed = allowed and rescues.allows(kind)
                refusal_retries += allowed
            else:
                allowed = False
            if not allowed:
                self.gave_up(failure)
                logger.warning("%s: call failed (%s) after %d attempt(s)", self.name, kind, attempts)
                reply = ChatReply(failure=ChatFailure(kind, failure.detail, attempts, failure.status))
                rescues.settle(self.name, reply)
                return self._finish(reply, tokens, attempts, started)
            retries += 1
            rescues.retried(kind)
            if kind in REPAIRABLE_KINDS:
                # the same request would get the same reply (often at temperature 0): the retry
                # quotes the problem back in a repair turn, with another seed, at once
                messages = repair_messages(messages, failure, json_keys, original=original_messages)
                seed = None if seed is None else seed + REPAIR_SEED_STRIDE * retries
                logger.info("%s: retry %d after %s with a repair turn", self.name, retries, kind)
                continue
            delay = policy.delay(retries, failure.retry_after)
            logger.info("%s: retry %d after %s in %.2fs", self.name, retries, kind, delay)
            if delay > 0:
                await policy.sleep(delay)

    def _judge(self, raw: RawCompletion, json_keys: Sequence[str] | None) -> ChatReply | AttemptError:
        """Apply the refusal, think, empty and JSON checks to one raw completion: a reply, or this attempt's failure."""
        if raw.refusal:
            return AttemptError("refusal", f"refusal field: {raw.refusal}")
        if raw.finish_reason == "content_filter":
            return AttemptError("refusal", "finish_reason content_filter")
        text = clean_text(reinline_reasoning(raw.text, raw.reasoning))
        utterance, thought = split_thought(text)
        if not utterance:
            if has_think_tag(text):
                return AttemptError("empty_after_think", "nothing left after removing the thought")
            return AttemptError("empty", f"empty reply (finish_reason {raw.finish_reason})")
        if json_keys is not None:
            try:
                coerce_json(utterance, json_keys)
            except JSONCoercionError:
                refused = self._refusal(utterance)
                if refused:
                    return AttemptError("refusal", refused, reply=utterance)
                cut = " (cut at the token limit)" if raw.finish_reason == "length" else ""
                return AttemptError(
                    "bad_json", f"no JSON object with keys {list(json_keys)}{cut}: {utterance[:120]!r}", reply=utterance
                )
        else:
            refused = self._refusal(utterance)
            if refused:
                return AttemptError("refusal", refused, reply=utterance)
        return ChatReply(text=utterance, thought=thought)

    def _refusal(self, utterance: str) -> str | None:
        return detect_refusal(utterance, self.refusal_patterns) if self.refusal_check else None

    def _finish(self, reply: ChatReply, tokens: list[int], attempts: int, started: float) -> ChatReply:
        usage = Usage(
            prompt_tokens=tokens[0],
            completion_tokens=tokens[1],
            reasoning_tokens=tokens[2],
            attempts=attempts,
            latency_s=time.perf_counter() - started,
            dropped_params=self._dropped_params(),
        )
        return ChatReply(text=reply.text, thought=reply.thought, usage=usage, failure=reply.failure)
