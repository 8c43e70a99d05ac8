"""TauGym: customer service with tools over an in-memory store or airline database (tau-bench)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.core.actions import MalformedAction, ParsedAction, interact_with_env_tool
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.roles import Role, RoleResult
from mimesis_gym.core.upstream import UpstreamFile, UserRLUpstream
from mimesis_gym.envs.tau import baseline
from mimesis_gym.envs.tau.behaviors import USER_BEHAVIORS
from mimesis_gym.envs.tau.db import EpisodeDB, canonical_text
from mimesis_gym.envs.tau.disclosure import tau_disclosure_items
from mimesis_gym.envs.tau.roles import STOP, LLMUser, ScriptedUser
from mimesis_gym.envs.tau.tasks import (
    TASK_FILES,
    USERRL_TASK_DIR,
    GoldAction,
    TauPack,
    TauTask,
    UserFacts,
    domain_tools,
    load_original_pack,
    load_upstream_pack,
)
from mimesis_gym.envs.tau.toolkit import TRANSFER_TOOL, Tool, call_tool, tool_list_text

__all__ = ["TauEnv"]

BUSINESS = {"retail": "an online retail store", "airline": "an airline"}

SYSTEM_PROMPT = """\
You are a customer-service agent for {business}. You help a customer by talking with them and by \
using internal tools that read and change the {short}'s records. Understand what the customer \
wants, work out which information each tool needs, and get that information step by step, by \
asking the customer or by calling other tools.

Act only through the tool `interact_with_env`, with `choice` one of:
- `search`: content `tools` lists the internal tools with their arguments; content `help` gives \
advice on how to proceed.
- `action`: content is your message to the customer; you get their reply.
- `answer`: content is one internal tool call as JSON, \
{{"name": <tool name>, "arguments": {{<argument>: <value>, ...}}}}; you get the tool's result.

Notes:
- Before every call of `interact_with_env`, reason inside <think> and </think>, then call it.
- The number of rounds is limited: balance questions to the customer against tool calls."""

OPENING_INSTRUCTION = "Work through it step by step, using the internal tools and talking with the customer."
HELP_TEXT = """\
You have three choices. `[search] tools` lists the internal tools and their arguments. \
`[action] <message>` sends a message to the customer and returns their reply. \
`[answer] <tool call>` runs one internal tool, written as JSON, for example \
{"name": "get_order_details", "arguments": {"order_id": "#W0000000"}}. \
A good way to work: find the tool that achieves the customer's goal, then work back to the \
information its arguments need, and get each piece by asking the customer or by calling a \
look-up tool. Confirm every change with the customer before making it."""
TOOLS_ALREADY_LISTED = "The tool list was already given earlier in this conversation; look back at it."
SEARCH_NOTICE = "Only `[search] tools` and `[search] help` are supported."
TOOL_CALL_EXAMPLE = '{"name": "tool_name", "arguments": {"argument_1": "value_1", "argument_2": "value_2"}}'
INVALID_TOOL_CALL = f"Invalid tool call format. Write one tool call as JSON, for example {TOOL_CALL_EXAMPLE}"
GRAMMAR = (
    "Use one of: [search] tools, [search] help, [action] <message to the customer>, "
    "[answer] <tool call as JSON>, [finish]."
)
FINISHED = "Episode finished."
COMPLETION_MESSAGE = "Your request is complete."
OPENINGS = ("userrl", "recorded", "live")
ADVERTISED_CHOICES = frozenset({"search", "action", "answer"})


