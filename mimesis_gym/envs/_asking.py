"""The step of a question game, shared by TurtleGym and TelepathyGym.

The agent asks a yes/no host questions (``[action]``), proposes a solution that a judge scores
(``[answer]``: the reward is the rise of the best score so far) or ends the game (``[finish]``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from mimesis_gym.core.actions import ParsedAction
from mimesis_gym.core.env import ConversationEnv, StepOutcome, TaskT, gain_parts
from mimesis_gym.envs._roles import ask

__all__ = ["Proposal", "QuestionGame", "QuestionGameEnv"]


@dataclass(frozen=True, slots=True)
class QuestionGame:
    """What differs between the games: ``host`` names the host role (the env's attribute and its
    judgement key), ``detail_key`` the host's extra JSON key kept in the judgement, ``host_fallback``
    the reply when the host fails, ``finish_text`` the reply to ``[finish]``, ``gain_part`` the
    reward part of a proposal's gain."""

    host: str
    detail_key: str
    host_fallback: str
    finish_text: str
    gain_part: str


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
    :meth:`_judge_proposal`, and call :meth:`_begin_game` when an episode begins.
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

    async def _handle(self, action: ParsedAction) -> StepOutcome:
        task: TaskT = self.task  # type: ignore[assignment]
        gain = 0.0
        terminated = False
        user_thought = user_utterance = None
        judgements: dict[str, Any] = {}
        if action.kind == "finish":
            obs, terminated = self.game.finish_text, True
        elif action.kind == "action":
            host = getattr(self, self.game.host)
            answered = await ask(
                host,
                self._session,
                action.content,
                self._history,
                self.game.host_fallback,
                self.game.detail_key,
                task=task,
            )
            obs, user_thought, user_utterance = answered.obs, answered.thought, answered.utterance
            judgements[self.game.host] = answered.judgement
        else:  # answer
            verdict = await self._judge_proposal(task, action.content)
            obs = verdict.obs
            judgements[verdict.key] = verdict.judgement
            if verdict.score is not None:
                gain = max(0.0, verdict.score - self.best)
                self.best = max(self.best, verdict.score)
                terminated = verdict.solved
        return StepOutcome(
            obs=obs,
            reward_parts=gain_parts(
                self.game.gain_part, gain, scale=self.reward_scale, step_penalty=self.step_penalty, turn=self.turn
            ),
            terminated=terminated,
            user_thought=user_thought,
            user_utterance=user_utterance,
            judgements=judgements,
        )
