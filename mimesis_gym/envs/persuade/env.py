"""PersuadeGym: argue against the simulated user's claim and move its stance toward disagreement."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import ParsedAction, UserRLReading, userrl_reading
from mimesis_gym.core.env import ConversationEnv, StepOutcome, clipped_parts
from mimesis_gym.core.roles import Role
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UpstreamFile, UserRLUpstream
from mimesis_gym.envs._userrl import prompts_file, read_prompt_strings, userrl_root
from mimesis_gym.envs.persuade import baseline
from mimesis_gym.envs.persuade.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.persuade.roles import (
    STANCES,
    USERRL_PROMPTS,
    LLMPersuadee,
    LLMStanceJudge,
    PersuadeeState,
    ScriptedPersuadee,
    ScriptedStanceJudge,
    normalise_stance,
    stance_index,
)
from mimesis_gym.envs.persuade.tasks import (
    USERRL_NEEDS,
    USERRL_STATEMENTS,
    PersuadeTask,
    load_original_pack,
    load_upstream_pack,
)

__all__ = ["PersuadeEnv"]

SYSTEM_PROMPT = """\
You are playing a persuasion game. The environment holds a statement that you disagree with, and \
your goal is to persuade it to change its position.

Use the tool `interact_with_env` with the choice `answer`: the content is an argument that responds \
to the environment's position and argues against the statement.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited.
- First analyse the weaknesses of the environment's position, then argue logically, coherently and \
persuasively."""

USERRL_PROMPTS_FILE = "gyms/PersuadeGym/persuadegym/env/prompts.py"
OPENING_INSTRUCTION = "Persuade the environment to change its position."
FINISH_TEXT = "Conversation ended."
START_STANCE = "Strongly Agree"
USERRL_READING = UserRLReading(untagged_kind="answer")
"""UserRL's PersuadeGym: an empty ``[answer]`` is an empty argument, untagged text the argument."""


