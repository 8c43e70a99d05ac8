"""IntentionGym: clarify a vague request by asking about its missing details, one per question."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.disclosure import DisclosureItem, content_words
from mimesis_gym.core.roles import Role
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs._asking import QuestionGame, QuestionGameEnv, Step
from mimesis_gym.envs._userrl import prompts_file, read_prompt_strings, userrl_root
from mimesis_gym.envs.intention import baseline
from mimesis_gym.envs.intention.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.intention.roles import (
    USERRL_PROMPTS,
    USERRL_SYSTEM_FUNCTIONS,
    LLMCoverageJudge,
    LLMResponder,
    ScriptedCoverageJudge,
    ScriptedResponder,
)
from mimesis_gym.envs.intention.tasks import USERRL_NEEDS, Detail, IntentionTask, load_original_pack, load_upstream_pack

__all__ = ["IntentionEnv"]

SYSTEM_PROMPT = """\
You are helping someone with a vague task. Important details of what they want are missing, and \
your job is to clarify them by asking questions.

Use the tool `interact_with_env` with the choice `action`: the content is one clarifying question \
aimed at one missing detail.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited.
- Aim to uncover every missing detail, one question per turn, over several turns."""

USERRL_PROMPTS_FILE = "gyms/IntentionGym/intentiongym/env/prompts.py"
OPENING_INSTRUCTION = "Find out all the missing details of this task by asking clarifying questions."


class IntentionEnv(QuestionGameEnv[IntentionTask]):
    """
    ## Description

    The simulated user posts a vague request; several details are missing. The agent uncovers them
    with focused clarifying questions, one detail per question. Guide: docs/envs/intention.md;
    upstream: UserRL's IntentionGym (held out from training in the paper). The episode score is a
    sum that can exceed 1.

    ## Action Space

    ``[action] question``; ``[answer] question`` and ``[search] text`` are tolerated as questions
    (``[search]`` passes the whole action string, as UserRL did); ``[finish]``.

    ## Observation Space

    The responder's reply; after ``[finish]``, the share of details covered.

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``responder`` | user | the held option of the targeted detail (keyword match) | plain text or JSON ``response`` |
    | ``coverage`` | judge | remaining details whose keywords match | JSON ``covered_detail_indices`` |

    ## Rewards

    Per step: the weight of the most important newly covered detail (HIGH 1.0, MEDIUM 0.7, LOW 0.4)
    minus ``multi_detail_penalty`` per extra detail, clipped to [0, 1]. ``reward_parts =
    {"coverage", "step_penalty", "clip"}``; episode score = Σ rewards (maximum Σ weights).

    ## Episode End

    1. Termination: every detail covered, or ``[finish]``.
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``user_knows_details`` | bool | True | the LLM responder sees the missing details (UserRL did) |
    | ``multi_detail_penalty`` | float | 0.2 | penalty per extra detail covered in one question |
    | ``reward_scale`` | float | 1.0 | multiplies the coverage reward |
    | ``step_penalty`` | float | 0.0 | subtracted every step (constant) |
    | ``user_behavior`` | str, list or dict | "control" | the user's behaviour (docs/behaviors.md) |

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "intention"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "IntentionGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 380, "test": 40},
        files=(prompts_file(USERRL_PROMPTS_FILE),),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "finish"})
    tolerated_kinds: ClassVar[dict[str, str]] = {"answer": "action", "search": "action"}
    reward_part_names: ClassVar[tuple[str, ...]] = ("coverage", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("responder", "coverage")
    game: ClassVar[QuestionGame] = QuestionGame("coverage", penalty_grows=False)  # its own question step
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    draws_llm_seed_base: ClassVar[bool] = False  # drawn after the held options (docs/envs/intention.md, "Options")
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Ask one clarifying question about a missing detail of the task."

    def __init__(
        self,
        *,
        user_knows_details: bool = True,
        multi_detail_penalty: float = 0.2,
        reward_scale: float = 1.0,
        step_penalty: float = 0.0,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        self.multi_detail_penalty = float(multi_detail_penalty)
        self.reward_scale = float(reward_scale)
        self.step_penalty = float(step_penalty)
        user_model, judge_model = self.role_models.user, self.role_models.judge
        if self.pack == "upstream" and (user_model is None or judge_model is None):
            raise ValueError(
                "IntentionGym's scripted responder and judge need the original pack's keywords; with "
                "pack='upstream' pass LLM users and judges"
            )
        templates = None
        if self.prompt_set == "userrl":
            templates = read_prompt_strings(
                userrl_root(self.data_dir) / USERRL_PROMPTS_FILE, USERRL_PROMPTS, USERRL_SYSTEM_FUNCTIONS
            )
        self.responder: Role[str] = (
            ScriptedResponder()
            if user_model is None
            else LLMResponder(
                user_model, lenient=self.lenient_parsing, knows_details=user_knows_details, templates=templates
            )
        )
        self.coverage: Role[list[int]] = (
            ScriptedCoverageJudge()
            if judge_model is None
            else LLMCoverageJudge(judge_model, lenient=self.lenient_parsing, templates=templates)
        )
        self.remaining: list[Detail] = []
        self.covered: list[Detail] = []
        self.held: list[int] = []
        self._begin_game()

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[IntentionTask]:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    async def _begin(self, task: IntentionTask) -> str:
        self.remaining = list(task.missing_details)
        self.covered = []
        self._begin_game()
        self.held = [int(self.np_random.integers(len(d.options))) if d.options else 0 for d in task.missing_details]
        self._session.llm_seed_base = int(self.np_random.integers(0, 2**31 - 1))
        if task.opening is not None:
            return task.opening
        return f"Task category: {task.category}\nVague task: {task.task}\n{OPENING_INSTRUCTION}"

    def task_max_score(self) -> float:
        return self.task.max_score  # type: ignore[union-attr]

    def _finish_text(self) -> str:
        task: IntentionTask = self.task  # type: ignore[assignment]
        total = len(task.missing_details)
        done = total - len(self.remaining)
        return f"Session ended: {done}/{total} details covered ({100 * done / total:.0f}%)."

    async def _ask_host(self, task: IntentionTask, action: ParsedAction) -> Step:
        """The responder answers, and the coverage judge scores every question: the gain is the weight
        of the most important newly covered detail less ``multi_detail_penalty`` per extra one."""
        # UserRL passed [search] with its tag, and its prompts kept the tag in the history
        # (docs/envs/intention.md, "Fidelity notes", #3).
        raw = action.tag == "search" or self.prompt_set == "userrl"
        question = action.canonical if raw else action.content
        materials = {
            "question": question,
            "task": task,
            "remaining": tuple(self.remaining),
            "history": tuple(self._history[-3:]),
            "held": tuple(self.held),
            "choose_canned": lambda: int(self.np_random.integers(5)),
        }
        reply = await self.responder(self._session, **materials)
        judged = await self.coverage(self._session, **materials)
        indices = judged.value
        newly = [self.remaining[i] for i in indices if 0 <= i < len(self.remaining)]
        self.covered += newly
        self.remaining = [d for j, d in enumerate(self.remaining) if j not in indices]
        self._history.append((question, reply.value))
        base = 0.0
        if newly:
            top = max(d.level for d in newly)
            base = max(0.0, {3: 1.0, 2: 0.7, 1: 0.4}[top] - self.multi_detail_penalty * (len(newly) - 1))
        parsed = judged.parsed or {}
        return Step(
            reply.value,
            base,
            terminated=not self.remaining,
            user_thought=reply.thought,
            user_utterance=None if reply.failed else reply.value,
            judgements={
                "coverage": {
                    "analysis": parsed.get("analysis"),
                    "is_task_related": parsed.get("is_task_related"),
                    "covered_detail_indices": list(indices),
                },
                "responder": {"target_detail": (reply.parsed or {}).get("target_detail")},
            },
        )

    def _hidden(self) -> dict[str, Any]:
        task: IntentionTask = self.task  # type: ignore[assignment]
        return {
            "task": task.task,
            "category": task.category,
            "remaining": [d.public() for d in self.remaining],
            "covered": [d.description for d in self.covered],
            "held_options": [
                d.options[h] if d.options else "" for d, h in zip(task.missing_details, self.held, strict=True)
            ],
        }

    def disclosure_items(self) -> list[DisclosureItem]:
        """Each missing detail: stated by the option this user holds, asked about by its keywords."""
        task: IntentionTask | None = self.task  # type: ignore[assignment]
        if task is None:
            return []
        return [
            DisclosureItem(
                key=f"detail-{index}",
                label=detail.description,
                values=(detail.options[held],) if detail.options else (),
                ask_terms=tuple(detail.keywords or content_words(detail.description)),
            )
            for index, (detail, held) in enumerate(zip(task.missing_details, self.held, strict=True))
        ]

    def oracle_action(self) -> str | None:
        """Ask the inquiry of the most important remaining detail (ties: task order)."""
        if not self.remaining:
            return None
        best = max(self.remaining, key=lambda d: d.level)
        return f"[action] {best.inquiry}"

    def secret_texts(self) -> list[str]:
        return [d.description for d in self.task.missing_details] if self.task is not None else []
