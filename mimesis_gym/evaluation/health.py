"""Health checks behind ``mimesis-gym check --user A`` and ``--agent A`` (docs/evaluation.md, "Health checks").

``check_user`` asks an HTTP user's server for ``/health`` and ``/models``, makes one plain chat
completion (64 tokens, temperature 0), then plays one step of each selected env's demo task with the
user behind every role, reporting each role call: the JSON tier its reply needed, whether a thought
came back, and any failure (a refusal included). ``check_agent`` makes one agent turn on an env's
demo task and reports whether it came back as a tool call. Every check returns
:class:`~mimesis_gym.evaluation.contract.CheckResult` lines; the command exits non-zero on any failure.
No detail carries an API key: failure details are redacted (:func:`~mimesis_gym.core.redact.redact`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import httpx

from mimesis_gym.agents.base import is_privileged
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.core.errors import EndpointUnavailableError
from mimesis_gym.core.redact import redact
from mimesis_gym.envs.recipe import EnvRecipe
from mimesis_gym.evaluation.contract import CheckResult
from mimesis_gym.evaluation.limited_model import LimitedModel
from mimesis_gym.users.registry import make_chat_model, resolve_user

__all__ = ["check_agent", "check_user"]

HEALTH_TIMEOUT_S = 30.0
HEALTH_POLL_S = 2.0


def _poll_health(root: str, timeout_s: float) -> int | str:
    """``GET {root}/health`` every 2 s until 200 or 404, for at most ``timeout_s``; the last status or error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            status: int | str = httpx.get(f"{root}/health", timeout=5).status_code
        except httpx.HTTPError as error:
            status = type(error).__name__
        if status in (200, 404) or time.monotonic() + HEALTH_POLL_S > deadline:
            return status
        time.sleep(HEALTH_POLL_S)


def _endpoint_checks(alias: str, model: Any, health_timeout_s: float) -> list[CheckResult]:
    """``/health`` (a 404 means "not a vLLM server" and is only noted) and ``/models`` listing the model."""
    base_url = model.config.base_url.rstrip("/")
    root = base_url.removesuffix("/v1")
    name = f"user {alias}"
    status = _poll_health(root, health_timeout_s)
    detail = "200" if status == 200 else "no /health route (not a vLLM server)" if status == 404 else str(status)
    results = [CheckResult(name, "health", status in (200, 404), f"{root}/health: {detail}")]
    try:
        response = httpx.get(f"{base_url}/models", headers=model.headers(0), timeout=10)
        served = [entry.get("id") for entry in response.json().get("data", [])] if response.is_success else []
        ok = response.is_success and model.config.model in served
        detail = f"serves {served}" if response.is_success else f"HTTP {response.status_code}"
    except Exception as error:  # transport errors, a non-JSON body, a missing key
        ok, detail = False, redact(f"{type(error).__name__}: {error}")
    results.append(CheckResult(name, "models", ok, detail))
    return results


async def _one_completion(model: Any) -> tuple[bool, str]:
    try:
        reply = await model.chat(
            [{"role": "user", "content": "Reply with one short sentence."}], max_tokens=64, temperature=0.0, seed=0
        )
    except EndpointUnavailableError as error:
        return False, str(error)
    finally:
        aclose = getattr(model, "aclose", None)
        if aclose is not None:
            await aclose()  # this loop's client; the env steps below run on their own loop
    if reply.failure is not None:
        return False, f"{reply.failure.kind}: {reply.failure.detail}"
    return True, f"{len(reply.text)} chars, thought {'yes' if reply.thought else 'no'}"


def _role_calls(env_id: str, model: Any, role_max_tokens: int | None) -> list[CheckResult]:
    """One step of ``env_id``'s first demo task with ``model`` behind every role; one line per role call."""
    recorder = LimitedModel(model, asyncio.Semaphore(1))
    kwargs: dict[str, Any] = {"split": "demo"}
    if role_max_tokens is not None:
        kwargs["role_max_tokens"] = role_max_tokens
    env = EnvRecipe(env_id=env_id, user=recorder, env_kwargs=kwargs).build()
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step(env.unwrapped.oracle_action())
    finally:
        env.close()
    results = []
    for calls in recorder.calls.values():
        for role, turn, reply, tier in calls:
            check = f"{role} call (turn {turn})"
            if reply.failure is not None:
                results.append(CheckResult(env_id, check, False, f"{reply.failure.kind}: {reply.failure.detail}"))
                continue
            json_part = "plain text" if tier is None else f"JSON tier {tier}"
            thought = "yes" if reply.thought else "no"
            results.append(CheckResult(env_id, check, True, f"{json_part}, thought {thought}, no refusal"))
    if not results:
        results.append(CheckResult(env_id, "role calls", True, "the demo step made no role call"))
    if info.get("user_failure"):
        results.append(CheckResult(env_id, "user_failure", False, str(info["user_failure"])))
    return results


def check_user(
    alias: str,
    env_ids: Sequence[str],
    *,
    role_max_tokens: int | None = None,
    health_timeout_s: float = HEALTH_TIMEOUT_S,
) -> list[CheckResult]:
    """The user health check: endpoint, one completion, one demo step per env (see the module doc).

    ``/health`` is polled for up to ``health_timeout_s`` (a server may still be starting).
    """
    spec = resolve_user(alias)
    model = make_chat_model(alias)
    if model is None:
        return [CheckResult(f"user {alias}", "kind", True, f"{spec.kind} user: scripted roles, no model to check")]
    results: list[CheckResult] = []
    if hasattr(model, "config") and hasattr(model, "headers"):
        results.extend(_endpoint_checks(alias, model, health_timeout_s))
    ok, detail = asyncio.run(_one_completion(model))
    results.append(CheckResult(f"user {alias}", "completion", ok, detail))
    if ok:
        for env_id in env_ids:
            results.extend(_role_calls(env_id, model, role_max_tokens))
    return results


def check_agent(alias: str, env_id: str = "mimesis/FunctionGym-v0", *, max_tokens: int = 64) -> list[CheckResult]:
    """One agent turn on ``env_id``'s first demo task: a tool call (or a grammar action) must come back."""
    agent = make_agent(alias, max_tokens=max_tokens, temperature=0.0)
    env = EnvRecipe(env_id=env_id, env_kwargs={"split": "demo"}).build()
    try:
        env.reset(seed=0)
        base = env.unwrapped
        conv = agent.start(base.system_prompt, base.tools, base.opening_messages)
        conv.env_id = env_id
        if is_privileged(agent):
            conv.env = base
        turn = asyncio.run(agent.act(conv, seed=0))
    except EndpointUnavailableError as error:
        return [CheckResult(f"agent {alias}", "turn", False, str(error))]
    finally:
        env.close()
    name = f"agent {alias}"
    if turn.failure is not None:
        return [CheckResult(name, "turn", False, f"{turn.failure.kind}: {turn.failure.detail}")]
    tool_calls = turn.message.get("tool_calls") or []
    if tool_calls:
        detail = f"tool call {tool_calls[0].get('function', {}).get('name')!r} -> {turn.action!r:.80}"
    else:
        detail = f"no tool call; grammar action {turn.action!r:.80}"
    return [CheckResult(name, "turn", True, detail)]