class TauEnv(ConversationEnv[TauTask]):
    """
    ## Description

    The agent is a customer-service representative of an online store (tau-bench retail) or an
    airline (tau-bench airline). It talks with a simulated customer and calls tools that read and
    change an in-memory database. Guide: docs/envs/tau.md; upstream: tau-bench, wrapped by UserRL's
    TauGym (the paper's TauGym column). tau-bench is re-implemented, not imported.

    ## Action Space

    ``[search] tools`` / ``[search] help``, ``[action] message to the customer``, ``[answer] tool
    call`` (``{"name": ..., "arguments": {...}}`` or ``name: {...}``; ``respond`` with a ``content``
    is a message to the customer), ``[finish]``.

    ## Observation Space

    The tool list or help, the customer's reply, or the tool's result (record JSON or ``Error: ...``).

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``user`` | user | keyword slots from ``user_facts``; stops at the goal | text; ``###STOP###`` ends |

    ## Rewards

    On the terminating step: 1.0 when the database equals the one produced by the task's gold
    actions and every required output was said, else 0.0; 0.0 on every other step. ``train``
    appends the reward line. ``reward_parts`` (terminating step): ``r_actions``, ``r_outputs``,
    ``outputs``, ``db_hash``, ``gold_hash`` and the float ``reward``; ``{}`` otherwise.

    ## Starting State

    A task of the pack's ``split`` (and ``domain``) drawn with ``np_random``, or ``options["task_id"]``;
    a fresh copy of its domain's database.

    ## Episode End

    1. Termination: the customer's reply contains ``###STOP###``; the agent calls
       ``transfer_to_human_agents``; ``[finish]`` (reward 0 unless ``finish_scores``).
    2. Truncation: ``max_episode_steps`` (16), reward 0.

    ## Arguments

    | parameter | type | default | description |
    |---|---|---|---|
    | ``domain`` | str or None | None | ``retail`` / ``airline`` restricts the random draw |
    | ``show_policy`` | bool | False | append the domain policy to the system prompt |
    | ``opening`` | str | ``userrl`` | ``userrl``, ``recorded`` or ``live`` (how the conversation starts) |
    | ``finish_scores`` | bool | False | ``[finish]`` is scored like a stop |
    | ``user_temperature`` | float or None | None | LLM user temperature (``None``: server default) |
    | ``user_max_tokens`` | int | 2048 | token budget of one LLM-user reply |
    | ``scripted_patience`` | int | 8 | the scripted user stops after this many agent messages |
    | ``user_behavior`` | str, list or dict | ``"control"`` | the user's behaviour (docs/behaviors.md) |

    Plus the common kwargs (``judge``, ``lenient_parsing`` and ``prompt_set`` have no effect).

    ## Version History

    - v0: initial release.
    """

    env_name: ClassVar[str] = "tau"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    uncoached_in_release: ClassVar[bool] = True  # the release coached no turn of this env
    upstream: ClassVar[UserRLUpstream | None] = UserRLUpstream(
        "TauGym",
        counts={"train": 500, "test": 165},  # read with tau-bench's databases (mimesis-gym data check)
        files=tuple(UpstreamFile(f"{USERRL_TASK_DIR}/{name}") for name in TASK_FILES.values()),
    )
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"search", "action", "answer", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ()
    role_names: ClassVar[tuple[str, ...]] = ("user",)
    user_behaviors: ClassVar[EnvBehaviors] = USER_BEHAVIORS
    has_judge: ClassVar[bool] = False  # no judge role: a run-wide judge is accepted and ignored
    tool_description: ClassVar[str] = "Talk to the customer, list the internal tools, or call one of them."

    def __init__(
        self,
        *,
        domain: str | None = None,
        show_policy: bool = False,
        opening: str = "userrl",
        finish_scores: bool = False,
        user_temperature: float | None = None,
        user_max_tokens: int = 2048,
        scripted_patience: int = 8,
        **common: Any,
    ) -> None:
        super().__init__(**common)
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        if opening not in OPENINGS:
            raise ValueError(f"opening must be one of {', '.join(OPENINGS)}; got {opening!r}")
        if domain is not None and domain not in pack.domains:
            known = ", ".join(pack.domains)
            raise ValueError(f"domain {domain!r} is not in pack {self.pack!r} (domains: {known}; None for all)")
        if domain == "airline" and self.split == "train":
            raise ValueError("the airline domain has no train tasks; use split='test' or domain='retail'")
        if user_max_tokens < 1 or scripted_patience < 1:
            raise ValueError("user_max_tokens and scripted_patience must be positive")
        if show_policy and any(pack.policies.get(d) is None for d in pack.domains):
            raise FileNotFoundError(f"show_policy=True needs the domain policy files (wiki.md) of pack {self.pack!r}")
        self.domain = domain
        self.show_policy = bool(show_policy)
        self.opening = opening
        self.finish_scores = bool(finish_scores)
        self.user_temperature = user_temperature
        self.user_max_tokens = int(user_max_tokens)
        self.scripted_patience = int(scripted_patience)
        self.tools = [interact_with_env_tool(ADVERTISED_CHOICES, self.tool_description)]
        user_model = self.role_models.user
        self.customer: Role[str] = (
            ScriptedUser()
            if user_model is None
            else LLMUser(user_model, max_tokens=self.user_max_tokens, temperature=user_temperature)
        )
        self.db: EpisodeDB | None = None
        self.facts: UserFacts | None = None
        self.agent_messages: list[str] = []
        self._tool_registry: dict[str, Tool] = {}
        self._history: list[tuple[str, str]] = []
        self._tools_listed = False
        self._oracle_next = 0
        self._oracle_said = False
        self._opening_reply: RoleResult[str] | None = None
        self._handled_as: str | None = None

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TauPack:
        return load_upstream_pack(data_dir) if pack == "upstream" else load_original_pack()

    # ------------------------------------------------------------------ episode start

    def _select_task(self, task_id: str | None, split: str) -> TauTask:
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        if task_id is not None:
            return pack.get(task_id)
        if split == "train" and self.domain == "airline":
            raise ValueError("the airline domain has no train tasks; use split='test' or domain='retail'")
        pool = pack.domain_pool(split, self.domain)
        return pool[int(self.np_random.integers(len(pool)))]

    def _system_prompt(self, task: TauTask) -> str:
        text = task.system_prompt
        if text is None:
            text = SYSTEM_PROMPT.format(
                business=BUSINESS[task.domain], short="store" if task.domain == "retail" else "airline"
            )
        if self.show_policy:
            pack: TauPack = self.task_pack  # type: ignore[assignment]
            text = f"{text}\n\nPolicy:\n{pack.policies[task.domain]}"
        return text

    async def _begin(self, task: TauTask) -> str:
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        self.db = EpisodeDB(pack.databases[task.domain])
        self._tool_registry = domain_tools(task.domain)
        self.facts = pack.user_facts(task) if isinstance(self.customer, ScriptedUser) else None
        self.agent_messages = []
        self._tools_listed = False
        self._oracle_next = 0
        self._oracle_said = False
        self._opening_reply = None
        recorded = task.obs or (self.facts.request if self.facts is not None else "")
        self._history = [("self", recorded)]
        opening = recorded
        if isinstance(self.customer, LLMUser) and self.opening != "recorded":
            reply = await self.customer(self._session, instruction=task.instruction, history=())
            if not reply.failed:
                self._history = [("self", reply.value)]
                if self.opening == "live":
                    opening = reply.value
                    self._opening_reply = reply
        if task.opening_prompt is not None and self.opening != "live":
            return task.opening_prompt
        return f"Customer's request: {opening}\n{OPENING_INSTRUCTION}"

    # ------------------------------------------------------------------ steps

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        self._handled_as = None
        if action.kind == "search":
            return self._search(action.content)
        if action.kind == "action":
            return await self._talk(action.content)
        if action.kind == "answer":
            return await self._answer(action.content)
        if self.finish_scores:
            return self._terminate(FINISHED)
        return self._terminate(FINISHED, scored=False)

    def _malformed_outcome(self, malformed: MalformedAction) -> StepOutcome:
        self._handled_as = None
        return StepOutcome(
            obs=f"Invalid action format: {malformed.transcript_text}. {GRAMMAR}", reward_parts={}, valid=False
        )

    def _search(self, content: str) -> StepOutcome:
        query = content.strip().lower()
        if query == "tools":
            if self._tools_listed:
                return StepOutcome(obs=TOOLS_ALREADY_LISTED, reward_parts={})
            self._tools_listed = True
            return StepOutcome(obs=tool_list_text(list(self._tool_registry.values())), reward_parts={})
        if query == "help":
            return StepOutcome(obs=HELP_TEXT, reward_parts={})
        return StepOutcome(obs=SEARCH_NOTICE, reward_parts={}, valid=False)

    async def _answer(self, content: str) -> StepOutcome:
        call = _parse_tool_call(content)
        if call is None:
            return StepOutcome(obs=INVALID_TOOL_CALL, reward_parts={}, valid=False)
        name, arguments = call
        if name == "respond":
            message = arguments.get("content")
            if not isinstance(message, str):
                return StepOutcome(obs='Error: respond needs a string "content"', reward_parts={}, valid=False)
            self._handled_as = "action"  # tau-bench routes ``respond`` to the customer
            return await self._talk(message)
        if name not in self._tool_registry:
            return StepOutcome(obs=f"Unknown action {name}", reward_parts={}, valid=False)
        result = call_tool(self._tool_registry, self.db, name, arguments)  # type: ignore[arg-type]
        self._track_oracle_call(name, arguments)
        if name == TRANSFER_TOOL:  # tau-bench ends the episode on this name, whatever the arguments
            return self._terminate(result)
        return StepOutcome(obs=result, reward_parts={})

    async def _talk(self, message: str) -> StepOutcome:
        task: TauTask = self.task  # type: ignore[assignment]
        self.agent_messages.append(message)
        if message == self._completion_message():
            self._oracle_said = True
        if isinstance(self.customer, ScriptedUser):
            reply = await self.customer(
                self._session,
                message=message,
                facts=self.facts,
                goal_reached=self._goal_reached(),
                message_count=len(self.agent_messages),
                patience=self.scripted_patience,
            )
        else:
            self._history.append(("other", message))
            reply = await self.customer(self._session, instruction=task.instruction, history=tuple(self._history))
            if reply.failed:
                failures = self._session.step_failures
                reason = failures[-1][1].kind if failures else "no reply"
                return StepOutcome(
                    obs=f"Error communicating with user: {reason}",
                    reward_parts={},
                    user_thought=reply.thought,
                )
            self._history.append(("self", reply.value))
        if STOP in reply.value:
            return self._terminate(reply.value, thought=reply.thought, utterance=reply.utterance)
        return StepOutcome(obs=reply.value, reward_parts={}, user_thought=reply.thought, user_utterance=reply.utterance)

    def _terminate(
        self, obs: str, *, scored: bool = True, thought: str | None = None, utterance: str | None = None
    ) -> StepOutcome:
        parts = self.evaluate_now()
        if not scored:
            parts["reward"] = 0.0
        return StepOutcome(obs=obs, reward_parts=parts, terminated=True, user_thought=thought, user_utterance=utterance)

    # ------------------------------------------------------------------ reward

    def _outputs_found(self) -> dict[str, bool]:
        task: TauTask = self.task  # type: ignore[assignment]
        said = [message.lower().replace(",", "") for message in self.agent_messages]
        return {output: any(output.lower() in message for message in said) for output in task.outputs}

    def _goal_reached(self) -> bool:
        """The database equals the gold one (touched records only) and every output was said."""
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        gold = pack.gold(self.task)  # type: ignore[arg-type]
        return gold.reached_by(self.db) and all(self._outputs_found().values())  # type: ignore[arg-type]

    def evaluate_now(self) -> dict[str, Any]:
        """The reward breakdown (docs/envs/tau.md, "Rewards") for the current state (analysis only; changes nothing).

        ``{r_actions, r_outputs (None without outputs), outputs: {o: found}, db_hash, gold_hash,
        reward}``; ``r_actions``/``r_outputs`` are ints, ``reward`` the only float.
        """
        self._require_task()
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        gold = pack.gold(self.task)  # type: ignore[arg-type]
        r_actions = int(gold.reached_by(self.db))  # type: ignore[arg-type]
        found = self._outputs_found()
        r_outputs = int(all(found.values())) if found else None
        return {
            "r_actions": r_actions,
            "r_outputs": r_outputs,
            "outputs": found,
            "db_hash": self.db.digest(),  # type: ignore[union-attr]
            "gold_hash": gold.digest,
            "reward": 1.0 if r_actions and r_outputs in (None, 1) else 0.0,
        }

    # ------------------------------------------------------------------ privileged, oracle

    def _info(
        self, action_kind: str | None, valid: bool, reward_parts: dict[str, Any], outcome: StepOutcome | None
    ) -> dict[str, Any]:
        info = super()._info(action_kind, valid, reward_parts, outcome)
        if outcome is not None and self._handled_as is not None:
            info["action_kind"] = self._handled_as
        if self.privileged and outcome is None and self._opening_reply is not None:
            info["privileged"]["user_thought"] = self._opening_reply.thought
            info["privileged"]["user_utterance"] = self._opening_reply.utterance
        return info

    def disclosure_items(self) -> list[DisclosureItem]:
        """The customer's identifiers and request details (the pack's user facts), each asked by its name."""
        task: TauTask | None = self.task  # type: ignore[assignment]
        if task is None:
            return []
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        return tau_disclosure_items(pack.user_facts(task))

    def _hidden(self) -> dict[str, Any]:
        task: TauTask = self.task  # type: ignore[assignment]
        return {
            "instruction": task.instruction,
            "gold_actions": [{"name": a.name, "kwargs": a.kwargs} for a in task.actions],
            "outputs": list(task.outputs),
            "goal_reached": self._goal_reached(),
        }

    def _completion_message(self) -> str:
        task: TauTask = self.task  # type: ignore[assignment]
        return " ".join([COMPLETION_MESSAGE, *task.outputs])

    def _gold_calls(self) -> tuple[GoldAction, ...]:
        pack: TauPack = self.task_pack  # type: ignore[assignment]
        return pack.gold_calls(self.task)  # type: ignore[arg-type]

    def _track_oracle_call(self, name: str, arguments: dict[str, Any]) -> None:
        calls = self._gold_calls()
        if self._oracle_next < len(calls):
            gold = calls[self._oracle_next]
            if name == gold.name and canonical_text(arguments) == canonical_text(gold.kwargs):
                self._oracle_next += 1

    def oracle_action(self) -> str | None:
        """Each gold call but transfers, then ``Your request is complete.`` with the outputs, then
        the gold transfer if any; ``[finish]`` when nothing is left."""
        if self.task is None:
            return None
        calls = self._gold_calls()
        if self._oracle_next < len(calls):
            gold = calls[self._oracle_next]
            return "[answer] " + json.dumps({"name": gold.name, "arguments": gold.kwargs})
        if not self._oracle_said:
            return f"[action] {self._completion_message()}"
        transfer = next((a for a in self.task.actions if a.name == TRANSFER_TOOL), None)
        if transfer is not None:
            return "[answer] " + json.dumps({"name": TRANSFER_TOOL, "arguments": transfer.kwargs})
        return "[finish]"

    def secret_texts(self) -> list[str]:
        return [self.task.instruction] if self.task is not None else []


def _parse_tool_call(content: str) -> tuple[str, dict[str, Any]] | None:
    """``{"name": N, "arguments": A}`` or ``N: {...}`` → ``(name, arguments)``; ``None`` if malformed."""
    text = content.strip()
    if text.startswith("{") and text.endswith("}"):
        try:
            call = json.loads(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(call, dict):
            return None
        name, arguments = call.get("name", ""), call.get("arguments", {})
    else:
        head, colon, tail = text.partition(":")
        if not colon:
            return None
        try:
            arguments = json.loads(tail.strip())
        except (ValueError, RecursionError):
            return None
        name = head.strip()
    if not isinstance(arguments, dict):
        return None
    return (name if isinstance(name, str) else json.dumps(name)), arguments
