"""GuessNumber: find a whole number from 1 to 100; the scripted user says higher, lower or correct.

A :class:`~mimesis_gym.ConversationEnv` subclass in the shape docs/writing-an-env.md describes (the
task pack, the user role, ``_begin`` / ``_handle``, the oracle, the hidden data), kept small: the user
is scripted only (an LLM user is refused at construction).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from pydantic import BaseModel

from mimesis_guess.agent import next_guess
from mimesis_gym import ConversationEnv, EnvEntry, register_env
from mimesis_gym.core import MalformedAction, ParsedAction, ScriptedRole, StepOutcome
from mimesis_gym.core.actions import grammar_help
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.tasks import TaskPack

__all__ = ["ENTRY", "GuessNumberEnv", "register"]

REPLIES = {"higher": "Higher.", "lower": "Lower.", "correct": "Correct!"}


class NumberTask(BaseModel):
    id: str
    secret: int


@cache
def number_pack() -> TaskPack[NumberTask]:
    """Seeded tasks: 16 train, 8 test and 2 demo numbers (the contract suite's oracle plays the demo split)."""
    draws = np.random.default_rng(11).integers(1, 101, size=26).tolist()
    tasks = [NumberTask(id=f"number-{index:02d}", secret=secret) for index, secret in enumerate(draws)]
    return TaskPack("guess/original", {"train": tasks[:16], "test": tasks[16:24], "demo": tasks[24:]})


class ScriptedHost(ScriptedRole[str]):
    """The user: compares the guess with the hidden number."""

    name = "host"

    def decide(self, *, guess: int, task: NumberTask, **_: Any) -> str:
        return "correct" if guess == task.secret else "higher" if guess < task.secret else "lower"

    def fallback(self, **_: Any) -> str:
        return "unclear"


class GuessNumberEnv(ConversationEnv[NumberTask]):
    """Guess the user's number: ``[answer] <n>`` guesses (reward 1.0 and the end when right), ``[finish]`` gives up."""

    env_name: ClassVar[str] = "guess-number"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(next_guess)  # scripted:baseline
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("correct",)
    role_names: ClassVar[tuple[str, ...]] = ("host",)
    packs: ClassVar[tuple[str, ...]] = ("original",)
    default_system_prompt: ClassVar[str] = "Find the user's number from 1 to 100 with as few guesses as you can."

    def __init__(self, **common: Any) -> None:
        super().__init__(**common)  # resolves user=/judge= (an unknown alias fails here)
        if self.role_models.user is not None:
            raise ConfigurationError("GuessNumber plays the scripted user only; pass user='scripted'")
        self.host = ScriptedHost()
        self.guesses: list[int] = []

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[NumberTask]:
        return number_pack()

    async def _begin(self, task: NumberTask) -> str:
        self.guesses = []
        return "I am thinking of a whole number from 1 to 100. Guess it with [answer] <number>."

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        if action.kind == "finish":
            return StepOutcome(obs="Game over.", reward_parts={"correct": 0.0}, terminated=True)
        try:
            guess = int(action.content)
        except ValueError:  # the text of a bad guess never reaches the observation
            return StepOutcome(obs="Please answer with a whole number.", reward_parts={"correct": 0.0}, valid=False)
        self.guesses.append(guess)
        result = await self.host(self._session, guess=guess, task=self.task)
        obs = REPLIES.get(result.value, "The user did not answer clearly; guess again.")
        right = result.value == "correct"
        return StepOutcome(obs=obs, reward_parts={"correct": float(right)}, terminated=right, user_utterance=obs)

    def _malformed_outcome(self, malformed: MalformedAction) -> StepOutcome:
        return StepOutcome(obs=f"Invalid action. {grammar_help(self.accepted_kinds)}", reward_parts={"correct": 0.0},
                           valid=False)  # fmt: skip

    def _hidden(self) -> dict[str, Any]:
        return {"secret": self.task.secret if self.task else None, "guesses": list(self.guesses)}

    def oracle_action(self) -> str:
        return f"[answer] {self.task.secret}"  # type: ignore[union-attr]

    def secret_texts(self) -> list[str]:
        return [str(self.task.secret)] if self.task is not None else []


ENTRY = EnvEntry(
    id="mimesis_guess/GuessNumber-v0",
    entry_point=f"{GuessNumberEnv.__module__}:{GuessNumberEnv.__qualname__}",
    short="guess-number",
    title="GuessNumber",
)
"""The env's table entry: the value of the ``mimesis_gym.envs`` entry point (outside the paper's columns)."""


def register() -> None:
    """Add the env to mimesis_gym's table once (importing :mod:`mimesis_guess` calls it, for ``module:id``)."""
    if ENTRY.id not in gym.registry:
        register_env(ENTRY)
