"""``ConversationEnv``: the contract every mimesis_gym environment implements (docs/env-contract.md).

The base class owns everything that is the same in every env: the text spaces, option checking,
task selection, the action grammar, turn counting, the reward profile's reward line, the public
transcript, the fixed ``info`` keys, privileged information, the running episode score, role-call
bookkeeping and the sync/async bridge. A subclass writes only the state machine of one episode:
``_begin`` (the opening observation) and ``_handle`` (one parsed action → :class:`StepOutcome`).
"""

from __future__ import annotations

import inspect
import logging
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import gymnasium as gym
from gymnasium.error import ResetNeeded

from mimesis_gym.behaviors.detect import Exchange
from mimesis_gym.behaviors.play import NO_USER, EnvBehaviors, EpisodeBehavior
from mimesis_gym.behaviors.spec import BehaviorMix
from mimesis_gym.core.actions import (
    MalformedAction,
    ParsedAction,
    UserRLReading,
    cap_action,
    interact_with_env_tool,
    parse_action,
)
from mimesis_gym.core.asyncbridge import LoopThread, run_without_loop
from mimesis_gym.core.chat import ThoughtRecord
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.roles import RoleModels, RoleSession, resolve_roles
from mimesis_gym.core.scoring import EpisodeScorer, SumOfRewards, make_scorer
from mimesis_gym.core.spaces import UnicodeText
from mimesis_gym.core.tasks import HasId, TaskPack
from mimesis_gym.core.text import clean_text
from mimesis_gym.core.upstream import UserRLUpstream

__all__ = ["INFO_KEYS", "REWARD_PROFILES", "ConversationEnv", "StepOutcome", "clipped_parts", "gain_parts"]

logger = logging.getLogger(__name__)

INFO_KEYS: tuple[str, ...] = (
    "task_id",
    "turn",
    "action_kind",
    "valid_action",
    "reward_parts",
    "user_failure",
    "episode_score",
    "privileged",
    "agent_text_truncated",
    "user_behavior",
)
"""The fixed ``info`` key set of every ``reset`` and ``step``."""

REWARD_PROFILES = ("eval", "train")
PROMPT_SETS = ("native", "userrl")

TaskT = TypeVar("TaskT", bound=HasId)
T = TypeVar("T")


@dataclass(slots=True)
class StepOutcome:
    """What an env's ``_handle`` decided for one step.

    ``reward_parts`` lists every named component; their float values sum to the reward.
    ``user_thought``/``user_utterance`` describe the counterpart reply the observation carries
    (privileged); ``judgements`` are parsed role outputs or scripted decisions (privileged).
    """

    obs: str
    reward_parts: dict[str, float]
    terminated: bool = False
    valid: bool = True
    user_thought: str | None = None
    user_utterance: str | None = None
    judgements: dict[str, Any] | None = None


def clipped_parts(parts: dict[str, float], low: float = 0.0, high: float = 1.0) -> dict[str, float]:
    """``parts`` plus ``clip``: the adjustment that clipping their sum to ``[low, high]`` made."""
    raw = 0.0
    for value in parts.values():
        raw += value
    clipped = min(high, max(low, raw))
    return {**parts, "clip": clipped - raw if clipped != raw else 0.0}


def gain_parts(name: str, gain: float, *, scale: float, step_penalty: float, turn: int) -> dict[str, float]:
    """Parts of ``clip01(gain × scale − step_penalty × turn)``: ``{name, "step_penalty", "clip"}``."""
    return clipped_parts({name: gain * scale, "step_penalty": -(step_penalty * turn) if step_penalty else 0.0})


