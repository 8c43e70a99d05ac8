"""TurtleGym: uncover the hidden story behind a puzzling surface with yes/no questions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.roles import Role
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs._asking import Proposal, QuestionGame, QuestionGameEnv
from mimesis_gym.envs._userrl import prompts_file, read_prompt_strings, userrl_root
from mimesis_gym.envs.turtle import baseline
from mimesis_gym.envs.turtle.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.turtle.roles import (
    FALLBACK_TEXT,
    USERRL_PROMPTS,
    LLMOracle,
    LLMRubric,
    ScriptedOracle,
    ScriptedRubric,
)
from mimesis_gym.envs.turtle.tasks import USERRL_NEEDS, TurtleTask, load_original_pack, load_upstream_pack

__all__ = ["TurtleEnv"]

SYSTEM_PROMPT = """\
You are playing a storytelling puzzle. You are given a short surface story that hints at a hidden \
story, and your goal is to uncover the hidden story and its twist.

Use the tool `interact_with_env` with one of these choices:
- `action`: ask one yes-or-no question about the hidden story; you will be told "Yes", "No" or \
"Maybe".
- `answer`: give a full version of the hidden story that covers every twist you have inferred; you \
will be told which points of the story you got right.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited.
- Ask questions to test your hypotheses, then answer. You may answer at any time and more than once."""

USERRL_PROMPTS_FILE = "gyms/TurtleGym/turtlegym/env/prompts.py"
OPENING_INSTRUCTION = "Ask yes-or-no questions to uncover the hidden story behind this surface, then tell it."
FINISH_TEXT = "The game is over."


class TurtleEnv(QuestionGameEnv[TurtleTask]):
    """
    ## Description

    A lateral-thinking ("Turtle Soup") puzzle: the agent sees a short, puzzling **surface**; the
    simulated host knows the hidden **bottom**. The agent asks yes/no questions and submits full
    stories, scored against a weighted rubric. Guide: docs/envs/turtle.md; upstream: UserRL's TurtleGym.

    ## Action Space

    ``[action] question`` (``[search]`` is handled as a question), ``[answer] story``, ``[finish]``.

    ## Observation Space

    The oracle's reply ("Yes", "No", "Maybe"), the list of covered rubric points, or a fallback text.

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``oracle`` | user | strongest matching fact's answer, inverted for negated questions | JSON ``response`` |
    | ``rubric`` | judge | keyword groups per criterion: 1.0 / 0.5 / 0.0 | JSON ``scores`` (0 / 0.5 / 1.0 each) |

    ## Rewards

    | profile | reward | reward line |
    |---|---|---|
    | eval | gain of the best story score S = Σ weight·score, clipped to [0, 1] | no |
    | train | same | ``\\nReward: r`` appended |

    ``reward_parts = {"answer_gain", "step_penalty", "clip"}``; episode score = best S.

    ## Starting State

    A puzzle from the pack (``task_id`` option, or drawn from ``split``).

    ## Episode End

    1. Termination: a story with S ≥ ``success_threshold − success_epsilon``, or ``[finish]``.
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``success_threshold`` | float | 1.0 | story score that ends the episode |
    | ``success_epsilon`` | float | 0.0 | tolerance (1e-9 lets float sums like 0.9999999999999999 end it) |
    | ``oracle_sees_history`` | bool | False | show the LLM oracle earlier Q/A pairs (UserRL: no history) |
    | ``step_penalty`` | float | 0.0 | subtracted × turn |
    | ``reward_scale`` | float | 1.0 | multiplies the gain |
    | ``user_behavior`` | str, list or dict | ``"control"`` | the user's behaviour (docs/behaviors.md) |

    Plus the common kwargs (``user``, ``judge``, ``pack``, ``split``, ``lenient_parsing``, …).
    The oracle plays every behaviour but B5 and B6 (docs/envs/turtle.md, "User behaviours").

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "turtle"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "TurtleGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 423, "test": 48},
        files=(prompts_file(USERRL_PROMPTS_FILE),),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "answer", "finish"})
    tolerated_kinds: ClassVar[dict[str, str]] = {"search": "action"}
    reward_part_names: ClassVar[tuple[str, ...]] = ("answer_gain", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("oracle", "rubric")
    game: ClassVar[QuestionGame] = QuestionGame(
        "answer_gain", host="oracle", detail_key="fact", host_fallback=FALLBACK_TEXT, finish_text=FINISH_TEXT
    )
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Ask a yes-or-no question about the hidden story, or tell the story."

    def __init__(
        self,
        *,
        success_threshold: float = 1.0,
        success_epsilon: float = 0.0,
        oracle_sees_history: bool = False,
        step_penalty: float = 0.0,
        reward_scale: float = 1.0,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        self.success_threshold = float(success_threshold)
        self.success_epsilon = float(success_epsilon)
        self.step_penalty = float(step_penalty)
        self.reward_scale = float(reward_scale)
        user_model, judge_model = self.role_models.user, self.role_models.judge
        if self.pack == "upstream" and (user_model is None or judge_model is None):
            raise ValueError(
                "TurtleGym's scripted oracle and rubric need the original pack's facts and keywords; "
                "with pack='upstream' pass LLM users and judges (user=<alias>, judge=None or an alias)"
            )
        templates = None
        if self.prompt_set == "userrl":
            templates = read_prompt_strings(userrl_root(self.data_dir) / USERRL_PROMPTS_FILE, USERRL_PROMPTS)
        self.oracle: Role[str] = (
            ScriptedOracle()
            if user_model is None
            else LLMOracle(
                user_model, lenient=self.lenient_parsing, sees_history=oracle_sees_history, templates=templates
            )
        )
        self.rubric: Role[list[float]] = (
            ScriptedRubric()
            if judge_model is None
            else LLMRubric(judge_model, lenient=self.lenient_parsing, templates=templates)
        )
        self._begin_game()

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[TurtleTask]:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    async def _begin(self, task: TurtleTask) -> str:
        self._begin_game()
        if task.opening is not None:
            return task.opening
        return f"Title: {task.title}\nSurface: {task.surface}\n{OPENING_INSTRUCTION}"

    async def _judge_proposal(self, task: TurtleTask, proposal: str) -> Proposal:
        result = await self.rubric(self._session, story=proposal, task=task)
        if result.failed:
            return Proposal(FALLBACK_TEXT, None, False, "rubric", {"scores": None, "S": None, "judge_feedback": None})
        story_score = 0.0
        for criterion, score in zip(task.criteria, result.value, strict=True):
            story_score += criterion.weight * score
        feedback = (result.parsed or {}).get("feedback")
        judgement = {
            "scores": list(result.value),
            "S": story_score,
            "judge_feedback": feedback if isinstance(feedback, str) else None,
        }
        solved = story_score >= self.success_threshold - self.success_epsilon
        return Proposal(_coverage_feedback(task, result.value), story_score, solved, "rubric", judgement)

    def _hidden(self) -> dict[str, Any]:
        task: TurtleTask = self.task  # type: ignore[assignment]
        return {
            "bottom": task.bottom,
            "criteria": [{"statement": c.statement, "weight": c.weight} for c in task.criteria],
            "best": self.best,
        }

    def disclosure_items(self) -> list[DisclosureItem]:
        """The hidden story's true facts (shipped pack: facts answered "Yes"); none for upstream tasks."""
        task: TurtleTask | None = self.task  # type: ignore[assignment]
        if task is None or not task.facts:
            return []
        return [
            DisclosureItem(
                key=f"fact-{index}",
                label=fact.statement,
                keyword_sets=(tuple(tuple(group) for group in fact.keywords),),
                ask_terms=tuple(word for group in fact.keywords for word in group),
            )
            for index, fact in enumerate(task.facts)
            if fact.answer.strip().lower() == "yes"
        ]

    def oracle_action(self) -> str:
        """Tell the true story at once."""
        return f"[answer] {self.task.bottom}"  # type: ignore[union-attr]

    def secret_texts(self) -> list[str]:
        return [self.task.bottom] if self.task is not None else []


def _coverage_feedback(task: TurtleTask, scores: list[float]) -> str:
    covered = [c.statement for c, score in zip(task.criteria, scores, strict=True) if score == 1.0]
    if not covered:
        return "Your story does not cover any of the evaluation points yet."
    lines = "\n".join(f"{statement}: Covered" for statement in covered)
    return (
        f"Your story covers these evaluation points:\n{lines}\n"
        "Some hidden twists may still be missing; asking more questions could help."
    )
