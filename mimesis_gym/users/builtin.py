"""The built-in user aliases (docs/users.md, "Aliases") and the ``MIMESIS_USER_<KEY>_*`` variables.

An alias is resolved when it is used (``gym.make``), not at import, so variables set after
import still count. Served names are the result keys of the MIMESIS release, so records line up
with the paper's tables.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.http import EndpointConfig, check_base_url, is_loopback

__all__ = [
    "ADAPTIVE_THINKING",
    "BUILTIN_ALIASES",
    "MEDIUM_EFFORT",
    "BuiltinAlias",
    "alias_env_key",
    "alias_variable",
]

MEDIUM_EFFORT: dict[str, Any] = {"reasoning_effort": "medium"}
"""The paper's setting for GPT (medium reasoning effort) and Gemini (medium thinking; its OpenAI-compatible
endpoint maps ``reasoning_effort`` onto its thinking level)."""
ADAPTIVE_THINKING: dict[str, Any] = {"thinking": {"type": "adaptive"}}
"""The paper's setting for Claude: adaptive thinking (the field Anthropic's OpenAI-compatible endpoint reads)."""


def alias_env_key(alias: str) -> str:
    """``KEY`` of alias ``A``: upper-cased, every non-alphanumeric character replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9]", "_", alias).upper()


def alias_variable(alias: str, suffix: str) -> str:
    """``MIMESIS_USER_<KEY>_<SUFFIX>``, e.g. ``MIMESIS_USER_MIMESIS_9B_BASE_URL``."""
    return f"MIMESIS_USER_{alias_env_key(alias)}_{suffix}"


@dataclass(frozen=True)
class BuiltinAlias:
    """One row of the alias table: what an HTTP (or local) user alias defaults to."""

    alias: str
    label: str
    model: str
    base_url: str | None = None
    hub_id: str | None = None
    thinking: bool = False
    token_param: str = "max_tokens"
    openai_key_fallback: bool = False
    description: str = ""
    serve_max_model_len: int = 32768
    serve_trust_remote_code: bool = True
    extra: dict[str, str] = field(default_factory=dict)
    reasoning: dict[str, Any] = field(default_factory=dict)
    """Request-body fields of the provider's reasoning setting as the paper used it; ``_EXTRA_BODY`` overrides
    them key by key, and a key set to ``null`` there is removed."""

    def endpoint(self) -> EndpointConfig:
        """The endpoint, with the alias's variables applied; ``ValueError`` naming a missing one."""
        base_var = alias_variable(self.alias, "BASE_URL")
        base_url = os.environ.get(base_var) or self.base_url
        if not base_url:
            raise ConfigurationError(f"user alias {self.alias!r} has no default endpoint: set {base_var}")
        try:
            base_url = check_base_url(base_url)
        except ValueError as error:
            raise ConfigurationError(f"{base_var}: {error}") from None
        extra_var = alias_variable(self.alias, "EXTRA_BODY")
        extra_body: dict[str, object] = {}
        if os.environ.get(extra_var):
            try:
                extra_body = json.loads(os.environ[extra_var])
            except ValueError as error:
                raise ConfigurationError(f"{extra_var} is not valid JSON: {error}") from None
            if not isinstance(extra_body, dict):
                raise ConfigurationError(f"{extra_var} must hold a JSON object")
        extra_body = {key: value for key, value in {**self.reasoning, **extra_body}.items() if value is not None}
        keys = [alias_variable(self.alias, "API_KEY")] + (["OPENAI_API_KEY"] if self.openai_key_fallback else [])
        return EndpointConfig(
            base_url=base_url,
            model=os.environ.get(alias_variable(self.alias, "MODEL")) or self.model,
            api_key_env=keys,
            thinking=self.thinking,
            token_param=self.token_param,  # type: ignore[arg-type]
            extra_body=extra_body,
        )

    def hub(self) -> str | None:
        return os.environ.get(alias_variable(self.alias, "HUB_ID")) or self.hub_id

    def readiness(self) -> str:
        """A short human note on what the alias still needs (for ``mimesis-gym list users``)."""
        base_var = alias_variable(self.alias, "BASE_URL")
        if not (os.environ.get(base_var) or self.base_url):
            return f"set {base_var}"
        if self.base_url and is_loopback(self.base_url) and not os.environ.get(base_var):
            if not self.hub():  # the open evaluation checkpoints: the release pins no hub id
                return f"set {alias_variable(self.alias, 'HUB_ID')}, then serve it: mimesis-gym serve-user {self.alias}"
            return f"serve it: mimesis-gym serve-user {self.alias}"
        keys = [alias_variable(self.alias, "API_KEY")] + (["OPENAI_API_KEY"] if self.openai_key_fallback else [])
        if not any(os.environ.get(key) for key in keys) and not self.base_url_is_loopback():
            return f"set {' or '.join(keys)}"
        return "ready"

    def base_url_is_loopback(self) -> bool:
        return is_loopback(os.environ.get(alias_variable(self.alias, "BASE_URL")) or self.base_url or "")


