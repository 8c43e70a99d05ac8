"""ABCDBehavior: the policy is a simulated customer who must enact a realistic behavior (docs/envs/abcd.md)."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gymnasium.error import ResetNeeded

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.core.conventions import split_thought
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.roles import Role
from mimesis_gym.envs.abcd import baseline
from mimesis_gym.envs.abcd.behaviors import Behavior, behavior, render_directive
from mimesis_gym.envs.abcd.customers import ScriptedCustomer
from mimesis_gym.envs.abcd.disclosure import abcd_disclosure_items
from mimesis_gym.envs.abcd.judge_rules import Conversation, JudgeFacts, Turn, score_behavior
from mimesis_gym.envs.abcd.policy import StoreCatalog
from mimesis_gym.envs.abcd.prompts import CONNECT_MESSAGE, UNAVAILABLE_MESSAGE, customer_prompt, support_agent_prompt
from mimesis_gym.envs.abcd.roles import (
    LLMBehaviorJudge,
    LLMControlJudge,
    LLMSupportAgent,
    ScriptedJudge,
    ScriptedSupportAgent,
)
from mimesis_gym.envs.abcd.scenarios import (
    customer_facts,
    customer_name,
    flat,
    prefix_lines,
    product_words,
    required_fields,
    sidecar,
)
from mimesis_gym.envs.abcd.selection import parse_behaviors, restrict_pack
from mimesis_gym.envs.abcd.support import AgentState, SupportContext
from mimesis_gym.envs.abcd.tasks import AbcdRow, AbcdTaskPack, load_original_pack, load_upstream_pack

__all__ = [
    "BEHAVIOR_PARTS",
    "CONTROL_PARTS",
    "ABCDBehaviorEnv",
    "behavior_reward",
    "control_reward",
    "judge_facts",
    "parse_customer_action",
]

PREFIX_MODES = ("messages", "inline", "none")
FACT_MODES = ("abcd", "extended")
MIN_THOUGHT_WORDS = 4
GRAMMAR = (
    "Write your next chat message as plain text (an [action] tag in front is allowed), or [finish] to leave "
    "the chat; nothing was sent to the agent."
)
FINISH_MESSAGE = "(You left the chat.)"
EMPTY_MESSAGE = "(Your message was empty, so the chat has ended.)"
_TAG = re.compile(r"^\[([^\[\]\s]+)\]")

BEHAVIOR_PARTS = (
    "exhibit",
    "placement",
    "naturalness",
    "on_task",
    "announced",
    "judge_failed",
    "format_ok",
    "rule",
    "rule_judge_gap",
    "n_sim_turns",
    "agent_failures",
    "ended_invalid",
    "weighting",
)
CONTROL_PARTS = (
    "cooperative",
    "naturalness",
    "on_task",
    "judge_failed",
    "format_ok",
    "n_sim_turns",
    "agent_failures",
    "ended_invalid",
    "weighting",
)


def _clamp01(value: float) -> float:
    return min(1.0, max(0.0, float(value)))


def behavior_reward(exhibit: float, placement: float, naturalness: float, on_task: float, announced: bool) -> float:
    """``R = clamp01((2·exhibit + 1.5·placement + naturalness + 0.5·on_task) / 5)``, halved if announced."""
    e, p, n, c = (_clamp01(x) for x in (exhibit, placement, naturalness, on_task))
    reward = _clamp01((2.0 * e + 1.5 * p + n + 0.5 * c) / 5.0)
    return reward / 2.0 if announced else reward


def control_reward(cooperative: float, naturalness: float, on_task: float) -> float:
    """``R = clamp01((2·cooperative + naturalness + 0.5·on_task) / 3.5)``."""
    k, n, c = (_clamp01(x) for x in (cooperative, naturalness, on_task))
    return _clamp01((2.0 * k + n + 0.5 * c) / 3.5)


def judge_facts(row: AbcdRow, catalog: StoreCatalog) -> JudgeFacts:
    """What the scripted judge (and the logged rule signal) knows of ``row``."""
    scenario = row.scenario
    side = sidecar(scenario)
    entry = None if row.is_control else behavior(row.condition)
    return JudgeFacts(
        condition=row.condition,
        behavior_name=entry.name if entry else None,
        kwargs=row.kwargs,
        min_turn=entry.min_turn if entry else 1,
        field_values=dict(flat(scenario)),
        flat_values=tuple(value for _, value in flat(scenario)),
        sidecar_values=tuple(str(side[key]) for key in side if key != "oracle"),
        required=tuple(required_fields(catalog.kb_sequence(row.subflow), scenario)),
        title=catalog.title(row.subflow),
        product_words=tuple(product_words(scenario)),
        customer_name=customer_name(scenario),
    )


@dataclass(frozen=True)
class _Action:
    """One parsed customer action: kind (``action``/``finish``/``invalid``), raw text, thought, utterance."""

    kind: str
    raw: str
    thought: str | None
    utterance: str
    reason: str = ""


def parse_customer_action(action: Any) -> _Action:
    """Split the think block off and read the action (docs/envs/abcd.md, "Actions and feedback"); never raises."""
    if isinstance(action, Mapping):
        return _tool_call(action)
    if not isinstance(action, str):
        return _Action("invalid", str(action), None, "", f"an action must be text, not {type(action).__name__}")
    utterance, thought = split_thought(action)
    if utterance.startswith("{"):
        try:
            call = json.loads(utterance)
        except (ValueError, RecursionError):
            call = None
        if isinstance(call, dict):
            parsed = _tool_call(call)
            return _Action(parsed.kind, action, thought or parsed.thought, parsed.utterance, parsed.reason)
    tag = _TAG.match(utterance)
    if tag is not None:
        name = tag.group(1)
        rest = utterance[tag.end() :].strip()
        if name == "action":
            return _Action("action", action, thought, rest)
        if name == "finish":
            return _Action("finish", action, thought, "")
        reason = (
            f"tags are lower case: write [{name.lower()}]"
            if name.lower() in ("action", "finish")
            else (f"[{name}] is not accepted here")
        )
        return _Action("invalid", action, thought, "", reason)
    return _Action("action", action, thought, utterance)


def _tool_call(call: Mapping[str, Any]) -> _Action:
    choice = call.get("choice")
    raw = json.dumps(call, ensure_ascii=False, default=str)
    if choice == "finish":
        return _Action("finish", raw, None, "")
    if choice != "action":
        shown = "missing" if choice is None else repr(choice)
        return _Action("invalid", raw, None, "", f"the tool call's choice is {shown}; use action or finish")
    content = call.get("content")
    if content is None:
        return _Action("invalid", raw, None, "", "the tool call has no content")
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    utterance, thought = split_thought(text)
    return _Action("action", text, thought, utterance)


class ABCDBehaviorEnv(ConversationEnv[AbcdRow]):
    """
    ## Description

    The roles turn around: the policy is the simulated **customer** of an online clothing store, the
    counterpart is a frozen **support agent**, and a **judge** scores whether the customer enacted the
    row's assigned realistic behavior (13 behaviors, B1–B13) — or, on control rows (a third), behaved
    like an ordinary cooperative customer. Guide: docs/envs/abcd.md; scenarios in ABCD's schema.

    ## Action Space

    The customer's raw completion: plain text (an ``[action]`` tag is stripped; a
    ``{"choice": "action", "content": …}`` tool call works too), its ``<think>…</think>`` part split
    off and kept private. ``[finish]`` leaves the chat. Any other ``[tag]`` is invalid (the turn is
    spent, nothing is sent). ``env.tools == []``.

    ## Observation Space

    ``"Agent: <reply>"``; the first observation is the connect message (plus, with
    ``prefix_mode="inline"``, the replayed identity check).

    ## Roles

    | role | scripted | LLM |
    |---|---|---|
    | ``support_agent`` | state machine over the subflow's kb actions and rules | chat model with the procedure |
    | ``judge`` | deterministic rule checks (partly approximate) | behavior judge / control judge JSON |

    ## Rewards

    Given once, on the terminating step: behavior rows
    ``R = clamp01((2·exhibit + 1.5·placement + naturalness + 0.5·on_task)/5)``, halved when the
    behavior was announced; control rows ``R = (2·cooperative + naturalness + 0.5·on_task)/3.5``. Judge
    failure, zero generated turns, a tripped think gate (``reward_profile="train"``) or an invalid
    last step → 0. The same in both profiles (no reward line is appended).

    ## Starting State

    A row of ``split`` drawn with ``np_random`` (or ``options["task_id"]``); then ``llm_seed_base``.

    ## Episode End

    1. Termination: after ``turn_budget`` customer turns (default the row's 8), ``[finish]``, an empty
       message, or a failed support agent.
    2. Truncation: ``max_episode_steps`` (16), a safety net.

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``support_agent`` | str or chat model | ``"scripted"`` | the counterpart (``user=`` is an alias) |
    | ``judge`` | str or chat model | ``None`` | ``None``: the support agent's model (scripted ↔ scripted) |
    | ``pack`` | str | ``"original"`` | ``"original"`` or ``"upstream"`` (real ABCD directory) |
    | ``split`` | str | ``"test"`` | ``train``/``test``; original ``test_v1``/``demo``; upstream ``dev``/``sample`` |
    | ``reward_profile`` | str | ``"eval"`` | ``"train"`` turns on the think-format gate |
    | ``require_think`` | bool | ``None`` | override of the gate |
    | ``turn_budget`` | int | ``None`` | customer turns per episode (1–16); ``None``: the row's |
    | ``prefix_mode`` | str | ``"messages"`` | identity-check delivery: ``messages``, ``inline``, ``none`` |
    | ``facts`` | str | ``None`` | ``"abcd"`` or ``"extended"`` customer facts |
    | ``conditions`` | str | ``"sampled"`` | upstream: one row per conversation, or ``"all"`` |
    | ``row_seed`` | int | 0 | upstream: seed of row building |
    | ``behaviors`` | list of str | ``None`` | keep only these conditions' rows (``["B7", "B12"]``, ``control``) |
    | ``agent_temperature`` | float | 1.0 | temperature of the LLM support agent |

    >>> import gymnasium as gym, mimesis_gym
    >>> env = gym.make("mimesis/ABCDBehavior-v0", split="demo")  # doctest: +SKIP

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "abcd"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ()
    role_names: ClassVar[tuple[str, ...]] = ("support_agent", "judge")
    user_behaviors: ClassVar[EnvBehaviors] = EnvBehaviors(
        user_role=None,
        not_applicable=dict.fromkeys(
            BEHAVIOR_IDS,
            "the customer is the policy under training here, "
            "and its behaviour is the task row's own condition (docs/envs/abcd.md)",
        ),
    )
    tool_description: ClassVar[str] = "Send a chat message to store support."

    def __init__(
        self,
        *,
        support_agent: Any = None,
        user: Any = None,
        judge: Any = None,
        user_kwargs: Mapping[str, Any] | None = None,
        pack: str = "original",
        data_dir: str | None = None,
        split: str = "test",
        reward_profile: str = "eval",
        require_think: bool | None = None,
        turn_budget: int | None = None,
        prefix_mode: str = "messages",
        facts: str | None = None,
        conditions: str = "sampled",
        row_seed: int = 0,
        agent_temperature: float = 1.0,
        behaviors: str | Sequence[str] | None = None,
        **common: Any,
    ) -> None:
        if support_agent is not None and user is not None:
            raise ValueError("pass the counterpart as support_agent= or as its alias user=, not both")
        counterpart = support_agent if support_agent is not None else (user if user is not None else "scripted")
        if prefix_mode not in PREFIX_MODES:
            raise ValueError(f"prefix_mode must be one of {', '.join(PREFIX_MODES)}; got {prefix_mode!r}")
        if facts is not None and facts not in FACT_MODES:
            raise ValueError(f"facts must be one of {', '.join(FACT_MODES)} or None; got {facts!r}")
        if conditions not in ("sampled", "all"):
            raise ValueError(f"conditions must be 'sampled' or 'all'; got {conditions!r}")
        if turn_budget is not None and not (isinstance(turn_budget, int) and 1 <= turn_budget <= 16):
            raise ValueError(f"turn_budget must be an int from 1 to 16 or None; got {turn_budget!r}")
        self.behaviors = None if behaviors is None else parse_behaviors(behaviors)
        self.conditions = conditions
        self.row_seed = int(row_seed)
        super().__init__(
            user=counterpart,
            judge=judge,
            user_kwargs=user_kwargs,
            pack=pack,
            data_dir=data_dir,
            split=split,
            reward_profile=reward_profile,
            **common,
        )
        self.support_agent = counterpart
        self.require_think = (reward_profile == "train") if require_think is None else bool(require_think)
        self.turn_budget = turn_budget
        self.prefix_mode = prefix_mode
        self.facts = facts or ("extended" if pack == "original" else "abcd")
        self.agent_temperature = float(agent_temperature)
        self.tools = []
        agent_model, judge_model = self.role_models.user, self.role_models.judge
        self.support_role: Role[Any] = (
            ScriptedSupportAgent()
            if agent_model is None
            else LLMSupportAgent(agent_model, temperature=self.agent_temperature)
        )
        self.behavior_judge: Role[Any] = ScriptedJudge() if judge_model is None else LLMBehaviorJudge(judge_model)
        self.control_judge: Role[Any] = ScriptedJudge() if judge_model is None else LLMControlJudge(judge_model)
        self.row: AbcdRow | None = None
        self._reset_episode_state()

    def _reset_episode_state(self) -> None:
        self._prefix: list[tuple[str, str]] = []
        self._turns: list[Turn] = []
        self._budget = 0
        self._format_ok = True
        self._agent_failures = 0
        self._directive: str | None = None
        self._context: SupportContext | None = None
        self._agent_state: AgentState | None = None
        self._agent_system = ""
        self._final_reward = 0.0

    # ------------------------------------------------------------------ packs

    def _pack_kwargs(self) -> dict[str, Any]:
        return {
            **super()._pack_kwargs(),
            "conditions": self.conditions,
            "row_seed": self.row_seed,
            "behaviors": self.behaviors,
        }

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> AbcdTaskPack:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    @classmethod
    def task_pack_for(cls, kwargs: Mapping[str, Any]) -> AbcdTaskPack:
        """The rows an env made with ``kwargs`` plays: upstream ``conditions``/``row_seed`` build their own
        rows, and ``behaviors`` keeps only the rows of those conditions (:mod:`.selection`)."""
        pack, data_dir = kwargs.get("pack", "original"), kwargs.get("data_dir")
        conditions, row_seed = kwargs.get("conditions", "sampled"), int(kwargs.get("row_seed", 0))
        if pack == "upstream" and (conditions, row_seed) != ("sampled", 0):
            task_pack = load_upstream_pack(data_dir, conditions, row_seed)
        else:
            task_pack = cls.load_task_pack(pack, data_dir)
        behaviors = kwargs.get("behaviors")
        return task_pack if behaviors is None else restrict_pack(task_pack, parse_behaviors(behaviors))

    @classmethod
    def episode_turn_limit(cls, kwargs: Mapping[str, Any]) -> int | None:
        """Customer turns: ``turn_budget`` when given, else the largest budget among the rows an env made
        with ``kwargs`` plays (8 on every shipped row)."""
        if kwargs.get("turn_budget") is not None:
            return int(kwargs["turn_budget"])
        pack = cls.task_pack_for(kwargs)
        return max((row.turn_budget for rows in pack.splits.values() for row in rows), default=None)

    @property
    def catalog(self) -> StoreCatalog:
        """The store policy of the loaded pack."""
        return self.task_pack.catalog  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ episode start

    def _system_prompt(self, task: AbcdRow) -> str:
        scenario = task.scenario
        return customer_prompt(
            customer_name(scenario),
            customer_facts(scenario, self.facts),
            self.catalog.goal(task.subflow),
            self._directive if task is self.row else self._directive_of(task),
        )

    @staticmethod
    def _directive_of(row: AbcdRow) -> str | None:
        return None if row.is_control else render_directive(row.condition, row.kwargs)

    async def _begin(self, task: AbcdRow) -> str:
        self._reset_episode_state()
        self.row = task
        catalog = self.catalog
        kb = catalog.kb_sequence(task.subflow)
        self._budget = self.turn_budget or task.turn_budget
        self._directive = self._directive_of(task)
        if self.prefix_mode != "none":
            self._prefix = prefix_lines(catalog.title(task.subflow), kb, task.scenario)
        self._context = SupportContext.build(task.scenario, catalog, with_prefix=bool(self._prefix))
        self._agent_state = AgentState.start(self._context)
        side = sidecar(task.scenario)
        system_info = None
        if catalog.system_info:
            system_info = {
                "today's date": side.get("today", ""),
                "result of the system check (oracle)": side.get("oracle", ""),
            }
        self._agent_system = support_agent_prompt(catalog.procedure(task.subflow), system_info)
        if self.prefix_mode == "inline" and self._prefix:
            lines = "\n".join(f"{'You' if who == 'customer' else 'Agent'}: {text}" for who, text in self._prefix)
            return f"{CONNECT_MESSAGE}\n\n{lines}"
        return CONNECT_MESSAGE

    async def areset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        obs, info = await super().areset(seed=seed, options=options)
        opening = [{"role": "user", "content": obs}]
        if self.prefix_mode == "messages":
            for who, text in self._prefix:
                opening.append(
                    {"role": "assistant", "content": text}
                    if who == "customer"
                    else {"role": "user", "content": f"Agent: {text}"}
                )
        self._opening_messages = opening
        self._transcript = [
            {"role": "user" if who == "customer" else "assistant", "content": text} for who, text in self._prefix
        ]
        return obs, info

    # ------------------------------------------------------------------ steps

    async def astep(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """One customer turn. Malformed input costs the turn, never raises."""
        if self._needs_reset:
            raise ResetNeeded("call reset() before step(): the episode has not started or has terminated")
        self.turn += 1
        self._session.begin_step(self.turn)
        parsed = parse_customer_action(self._agent_input(action))
        self._session.step_thoughts["customer"] = {"reasoning": parsed.thought}
        if self.require_think and not self._well_formed(parsed):
            self._format_ok = False
        self._final_reward = 0.0
        outcome = await self._customer_turn(parsed)
        reward = self._final_reward if outcome.terminated else 0.0
        parts = outcome.reward_parts
        self.episode_score = self._scorer.add(parsed.kind, parsed.utterance, reward)
        if outcome.terminated:
            self._needs_reset = True
        info = self._info(parsed.kind, outcome.valid, parts, outcome)
        return outcome.obs, reward, outcome.terminated, False, info

    def _well_formed(self, parsed: _Action) -> bool:
        """The think-format gate: exactly one ``</think>``, a non-empty utterance and a thought of
        at least 4 whitespace-separated words (the release counted tokens)."""
        if parsed.raw.count("</think>") != 1:
            return False
        if parsed.kind == "action" and not parsed.utterance:
            return False
        return len((parsed.thought or "").split()) >= MIN_THOUGHT_WORDS

    async def _customer_turn(self, parsed: _Action) -> StepOutcome:
        last = self.turn >= self._budget
        if parsed.kind == "invalid":
            obs = f"Invalid action: {parsed.reason}. {GRAMMAR}"
            if last:
                return await self._end(obs, valid=False, ended_invalid=True)
            return StepOutcome(obs=obs, reward_parts={}, valid=False)
        if parsed.kind == "finish":
            return await self._end(FINISH_MESSAGE, valid=True)
        if not parsed.utterance:
            return await self._end(EMPTY_MESSAGE, valid=False)
        self._transcript.append({"role": "user", "content": parsed.utterance})
        reply = await self._agent_reply(parsed.utterance)
        if reply.failed or not reply.value:
            self._agent_failures += 1
            self._turns.append(Turn(parsed.utterance, parsed.thought, None))
            return await self._end(UNAVAILABLE_MESSAGE, valid=True, user_thought=reply.thought)
        text = str(reply.value)
        self._transcript.append({"role": "assistant", "content": text})
        self._turns.append(Turn(parsed.utterance, parsed.thought, text))
        obs = f"Agent: {text}"
        if last:
            return await self._end(obs, valid=True, user_thought=reply.thought, user_utterance=text)
        return StepOutcome(obs=obs, reward_parts={}, user_thought=reply.thought, user_utterance=text)

    async def _agent_reply(self, message: str) -> Any:
        if isinstance(self.support_role, ScriptedSupportAgent):
            return await self.support_role(
                self._session, context=self._context, state=self._agent_state, message=message
            )
        return await self.support_role(self._session, system=self._agent_system, transcript=self.transcript)

    # ------------------------------------------------------------------ judging and reward

    def _judge_facts(self) -> JudgeFacts:
        return judge_facts(self.row, self.catalog)  # type: ignore[arg-type]

    def conversation(self) -> Conversation:
        """The chat so far as the judges read it (prefix and generated turns)."""
        return Conversation(prefix=tuple(self._prefix), turns=tuple(self._turns))

    async def _end(
        self,
        obs: str,
        *,
        valid: bool,
        ended_invalid: bool = False,
        user_thought: str | None = None,
        user_utterance: str | None = None,
    ) -> StepOutcome:
        """Terminate: judge the chat (when a turn was generated) and compute the reward parts."""
        row: AbcdRow = self.row  # type: ignore[assignment]
        common = {
            "judge_failed": 0,
            "format_ok": int(self._format_ok),
            "n_sim_turns": len(self._turns),
            "agent_failures": self._agent_failures,
            "ended_invalid": int(ended_invalid),
        }
        verdict: dict[str, Any] | None = None
        if self._turns:
            convo = self.conversation()
            facts = self._judge_facts()
            entry: Behavior | None = None if row.is_control else behavior(row.condition)
            role = self.control_judge if row.is_control else self.behavior_judge
            goal = self.catalog.goal(row.subflow)
            procedure = self.catalog.procedure(row.subflow)
            result = await role(self._session, facts=facts, convo=convo, entry=entry, goal=goal, procedure=procedure)
            if result.failed:
                common["judge_failed"] = 1
            else:
                verdict = dict(result.value)
        parts = self._control_parts(verdict) if row.is_control else self._behavior_parts(verdict)
        parts.update(common)
        reward = 0.0
        if verdict is not None:
            if row.is_control:
                reward = control_reward(verdict["cooperative"], verdict["naturalness"], verdict["on_task"])
            else:
                reward = behavior_reward(
                    verdict["exhibit"],
                    verdict["placement"],
                    verdict["naturalness"],
                    verdict["on_task"],
                    verdict["announced"],
                )
        if not self._format_ok or ended_invalid:
            reward = 0.0
        listed = sum(value for key, value in parts.items() if isinstance(value, float))
        parts["weighting"] = reward - listed
        self._final_reward = reward
        return StepOutcome(
            obs=obs,
            reward_parts=parts,
            terminated=True,
            valid=valid,
            user_thought=user_thought,
            user_utterance=user_utterance,
            judgements={"judge": verdict},
        )

    def _behavior_parts(self, verdict: dict[str, Any] | None) -> dict[str, Any]:
        parts: dict[str, Any] = dict.fromkeys(("exhibit", "placement", "naturalness", "on_task"), None)
        parts.update(announced=None, rule=None, rule_judge_gap=None)
        if verdict is None:
            return parts
        for key in ("exhibit", "placement", "naturalness", "on_task"):
            parts[key] = float(verdict[key])
        parts["announced"] = int(bool(verdict["announced"]))
        rule = verdict["rule"] if "rule" in verdict else score_behavior(self._judge_facts(), self.conversation()).rule
        if rule is not None:
            parts["rule"] = float(rule)
            parts["rule_judge_gap"] = float(rule) - parts["exhibit"]
        return parts

    def _control_parts(self, verdict: dict[str, Any] | None) -> dict[str, Any]:
        parts: dict[str, Any] = dict.fromkeys(("cooperative", "naturalness", "on_task"), None)
        if verdict is not None:
            for key in parts:
                parts[key] = float(verdict[key])
        return parts

    # ------------------------------------------------------------------ privileged, oracle

    def _hidden(self) -> dict[str, Any]:
        row = self.row
        if row is None:
            return {}
        return copy.deepcopy(
            {"condition": row.condition, "directive": self._directive, "kwargs": row.kwargs, "scenario": row.scenario}
        )

    def score_context(self) -> dict[str, Any]:
        """The row's condition for the evaluation harness's ABCD table: ``{"condition": <behavior name or
        "control">, "behavior_id": <"B1"…"B13" or None>}`` (``{}`` before the first reset)."""
        row = self.row
        if row is None:
            return {}
        return {"condition": row.behavior or "control", "behavior_id": None if row.is_control else row.condition}

    def secret_texts(self) -> list[str]:
        return [self._directive] if self._directive else []

    def disclosure_items(self) -> list[DisclosureItem]:
        """The customer (the policy here) holds the scenario's account and order fields."""
        return abcd_disclosure_items(self.row.scenario) if self.row is not None else []

    def oracle_action(self) -> str | None:
        """The scripted customer's next action for this row (``customers.ScriptedCustomer``)."""
        if self.row is None:
            return None
        return ScriptedCustomer(self.row, self.catalog).next_action(self.conversation())