class PersuadeEnv(ConversationEnv[PersuadeTask]):
    """
    ## Description

    The simulated user holds a claim, backed by its own argument; the agent argues against the
    claim and tries to move the user's stance from "Strongly Agree" toward "Strongly Disagree".
    Guide: docs/envs/persuade.md; upstream: UserRL's PersuadeGym.

    ## Action Space

    ``[answer] argument``; ``[action]`` is handled the same, ``[search]`` passes the whole action
    string as the argument (as UserRL did); ``[finish]``. ``action_grammar="userrl"``: untagged text
    and empty content are arguments too (UserRL's reading).

    ## Observation Space

    The persuadee's reply (its stance label is never shown), or a fallback sentence.

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``persuadee`` | user | concedes matching counterpoints, else defends | JSON ``response``, ``stance`` |
    | ``stance_judge`` | judge (``stance_source="judge"``) | the scripted persuadee's label | JSON ``stance`` |

    ## Rewards

    Stance progress Δ over the seven labels: 0 if Δ ≤ 0, 1 if Δ ≥ 6, else ``round(Δ / 6, 6)``;
    clipped to [0, 1]. ``reward_parts = {"stance_gain", "step_penalty", "clip"}``; episode score =
    Σ rewards (it can exceed 1 after a backslide followed by progress).

    ## Episode End

    1. Termination: the stance is exactly "Strongly Disagree", or ``[finish]``.
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``stance_source`` | str | ``"user"`` | ``"judge"``: a stance judge reads the new stance from the reply |
    | ``step_penalty`` | float | 0.0 | subtracted every step when > 0 (constant) |
    | ``max_levels_per_turn`` | int | 2 | most stance levels the scripted persuadee moves in one turn |
    | ``action_grammar`` | str | ``"native"`` | ``"userrl"``: untagged text and an empty tag are arguments |
    | ``user_behavior`` | str, list or dict | ``"control"`` | the user's behaviour (docs/behaviors.md) |

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "persuade"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    paper_kwargs: ClassVar[Mapping[str, Any]] = {"action_grammar": "userrl"}
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "PersuadeGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 378, "test": 42},
        files=(
            UpstreamFile(
                str(USERRL_STATEMENTS),
                "adds statements beyond the parquets' tasks",
                needed=False,
                full_clone=True,
            ),
            prompts_file(USERRL_PROMPTS_FILE),
        ),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"answer", "finish"})
    tolerated_kinds: ClassVar[dict[str, str]] = {"action": "answer", "search": "answer"}
    reward_part_names: ClassVar[tuple[str, ...]] = ("stance_gain", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("persuadee", "stance_judge")
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Give an argument against the environment's statement."

    def __init__(
        self,
        *,
        stance_source: str = "user",
        step_penalty: float = 0.0,
        max_levels_per_turn: int = 2,
        action_grammar: str = "native",
        **common: Any,
    ) -> None:
        reading = userrl_reading(action_grammar, USERRL_READING)
        super().__init__(**common)
        self.action_grammar = action_grammar
        self.action_reading = reading
        if stance_source not in ("user", "judge"):
            raise ValueError(f"stance_source must be 'user' or 'judge'; got {stance_source!r}")
        self.stance_source = stance_source
        self.step_penalty = float(step_penalty)
        user_model, judge_model = self.role_models.user, self.role_models.judge
        scripted_needed = user_model is None or (stance_source == "judge" and judge_model is None)
        if self.pack == "upstream" and scripted_needed:
            raise ValueError(
                "PersuadeGym's scripted persuadee and stance judge need the original pack's counterpoints; "
                "with pack='upstream' pass LLM users and judges"
            )
        templates = None
        if self.prompt_set == "userrl":
            templates = read_prompt_strings(userrl_root(self.data_dir) / USERRL_PROMPTS_FILE, USERRL_PROMPTS)
        self.persuadee: Role[tuple[str, str]] = (
            ScriptedPersuadee(max_levels_per_turn)
            if user_model is None
            else LLMPersuadee(user_model, lenient=self.lenient_parsing, templates=templates)
        )
        self.stance_judge: Role[str] | None = None
        if stance_source == "judge":
            self.stance_judge = (
                ScriptedStanceJudge(max_levels_per_turn)
                if judge_model is None
                else LLMStanceJudge(judge_model, lenient=self.lenient_parsing)
            )
        self.stance = START_STANCE
        self._state = PersuadeeState()
        self._judge_state = PersuadeeState()
        self._history: list[tuple[str, str]] = []

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[PersuadeTask]:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    async def _begin(self, task: PersuadeTask) -> str:
        self.stance = START_STANCE
        self._state = PersuadeeState()
        self._judge_state = PersuadeeState()
        self._history = []
        if task.opening is not None:
            return task.opening
        return f"The claim the environment holds and you oppose: {task.claim}\n{OPENING_INSTRUCTION}"

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: PersuadeTask = self.task  # type: ignore[assignment]
        if action.kind == "finish":
            return StepOutcome(obs=FINISH_TEXT, reward_parts=self._parts(0.0), terminated=True, judgements={})
        argument = action.canonical if action.tag == "search" else action.content
        previous = self.stance
        materials = {
            "argument": argument,
            "stance": previous,
            "task": task,
            "history": tuple(self._history),
            "state": self._state,
            "judge_state": self._judge_state,
        }
        result = await self.persuadee(self._session, **materials)
        reply, new_stance = result.value
        judgements: dict[str, Any] = {
            "persuadee": {"stance": None if result.failed else new_stance, "response": None if result.failed else reply}
        }
        if self.stance_judge is not None and not result.failed:
            judged = await self.stance_judge(self._session, persuadee_reply=reply, **materials)
            new_stance = judged.value
            judgements["stance_judge"] = {"stance": None if judged.failed else judged.value}
        self.stance = new_stance
        self._history.append((argument, reply))
        return StepOutcome(
            obs=reply,
            reward_parts=self._parts(_stance_reward(previous, new_stance)),
            terminated=self._is_final(new_stance),
            user_thought=result.thought,
            user_utterance=None if result.failed else reply,
            judgements=judgements,
        )

    def _is_final(self, stance: str) -> bool:
        if self.lenient_parsing:
            return normalise_stance(stance, "") == STANCES[6]
        return stance == STANCES[6]

    def _parts(self, gain: float) -> dict[str, float]:
        return clipped_parts(
            {"stance_gain": gain, "step_penalty": -self.step_penalty if self.step_penalty > 0 else 0.0}
        )

    def _hidden(self) -> dict[str, Any]:
        task: PersuadeTask = self.task  # type: ignore[assignment]
        return {
            "claim": task.claim,
            "argument": task.argument,
            "stance": self.stance,
            "stance_index": stance_index(self.stance),
            "matched": list(self._state.matched),
        }

    def oracle_action(self) -> str | None:
        """The probe of the first counterpoint not yet conceded; ``None`` on UserRL tasks."""
        task: PersuadeTask = self.task  # type: ignore[assignment]
        for point in task.counterpoints or ():
            if point.id not in self._state.matched:
                return f"[answer] {point.probe}"
        return None

    def secret_texts(self) -> list[str]:
        return [self.task.argument] if self.task is not None else []


def _stance_reward(previous: str, new: str) -> float:
    """``round(Δ / 6, 6)`` for progress Δ over the labels; 0 without progress or for a non-label."""
    before, after = stance_index(previous), stance_index(new)
    if before is None or after is None:
        return 0.0
    delta = after - before
    if delta <= 0:
        return 0.0
    return 1.0 if delta >= 6 else round(delta / 6, 6)