_EVAL = "evaluation user"
BUILTIN_ALIASES: dict[str, BuiltinAlias] = {
    entry.alias: entry
    for entry in (
        BuiltinAlias(
            "mimesis-9b",
            "MIMESIS-9B",
            "mimesis-9b",
            "http://127.0.0.1:8000/v1",
            hub_id="phanviethoang1512/MIMESIS-9B",
            thinking=True,
            description="training user (served by vLLM)",
        ),
        BuiltinAlias(
            "mimesis-4b",
            "MIMESIS-4B",
            "mimesis-4b",
            "http://127.0.0.1:8001/v1",
            hub_id="phanviethoang1512/MIMESIS-4B",
            thinking=True,
            description="smaller MIMESIS user (served by vLLM)",
        ),
        BuiltinAlias(
            "gpt-5.5",
            "GPT-5.5",
            "gpt-5.5",
            "https://api.openai.com/v1",
            token_param="max_completion_tokens",
            openai_key_fallback=True,
            description="training user (UserRL baseline)",
            reasoning=MEDIUM_EFFORT,
        ),
        BuiltinAlias(
            "deepseek-v4.1-flash",
            "DeepSeek-V4.1-Flash",
            "deepseek-v4.1-flash",
            description="training user (the paper's; set its base URL and key)",
        ),
        BuiltinAlias(
            "gpt-5.6",
            "GPT-5.6",
            "gpt-5.6",
            "https://api.openai.com/v1",
            token_param="max_completion_tokens",
            openai_key_fallback=True,
            description=_EVAL,
            reasoning=MEDIUM_EFFORT,
        ),
        BuiltinAlias(
            "claude-opus-5",
            "Claude-Opus-5",
            "claude-opus-5",
            description=f"{_EVAL}; refuses PersuadeGym",
            reasoning=ADAPTIVE_THINKING,
        ),
        BuiltinAlias(
            "claude-sonnet-5", "Claude-Sonnet-5", "claude-sonnet-5", description=_EVAL, reasoning=ADAPTIVE_THINKING
        ),
        BuiltinAlias(
            "gemini-3.8-flash", "Gemini-3.8-Flash", "gemini-3.8-flash", description=_EVAL, reasoning=MEDIUM_EFFORT
        ),
        BuiltinAlias("kimi-k3", "Kimi-K3", "kimi-k3", description=_EVAL),
        BuiltinAlias("ditto-8b", "Ditto-8B", "Ditto-8B", "http://127.0.0.1:8002/v1", description=f"{_EVAL} (open)"),
        BuiltinAlias("osim-8b", "Osim-8B", "osim-8b", "http://127.0.0.1:8003/v1", description=f"{_EVAL} (open)"),
        BuiltinAlias(
            "humanlm-8b", "HumanLM-8B", "humanlm-opinion", "http://127.0.0.1:8004/v1", description=f"{_EVAL} (open)"
        ),
        BuiltinAlias(
            "sotopia-7b",
            "Sotopia-7B",
            "sotopia-rl-qwen-2.5-7B-grpo",
            "http://127.0.0.1:8005/v1",
            description=f"{_EVAL} (open)",
        ),
    )
}
