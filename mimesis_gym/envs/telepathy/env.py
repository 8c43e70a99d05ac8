"""TelepathyGym: twenty questions — find the entity the simulated user is thinking of."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import UserRLReading, userrl_reading
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.roles import Role
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs._asking import Proposal, QuestionGame, QuestionGameEnv
from mimesis_gym.envs._userrl import prompts_file, read_prompt_strings, userrl_root
from mimesis_gym.envs.telepathy import baseline
from mimesis_gym.envs.telepathy.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.telepathy.roles import (
    ANSWERER_FALLBACK,
    JUDGE_FALLBACK,
    USERRL_PROMPTS,
    LLMAnswerer,
    LLMGuessJudge,
    ScriptedAnswerer,
    ScriptedGuessJudge,
)
from mimesis_gym.envs.telepathy.tasks import (
    USERRL_NEEDS,
    TelepathyPack,
    TelepathyTask,
    load_original_pack,
    load_upstream_pack,
)

__all__ = ["TelepathyEnv"]

SYSTEM_PROMPT = """\
You are playing a guessing game. You are given a brief description of an entity (an animal, a \
person, a place, a dish, an object…) and must find out exactly which one it is.

Use the tool `interact_with_env` with one of these choices:
- `action`: ask one yes-or-no question about the entity; you will be told "Yes", "No" or "Maybe".
- `answer`: name the entity that best fits the answers so far.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited: ask questions first, then guess.
- You may guess at any time and more than once."""

USERRL_PROMPTS_FILE = "gyms/TelepathyGym/telepathygym/env/prompts.py"
OPENING_INSTRUCTION = "Ask yes-or-no questions to find out exactly what it is, then name it."
FINISH_TEXT = "Game finished."
USERRL_READING = UserRLReading(untagged_kind="action", untagged_skip=8)
"""UserRL's TelepathyGym: an empty ``[answer]`` goes to the guess judge, any text it does not read as a
guess or ``[finish]`` to the answerer as ``action_str[8:].strip()``."""


class TelepathyEnv(QuestionGameEnv[TelepathyTask]):
    """
    ## Description

    Twenty questions: the simulated user thinks of an entity and gives only a category-level teaser;
    the agent asks yes/no questions and guesses. Guide: docs/envs/telepathy.md; upstream: UserRL's
    TelepathyGym (held out from training in the paper).

    ## Action Space

    ``[action] question`` (``[search]`` is handled as a question), ``[answer] guess``, ``[finish]``.
    ``action_grammar="userrl"``: an empty ``[answer]`` is judged, untagged text asked (UserRL's reading).

    ## Observation Space

    The answerer's reply ("Yes", "No", "Maybe"), the guess judge's feedback, or a fallback text.

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``answerer`` | user | longest matching phrase (property, name, noun, colour) | JSON ``response`` |
    | ``guess_judge`` | judge | normalised guess equals the title or an alias | JSON ``judgment``, ``feedback`` |

    ## Rewards

    Gain of the best guess score (1.0 for a correct guess), clipped to [0, 1]; ``train`` appends the
    reward line. ``reward_parts = {"guess_gain", "step_penalty", "clip"}``; episode score ∈ {0, 1}.

    ## Episode End

    1. Termination: a correct guess, or ``[finish]``.
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``answerer_sees_history`` | bool | False | show the LLM answerer earlier Q/A pairs (UserRL: none) |
    | ``action_grammar`` | str | ``"native"`` | ``"userrl"``: an empty ``[answer]`` is judged, untagged text asked |
    | ``reward_scale`` | float | 1.0 | multiplies the gain |
    | ``step_penalty`` | float | 0.0 | subtracted × turn |
    | ``user_behavior`` | str, list or dict | ``"control"`` | the user's behaviour (docs/behaviors.md) |

    Plus the common kwargs. The answerer plays every behaviour but B5 and B6
    (docs/envs/telepathy.md, "User behaviours"). With ``pack="upstream"`` the scripted answerer is
    unavailable (UserRL entities have no attributes); a scripted guess judge works (aliases = the title).

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "telepathy"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    paper_kwargs: ClassVar[Mapping[str, Any]] = {"action_grammar": "userrl"}
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "TelepathyGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 360, "test": 41},
        files=(prompts_file(USERRL_PROMPTS_FILE),),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "answer", "finish"})
    tolerated_kinds: ClassVar[dict[str, str]] = {"search": "action"}
    reward_part_names: ClassVar[tuple[str, ...]] = ("guess_gain", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("answerer", "guess_judge")
    game: ClassVar[QuestionGame] = QuestionGame(
        "guess_gain", host="answerer", detail_key="matched", host_fallback=ANSWERER_FALLBACK, finish_text=FINISH_TEXT
    )
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Ask a yes-or-no question about the entity, or guess it."

    def __init__(
        self,
        *,
        answerer_sees_history: bool = False,
        reward_scale: float = 1.0,
        step_penalty: float = 0.0,
        action_grammar: str = "native",
        **common: Any,
    ) -> None:
        reading = userrl_reading(action_grammar, USERRL_READING)
        super().__init__(**common)
        self.action_grammar = action_grammar
        self.action_reading = reading
        self.reward_scale = float(reward_scale)
        self.step_penalty = float(step_penalty)
        user_model, judge_model = self.role_models.user, self.role_models.judge
        pack: TelepathyPack = self.task_pack  # type: ignore[assignment]
        if user_model is None and pack.vocabulary is None:
            raise ValueError(
                "TelepathyGym's scripted answerer needs the original pack's attributes; with pack='upstream' "
                "pass an LLM user (a scripted guess judge still works: judge='scripted')"
            )
        templates = None
        if self.prompt_set == "userrl":
            templates = read_prompt_strings(userrl_root(self.data_dir) / USERRL_PROMPTS_FILE, USERRL_PROMPTS)
        self.answerer: Role[str] = (
            ScriptedAnswerer(pack)
            if user_model is None
            else LLMAnswerer(
                user_model, lenient=self.lenient_parsing, sees_history=answerer_sees_history, templates=templates
            )
        )
        self.guess_judge: Role[tuple[float, str]] = (
            ScriptedGuessJudge()
            if judge_model is None
            else LLMGuessJudge(judge_model, lenient=self.lenient_parsing, templates=templates)
        )
        self._begin_game()

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TelepathyPack:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    async def _begin(self, task: TelepathyTask) -> str:
        self._begin_game()
        return task.opening if task.opening is not None else f"{task.description}\n{OPENING_INSTRUCTION}"

    async def _judge_proposal(self, task: TelepathyTask, proposal: str) -> Proposal:
        result = await self.guess_judge(self._session, guess=proposal, task=task)
        score, feedback = result.value
        parsed = result.parsed or {}
        judgement = {"judgment": parsed.get("judgment"), "feedback": parsed.get("feedback")}
        if result.failed:
            return Proposal(JUDGE_FALLBACK, None, False, "guess_judge", judgement)
        return Proposal(feedback, score, score >= 1.0, "guess_judge", judgement)

    def _hidden(self) -> dict[str, Any]:
        task: TelepathyTask = self.task  # type: ignore[assignment]
        hidden: dict[str, Any] = {
            "title": task.title,
            "target_entity": task.target_entity,
            "category": task.category,
            "aliases": list(task.aliases),
        }
        if task.hypernyms is not None:  # pack fields: absent for UserRL tasks
            hidden["hypernyms"] = list(task.hypernyms)
        if task.attributes is not None:
            hidden["attributes"] = dict(task.attributes)
        return hidden

    def disclosure_items(self) -> list[DisclosureItem]:
        """The secret itself: the entity's title or an alias, in the user's reply or the agent's guess."""
        task: TelepathyTask | None = self.task  # type: ignore[assignment]
        if task is None:
            return []
        names = tuple(dict.fromkeys([task.title, *task.aliases]))
        return [DisclosureItem(key="target", label=f"the {task.category}", values=names, ask_terms=names)]

    def oracle_action(self) -> str:
        """Name the entity at once."""
        return f"[answer] {self.task.title}"  # type: ignore[union-attr]

    def secret_texts(self) -> list[str]:
        return [self.task.target_entity] if self.task is not None else []
