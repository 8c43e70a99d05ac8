"""FunctionGym: deduce a hidden arithmetic function of four inputs, then apply it to a test case."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs.function import baseline
from mimesis_gym.envs.function.rules import RuleEvaluationError
from mimesis_gym.envs.function.tasks import (
    USERRL_NEEDS,
    FunctionTask,
    ProceduralPack,
    load_original_pack,
    load_upstream_pack,
)

__all__ = ["FunctionEnv"]

SYSTEM_PROMPT = """\
You are playing a guessing game with a hidden mapping function. The function takes four numbers \
and returns one number; it is built only from addition, subtraction, multiplication, division and \
powers. Find the rule by trial and error, then apply it to the test case.

Use the tool `interact_with_env` with one of these choices:
- `action`: the content is four integers separated by spaces; you receive the function's output \
for them.
- `search`: the content must be exactly `test`; you receive the four numbers of the test case.
- `answer`: the content is one number, the function's value on the test case.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited, so choose your trials carefully.
- Start with small numbers and change one input at a time to see what each one does. The \
function may combine the inputs in any order (for example the 2nd and 3rd first).
- Once you know the test case you may answer at any time, and more than once."""

OPENING = "The hidden function is fixed. Start your trials whenever you are ready."

_NUMBER = re.compile(r"-?\d+\.?\d*")


class FunctionEnv(ConversationEnv[FunctionTask]):
    """
    ## Description

    The simulated "user" holds a hidden arithmetic function of four inputs ``a, b, c, d`` (for
    example ``(a + b) * c - d``). The agent probes it with inputs of its choice, asks for the test
    case and must submit the function's value on it. The env is fully deterministic and calls no
    model. Guide: docs/envs/function.md; upstream: UserRL's FunctionGym.

    ## Action Space

    Text in the action grammar (or the ``interact_with_env`` tool call):
    ``[action] 1 2 3 4`` (four numbers), ``[search] test``, ``[answer] 29``, ``[finish]``.
    Anything else costs the turn with ``valid_action=False``.

    ## Observation Space

    Text: the result of a probe (``For numbers [1.0, 2.0, 3.0, 4.0], the result is 9.0.``), the test
    case (``Test case: [3, 4, 5, 6]``) or the verdict on an answer.

    ## Roles

    None: ``user`` and ``judge`` are validated and ignored; ``info["user_failure"]`` is always ``None``.

    ## Rewards

    | profile | correct answer | wrong answer | other | step penalty | reward line |
    |---|---|---|---|---|---|
    | eval | 1.0 | 0.0 | 0.0 | 0.0 × turn | no |
    | train | 1.0 | 0.0 | 0.0 | 0.0 × turn | ``\\nReward: r`` appended |

    ``reward_parts = {"answer", "step_penalty", "clip"}``; no clipping. Episode score = Σ rewards ∈ {0, 1}.

    ## Starting State

    A task from the pack (``task_id`` option, or drawn from ``split``); with ``pack="procedural"``
    a freshly generated function ``fn-proc-<n>``.

    ## Episode End

    1. Termination: a correct answer (reward 1) or ``[finish]`` (reward 0, the expected result revealed).
    2. Truncation: ``max_episode_steps`` (16) through ``TimeLimit``.

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``pack`` | str | ``"original"`` | ``"original"``, ``"upstream"`` (UserRL files) or ``"procedural"`` |
    | ``data_dir`` | str | ``None`` | UserRL root for ``pack="upstream"`` (else ``$MIMESIS_GYM_USERRL_DIR``) |
    | ``split`` | str | ``"test"`` | ``train``, ``test`` or ``demo``; ignored by ``procedural`` |
    | ``reward_profile`` | str | ``"eval"`` | ``"train"`` appends the reward line |
    | ``step_penalty`` | float | 0.0 | subtracted × turn from every step's reward |
    | ``correct_answer_reward`` | float | 1.0 | reward of a correct answer |
    | ``incorrect_answer_reward`` | float | 0.0 | reward of a wrong answer |
    | ``tolerance`` | float | 1e-6 | absolute tolerance of the answer check |
    | ``privileged`` | bool | ``False`` | fill ``info["privileged"]`` with the hidden rule and state |

    Common kwargs (``user``, ``judge``, ``lenient_parsing``, ``prompt_set``, …) are accepted and
    have no effect.

    ```python
    >>> import gymnasium as gym, mimesis_gym
    >>> env = gym.make("mimesis/FunctionGym-v0", split="demo")
    >>> obs, info = env.reset(options={"task_id": "fn-demo-01"})
    >>> env.step("[action] 1 1 1 1")[0]
    'For numbers [1.0, 1.0, 1.0, 1.0], the result is 1.0.'
    ```

    ## Version History

    - v0: initial release, faithful to UserRL's FunctionGym (fidelity table in ``docs/envs/function.md``).
    """

    env_name: ClassVar[str] = "function"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    uncoached_in_release: ClassVar[bool] = True  # the release coached no turn of this env
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "FunctionGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 460, "test": 78},
        files=(),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "search", "answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("answer", "step_penalty", "clip")
    packs: ClassVar[tuple[str, ...]] = ("original", "upstream", "procedural")
    draws_llm_seed_base: ClassVar[bool] = False
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Probe the hidden function, get the test case, or answer."

    def __init__(
        self,
        *,
        step_penalty: float = 0.0,
        correct_answer_reward: float = 1.0,
        incorrect_answer_reward: float = 0.0,
        tolerance: float = 1e-6,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        self.step_penalty = float(step_penalty)
        self.correct_answer_reward = float(correct_answer_reward)
        self.incorrect_answer_reward = float(incorrect_answer_reward)
        self.tolerance = float(tolerance)
        self._revealed = False
        self._answered: list[float] = []

    # ------------------------------------------------------------------ pack and prompts

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[FunctionTask]:
        if pack == "procedural":
            return ProceduralPack()
        if pack == "upstream":
            return load_upstream_pack(data_dir)
        return load_original_pack()

    async def _begin(self, task: FunctionTask) -> str:
        self._revealed = False
        self._answered = []
        return task.opening if task.opening is not None else OPENING

    # ------------------------------------------------------------------ dynamics

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: FunctionTask = self.task  # type: ignore[assignment]
        answer = 0.0
        valid = True
        terminated = False
        if action.kind == "action":
            obs, valid = self._probe(task, action.content)
        elif action.kind == "search":
            if action.content.strip().lower() == "test":
                self._revealed = True
                obs = f"Test case: {list(task.test_case)!r}"
            else:
                obs, valid = "Search content should only be 'test': use [search] test to get the test case.", False
        elif action.kind == "answer":
            try:
                value = float(action.content.strip())
            except ValueError:
                obs, valid = "Invalid numerical answer: give a single number, e.g. [answer] 42.", False
            else:
                self._answered.append(value)
                if abs(value - task.expected_result) <= self.tolerance:
                    obs, answer, terminated = "Your answer is correct!", self.correct_answer_reward, True
                else:
                    obs = "Your answer is wrong. Keep reasoning about the function and try again later."
                    answer = self.incorrect_answer_reward
        else:  # finish
            terminated = True
            obs = (
                "You finished the game without a correct answer. "
                f"The expected result on the test case was {task.expected_result}."
            )
        penalty = -(self.step_penalty * self.turn) if self.step_penalty else 0.0
        return StepOutcome(
            obs=obs,
            reward_parts={"answer": answer, "step_penalty": penalty, "clip": 0.0},
            terminated=terminated,
            valid=valid,
        )

    def _probe(self, task: FunctionTask, content: str) -> tuple[str, bool]:
        numbers = [float(match) for match in _NUMBER.findall(content)]
        if len(numbers) != 4:
            return "Please provide exactly four numbers separated by spaces, e.g. [action] 1 2 3 4.", False
        if numbers == list(task.test_case):
            return (
                "These are the numbers of the test case: no calculation feedback is given for them. "
                "Work out the rule with other numbers, then submit your answer.",
                True,
            )
        try:
            value = task.compiled_rule.evaluate(numbers)
        except RuleEvaluationError:
            return (
                f"The numbers {numbers!r} cannot be evaluated by the function (e.g. division by zero). "
                "Please try different numbers.",
                True,
            )
        return f"For numbers {numbers!r}, the result is {round(value, 4)}.", True

    # ------------------------------------------------------------------ privileged, oracle

    def _hidden(self) -> dict[str, Any]:
        task: FunctionTask = self.task  # type: ignore[assignment]
        return {
            "rule": task.rule,
            "test_case": list(task.test_case),
            "expected_result": task.expected_result,
            "test_case_revealed": self._revealed,
            "answered": list(self._answered),
        }

    def oracle_action(self) -> str:
        """``[search] test`` until the test case is known, then ``[answer] <expected_result>``."""
        task: FunctionTask = self.task  # type: ignore[assignment]
        if not self._revealed:
            return "[search] test"
        return f"[answer] {task.expected_result}"

    def secret_texts(self) -> list[str]:
        return [self.task.rule] if self.task is not None else []
