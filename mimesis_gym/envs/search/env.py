"""SearchGym: multi-hop question answering with a search tool (docs/envs/search.md)."""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from mimesis_gym.core.actions import ParsedAction, interact_with_env_tool
from mimesis_gym.core.asyncbridge import LoopThread
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.redact import redact
from mimesis_gym.core.roles import Role
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.core.upstream import UserRLUpstream
from mimesis_gym.envs._userrl import prompts_file, read_prompt_strings, userrl_root
from mimesis_gym.envs.search import baseline
from mimesis_gym.envs.search.backends import (
    BACKEND_NAMES,
    DEFAULT_NOTICE,
    SERPER_KEY_VARIABLE,
    BM25Backend,
    NoticeBackend,
    SearchBackend,
    SerperBackend,
    import_backend_class,
)
from mimesis_gym.envs.search.roles import USERRL_PROMPTS, LLMAnswerJudge, ScriptedAnswerJudge, exact_match
from mimesis_gym.envs.search.tasks import CORPUS_PATH, USERRL_NEEDS, SearchTask, load_original_pack, load_upstream_pack

__all__ = ["SearchEnv"]

T = TypeVar("T")

SYSTEM_PROMPT = """\
You are in a question-answering environment: you are given a question and your goal is to give its \
correct answer. You can search for information step by step, then answer.

Use the tool `interact_with_env` with one of these choices:
- `search`: write one search query in `content`; you get the matching results back. Use it to gather \
the facts you need, one step at a time.
- `answer`: give a short answer in `content`, based on what you know and on the search results so far.

Notes:
- Before every tool call, reason inside <think> and </think>, then call the tool.
- The number of turns is limited: work out which facts you need and plan your searches step by step.
- You may answer at any time and more than once."""

USERRL_PROMPTS_FILE = "gyms/SearchGym/searchgym/env/prompts.py"
OPENING_INSTRUCTION = "Plan which facts you need, search for them step by step, and then give your answer."
SEARCH_LIMIT_TEXT = "You have reached the maximum number of search steps. Give your answer next; do not search again."
INVALID_FORMAT_TEXT = (
    "Invalid action format. Use `search` with a search query, or `answer` with your answer, in the correct format."
)
FINISH_CORRECT_TEXT = "Finished. You answered the question correctly."
FINISH_WRONG_TEXT = "Finished without a correct answer."
EVAL_METHODS = ("llm", "rule")
ADVERTISED_KINDS = frozenset({"search", "answer", "finish"})
TOOL_DESCRIPTION = "Search for information, or answer the question."
_TOOLS = (interact_with_env_tool(ADVERTISED_KINDS, TOOL_DESCRIPTION),)


def correct_text(answer: str) -> str:
    return f"Correct! '{answer}' is the right answer to the question."


def incorrect_text(answer: str) -> str:
    return f"Incorrect. '{answer}' is not the right answer to the question."


