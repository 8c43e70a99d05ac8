"""The step of a question game, shared by TurtleGym, TelepathyGym and IntentionGym.

The agent asks the user questions (``[action]``), proposes a solution that a judge scores
(``[answer]``: the reward is the rise of the best score so far) or ends the game (``[finish]``).
TurtleGym and TelepathyGym play it as it is, with a yes/no host. IntentionGym has no proposals
(``[answer]`` is a question there): its hook :meth:`QuestionGameEnv._ask_host` also has a judge score
every question, and that step's gain is the reward; its step penalty stays constant
(``QuestionGame.penalty_grows=False``) and its ``[finish]`` reply counts what was covered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import ConversationEnv, StepOutcome, TaskT, gain_parts
from mimesis_gym.envs._roles import ask

__all__ = ["Proposal", "QuestionGame", "QuestionGameEnv", "Step"]


@dataclass(frozen=True, slots=True)
class QuestionGame:
    """What differs between the games: ``host`` names the host role (the env's attribute and its
    judgement key), ``detail_key`` the host's extra JSON key kept in the judgement, ``host_fallback``
    the reply when the host fails, ``finish_text`` the reply to ``[finish]``, ``gain_part`` the
    reward part of a step's gain, ``penalty_grows`` whether the step penalty is ``step_penalty × turn``
    (``False``: ``step_penalty`` every step). A game that overrides :meth:`QuestionGameEnv._ask_host`
    or :meth:`QuestionGameEnv._finish_text` leaves the fields those read at their defaults."""

    gain_part: str
    host: str = ""
    detail_key: str = ""
    host_fallback: str = ""
    finish_text: str = ""
    penalty_grows: bool = True


class Step(NamedTuple):
    """What one branch of the step decided: the reply, the gain (before ``reward_scale``), whether the
    game ends, the user's thought and utterance, and the judgements recorded."""

    obs: str
    gain: float = 0.0
    terminated: bool = False
    user_thought: str | None = None
    user_utterance: str | None = None
    judgements: dict[str, Any] | None = None


class Proposal(NamedTuple):
    """The judge's verdict on an ``[answer]``: the reply, the score (``None`` when the judge failed:
    no gain), whether it solves the game, and the judgement recorded under ``key``."""

    obs: str
    score: float | None
    solved: bool
    key: str
    judgement: dict[str, Any]


class QuestionGameEnv(ConversationEnv[TaskT]):
    """A :class:`ConversationEnv` whose step is the question game of :class:`QuestionGame`.

    Subclasses set ``game``, ``reward_scale``, ``step_penalty`` and the host role, implement
    :meth:`_judge_proposal` (when they take ``[answer]``), and call :meth:`_begin_game` when an
    episode begins. :meth:`_ask_host` and :meth:`_finish_text` are the hooks of a game that plays
    those branches its own way (IntentionGym).
    """

    game: ClassVar[QuestionGame]
    reward_scale: float
    step_penalty: float

    def _begin_game(self) -> None:
        """A new episode: no best score yet and no questions asked."""
        self.best = 0.0
        self._history: list[tuple[str, str]] = []

    async def _judge_proposal(self, task: TaskT, proposal: str) -> Proposal:
        """Score ``proposal`` against ``task``."""
        raise NotImplementedError

    def _finish_text(self) -> str:
        """The reply to ``[finish]``."""
        return self.game.finish_text

    async def _ask_host(self, task: TaskT, action: ParsedAction) -> Step:
        """A question: the host answers it (no gain); a failed host gives ``host_fallback``."""
        host = getattr(self, self.game.host)
        answered = await ask(
            host, self._session, action.content, self._history, self.game.host_fallback, self.game.detail_key, task=task
        )
        return Step(
            answered.obs,
            user_thought=answered.thought,
            user_utterance=answered.utterance,
            judgements={self.game.host: answered.judgement},
        )

    async def _propose(self, task: TaskT, action: ParsedAction) -> Step:
        """A proposal: the judge scores it; the gain is the rise of the best score so far."""
        verdict = await self._judge_proposal(task, action.content)
        if verdict.score is None:
            return Step(verdict.obs, judgements={verdict.key: verdict.judgement})
        gain = max(0.0, verdict.score - self.best)
        self.best = max(self.best, verdict.score)
        return Step(verdict.obs, gain, verdict.solved, judgements={verdict.key: verdict.judgement})

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: TaskT = self.task  # type: ignore[assignment]
        if action.kind == "finish":
            step = Step(self._finish_text(), terminated=True)
        elif action.kind == "action":
            step = await self._ask_host(task, action)
        else:  # answer
            step = await self._propose(task, action)
        turn = self.turn if self.game.penalty_grows else 1
        return StepOutcome(
            obs=step.obs,
            reward_parts=gain_parts(
                self.game.gain_part, step.gain, scale=self.reward_scale, step_penalty=self.step_penalty, turn=turn
            ),
            terminated=step.terminated,
            user_thought=step.user_thought,
            user_utterance=step.user_utterance,
            judgements=step.judgements or {},
        )
