"""A minimal ConversationEnv with one user role, used to test the base class's LLM path.

The user role ("listener") repeats the agent's message in upper case (scripted) or answers with a
chat model (LLM, JSON key ``reply``). ``[answer] yes`` ends the episode with reward 1.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.conventions import role_messages
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.roles import LLMRole, RoleOutputError, ScriptedRole
from mimesis_gym.core.tasks import TaskPack


class EchoTask(BaseModel):
    id: str
    secret: str


PACK = TaskPack(
    "echo",
    {
        "test": [EchoTask(id="e1", secret="s1"), EchoTask(id="e2", secret="s2")],
        "demo": [EchoTask(id="e-demo", secret="s3")],
    },
)


class ScriptedListener(ScriptedRole[str]):
    name = "listener"

    def decide(self, *, message: str, **_: Any) -> str:
        return message.upper()


class LLMListener(LLMRole[str]):
    name = "listener"
    json_keys = ("reply",)
    max_tokens = 512

    def build_messages(self, *, message: str, secret: str, **_: Any) -> list[dict[str, Any]]:
        return role_messages(
            f"You are a listener. Secret: {secret}. Answer in JSON with key reply.", [("other", message)]
        )

    def parse(self, reply, parsed, **_: Any) -> str:
        text = parsed["reply"]
        if not isinstance(text, str) or not text:
            raise RoleOutputError("reply must be a non-empty string")
        return text

    def fallback(self, **_: Any) -> str:
        return "(the listener did not answer)"


class EchoEnv(ConversationEnv[EchoTask]):
    env_name: ClassVar[str] = "echo"
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "answer"})
    tolerated_kinds: ClassVar = {"search": "action"}
    reward_part_names: ClassVar[tuple[str, ...]] = ("answer",)
    role_names: ClassVar[tuple[str, ...]] = ("listener",)

    def __init__(self, **common: Any) -> None:
        super().__init__(**common)
        model = self.role_models.user
        self.listener = ScriptedListener() if model is None else LLMListener(model)

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[EchoTask]:
        return PACK

    def _system_prompt(self, task: EchoTask) -> str:
        return "Talk to the listener."

    async def _begin(self, task: EchoTask) -> str:
        return "Say something."

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        if action.kind == "answer":
            done = action.content == "yes"
            return StepOutcome(
                obs="Done." if done else "Not yet.", reward_parts={"answer": float(done)}, terminated=done
            )
        result = await self.listener(self._session, message=action.content, secret=self.task.secret)
        return StepOutcome(
            obs=result.value,
            reward_parts={"answer": 0.0},
            user_thought=result.thought,
            user_utterance=result.value,
            judgements={"listener": result.parsed},
        )

    def _hidden(self) -> dict[str, Any]:
        return {"secret": self.task.secret}

    def oracle_action(self) -> str:
        return "[answer] yes"

    def secret_texts(self) -> list[str]:
        return [self.task.secret]