class SearchEnv(ConversationEnv[SearchTask]):
    """
    ## Description

    Multi-hop question answering: the agent searches step by step and answers. Guide:
    docs/envs/search.md; upstream: UserRL's SearchGym (Bamboogle questions, Serper web search) as run
    by the MIMESIS release, whose SearchGym numbers are **closed-book** (every search returns a fixed
    notice). The shipped pack asks chained questions about an invented world and searches it offline
    with BM25, so answers cannot come from a model's memory.

    ## Action Space

    ``[search] query``, ``[answer] text``, ``[finish]``. ``[action] …`` gets the invalid-format reply
    (``valid_action=False``, reward 0); untagged or empty input is malformed (core grammar).

    ## Observation Space

    ``Search results for '<query>':`` followed by the backend's hits or message; the search-limit
    message; ``Correct! …`` / ``Incorrect. …`` quoting the answer; the finish text (with ``The correct
    answer was: <answer>`` when no answer was correct).

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``answer_judge`` | judge | exact match (answer, aliases) | JSON ``reasoning``, ``judgment``, ``feedback`` |

    A normalised exact match is correct without any role call; the judge sees only mismatches.

    ## Rewards

    ``correct_answer_reward`` (1.0) on a correct answer, ``incorrect_answer_reward`` (0.0) on another
    answer, 0 otherwise; minus ``step_penalty × turn`` on every well-formed step; no clipping. Both
    profiles use these constants; ``train`` appends ``"\\nReward: <r>"``. ``reward_parts = {"answer",
    "step_penalty", "clip"}``; episode score = Σ rewards ∈ {0, 1}.

    ## Starting State

    ``options["task_id"]`` (any split), else a question drawn from ``options.get("split", split)``.

    ## Episode End

    1. Termination: a correct answer, or ``[finish]``.
    2. Truncation: ``max_episode_steps`` (16).

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``search_backend`` | str | None | ``notice``, ``bm25``, ``serper``, ``<module>:<Class>``; None: by pack |
    | ``search_notice`` | str | None | the closed-book notice (None: built-in text) |
    | ``max_search_steps`` | int | 5 | searches beyond it get the limit message |
    | ``max_search_results`` | int | 5 | hits per search |
    | ``eval_method`` | str | "llm" | ``llm``: judge mismatches; ``rule``: exact match only |
    | ``corpus_path`` | str | None | BM25 over another JSONL corpus (``title``, ``text``) |
    | ``bm25_k1``, ``bm25_b`` | float | 1.5, 0.75 | BM25 parameters |
    | ``serper_base_url`` | str | "https://google.serper.dev" | Serper endpoint (``POST <url>/search``) |
    | ``serper_num`` | int | 15 | results requested from Serper |
    | ``serper_max_attempts`` | int | 7 | requests while no organic results |
    | ``serper_retry_sleep`` | float | 5.0 | seconds between those requests |
    | ``search_timeout`` | float | 10.0 | HTTP timeout of a Serper request |
    | ``step_penalty`` | float | 0.0 | subtracted × turn |
    | ``correct_answer_reward`` | float | 1.0 | reward of a correct answer |
    | ``incorrect_answer_reward`` | float | 0.0 | reward of another answer |

    Plus the common kwargs. ``serper`` needs ``$SERPER_API_KEY`` (``ValueError`` at construction
    otherwise); the key is read from the environment at request time and never stored.

    ## Example

    >>> import gymnasium as gym, mimesis_gym
    >>> env = gym.make("mimesis/SearchGym-v0", split="demo")
    >>> obs, info = env.reset(seed=0, options={"task_id": "search-demo-01"})
    >>> env.step("[answer] Penmoor")[1]
    1.0

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "search"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "SearchGym",
        task_files=USERRL_NEEDS,
        load=load_upstream_pack,
        counts={"test": 125},
        files=(prompts_file(USERRL_PROMPTS_FILE),),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "search", "answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ("answer", "step_penalty", "clip")
    role_names: ClassVar[tuple[str, ...]] = ("answer_judge",)
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = TOOL_DESCRIPTION

    def __init__(
        self,
        *,
        search_backend: str | None = None,
        search_notice: str | None = None,
        max_search_steps: int = 5,
        max_search_results: int = 5,
        eval_method: str = "llm",
        corpus_path: str | None = None,
        bm25_k1: float = 1.5,
        bm25_b: float = 0.75,
        serper_base_url: str = "https://google.serper.dev",
        serper_num: int = 15,
        serper_max_attempts: int = 7,
        serper_retry_sleep: float = 5.0,
        search_timeout: float = 10.0,
        step_penalty: float = 0.0,
        correct_answer_reward: float = 1.0,
        incorrect_answer_reward: float = 0.0,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        if eval_method not in EVAL_METHODS:
            raise ValueError(f"eval_method must be one of {', '.join(EVAL_METHODS)}; got {eval_method!r}")
        if max_search_steps < 0 or max_search_results < 1:
            raise ValueError("max_search_steps must be ≥ 0 and max_search_results ≥ 1")
        self.search_backend = search_backend or ("bm25" if self.pack == "original" else "notice")
        self.search_notice = DEFAULT_NOTICE if search_notice is None else search_notice
        self.max_search_steps = int(max_search_steps)
        self.max_search_results = int(max_search_results)
        self.eval_method = eval_method
        self.corpus_path = str(Path(corpus_path).resolve()) if corpus_path is not None else str(CORPUS_PATH)
        self.bm25_k1, self.bm25_b = float(bm25_k1), float(bm25_b)
        self.serper_base_url = serper_base_url
        self.serper_num = int(serper_num)
        self.serper_max_attempts = int(serper_max_attempts)
        self.serper_retry_sleep = float(serper_retry_sleep)
        self.search_timeout = float(search_timeout)
        self.step_penalty = float(step_penalty)
        self.correct_answer_reward = float(correct_answer_reward)
        self.incorrect_answer_reward = float(incorrect_answer_reward)
        self.tools = list(_TOOLS)  # search, answer, finish: ``[action]`` is parsed but not advertised

        self._backend_class: type | None = None
        if self.search_backend == "serper" and not os.environ.get(SERPER_KEY_VARIABLE):
            raise ValueError(f"search_backend='serper' needs a Serper API key in ${SERPER_KEY_VARIABLE}")
        if self.search_backend not in BACKEND_NAMES:
            self._backend_class = import_backend_class(self.search_backend)
        self._backend_kwargs: dict[str, Any] = {}
        if self._backend_class is not None:
            self._backend_kwargs = {
                "search_notice": search_notice,
                "max_search_steps": max_search_steps,
                "max_search_results": max_search_results,
                "corpus_path": corpus_path,
                "bm25_k1": bm25_k1,
                "bm25_b": bm25_b,
                "serper_base_url": serper_base_url,
                "serper_num": serper_num,
                "serper_max_attempts": serper_max_attempts,
                "serper_retry_sleep": serper_retry_sleep,
                "search_timeout": search_timeout,
                **common,
            }
        self._backend: SearchBackend | None = None

        judge_model = self.role_models.judge
        templates = None
        if self.prompt_set == "userrl":
            templates = read_prompt_strings(userrl_root(self.data_dir) / USERRL_PROMPTS_FILE, USERRL_PROMPTS)
        self.answer_judge: Role[Any] = (
            ScriptedAnswerJudge()
            if judge_model is None
            else LLMAnswerJudge(judge_model, lenient=self.lenient_parsing, templates=templates)
        )
        self.search_steps = 0
        self.answered_correctly = False

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[SearchTask]:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    # ------------------------------------------------------------------ the episode

    async def _begin(self, task: SearchTask) -> str:
        self.search_steps = 0
        self.answered_correctly = False
        return task.opening if task.opening is not None else f"{task.question}\n{OPENING_INSTRUCTION}"

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: SearchTask = self.task  # type: ignore[assignment]
        if action.kind == "action":
            return StepOutcome(obs=INVALID_FORMAT_TEXT, reward_parts=self._parts(0.0, penalised=False), valid=False)
        if action.kind == "finish":
            obs = (
                FINISH_CORRECT_TEXT
                if self.answered_correctly
                else f"{FINISH_WRONG_TEXT} The correct answer was: {task.answer}"
            )
            return StepOutcome(obs=obs, reward_parts=self._parts(0.0), terminated=True)
        if action.kind == "search":
            self.search_steps += 1
            if self.search_steps > self.max_search_steps:
                return StepOutcome(obs=SEARCH_LIMIT_TEXT, reward_parts=self._parts(0.0))
            results = await self._search(action.content)
            return StepOutcome(obs=f"Search results for '{action.content}':\n{results}", reward_parts=self._parts(0.0))
        return await self._answer(action.content, task)

    async def _answer(self, answer: str, task: SearchTask) -> StepOutcome:
        """Exact match first (no role call); then the judge, unless ``eval_method="rule"``."""
        exact = exact_match(answer, task.answer, task.aliases)
        judge_detail: dict[str, Any] = {"judgment": None, "feedback": None}
        if exact:
            correct = True
        elif self.eval_method == "rule":
            correct = False
        else:
            result = await self.answer_judge(self._session, answer=answer, task=task)
            correct = bool(result.value.correct)
            judge_detail = {"judgment": result.value.judgment, "feedback": result.value.feedback}
        if correct:
            self.answered_correctly = True
        gain = self.correct_answer_reward if correct else self.incorrect_answer_reward
        return StepOutcome(
            obs=correct_text(answer) if correct else incorrect_text(answer),
            reward_parts=self._parts(gain),
            terminated=correct,
            judgements={"answer_judge": judge_detail, "exact_match": exact},
        )

    def _parts(self, answer: float, *, penalised: bool = True) -> dict[str, float]:
        penalty = self.step_penalty * self.turn if penalised and self.step_penalty else 0.0
        return {"answer": float(answer), "step_penalty": -penalty if penalty else 0.0, "clip": 0.0}

    # ------------------------------------------------------------------ search

    def _make_backend(self) -> SearchBackend:
        if self.search_backend == "notice":
            return NoticeBackend(self.search_notice)
        if self.search_backend == "bm25":
            return BM25Backend(self.corpus_path, self.bm25_k1, self.bm25_b)
        if self.search_backend == "serper":
            return SerperBackend(
                base_url=self.serper_base_url,
                num=self.serper_num,
                max_attempts=self.serper_max_attempts,
                retry_sleep=self.serper_retry_sleep,
                timeout=self.search_timeout,
            )
        assert self._backend_class is not None
        return self._backend_class(dict(self._backend_kwargs))  # type: ignore[no-any-return]

    async def _search(self, query: str) -> str:
        """The backend's rendered result; an exception inside a backend becomes ``Search failed: …``."""
        try:
            if self._backend is None:
                self._backend = self._make_backend()
            result = await self._backend.search(query, self.max_search_results)
            return result.render()
        except Exception as error:  # a backend must not break the episode
            return redact(f"Search failed: {type(error).__name__}: {error}")[:300]

    @property
    def _backend_suspends(self) -> bool:
        """Whether searches may await real I/O (web and third-party backends)."""
        return self.search_backend not in ("notice", "bm25")

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._backend_suspends and self._loop_thread is None:
            self._loop_thread = LoopThread()
        if self._loop_thread is not None:
            return self._loop_thread.run(coro)
        return super()._run(coro)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_backend"] = None  # rebuilt on the next search; the BM25 index is cached per process
        return state

    # ------------------------------------------------------------------ privileged views

    def _hidden(self) -> dict[str, Any]:
        task: SearchTask = self.task  # type: ignore[assignment]
        return {
            "answer": task.answer,
            "aliases": list(task.aliases),
            "support": list(task.support),
            "hops": [hop.model_dump() for hop in task.hops],
            "search_steps": self.search_steps,
        }

    def oracle_action(self) -> str:
        """Search each hop's question in turn (while searches remain), then answer the gold answer."""
        task: SearchTask = self.task  # type: ignore[assignment]
        if self.search_steps < min(len(task.hops), self.max_search_steps):
            return f"[search] {task.hops[self.search_steps].question}"
        return f"[answer] {task.answer}"

    def secret_texts(self) -> list[str]:
        """Support passage ids: search results show titles and texts, never ids."""
        return list(self.task.support) if self.task is not None else []
