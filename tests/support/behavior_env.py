"""AskEnv: a small env whose user plays the behaviours, for the eval tests (robustness, pass^k).

The user (role ``listener``) holds a secret word. An ``[action]`` with a question mark gets the
listener's scripted reply ``"The word is <word>."``; ``[answer] <word>`` after the user has said it
ends the episode with reward 1 (any other answer: reward 0, the episode goes on). The behaviour's
scripted rewrite decides whether the word is said: under B3 the first two questions are dodged, so
the privileged oracle (ask until told, then answer) needs four turns instead of two, and a turn cap
of three costs it the episode; under B9 and B13 the word is still said at once.

The listener plays every behaviour but B5 (:data:`AskEnv.user_behaviors`). :func:`register` adds
``mimesis_test/Ask-v0`` to Gymnasium (short name ``ask``, outside the paper's columns) or, with
``column``, to the env table as a paper column, so that its rows enter the paper's table.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
from pydantic import BaseModel

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.roles import ScriptedRole
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.envs import EnvEntry, register_env

ASK_ID = "mimesis_test/Ask-v0"


class AskTask(BaseModel):
    id: str
    word: str


PACK = TaskPack(
    "ask",
    {
        "test": [
            AskTask(id="ask-1", word="lisbon"),
            AskTask(id="ask-2", word="porto"),
            AskTask(id="ask-3", word="faro"),
        ],
        "demo": [AskTask(id="ask-demo", word="braga")],
    },
)


class Listener(ScriptedRole[str]):
    name = "listener"

    def decide(self, *, word: str, **_: Any) -> str:
        return f"The word is {word}."


def _facts(env: AskEnv) -> dict[str, Any]:
    return {
        "informative": (env.task.word,),
        "new_requirement_text": "I also need it spelled out.",
        "new_requirement_words": ("spelled",),
        "target_topic_text": "What about the weather?",
        "target_topic_words": ("weather",),
        "restrictions": ("I can't spell", "I don't read maps"),
        "false_premise_text": "As I said, the word has nine letters.",
        "false_value": "nine letters",
        "contradiction_a_text": "I am alone.",
        "value_a": "alone",
        "contradiction_b_text": "We are four people.",
        "value_b": "four people",
    }


class AskEnv(ConversationEnv[AskTask]):
    env_name: ClassVar[str] = "ask"
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "answer"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("answer",)
    role_names: ClassVar[tuple[str, ...]] = ("listener",)
    user_behaviors: ClassVar[EnvBehaviors] = EnvBehaviors(
        user_role="listener",
        not_applicable={"B5": "the listener has nothing to leave out"},
        facts=_facts,
    )

    def __init__(self, **common: Any) -> None:
        super().__init__(**common)
        self.listener = Listener()
        self.told = False

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[AskTask]:
        return PACK

    def _system_prompt(self, task: AskTask) -> str:
        return "Find out the user's word, then answer it."

    async def _begin(self, task: AskTask) -> str:
        self.told = False
        return "Hello."

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: AskTask = self.task  # type: ignore[assignment]
        if action.kind == "answer":
            right = self.told and action.content.strip().lower() == task.word
            return StepOutcome(
                obs="Right." if right else "No.", reward_parts={"answer": float(right)}, terminated=right
            )
        result = await self.listener(self._session, word=task.word)
        self.told = self.told or task.word in result.value.lower()
        return StepOutcome(obs=result.value, reward_parts={"answer": 0.0}, user_utterance=result.value)

    def oracle_action(self) -> str:
        return f"[answer] {self.task.word}" if self.told else "[action] What is your word?"  # type: ignore[union-attr]

    def secret_texts(self) -> list[str]:
        return []


def register(column: int | None = None) -> None:
    """Register :data:`ASK_ID` with Gymnasium, or (``column``) add it to the env table as a paper column.

    Pair with the ``clean_env_table`` fixture, which removes it again."""
    if column is None:
        gym.register(id=ASK_ID, entry_point=AskEnv, max_episode_steps=8)
        return
    entry_point = f"{AskEnv.__module__}:AskEnv"
    register_env(EnvEntry(id=ASK_ID, entry_point=entry_point, short="ask", title="Ask", column=column, avg_weight=3))
