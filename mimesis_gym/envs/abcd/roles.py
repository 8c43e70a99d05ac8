"""ABCDBehavior roles: the support agent (the customer's counterpart) and the judge (docs/envs/abcd.md, "Roles").

| role | scripted | LLM |
|---|---|---|
| ``support_agent`` | :class:`ScriptedSupportAgent` (``support.py`` state machine) | :class:`LLMSupportAgent` |
| ``judge`` | :class:`ScriptedJudge` (``judge_rules.py``) | :class:`LLMBehaviorJudge` / :class:`LLMControlJudge` |

The acting policy is the customer; it is not a role here (its thought is reported under
``thoughts["customer"]`` by the env).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatFailure, ChatReply
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleResult, RoleSession, ScriptedRole
from mimesis_gym.envs.abcd.behaviors import Behavior
from mimesis_gym.envs.abcd.judge_rules import Conversation, JudgeFacts, score_behavior, score_control
from mimesis_gym.envs.abcd.prompts import behavior_judge_prompt, control_judge_prompt, judge_context
from mimesis_gym.envs.abcd.support import AgentState, SupportContext, scripted_reply

__all__ = [
    "BEHAVIOR_KEYS",
    "CONTROL_KEYS",
    "LLMBehaviorJudge",
    "LLMControlJudge",
    "LLMSupportAgent",
    "ScriptedJudge",
    "ScriptedSupportAgent",
    "parse_flag",
    "parse_score",
    "postprocess_agent_reply",
]

BEHAVIOR_KEYS = ("exhibit", "placement", "naturalness", "on_task", "announced")
CONTROL_KEYS = ("cooperative", "naturalness", "on_task")
MAX_AGENT_WORDS = 200
_AGENT_LABELS = ("AGENT:", "Agent:", "agent:")


# ---------------------------------------------------------------- support agent


class ScriptedSupportAgent(ScriptedRole[str]):
    """The deterministic store agent of ``support.py``; it never fails."""

    name: ClassVar[str] = "support_agent"

    def decide(self, *, context: SupportContext, state: AgentState, message: str, **_: Any) -> RoleResult[str]:
        reply = scripted_reply(context, state, message)
        return RoleResult(reply, utterance=reply)


def postprocess_agent_reply(text: str) -> str:
    """Strip; drop a leading ``AGENT:`` label; keep one half of an exactly doubled reply (halves of
    more than 20 characters); keep the first 200 words when longer."""
    text = text.strip()
    for label in _AGENT_LABELS:
        if text.startswith(label):
            text = text[len(label) :].strip()
            break
    half = len(text) // 2
    if len(text) % 2 == 0 and half > 20 and text[:half] == text[half:]:
        text = text[:half].strip()
    words = text.split()
    if len(words) > MAX_AGENT_WORDS:
        text = " ".join(words[:MAX_AGENT_WORDS])
    return text


class LLMSupportAgent(LLMRole[str | None]):
    """A chat model playing the store agent from the public transcript only.

    ``temperature``: the release used the server default, which the chat protocol cannot express;
    the env passes its ``agent_temperature`` (default 1.0, the OpenAI and vLLM default).
    """

    name: ClassVar[str] = "support_agent"
    json_keys: ClassVar[tuple[str, ...] | None] = None
    max_tokens = 512

    def __init__(self, model: Any, *, temperature: float = 1.0) -> None:
        super().__init__(model)
        self.temperature = float(temperature)

    def build_messages(self, *, system: str, transcript: list[dict[str, str]], **_: Any) -> list[dict[str, Any]]:
        return [
            {"role": "system", "content": system},
            *({"role": m["role"], "content": m["content"]} for m in transcript),
        ]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> str:
        return postprocess_agent_reply(reply.text)

    def fallback(self, **_: Any) -> None:
        return None

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[str | None]:
        result = await super().__call__(session, **materials)
        if not result.failed and not result.value:
            session.fail(self.name, ChatFailure("empty", "the support agent's reply was empty"))
            return RoleResult(None, failed=True, thought=result.thought)
        return result


# ---------------------------------------------------------------- judges


def parse_score(name: str, value: Any) -> float:
    """A sub-score: a finite number or numeric string, clamped to [0, 1]; anything else is invalid."""
    if isinstance(value, bool) or value is None:
        raise RoleOutputError(f"{name} must be a number in [0, 1], got {value!r}")
    try:
        number = float(value.strip()) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        raise RoleOutputError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not math.isfinite(number):
        raise RoleOutputError(f"{name} must be finite, got {value!r}")
    return min(1.0, max(0.0, number))


def parse_flag(name: str, value: Any) -> bool:
    """A flag: a boolean, ``true``/``false``/``yes``/``no`` (any case), or 0/1."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("true", "yes", "1"):
            return True
        if word in ("false", "no", "0"):
            return False
    raise RoleOutputError(f"{name} must be true or false, got {value!r}")


class LLMBehaviorJudge(LLMRole[dict[str, Any] | None]):
    """Scores a behavior row: ``{exhibit, placement, naturalness, on_task, announced}``."""

    name: ClassVar[str] = "judge"
    json_keys: ClassVar[tuple[str, ...] | None] = BEHAVIOR_KEYS
    max_tokens = 1024
    temperature = 0.0

    def build_messages(
        self, *, entry: Behavior, convo: Conversation, goal: str, facts: JudgeFacts, procedure: str, **_: Any
    ) -> list[dict[str, Any]]:
        context = judge_context(facts, procedure)
        return [{"role": "user", "content": behavior_judge_prompt(entry, convo, goal, context)}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> dict[str, Any]:
        data = parsed or {}
        verdict: dict[str, Any] = {key: parse_score(key, data[key]) for key in BEHAVIOR_KEYS[:4]}
        verdict["announced"] = parse_flag("announced", data["announced"])
        return verdict

    def fallback(self, **_: Any) -> None:
        return None


class LLMControlJudge(LLMRole[dict[str, Any] | None]):
    """Scores a control row: ``{cooperative, naturalness, on_task}``."""

    name: ClassVar[str] = "judge"
    json_keys: ClassVar[tuple[str, ...] | None] = CONTROL_KEYS
    max_tokens = 1024
    temperature = 0.0

    def build_messages(
        self, *, convo: Conversation, goal: str, facts: JudgeFacts, procedure: str, **_: Any
    ) -> list[dict[str, Any]]:
        return [{"role": "user", "content": control_judge_prompt(convo, goal, judge_context(facts, procedure))}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> dict[str, Any]:
        data = parsed or {}
        return {key: parse_score(key, data[key]) for key in CONTROL_KEYS}

    def fallback(self, **_: Any) -> None:
        return None


class ScriptedJudge(ScriptedRole[dict[str, Any]]):
    """The deterministic judge of ``judge_rules.py`` (partly approximate; see that module)."""

    name: ClassVar[str] = "judge"

    def decide(self, *, facts: JudgeFacts, convo: Conversation, **_: Any) -> RoleResult[dict[str, Any]]:
        scores = score_control(facts, convo) if facts.condition == "control" else score_behavior(facts, convo)
        verdict = scores.to_dict()
        return RoleResult(verdict, parsed=verdict)
