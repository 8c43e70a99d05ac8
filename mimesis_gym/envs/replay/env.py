"""HumanReplay: a user under test writes, turn by turn, the user side of real human conversations."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from mimesis_gym.behaviors.play import EnvBehaviors
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import ConversationEnv, StepOutcome
from mimesis_gym.core.roles import Role
from mimesis_gym.core.tasks import TaskPack
from mimesis_gym.corpora import HumanConversation
from mimesis_gym.envs.replay import baseline
from mimesis_gym.envs.replay.roles import LLMReplayUser, ScriptedReplayUser, Twin
from mimesis_gym.envs.replay.tasks import humans_pack, load_original_pack, normalise_sources

__all__ = ["HumanReplayEnv"]

SYSTEM_PROMPT = """\
You are the assistant side of a replayed real conversation. Whatever you write, the replay goes on \
with the real reply that was given at this point; the `oracle` agent plays those real replies. Use \
`action` to send your reply and `finish` to stop the replay."""

OPENING_OTHER_FIRST = "(The conversation starts: you speak first.)"
ENDED_TEXT = "(The user ended the conversation here.)"
STOPPED_TEXT = "(The replay was stopped.)"
DEFAULT_HISTORY_CHARS = 8000


class HumanReplayEnv(ConversationEnv[HumanConversation]):
    """
    ## Description

    The scorecard's replay protocol (docs/humans.md). A task is one real conversation; at every
    point where the human wrote a user turn, the **user under test** is given what the human had —
    the goal and the real history so far — and writes its own next turn (its *twin* of the
    human's), or ends the conversation. The replay then goes on with the **real** turns whatever the
    user wrote, so every twin is written on exactly the context its human had. Where the real
    conversation ends after a reply, the user is asked once more: ending there is right.

    ## Action Space

    ``[action] reply`` (the assistant's reply; the replay continues with the real one, so the text
    is recorded, not used), ``[finish]`` (stop the replay). The ``oracle`` agent plays the real
    replies.

    ## Observation Space

    The human's real next user turn, or a fixed note when the assistant speaks first or the human
    ended.

    ## Roles

    | role | kind | scripted | LLM |
    |---|---|---|---|
    | ``user`` | user | the template user (the floor): fixed lines, ends at its 4th turn | text; ``###STOP###`` ends |

    ## Rewards

    None: every reward is 0 (a measurement, not a game). The twins are privileged data:
    ``info["privileged"]["hidden"]["twins"]``, one entry per user position with ``position``,
    ``human`` (the real turn, ``None`` where the human ended), ``simulated``, ``ended``,
    ``human_ended``, ``failed`` and ``thought``.

    ## Starting State

    A conversation of the pack (``task_id`` option, or drawn from ``split``). When the human opens
    and the goal is a description, the first twin is written at ``reset``; when the goal is the
    first message itself (``goal_kind="first_message"``) that message is given, not simulated.

    ## Episode End

    Terminated after the last real user turn, after the last real reply (the end probe), or on
    ``[finish]``.

    ## Arguments

    ``pack`` ``"original"`` (six demo conversations written for this project) or ``"humans"``
    (real corpora under ``data_dir``); ``sources`` (``pack="humans"``: corpus names or
    ``jsonl:PATH``, default every shipped corpus); ``per_source`` (at most this many conversations of
    each source per split, file order); ``split`` ``"dev"``/``"test"`` (``"demo"`` in
    the original pack); ``history_chars`` (the most recent real turns the user sees, whole turns up
    to this many characters; a longer last turn is cut from its start); ``user_temperature``,
    ``user_max_tokens``; plus the common arguments of docs/env-contract.md.
    """

    env_name: ClassVar[str] = "replay"
    baseline_strategy: ClassVar[Callable[[Any], Any] | None] = staticmethod(baseline.next_action)
    accepted_kinds: ClassVar[frozenset[str]] = frozenset({"action", "finish"})
    reward_part_names: ClassVar[tuple[str, ...]] = ()
    role_names: ClassVar[tuple[str, ...]] = ("user",)
    user_behaviors: ClassVar[EnvBehaviors] = EnvBehaviors(
        user_role=None,
        not_applicable=dict.fromkeys(
            BEHAVIOR_IDS,
            "the user re-writes real human turns here, "
            "to be compared with the people as they were (docs/envs/replay.md)",
        ),
    )
    has_judge: ClassVar[bool] = False
    packs: ClassVar[tuple[str, ...]] = ("original", "humans")
    max_episode_score: ClassVar[float] = 0.0
    default_system_prompt: ClassVar[str] = SYSTEM_PROMPT
    tool_description: ClassVar[str] = "Reply in the replayed conversation, or finish it."

    def __init__(
        self,
        *,
        sources: str | Sequence[str] | None = None,
        per_source: int | None = None,
        history_chars: int = DEFAULT_HISTORY_CHARS,
        user_temperature: float = 0.0,
        user_max_tokens: int = 512,
        split: str = "test",
        **common: Any,
    ) -> None:
        if history_chars < 1:
            raise ValueError(f"history_chars must be a positive int; got {history_chars!r}")
        self.sources = normalise_sources(sources)
        self.per_source = per_source
        self.history_chars = int(history_chars)
        super().__init__(split=split, **common)
        model = self.role_models.user
        self.user_role: Role[Twin] = (
            ScriptedReplayUser()
            if model is None
            else LLMReplayUser(model, max_tokens=user_max_tokens, temperature=user_temperature)
        )
        self._next = 0
        self._twins: list[dict[str, Any]] = []
        self._stopped = False

    def _pack_kwargs(self) -> dict[str, Any]:
        return {**super()._pack_kwargs(), "sources": self.sources, "per_source": self.per_source}

    @classmethod
    def load_task_pack(cls, pack: str, data_dir: str | None) -> TaskPack[HumanConversation]:
        return load_original_pack() if pack == "original" else humans_pack(data_dir, normalise_sources(None))

    @classmethod
    def task_pack_for(cls, kwargs: Mapping[str, Any]) -> TaskPack[HumanConversation]:
        if kwargs.get("pack", "original") == "original":
            return load_original_pack()
        return humans_pack(kwargs.get("data_dir"), normalise_sources(kwargs.get("sources")), kwargs.get("per_source"))

    # ------------------------------------------------------------------ episode

    async def _begin(self, task: HumanConversation) -> str:
        self._twins = []
        self._stopped = False
        first = task.turns[0]
        if first.role == "assistant":
            self._next = 0
            return OPENING_OTHER_FIRST
        if task.goal_kind == "description":
            await self._twin(task, position=1, at=0)
        self._next = 1
        return first.text

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task = self._task()
        if action.kind == "finish":
            self._stopped = True
            return StepOutcome(obs=STOPPED_TEXT, reward_parts={}, terminated=True)
        self._next += 1  # the real reply at ``_next`` is played, whatever the action said
        position = self._positions_before(self._next) + 1
        if self._next >= len(task.turns):
            twin = await self._twin(task, position=position, at=self._next)
            return StepOutcome(
                obs=ENDED_TEXT, reward_parts={}, terminated=True, user_utterance=twin.text, user_thought=twin.thought
            )
        twin = await self._twin(task, position=position, at=self._next)
        human = task.turns[self._next].text
        self._next += 1
        return StepOutcome(
            obs=human,
            reward_parts={},
            terminated=self._next >= len(task.turns),
            user_utterance=twin.text,
            user_thought=twin.thought,
        )

    async def _twin(self, task: HumanConversation, *, position: int, at: int) -> Twin:
        """Ask the user under test for the user turn at ``task.turns[at]`` (or the end probe when
        ``at`` is past the last turn) on the real history before it; record the twin."""
        result = await self.user_role(
            self._session,
            goal=task.goal,
            goal_kind=task.goal_kind,
            source=task.source,
            history=self._history(task, at),
            position=position,
        )
        twin = result.value
        human = task.turns[at].text if at < len(task.turns) else None
        self._twins.append(
            {
                "position": position,
                "human": human,
                "simulated": twin.text,
                "ended": twin.ended,
                "human_ended": human is None,
                "failed": result.failed,
                "thought": twin.thought,
            }
        )
        return twin

    def _history(self, task: HumanConversation, at: int) -> list[tuple[str, str]]:
        """The real turns before ``at`` as ``(speaker, text)`` pairs, the most recent that fit
        :attr:`history_chars` (whole turns; a longer last turn keeps its end)."""
        kept: list[tuple[str, str]] = []
        budget = self.history_chars
        for turn in reversed(task.turns[:at]):
            speaker = "self" if turn.role == "user" else "other"
            if len(turn.text) <= budget:
                kept.append((speaker, turn.text))
                budget -= len(turn.text)
                continue
            if not kept:
                kept.append((speaker, "…" + turn.text[-budget:]))
            break
        return kept[::-1]

    def _positions_before(self, at: int) -> int:
        task = self._task()
        return sum(1 for turn in task.turns[:at] if turn.role == "user")

    def _task(self) -> HumanConversation:
        self._require_task()
        return self.task  # type: ignore[return-value]

    # ------------------------------------------------------------------ privileged

    def _hidden(self) -> dict[str, Any]:
        if self.task is None:
            return {}
        return {
            "source": self.task.source,
            "goal": self.task.goal,
            "goal_kind": self.task.goal_kind,
            "twins": [dict(twin) for twin in self._twins],
        }

    def oracle_action(self) -> str | None:
        """The real reply that comes next (``[finish]`` when none is left)."""
        task = self._task()
        if self._next < len(task.turns) and task.turns[self._next].role == "assistant":
            return f"[action] {task.turns[self._next].text}"
        return "[finish]"
