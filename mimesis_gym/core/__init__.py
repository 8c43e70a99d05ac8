"""Contracts shared by everything in mimesis_gym (docs/env-contract.md). Imports nothing else of ours."""

from mimesis_gym.core.actions import ACTION_KINDS, MalformedAction, ParsedAction, parse_action
from mimesis_gym.core.chat import (
    CallContext,
    ChatFailure,
    ChatModel,
    ChatReply,
    ThoughtRecord,
    Usage,
    call_context,
    current_call_context,
)
from mimesis_gym.core.conventions import role_messages, split_thought
from mimesis_gym.core.env import INFO_KEYS, ConversationEnv, StepOutcome
from mimesis_gym.core.jsonfix import JSONCoercionError, JSONResult, coerce_json
from mimesis_gym.core.roles import (
    LLMRole,
    Role,
    RoleModels,
    RoleOutputError,
    RoleResult,
    RoleSession,
    ScriptedRole,
)
from mimesis_gym.core.spaces import UnicodeText

__all__ = [
    "ACTION_KINDS",
    "INFO_KEYS",
    "CallContext",
    "ChatFailure",
    "ChatModel",
    "ChatReply",
    "ConversationEnv",
    "JSONCoercionError",
    "JSONResult",
    "LLMRole",
    "MalformedAction",
    "ParsedAction",
    "Role",
    "RoleModels",
    "RoleOutputError",
    "RoleResult",
    "RoleSession",
    "ScriptedRole",
    "StepOutcome",
    "ThoughtRecord",
    "UnicodeText",
    "Usage",
    "call_context",
    "coerce_json",
    "current_call_context",
    "parse_action",
    "role_messages",
    "split_thought",
]