class ConversationEnv(gym.Env[str, str], Generic[TaskT]):
    """Base class of the conversation envs: text in, text out, one task per episode.

    Subclasses set the class attributes below and implement ``load_task_pack``,
    ``_begin`` and ``_handle``; they may override ``_system_prompt``, ``_select_task``, ``_hidden``,
    ``_malformed_outcome``, ``score_context`` and ``oracle_action``.

    ``__init__`` resolves ``user=``/``judge=`` (aliases or chat-model objects) into
    ``self.role_models`` (``user``, ``judge``: ``None`` means scripted), so a mistyped alias fails at
    construction in every env; a subclass builds its roles from ``self.role_models``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 1}

    env_name: ClassVar[str] = ""
    """Short name (``travel``, ``function``, …): the env's key in the env table and in records."""
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = None
    """The fair baseline's strategy (``scripted:baseline``): a pure function of the public dialogue
    (:class:`~mimesis_gym.agents.baseline.dialogue.Dialogue`) to the next action, wrapped in
    ``staticmethod``; ``None``: the baseline plays ``scripted:noop``'s generic move. Every shipped env
    declares one (``envs/<env>/baseline.py``)."""
    upstream: ClassVar[UserRLUpstream | None] = None
    """What the env reads from a UserRL checkout with ``pack="upstream"`` (``mimesis-gym data check``)."""
    scoring: ClassVar[str] = "sum"
    """The episode-score rule of :mod:`mimesis_gym.core.scoring` (TravelGym: ``per_aspect_best``)."""
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "answer", "search", "finish"})
    tolerated_kinds: ClassVar[Mapping[str, str]] = {}
    reward_part_names: ClassVar[tuple[str, ...]] = ()
    role_names: ClassVar[tuple[str, ...]] = ()
    has_judge: ClassVar[bool] = True
    """Whether a role is a judge; ``False`` (TauGym): ``judge=`` is accepted and ignored."""
    packs: ClassVar[tuple[str, ...]] = ("original", "upstream")
    reset_option_keys: ClassVar[frozenset[str]] = frozenset({"task_id", "split", "episode_id"})
    paper_kwargs: ClassVar[Mapping[str, Any]] = {}
    """Kwargs of the paper's runs (``eval --paper``) where the env's defaults differ from them (e.g.
    UserRL's reading of the agent's text); ``{}``: the defaults are the paper's."""
    uncoached_in_release: ClassVar[bool] = False
    """Whether the MIMESIS release's CSD coach leaves this env out (the ``mimesis-release`` training
    preset's ``csd.skip_envs``: TauGym and FunctionGym)."""
    draws_llm_seed_base: ClassVar[bool] = True
    """Whether ``reset`` draws ``llm_seed_base`` from ``np_random`` right after the task index."""
    max_episode_score: ClassVar[float] = 1.0
    """The score the privileged oracle reaches on every demo task (contract suite)."""
    tool_description: ClassVar[str] = "Interact with the environment."
    default_system_prompt: ClassVar[str] = ""
    """The policy's system prompt for tasks that carry none of their own (upstream tasks do)."""
    user_behaviors: ClassVar[EnvBehaviors] = NO_USER
    """How this env's user plays the behaviours of ``user_behavior=`` (docs/behaviors.md); none by default."""

    def __init__(
        self,
        *,
        user: Any = "scripted",
        judge: Any = None,
        user_kwargs: Mapping[str, Any] | None = None,
        privileged: bool = False,
        reward_profile: str = "eval",
        pack: str = "original",
        data_dir: str | None = None,
        split: str = "test",
        render_mode: str | None = None,
        lenient_parsing: bool = False,
        prompt_set: str = "native",
        role_max_tokens: int | None = None,
        user_behavior: Any = None,
    ) -> None:
        if reward_profile not in REWARD_PROFILES:
            raise ValueError(f"reward_profile must be one of {', '.join(REWARD_PROFILES)}; got {reward_profile!r}")
        if pack not in self.packs:
            raise ValueError(f"pack must be one of {', '.join(self.packs)}; got {pack!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi'; got {render_mode!r}")
        if prompt_set not in PROMPT_SETS:
            raise ValueError(f"prompt_set must be one of {', '.join(PROMPT_SETS)}; got {prompt_set!r}")
        if role_max_tokens is not None and role_max_tokens < 1:
            raise ValueError(f"role_max_tokens must be a positive int or None; got {role_max_tokens!r}")
        self.user = user
        self.judge = judge
        self.user_kwargs = dict(user_kwargs or {})
        self.privileged = bool(privileged)
        self.reward_profile = reward_profile
        self.pack = pack
        self.data_dir = data_dir
        self.split = split
        self.render_mode = render_mode
        self.lenient_parsing = bool(lenient_parsing)
        self.prompt_set = prompt_set
        self.role_max_tokens = role_max_tokens
        self.user_behavior = BehaviorMix.parse(user_behavior)
        self.user_behavior.check_applicable(
            self.user_behaviors.applicable, self.env_name or type(self).__name__, self.user_behaviors.not_applicable
        )

        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()
        self.role_models: RoleModels = resolve_roles(user, judge if self.has_judge else None, self.user_kwargs)
        self.task_pack: TaskPack[TaskT] = self.task_pack_for(self._pack_kwargs())
        self.tools: list[dict[str, Any]] = [interact_with_env_tool(self.accepted_kinds, self.tool_description)]
        self.action_reading: UserRLReading | None = None
        """UserRL's reading of the agent's text, set by an env's ``action_grammar="userrl"``; ``None``: native."""

        self.task: TaskT | None = None
        self.turn = 0
        self.episode_score = 0.0
        self._scorer: EpisodeScorer = SumOfRewards()
        self._transcript: list[dict[str, str]] = []
        self._opening_messages: list[dict[str, str]] = []
        self._session = RoleSession(episode_id="", llm_seed_base=0, role_max_tokens=role_max_tokens)
        self._needs_reset = True
        self._agent_text_truncated: int | None = None
        self._behavior = EpisodeBehavior("control", self.user_behaviors, {})
        self._loop_thread: LoopThread | None = None
        self._closed = False

    # ------------------------------------------------------------------ subclass hooks

    @classmethod
    def init_kwarg_names(cls) -> frozenset[str]:
        """The keyword arguments the env's constructor accepts (its ``__init__`` and its bases' that it
        forwards ``**kwargs`` to): what ``gym.make(env_id, **kwargs)`` may pass."""
        names: set[str] = set()
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            parameters = inspect.signature(init).parameters.values()
            names |= {p.name for p in parameters if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)} - {"self"}
            if not any(p.kind is p.VAR_KEYWORD for p in parameters):
                break
        return frozenset(names)

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[TaskT]:
        """The task pack ``pack`` (cached per process by the env's loader); no roles are built, so
        planners can list tasks without constructing an env."""
        raise NotImplementedError

    @classmethod
    def task_pack_for(cls, kwargs: Mapping[str, Any]) -> TaskPack[TaskT]:
        """The pack an env made with ``kwargs`` reads, so planners list exactly its tasks without building
        roles: ``load_task_pack(pack, data_dir)``. An env whose other kwargs change its tasks overrides it."""
        return cls.load_task_pack(kwargs.get("pack", "original"), kwargs.get("data_dir"))

    @classmethod
    def episode_turn_limit(cls, kwargs: Mapping[str, Any]) -> int | None:
        """The most turns an episode of an env made with ``kwargs`` lasts before the env ends it itself,
        read without building roles (planners such as ``train --dry-run`` report it); ``None`` (the
        default): only ``max_episode_steps`` and the caller's turn cap end an episode. An env with a turn
        budget of its own overrides it; it may raise ``OSError``/``ValueError`` when its data are missing."""
        return None

    def _pack_kwargs(self) -> dict[str, Any]:
        """The kwargs :meth:`task_pack_for` reads to load this env's pack in ``__init__``: ``pack`` and
        ``data_dir``; an env whose other kwargs change its tasks adds them (set before
        ``super().__init__``), so the pack is loaded once, as the planner loads it."""
        return {"pack": self.pack, "data_dir": self.data_dir}

    def _system_prompt(self, task: TaskT) -> str:
        own = getattr(task, "system_prompt", None)
        return own if own is not None else self.default_system_prompt

    async def _begin(self, task: TaskT) -> str:
        """Start an episode on ``task``; return the agent's opening observation."""
        raise NotImplementedError

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        """Handle one well-formed action; ``self.turn`` already counts this step."""
        raise NotImplementedError

    def _select_task(self, task_id: str | None, split: str) -> TaskT:
        return self.task_pack.select(self.np_random, task_id, split)

    def _hidden(self) -> dict[str, Any]:
        """The task's hidden data and episode state for ``info["privileged"]["hidden"]``."""
        return {}

    def _malformed_outcome(self, malformed: MalformedAction) -> StepOutcome:
        """A step spent on input outside the grammar: reward 0, the grammar message."""
        return StepOutcome(obs=malformed.message, reward_parts=dict.fromkeys(self.reward_part_names, 0.0), valid=False)

    def disclosure_items(self) -> list[DisclosureItem]:
        """The current task's hidden items its user may disclose (docs/users-report.md, "Disclosure").

        Empty when the env gives its user no private data to reveal (the default) or before the
        first reset. Read by the users report; never shown to the agent."""
        return []

    def task_max_score(self) -> float:
        """The best episode score reachable on the current task (the oracle reaches it)."""
        return self.max_episode_score

    def score_context(self) -> dict[str, Any]:
        """What re-scoring an episode needs beyond its steps (docs/evaluation.md, "Work units and records")."""
        return {}

    def oracle_action(self) -> str | dict[str, Any] | None:
        """The privileged oracle's next action, or ``None`` when the task lacks the data."""
        return None

    def secret_texts(self) -> list[str]:
        """Hidden task strings that must never appear in an observation (contract suite)."""
        return []

    # ------------------------------------------------------------------ public attributes

    @property
    def system_prompt(self) -> str:
        self._require_task()
        return self._system_prompt(self.task)  # type: ignore[arg-type]

    @property
    def opening_messages(self) -> list[dict[str, str]]:
        return [dict(message) for message in self._opening_messages]

    @property
    def transcript(self) -> list[dict[str, str]]:
        return [dict(message) for message in self._transcript]

    @property
    def user_exchanges(self) -> tuple[Exchange, ...]:
        """The episode's turns as the behaviour checks read them: the agent's action and the user's own
        reply (``None`` where the step did not reach the user); kept under every condition."""
        return tuple(self._behavior.exchanges)

    def user_behavior_facts(self) -> dict[str, Any]:
        """The current task's facts for the behaviours (docs/behaviors.md), whatever the condition; the
        control condition's episodes are checked against them too."""
        self._require_task()
        return self.user_behaviors.episode_facts(self)

    @property
    def thought_records(self) -> list[ThoughtRecord]:
        return list(self._session.thought_records)

    # ------------------------------------------------------------------ reset / step

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        return self._run(self.areset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        return self._run(self.astep(action))

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Native async ``reset``."""
        super().reset(seed=seed)
        task_id, split, episode_id = self._check_options(options)
        task = self._select_task(task_id, split)
        self.task = task
        self.turn = 0
        self.episode_score = 0.0
        self._agent_text_truncated = None
        self._scorer = make_scorer(self.scoring, self.score_context())
        self._session = RoleSession(
            episode_id=episode_id or uuid.uuid4().hex,
            llm_seed_base=int(self.np_random.integers(0, 2**31 - 1)) if self.draws_llm_seed_base else 0,
            role_max_tokens=self.role_max_tokens,
        )
        self._start_behavior()
        obs = clean_text(await self._begin(task))
        self._behavior.end_step(obs if self.user_behaviors.opening_by_user else None)
        self._opening_messages = [{"role": "user", "content": obs}]
        self._transcript = self.opening_messages
        self._needs_reset = False
        info = self._info(None, True, dict.fromkeys(self.reward_part_names, 0.0), None)
        return obs, info

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Native async ``step``. Malformed input costs the turn, never raises.

        Text that cannot be encoded (a lone surrogate) becomes U+FFFD in the action on the way in
        and in the observation on the way out, so observations and the transcript always encode;
        the action is read through :meth:`_agent_input` (at most ``AGENT_TEXT_MAX_BYTES``).
        """
        if self._needs_reset:
            raise ResetNeeded("call reset() before step(): the episode has not started or has terminated")
        self.turn += 1
        self._session.begin_step(self.turn)
        parsed = parse_action(self._agent_input(action), self.accepted_kinds, self.tolerated_kinds, self.action_reading)
        if isinstance(parsed, ParsedAction):
            self._behavior.begin_step(self.turn, parsed.kind, parsed.content)
            outcome = await self._handle(parsed)
            self._behavior.end_step(outcome.user_utterance)
            kind, content, written = parsed.kind, parsed.content, parsed.canonical
        else:
            outcome = self._malformed_outcome(parsed)
            kind, content, written = "invalid", "", parsed.transcript_text
        reward = 0.0
        for value in outcome.reward_parts.values():
            if isinstance(value, float):
                reward += value
        obs = clean_text(outcome.obs)
        if self.reward_profile == "train":
            obs = f"{obs}\nReward: {reward}"
        self.episode_score = self._scorer.add(kind, content, reward)
        self._transcript.append({"role": "assistant", "content": written})
        self._transcript.append({"role": "user", "content": obs})
        if outcome.terminated:
            self._needs_reset = True
        info = self._info(kind, outcome.valid, outcome.reward_parts, outcome)
        return obs, reward, outcome.terminated, False, info

    # ------------------------------------------------------------------ rendering, closing

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        lines = [f"{message['role']}: {message['content']}" for message in self._transcript]
        lines.append(f"[turn {self.turn}, score {self.episode_score}]")
        return "\n\n".join(lines)

    def close(self) -> None:
        """Release the env's event loop and the chat models it created; idempotent."""
        if self._closed:
            return
        self._closed = True
        owned = self.role_models.owned
        if owned:

            async def close_models() -> None:
                for model in owned:
                    aclose = getattr(model, "aclose", None)
                    if aclose is not None:
                        await aclose()

            try:
                self._run(close_models())
            except Exception:  # closing must not raise; a broken model is logged
                logger.warning("closing a chat model failed", exc_info=True)
        if self._loop_thread is not None:
            self._loop_thread.close()
            self._loop_thread = None

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_loop_thread"] = None
        return state

    # ------------------------------------------------------------------ internals

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if not self.role_models.chat_models:
            return run_without_loop(coro)
        if self._loop_thread is None:
            self._loop_thread = LoopThread()
        return self._loop_thread.run(coro)

    def _agent_input(self, action: Any) -> Any:
        """The agent's action as the env reads it (:func:`cap_action`): every string cleaned, the turn cut
        to :data:`~mimesis_gym.core.text.AGENT_TEXT_MAX_BYTES`; the size before a cut goes to this
        step's ``info["agent_text_truncated"]``. Every ``astep`` reads its action here."""
        capped, self._agent_text_truncated = cap_action(action)
        return capped

    def _start_behavior(self) -> None:
        """Draw the episode's condition (nothing is drawn for a single one) and give a behaviour its
        facts; only an active behaviour is put on the role session, so control runs as without the knob."""
        condition = self.user_behavior.draw(self.np_random)
        active = condition != "control"
        facts = self.user_behaviors.episode_facts(self) if active else {}
        self._behavior = EpisodeBehavior(condition, self.user_behaviors, facts)
        self._behavior.begin_step(0, "", "")
        self._session.behavior = self._behavior if active else None

    def _require_task(self) -> None:
        if self.task is None:
            raise ResetNeeded("call reset() first: the attribute depends on the task")

    def _check_options(self, options: Mapping[str, Any] | None) -> tuple[str | None, str, str | None]:
        """``(task_id, split, episode_id)`` from the reset options; a bad type or key raises at once."""
        if options is None:
            options = {}
        elif not isinstance(options, Mapping):
            raise TypeError(
                f"reset options must be a mapping (e.g. {{'task_id': ...}}) or None; got {type(options).__name__}"
            )
        unknown = set(options) - self.reset_option_keys
        if unknown:
            raise ValueError(f"unknown reset option(s) {sorted(unknown)}; accepted: {sorted(self.reset_option_keys)}")
        task_id = options.get("task_id")
        split = options.get("split", self.split)
        episode_id = options.get("episode_id")
        for name, value in (("task_id", task_id), ("split", split), ("episode_id", episode_id)):
            if value is not None and not isinstance(value, str):
                raise ValueError(f"reset option {name!r} must be a string; got {type(value).__name__}")
        return task_id, split, episode_id

    def _info(
        self,
        action_kind: str | None,
        valid: bool,
        reward_parts: dict[str, Any],
        outcome: StepOutcome | None,
    ) -> dict[str, Any]:
        privileged: dict[str, Any] = {}
        if self.privileged:
            privileged = {
                "thoughts": {role: dict(entry) for role, entry in self._session.step_thoughts.items()},
                "user_thought": outcome.user_thought if outcome else None,
                "user_utterance": outcome.user_utterance if outcome else None,
                "judgements": dict(outcome.judgements or {}) if outcome else {},
                "hidden": self._hidden(),
            }
        return {
            "task_id": self.task.id,  # type: ignore[union-attr]
            "turn": self.turn,
            "action_kind": action_kind,
            "valid_action": valid,
            "reward_parts": dict(reward_parts),
            "user_failure": self._session.user_failure(),
            "episode_score": self.episode_score,
            "privileged": privileged,
            "agent_text_truncated": self._agent_text_truncated,
            "user_behavior": self._behavior.info(),
        }
