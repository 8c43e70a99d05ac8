"""TravelGym: search a travel database, draw out a traveller's hidden preferences, recommend the cheapest fits."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.env import ConversationEnv, StepOutcome, clipped_parts
from mimesis_gym.core.roles import Role, RoleResult
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs._userrl import prompts_file, userrl_root
from mimesis_gym.envs.travel import baseline
from mimesis_gym.envs.travel.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.travel.prompts import (
    BUDGET_SENTENCE,
    FEEDBACK,
    NOTES,
    OPTION_SCHEMAS,
    SYSTEM_PROMPT,
    USERRL_PROMPT_FILE,
    read_userrl_prompts,
)
from mimesis_gym.envs.travel.roles import (
    Classification,
    LLMClassifier,
    LLMResponder,
    LLMSearchJudge,
    ScriptedClassifier,
    ScriptedResponder,
    ScriptedSearchJudge,
    Verdict,
)
from mimesis_gym.envs.travel.tasks import (
    ASPECT_LETTERS,
    LETTER_ASPECTS,
    USERRL_NEEDS,
    NumberedPreference,
    TravelTask,
    canonical_query,
    load_original_pack,
    load_upstream_pack,
    missing_record_file,
    unplayable_files,
)

__all__ = ["REWARD_CONSTANTS", "TravelEnv"]

REWARD_CONSTANTS: dict[str, dict[str, float]] = {
    "eval": {
        "search_correct_reward": 0.2,
        "preference_correct_reward": 0.6,
        "choice_best_reward": 1.0,
        "choice_correct_reward": 0.8,
        "wrong_choice_penalty": 0.0,
    },
    "train": {
        "search_correct_reward": 0.0,
        "preference_correct_reward": 0.8,
        "choice_best_reward": 1.0,
        "choice_correct_reward": 0.8,
        "wrong_choice_penalty": 0.0,
    },
}
"""The five reward constants of each profile (docs/envs/travel.md, "Rewards"); kwargs of the same names
override them."""

_OPTION_ID = re.compile(r"[ACFHR][0-9]+")


class TravelEnv(ConversationEnv[TravelTask]):
    """
    ## Description

    The agent plans a trip for a simulated traveller whose opening request is incomplete. For each
    aspect of the trip (flight, hotel or apartment, rental car, restaurant) it must **search** the
    database with the right arguments, **elicit** the traveller's hidden preferences with concrete
    questions, and **recommend** one option: the cheapest that meets all of that aspect's
    preferences. Guide: docs/envs/travel.md; upstream: UserRL's TravelGym (from UserBench) on its
    asynchronous step path, with the MIMESIS release's proactive-elicitation fix.

    ## Action Space

    ``[search] query``, ``[action] utterance``, ``[answer] option ids`` (comma-separated), ``[finish]``.

    ## Observation Space

    Search results (the aspect's schema, then one JSON option per line, in an order drawn at reset),
    the traveller's replies, or grading feedback.

    ## Roles

    | role | kind | scripted | LLM (JSON keys) |
    |---|---|---|---|
    | ``search_judge`` | judge | aspect nouns, cities, dates | ``alignment_judgement``, ``alignment_aspect`` |
    | ``classifier`` | judge | keyword hits (2, 3), aspect nouns, vague markers (4) | ``type``, ``preference_id`` |
    | ``responder`` | user | implicit statement / lead-in + statement / neutral | ``response`` |

    ## Rewards

    | profile | search | preference | best choice | correct choice | wrong choice |
    |---|---|---|---|---|---|
    | ``eval`` | 0.2 | 0.6 | 1.0 | 0.8 | 0.0 |
    | ``train`` | 0.0 | 0.8 | 1.0 | 0.8 | 0.0 |

    Step reward = raw × ``reward_scale`` − ``step_penalty`` (clipped to [0, 1] only with
    ``normalize_rewards``); ``reward_parts = {"search", "preference", "choice", "step_penalty",
    "clip"}``. Episode score: the best answer reward per aspect letter, summed, divided by the number
    of aspects (``score_context() = {"n_aspects", "travel_set"}``).

    ## Starting State

    A task from ``split`` (or ``options["task_id"]``), drawn with ``np_random``; then each aspect's
    display order (a permutation of its options) and the role-call seed base.

    ## Episode End

    1. Termination: every aspect's best option chosen, or ``[finish]`` (or, with
       ``terminate_when_all_answered``, one answer per aspect).
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``elicitation_fix`` | bool | True | the MIMESIS fix of proactive elicitation (False: unpatched UserRL) |
    | ``single_id_answers`` | bool | False | one id per answer, reward capped at 1 (UserRL's sync path) |
    | ``cap_options`` | bool | False | show at most 10 wrong and 5 noise options |
    | ``terminate_when_all_answered`` | bool | False | also end once every aspect has an answer |
    | ``one_choice_per_aspect`` | bool | True | lock an aspect after its first answer |
    | ``search_failure_interval`` | int | 5 | every n-th search is a simulated outage |
    | ``elicitation_interval`` | int | 3 | off-topic turns before the traveller volunteers a preference |
    | ``reward_scale`` | float | 1.0 | multiplies the raw reward |
    | ``step_penalty`` | float | 0.0 | subtracted every well-formed step |
    | ``normalize_rewards`` | bool | False | clip each step reward to [0, 1] |
    | ``search_correct_reward`` … ``wrong_choice_penalty`` | float | profile | override a reward constant |
    | ``user_behavior`` | str, list or dict | "control" | the user's behaviour (docs/behaviors.md) |

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "travel"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "TravelGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"train": 2651, "test": 471},
        unplayable=unplayable_files,
        files=(prompts_file(USERRL_PROMPT_FILE),),
    )
    scoring: ClassVar[str] = "per_aspect_best"
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"search", "action", "answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("search", "preference", "choice", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("search_judge", "classifier", "responder")
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    draws_llm_seed_base: ClassVar[bool] = False  # drawn after the display orders (docs/envs/travel.md, "Options")
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = (
        "Search the travel database, talk to the traveller, or recommend an option by its ID."
    )

    def __init__(
        self,
        *,
        elicitation_fix: bool = True,
        single_id_answers: bool = False,
        cap_options: bool = False,
        terminate_when_all_answered: bool = False,
        one_choice_per_aspect: bool = True,
        search_failure_interval: int = 5,
        elicitation_interval: int = 3,
        reward_scale: float = 1.0,
        step_penalty: float = 0.0,
        normalize_rewards: bool = False,
        search_correct_reward: float | None = None,
        preference_correct_reward: float | None = None,
        choice_best_reward: float | None = None,
        choice_correct_reward: float | None = None,
        wrong_choice_penalty: float | None = None,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        if int(search_failure_interval) < 1:
            raise ValueError(f"search_failure_interval must be a positive int; got {search_failure_interval!r}")
        if int(elicitation_interval) < 0:
            raise ValueError(f"elicitation_interval must be a non-negative int; got {elicitation_interval!r}")
        self.elicitation_fix = bool(elicitation_fix)
        self.single_id_answers = bool(single_id_answers)
        self.cap_options = bool(cap_options)
        self.terminate_when_all_answered = bool(terminate_when_all_answered)
        self.one_choice_per_aspect = bool(one_choice_per_aspect)
        self.search_failure_interval = int(search_failure_interval)
        self.elicitation_interval = int(elicitation_interval)
        self.reward_scale = float(reward_scale)
        self.step_penalty = float(step_penalty)
        self.normalize_rewards = bool(normalize_rewards)
        overrides = {
            "search_correct_reward": search_correct_reward,
            "preference_correct_reward": preference_correct_reward,
            "choice_best_reward": choice_best_reward,
            "choice_correct_reward": choice_correct_reward,
            "wrong_choice_penalty": wrong_choice_penalty,
        }
        constants = {
            name: float(value if value is not None else REWARD_CONSTANTS[self.reward_profile][name])
            for name, value in overrides.items()
        }
        self.search_correct_reward = constants["search_correct_reward"]
        self.preference_correct_reward = constants["preference_correct_reward"]
        self.choice_best_reward = constants["choice_best_reward"]
        self.choice_correct_reward = constants["choice_correct_reward"]
        self.wrong_choice_penalty = constants["wrong_choice_penalty"]

        if self.pack == "upstream" and self.split in self.task_pack.splits:
            missing = missing_record_file(self.task_pack.splits[self.split])
            if missing is not None:
                raise FileNotFoundError(
                    f"pack='upstream' needs UserRL's travel records: {missing} is missing under the data "
                    "directory (the parquet files hold only ids and prompts)"
                )
        user_model, judge_model = self.role_models.user, self.role_models.judge
        if self.pack == "upstream" and (user_model is None or judge_model is None):
            raise ValueError(
                "TravelGym's scripted roles need the original pack's keywords and catalogue; with pack='upstream' "
                "pass an LLM user and LLM judges"
            )
        templates = None
        self.option_schemas = OPTION_SCHEMAS
        if self.prompt_set == "userrl":
            templates = read_userrl_prompts(userrl_root(self.data_dir) / USERRL_PROMPT_FILE)
            self.option_schemas = {**OPTION_SCHEMAS, **templates["OPTION_SCHEMAS"]}
        lenient = self.lenient_parsing
        self.search_judge: Role[Verdict] = (
            ScriptedSearchJudge()
            if judge_model is None
            else LLMSearchJudge(judge_model, lenient=lenient, templates=templates)
        )
        self.classifier: Role[Classification] = (
            ScriptedClassifier()
            if judge_model is None
            else LLMClassifier(judge_model, lenient=lenient, templates=templates)
        )
        self.responder: Role[str | None] = (
            ScriptedResponder()
            if user_model is None
            else LLMResponder(user_model, lenient=lenient, templates=templates)
        )

        # episode state (docs/envs/travel.md, "Roles")
        self.remaining: list[NumberedPreference] = []
        self.elicited: list[str] = []
        self.search_times = 0
        self.nonpreference_times = 0
        self.search_pending: list[str] = []
        self.best_left: list[str] = []
        self.correct_left: list[str] = []
        self.choice_initials: list[str] = []
        self.history: list[dict[str, str]] = []
        self.answer_log: list[tuple[str, float]] = []
        self.display_orders: dict[str, list[int]] = {}
        self._draws_pending = False

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[TravelTask]:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    def __getstate__(self) -> dict[str, Any]:
        # The pack (megabytes of option tables) is reloaded from the per-process cache, not pickled.
        state = super().__getstate__()
        state["task_pack"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.task_pack = self.load_task_pack(self.pack, self.data_dir)

    # ------------------------------------------------------------------ reset

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        if seed is None:
            self._draw_episode_randomness()  # keep the stream as if the last episode's draws had run
        else:
            self._draws_pending = False  # a new seed restarts the stream: the old draws no longer matter
        return await super().areset(seed=seed, options=options)

    async def _begin(self, task: TravelTask) -> str:
        if not task.playable:
            raise FileNotFoundError(
                f"task {task.id!r} has no record: {missing_record_file([task])} is missing under the data directory"
            )
        self.remaining = list(task.numbered)
        self.elicited = []
        self.search_times = 0
        self.nonpreference_times = 0
        self.search_pending = list(task.dimensions)
        self.best_left = list(task.best_per_dimension)
        self.correct_left = list(task.correct_union)
        self.choice_initials = []
        self.history = []
        self.answer_log = []
        self.display_orders = {}
        # The display orders and the role-call seed base are the next draws of np_random; they are
        # made on first use, which leaves the stream exactly as drawing them here would.
        self._draws_pending = True
        return task.opening if task.opening is not None else f"{task.initial_description}\n{BUDGET_SENTENCE}"

    def _draw_episode_randomness(self) -> None:
        if not self._draws_pending:
            return
        self._draws_pending = False
        task: TravelTask = self.task  # type: ignore[assignment]
        rng = self.np_random
        for dimension in task.dimensions:
            aspect = task.aspects[dimension]
            if self.cap_options:
                n_correct, n_wrong, n_noise = aspect.group_sizes
                groups = (
                    [int(i) for i in rng.permutation(n_correct)],
                    [n_correct + int(i) for i in rng.permutation(n_wrong)][:10],
                    [n_correct + n_wrong + int(i) for i in rng.permutation(n_noise)][:5],
                )
                shown = [i for group in groups for i in group]
                self.display_orders[dimension] = [shown[int(j)] for j in rng.permutation(len(shown))]
            else:
                self.display_orders[dimension] = rng.permutation(len(aspect.options)).tolist()
        self._session.llm_seed_base = int(rng.integers(0, 2**31 - 1))

    # ------------------------------------------------------------------ step

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        self._draw_episode_randomness()
        if action.kind == "search":
            return await self._search(action.content)
        if action.kind == "action":
            return await self._converse(action.content)
        if action.kind == "answer":
            return self._answer(action.content)
        total = len(self.remaining) + len(self.elicited)
        obs = FEEDBACK["finish"].format(
            elicited=len(self.elicited), total=total, ratio=len(self.elicited) / total if total else 0.0
        )
        return StepOutcome(obs=obs, reward_parts=self._parts(), terminated=True, judgements={})

    def _parts(self, search: float = 0.0, preference: float = 0.0, choice: float = 0.0) -> dict[str, float]:
        """Reward parts: raw × reward_scale − step_penalty, clipped to [0, 1] only with normalize_rewards."""
        scale = self.reward_scale
        parts = {
            "search": search * scale if search else 0.0,
            "preference": preference * scale if preference else 0.0,
            "choice": choice * scale if choice else 0.0,
            "step_penalty": -self.step_penalty if self.step_penalty else 0.0,
        }
        return clipped_parts(parts) if self.normalize_rewards else {**parts, "clip": 0.0}

    def _terminated(self) -> bool:
        if not self.best_left:
            return True
        task: TravelTask = self.task  # type: ignore[assignment]
        return self.terminate_when_all_answered and all(
            ASPECT_LETTERS.get(d) in self.choice_initials for d in task.dimensions
        )

    # ------------------------------------------------------------------ [search]

    async def _search(self, query: str) -> StepOutcome:
        task: TravelTask = self.task  # type: ignore[assignment]
        self.search_times += 1
        judgements: dict[str, Any] = {}
        if self.search_times % self.search_failure_interval == 0:
            verdict: Verdict = ("outage", None)
        else:
            result = await self.search_judge(self._session, request=query, task=task)
            verdict = result.value
            judgements["search_judge"] = result.parsed
        reward = 0.0
        kind, aspect = verdict
        if kind == "True" and aspect in self.search_pending:
            self.search_pending.remove(aspect)
            reward = self.search_correct_reward
            obs = self._search_results(aspect)
            logged = FEEDBACK["search_ok"] + FEEDBACK["search_omitted"]
        else:
            if kind == "True":
                obs = FEEDBACK["search_repeat"].format(aspect=aspect)
            else:
                obs = FEEDBACK[{"False": "search_false", "N/A": "search_na"}.get(kind, "search_outage")]
            logged = obs
        self.history.append({"role": "agent", "content": query})
        self.history.append({"role": "database", "content": logged})
        return StepOutcome(obs=obs, reward_parts=self._parts(search=reward), terminated=False, judgements=judgements)

    def _search_results(self, dimension: str) -> str:
        task: TravelTask = self.task  # type: ignore[assignment]
        lines = task.aspects[dimension].display_lines()
        shown = "\n".join(lines[i] for i in self.display_orders[dimension])
        schema = self.option_schemas.get(dimension, "").strip()
        return f"{FEEDBACK['search_ok']}\n\n{schema}\n\n{FEEDBACK['search_options'].format(aspect=dimension)}\n{shown}"

    # ------------------------------------------------------------------ [action]

    async def _converse(self, utterance: str) -> StepOutcome:
        task: TravelTask = self.task  # type: ignore[assignment]
        materials: dict[str, Any] = {
            "utterance": utterance,
            "remaining": tuple(self.remaining),
            "task": task,
            "history": tuple(self.history),
        }
        classified = await self.classifier(self._session, **materials)
        kind, preference_id = classified.value
        judgements: dict[str, Any] = {"classifier": classified.parsed}
        note = NOTES["classifier_failure"] if classified.failed else NOTES[kind].format(preference_id=preference_id)
        reward = self.preference_correct_reward if kind == "2" else 0.0
        reply: str | None = None
        thought: str | None = None
        spoken = True
        if kind == "2":
            self.nonpreference_times = 0
            target = next(p for p in self.remaining if p.id == preference_id)
            answered = await self.responder(self._session, mode="preference", preference=target, **materials)
            judgements["responder"] = {"mode": "preference", "preference_id": target.id}
            if answered.failed or answered.value is None:
                reward, note = 0.0, NOTES["responder_failure"]
            else:
                reply, thought = answered.value, answered.thought
                self._elicit(target)
        elif self.nonpreference_times >= self.elicitation_interval and self.remaining:
            self.nonpreference_times = 0
            target = self.remaining[int(self.np_random.integers(len(self.remaining)))]
            note = NOTES["proactive"]
            judgements["responder"] = {"mode": "proactive", "preference_id": target.id}
            if self.elicitation_fix or not getattr(self.responder, "scripted", False):
                answered = await self.responder(self._session, mode="proactive", preference=target, **materials)
            if not self.elicitation_fix:
                # Unpatched UserRL never assigned the proactive reply: the agent entry was logged, then the
                # fallback path logged it again with the fallback note and the apology
                # (docs/envs/travel.md, "Fidelity notes", #2).
                self.history.append({"role": "agent", "content": utterance, "note": note})
                note = NOTES["responder_failure"]
            elif answered.failed or answered.value is None:
                note = NOTES["responder_failure"]
            else:
                reply, thought = answered.value, answered.thought
                self._elicit(target)
        elif kind in ("3", "4"):
            self.nonpreference_times += 1
            reply, spoken = self._canned_reply(FEEDBACK[f"type{kind}"])
        else:
            self.nonpreference_times += 1
            answered = await self.responder(
                self._session, mode="natural", choose_canned=lambda: int(self.np_random.integers(4)), **materials
            )
            judgements["responder"] = {"mode": "natural", "preference_id": None}
            if answered.failed or answered.value is None:
                note = NOTES["responder_failure"]
            else:
                reply, thought = answered.value, answered.thought
        if reply is None:
            reply, spoken, reward = FEEDBACK["apology"], False, 0.0
        self.history.append({"role": "agent", "content": utterance, "note": note})
        self.history.append({"role": "user", "content": reply})
        return StepOutcome(
            obs=reply,
            reward_parts=self._parts(preference=reward),
            terminated=False,
            user_thought=thought if spoken else None,
            user_utterance=reply if spoken else None,
            judgements=judgements,
        )

    def _canned_reply(self, text: str) -> tuple[str, bool]:
        """A canned reply (types 3 and 4) and whether the traveller spoke it. Under a behaviour the scripted
        traveller plays it too: it passes through the enactment, and a line the behaviour rewrote is the
        user's own reply (docs/envs/travel.md, "User behaviours"); otherwise it is the env's text."""
        behavior = self._session.behavior
        if behavior is None or not getattr(self.responder, "scripted", False):
            return text, False
        played = behavior.enact(self.responder.name, RoleResult(text)).value
        return played, played != text

    def _elicit(self, preference: NumberedPreference) -> None:
        self.remaining = [p for p in self.remaining if p.id != preference.id]
        self.elicited.append(preference.id)

    # ------------------------------------------------------------------ [answer]

    def _answer(self, content: str) -> StepOutcome:
        ids = [part.strip() for part in content.split(",")]
        if self.single_id_answers and len(ids) > 1:
            return self._answer_outcome(content, FEEDBACK["answer_single"], 0.0)
        reward = 0.0
        found = {"best": False, "correct": False, "wrong": False}
        for option_id in ids:
            if _OPTION_ID.fullmatch(option_id) is None:
                return self._answer_outcome(content, FEEDBACK["answer_format"].format(option_id=option_id), 0.0)
            letter = option_id[0]
            if self.one_choice_per_aspect and letter in self.choice_initials:
                return self._answer_outcome(content, FEEDBACK["answer_locked"].format(letter=letter), 0.0)
            if option_id in self.best_left:
                reward += self.choice_best_reward
                self.best_left.remove(option_id)
                # UserRL raised when the best id was missing from the correct ids
                # (docs/envs/travel.md, "Fidelity notes", #16)
                if option_id in self.correct_left:
                    self.correct_left.remove(option_id)
                found["best"] = True
            elif option_id in self.correct_left:
                reward += self.choice_correct_reward
                self.correct_left.remove(option_id)
                found["correct"] = True
            else:
                reward -= self.wrong_choice_penalty
                found["wrong"] = True
            if letter not in self.choice_initials:
                self.choice_initials.append(letter)
            if self.one_choice_per_aspect:
                aspect = LETTER_ASPECTS[letter]
                self.remaining = [p for p in self.remaining if p.aspect != aspect]
        reward = max(reward, 0.0)
        if self.single_id_answers:
            reward = min(reward, 1.0)
        if found["best"]:
            graded = "graded_best_wrong" if found["wrong"] else "graded_best"
        elif found["correct"]:
            graded = "graded_correct_wrong" if found["wrong"] else "graded_correct"
        else:
            graded = "graded_none"
        recorded = "recorded_aspect" if self.one_choice_per_aspect else "recorded_options"
        return self._answer_outcome(content, FEEDBACK[graded] + FEEDBACK[recorded], reward)

    def _answer_outcome(self, content: str, obs: str, reward: float) -> StepOutcome:
        parts = self._parts(choice=reward)
        self.answer_log.append((content, sum(parts.values())))
        return StepOutcome(obs=obs, reward_parts=parts, terminated=self._terminated(), judgements={})

    # ------------------------------------------------------------------ privileged, oracle, scoring

    def score_context(self) -> dict[str, Any]:
        task: TravelTask = self.task  # type: ignore[assignment]
        return {"n_aspects": len(task.dimensions), "travel_set": task.travel_set}

    def _hidden(self) -> dict[str, Any]:
        task: TravelTask = self.task  # type: ignore[assignment]
        return {
            "scenario": task.scenario,
            "remaining": [p.public() for p in self.remaining],
            "elicited": list(self.elicited),
            "best_left": list(self.best_left),
            "correct_left": list(self.correct_left),
            "search_pending": list(self.search_pending),
            "search_times": self.search_times,
            "nonpreference_times": self.nonpreference_times,
            "choice_initials": list(self.choice_initials),
        }

    def disclosure_items(self) -> list[DisclosureItem]:
        """Each hidden preference: stated by its own text, its implicit phrasing or one of its pack keywords
        (its subcategory for upstream tasks); asked for by the same keywords."""
        task: TravelTask | None = self.task  # type: ignore[assignment]
        if task is None:
            return []
        items = []
        for numbered in task.numbered:
            pref = numbered.pref
            words = tuple(pref.meta.keywords) if pref.meta is not None else (pref.subcategory,)
            items.append(
                DisclosureItem(
                    key=numbered.id,
                    label=pref.preference,
                    values=(pref.preference, pref.implicit_elicitation),
                    keyword_sets=((words,),),
                    ask_terms=words,
                )
            )
        return items

    def oracle_action(self) -> str | None:
        """Search each pending aspect with its canonical query, then answer each aspect's best id.

        With no pending search and no best id left to answer in an unlocked aspect (only after
        off-policy steps), the oracle finishes.
        """
        task = self.task
        if task is None or not task.playable:
            return None
        for dimension in task.dimensions:
            if dimension in self.search_pending:
                return f"[search] {canonical_query(dimension, task.aspects[dimension].arguments)}"
        for dimension in task.dimensions:
            best = task.aspects[dimension].best_id
            if best in self.best_left and not (self.one_choice_per_aspect and best[0] in self.choice_initials):
                return f"[answer] {best}"
        return "[finish]"

    def secret_texts(self) -> list[str]:
        task = self.task
        if task is None:
            return []
        return [task.scenario, *(p.pref.preference for p in task.numbered)]
