"""A complete env of your own: guess the number, registered at run time, contract-checked, evaluated.

Run with ``python examples/custom_env.py [--out DIR]`` inside the venv (a few seconds, no model, no
network). docs/writing-an-env.md walks through each part; this file is its worked example:

1. the task pack (``test`` and ``demo`` splits), 2. the user role, scripted and LLM-backed,
3. the env (``_begin``, ``_handle``, the oracle, privileged data, ``secret_texts``),
4. its env-table entry, registered with ``register_env``, 5. the contract suite,
6. ``mimesis-gym eval``'s loop in Python; the env shows up in the summary's table of other envs.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from functools import cache
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel

from mimesis_gym import ConversationEnv, EnvEntry, register_env
from mimesis_gym.core import (
    LLMRole,
    MalformedAction,
    ParsedAction,
    RoleOutputError,
    ScriptedRole,
    StepOutcome,
    role_messages,
)
from mimesis_gym.core.actions import grammar_help
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.evaluation.contract import run_checks
from mimesis_gym.evaluation.runner import EvalConfig, run_eval

REPLIES = {"higher": "Higher.", "lower": "Lower.", "correct": "Correct!"}


class NumberTask(BaseModel):
    id: str
    secret: int


@cache
def number_pack() -> TaskPack[NumberTask]:
    """Seeded tasks: 20 test numbers and 2 demo ones (the oracle's contract check plays the demo split)."""
    draws = np.random.default_rng(7).integers(1, 101, size=22).tolist()
    tasks = [NumberTask(id=f"guess-{index:02d}", secret=secret) for index, secret in enumerate(draws)]
    return TaskPack("guess/original", {"test": tasks[:20], "demo": tasks[20:]})


class ScriptedHost(ScriptedRole[str]):
    """The user, scripted: compares the guess with the hidden number."""

    name = "host"

    def decide(self, *, guess: int, task: NumberTask, **_: Any) -> str:
        return "correct" if guess == task.secret else "higher" if guess < task.secret else "lower"


class LLMHost(LLMRole[str]):
    """The user, played by a chat model (``user=<alias>``): JSON ``{"reply": "higher"|"lower"|"correct"}``."""

    name = "host"
    json_keys = ("reply",)

    def build_messages(self, *, guess: int, task: NumberTask, **_: Any) -> list[dict[str, Any]]:
        rules = f"You thought of the number {task.secret}. Is the guess right, or is your number higher or lower? "
        rules += 'Answer in JSON: {"reply": "higher" | "lower" | "correct"}.'
        return role_messages(rules, [("other", f"Is it {guess}?")])

    def parse(self, reply: Any, parsed: dict[str, Any] | None, **_: Any) -> str:
        value = str((parsed or {}).get("reply", "")).strip().lower()
        if value not in REPLIES:
            raise RoleOutputError(f"reply must be higher, lower or correct; got {value!r}")
        return value

    def fallback(self, **_: Any) -> str:
        return "unclear"


class GuessNumberEnv(ConversationEnv[NumberTask]):
    """Guess a whole number from one to a hundred; the user says higher, lower or correct.

    ``[answer] <n>`` guesses (reward 1.0 and the end when right), ``[finish]`` gives up.
    """

    env_name: ClassVar[str] = "guess"
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("correct",)
    role_names: ClassVar[tuple[str, ...]] = ("host",)
    packs: ClassVar[tuple[str, ...]] = ("original",)
    default_system_prompt: ClassVar[str] = "Find the user's number with as few guesses as you can."

    def __init__(self, **common: Any) -> None:
        super().__init__(**common)  # resolves user=/judge= into self.role_models
        user = self.role_models.user
        self.host: ScriptedHost | LLMHost = ScriptedHost() if user is None else LLMHost(user)
        self.guesses: list[int] = []

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[NumberTask]:
        return number_pack()

    async def _begin(self, task: NumberTask) -> str:
        self.guesses = []
        return "I am thinking of a whole number between one and one hundred. Guess it with [answer] <number>."

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        if action.kind == "finish":
            return StepOutcome(obs="Game over.", reward_parts={"correct": 0.0}, terminated=True)
        try:
            guess = int(action.content)
        except ValueError:  # the digits of a wrong guess never reach the observation
            return StepOutcome(obs="Please answer with a whole number.", reward_parts={"correct": 0.0}, valid=False)
        self.guesses.append(guess)
        result = await self.host(self._session, guess=guess, task=self.task)
        obs = REPLIES.get(result.value, "The user did not answer clearly; guess again.")
        right = result.value == "correct"
        return StepOutcome(obs=obs, reward_parts={"correct": float(right)}, terminated=right, user_utterance=obs)

    def _malformed_outcome(self, malformed: MalformedAction) -> StepOutcome:
        # No parser details (they quote character positions): only fixed sentences reach the agent.
        message = f"Invalid action. {grammar_help(self.accepted_kinds)}"
        return StepOutcome(obs=message, reward_parts={"correct": 0.0}, valid=False)

    def _hidden(self) -> dict[str, Any]:
        return {"secret": self.task.secret if self.task else None, "guesses": list(self.guesses)}

    def oracle_action(self) -> str:
        return f"[answer] {self.task.secret}"  # type: ignore[union-attr]

    def secret_texts(self) -> list[str]:
        return [str(self.task.secret)] if self.task is not None else []


ENTRY = EnvEntry(
    id="examples/GuessNumber-v0",
    entry_point=f"{GuessNumberEnv.__module__}:{GuessNumberEnv.__qualname__}",
    short="guess",
    title="Guess",
)
"""Outside the paper's columns: scored in the summary's table of other envs, not in Avg or MR."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="eval output directory (default: a temporary one)")
    args = parser.parse_args()
    register_env(ENTRY)
    failed = [result for result in run_checks([ENTRY.id]) if not result.ok]
    for result in failed:
        print(f"FAIL {result.check}: {result.detail}")
    config = EvalConfig(envs=["guess", "function"], agents=["oracle", "scripted:random"], limit=3, max_turns=8)
    out = args.out or Path(tempfile.mkdtemp(prefix="guess-eval-"))
    asyncio.run(run_eval(config, out, progress=False))  # what `mimesis-gym eval` runs
    print((out / "summary.md").read_text(encoding="utf-8"), end="")
    print(f"contract: {'passed' if not failed else f'{len(failed)} failed'}; results in {out}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
