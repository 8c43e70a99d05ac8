"""Roles: the named non-agent parties inside an env (docs/env-contract.md, "Users and judges").

Every role has a **scripted** implementation (deterministic, computed from the task's hidden
structured data) and an **LLM** implementation (the env builds the prompt, a chat model answers).
Both are called the same way, ``await role(session, **materials) -> RoleResult``, so an env's
step logic does not care which one it holds.

:class:`RoleSession` is the per-episode bookkeeping every role call goes through: the call
context, the per-call seed (``llm_seed_base + call_index``), the ``role_max_tokens`` cap, thought
records and the failures that end up in ``info["user_failure"]``.

How an env's ``user=``/``judge=`` arguments (aliases, chat-model objects) become
:class:`RoleModels` is the users layer's business, and core imports nothing above itself; so
``ConversationEnv`` calls :func:`resolve_roles`, a seam that ``mimesis_gym.users`` fills with its
alias registry when it is imported (importing ``mimesis_gym`` imports it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from mimesis_gym.core.chat import ChatFailure, ChatModel, ChatReply, ThoughtRecord, call_context
from mimesis_gym.core.errors import MimesisGymError
from mimesis_gym.core.jsonfix import JSONCoercionError
from mimesis_gym.core.text import clean_text

__all__ = [
    "LLMRole",
    "Role",
    "RoleModels",
    "RoleOutputError",
    "RoleResolver",
    "RoleResult",
    "RoleSession",
    "ScriptedRole",
    "UserBehavior",
    "install_role_resolver",
    "resolve_roles",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class RoleModels:
    """The chat models behind an env's roles; ``None`` means the scripted implementation.

    ``user`` answers the user role; ``judge`` answers every judge role (the user model itself
    under the paper's J-self protocol).
    """

    user: ChatModel | None = None
    judge: ChatModel | None = None
    owned: tuple[ChatModel, ...] = ()
    """Models built from aliases for this env, closed by ``env.close()`` (objects passed in are not)."""

    @property
    def chat_models(self) -> tuple[ChatModel, ...]:
        models: list[ChatModel] = []
        for model in (self.user, self.judge):
            if model is not None and all(model is not seen for seen in models):
                models.append(model)
        return tuple(models)


RoleResolver = Callable[[Any, Any, "Mapping[str, Any] | None"], RoleModels]
"""``resolver(user, judge, user_kwargs) -> RoleModels``: the models behind an env's roles."""

_resolver: RoleResolver | None = None


def install_role_resolver(resolver: RoleResolver) -> None:
    """Make ``resolver`` the one :func:`resolve_roles` uses; ``mimesis_gym.users`` installs its
    ``resolve_role_models`` on import. A later call replaces the earlier resolver."""
    global _resolver
    _resolver = resolver


def resolve_roles(user: Any, judge: Any, user_kwargs: Mapping[str, Any] | None = None) -> RoleModels:
    """The role models for an env's ``user``, ``judge`` and ``user_kwargs`` (docs/users.md, Aliases).

    Raises ``ValueError`` for an unknown alias (from the installed resolver) and ``RuntimeError``
    when no resolver is installed.
    """
    if _resolver is None:
        raise RuntimeError(
            "no user registry is installed to resolve user=/judge=: import mimesis_gym (or mimesis_gym.users) first"
        )
    return _resolver(user, judge, user_kwargs)


class RoleOutputError(ValueError):
    """A role's reply parsed but a value fails the role's validation (fine kind ``invalid_value``)."""


@dataclass(frozen=True, slots=True)
class RoleResult(Generic[T]):
    """What a role produced: its value (the fallback when the call failed) and how it went."""

    value: T
    failed: bool = False
    thought: str | None = None
    utterance: str | None = None
    parsed: dict[str, Any] | None = None


class UserBehavior(Protocol):
    """The episode's user behaviour as roles see it (:class:`mimesis_gym.behaviors.play.EpisodeBehavior`):
    LLM roles pass their messages through ``direct``, scripted roles their result through ``enact``;
    both leave every role but the env's user, and the control condition, untouched."""

    def direct(self, role: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def enact(self, role: str, result: RoleResult[Any]) -> RoleResult[Any]: ...


@dataclass
class RoleSession:
    """Per-episode state of role calls, owned by the env and cleared at ``reset``.

    ``step_failures`` and ``step_thoughts`` are cleared at the start of every step by the env;
    ``thought_records`` accumulate over the episode.
    """

    episode_id: str
    llm_seed_base: int
    role_max_tokens: int | None = None
    thought_max_chars: int = 4000
    turn: int = 0
    call_index: int = 0
    thought_records: list[ThoughtRecord] = field(default_factory=list)
    step_failures: list[tuple[str, ChatFailure]] = field(default_factory=list)
    step_thoughts: dict[str, dict[str, Any]] = field(default_factory=dict)
    behavior: UserBehavior | None = None
    """The episode's user behaviour (``user_behavior=``); ``None``: the env has none to play."""

    def begin_step(self, turn: int) -> None:
        self.turn = turn
        self.step_failures = []
        self.step_thoughts = {}

    def cap_tokens(self, max_tokens: int) -> int:
        """Apply ``role_max_tokens`` to a role's own budget."""
        if self.role_max_tokens is None:
            return max_tokens
        return min(max_tokens, self.role_max_tokens)

    async def call(
        self,
        role: str,
        model: ChatModel,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float = 0.0,
        json_keys: Sequence[str] | None = None,
    ) -> ChatReply:
        """Make one role call: context, seed, cap, thought record and failure bookkeeping.

        An unexpected exception inside the chat model becomes the failure ``exception``; the
        env then applies the role's fallback. Cancellation and
        :class:`~mimesis_gym.core.errors.MimesisGymError` (e.g. an unavailable endpoint) propagate. The
        reply's text and thought are made encodable (:func:`~mimesis_gym.core.text.clean_text`) whatever
        the model returned.
        """
        seed = self.llm_seed_base + self.call_index
        call_index = self.call_index
        self.call_index += 1
        with call_context(self.episode_id, role, self.turn):
            try:
                reply = await model.chat(
                    messages,
                    max_tokens=self.cap_tokens(max_tokens),
                    temperature=temperature,
                    seed=seed,
                    json_keys=json_keys,
                )
            except MimesisGymError:
                raise  # a misconfigured endpoint stops the episode: no fallback would mean anything
            except Exception as error:  # a third-party chat model broke its contract
                logger.warning("role %s: chat model raised %s", role, type(error).__name__)
                reply = ChatReply(failure=ChatFailure("exception", f"{type(error).__name__}: {error}"))
        reply = _encodable(reply)
        if reply.thought:
            self.thought_records.append(
                ThoughtRecord(self.turn, role, call_index, reply.thought[: self.thought_max_chars])
            )
        self.step_thoughts.setdefault(role, {})["reasoning"] = reply.thought
        if reply.failure is not None:
            self.step_failures.append((role, reply.failure))
        return reply

    def fail(self, role: str, failure: ChatFailure) -> None:
        """Record a failure decided by the env (e.g. ``invalid_value``) for this step."""
        self.step_failures.append((role, failure))

    def user_failure(self) -> str | None:
        """``info["user_failure"]``: ``"<role>:<coarse kind>"`` joined by ``;``, or ``None``."""
        if not self.step_failures:
            return None
        return ";".join(f"{role}:{failure.info_kind}" for role, failure in self.step_failures)


def _encodable(reply: ChatReply) -> ChatReply:
    """``reply`` with its text and thought made encodable (the same object when they already are)."""
    text = clean_text(reply.text)
    thought = clean_text(reply.thought) if reply.thought is not None else None
    if text is reply.text and thought is reply.thought:
        return reply
    return ChatReply(text=text, thought=thought, usage=reply.usage, failure=reply.failure)


class Role(Protocol[T_co]):
    """A user or judge role: scripted or LLM-backed, called the same way."""

    name: str

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[T_co]: ...


class ScriptedRole(Generic[T]):
    """A deterministic role computed from the task's hidden data. Subclasses define ``decide``,
    which returns the value, or a :class:`RoleResult` when it also reports ``parsed`` details."""

    name: ClassVar[str] = ""
    scripted: ClassVar[bool] = True

    def decide(self, **materials: Any) -> T | RoleResult[T]:
        raise NotImplementedError

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[T]:
        value = self.decide(**materials)
        result = value if isinstance(value, RoleResult) else RoleResult(value)
        return result if session.behavior is None else session.behavior.enact(self.name, result)


class LLMRole(Generic[T]):
    """A role answered by a chat model.

    Subclasses define ``build_messages`` (the role's own chat), ``parse`` (reply →
    value; raise :class:`RoleOutputError` for a value that fails validation) and ``fallback``
    (the env's documented value when the call fails). With ``json_keys`` set, the reply is
    coerced to JSON and ``parse`` receives the object in ``RoleResult.parsed``.
    """

    name: ClassVar[str] = ""
    scripted: ClassVar[bool] = False
    json_keys: ClassVar[tuple[str, ...] | None] = None
    max_tokens: int = 1024
    temperature: float = 0.0

    def __init__(self, model: ChatModel, *, lenient: bool = False, templates: dict[str, str] | None = None) -> None:
        """``templates``: upstream prompt strings (``prompt_set="userrl"``), or ``None`` for our wording."""
        self.model = model
        self.lenient = lenient
        self.templates = templates

    def build_messages(self, **materials: Any) -> list[dict[str, Any]]:
        raise NotImplementedError

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **materials: Any) -> T:
        raise NotImplementedError

    def fallback(self, **materials: Any) -> T:
        raise NotImplementedError

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[T]:
        messages = self.build_messages(**materials)
        if session.behavior is not None:
            messages = session.behavior.direct(self.name, messages)
        reply = await session.call(
            self.name,
            self.model,
            messages,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            json_keys=self.json_keys,
        )
        if reply.failure is not None:
            return RoleResult(self.fallback(**materials), failed=True, thought=reply.thought)
        parsed: dict[str, Any] | None = None
        try:
            if self.json_keys is not None:
                parsed = reply.json(self.json_keys)
                session.step_thoughts.setdefault(self.name, {})["thought"] = parsed.get("thought")
            value = self.parse(reply, parsed, **materials)
        except (RoleOutputError, JSONCoercionError) as error:
            kind = "invalid_value" if isinstance(error, RoleOutputError) else "bad_json"
            session.fail(self.name, ChatFailure(kind, str(error)))
            return RoleResult(self.fallback(**materials), failed=True, thought=reply.thought, parsed=parsed)
        return RoleResult(value, thought=reply.thought, utterance=reply.text, parsed=parsed)
