"""The token-exact trajectory records: :class:`Turn`, :class:`Segment`, :class:`Episode`.

See docs/algorithms.md, "Records".

Indexing: an episode opens with the user message ``u_0``; turn ``t = 1..T`` is the agent's
message ``y_t`` (one generation call) followed, if the episode goes on, by the user's reply ``u_t``.
Spans are half-open ``[start, end)`` positions inside the turn's segment. Every per-token array of
this package is indexed by the position of the *predicted* id: the log-prob of the id at position
``k`` comes from the logits at ``k − 1``.

Privileged fields (the user's thoughts, the env's privileged ``info``) stay in memory for training
only; :meth:`Episode.dump` leaves them out unless ``log_privileged=True``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PRIVILEGED_EPISODE_FIELDS", "PRIVILEGED_TURN_FIELDS", "Episode", "Finish", "Segment", "Turn"]

Finish = Literal["stop", "length", "eos", "budget"]
Span = tuple[int, int]

PRIVILEGED_TURN_FIELDS = frozenset({"user_thought"})
PRIVILEGED_EPISODE_FIELDS = frozenset({"privileged", "opening_thought", "notes"})


class Turn(BaseModel):
    """One agent generation ``y_t`` and what the env answered."""

    model_config = ConfigDict(extra="forbid")

    index: int = Field(description="t, 1-based")
    segment: int = Field(0, description="index of the segment holding this turn's action ids")
    action_span: Span = Field(description="[a_s, a_e): the sampled ids of y_t, stop id included (mask 1)")
    obs_span: Span | None = Field(
        None, description="[o_s, o_e): ids appended after y_t (mask 0); None after the last turn"
    )
    feedback_span: Span | None = Field(None, description="sub-span of obs_span covering the observation text itself")
    gen_prompt_len: int = Field(description="ids just before a_s that are this turn's generation prompt")
    reward: float = Field(0.0, description="r_t (0.0 when the env was not stepped)")
    action_text: str = Field("", description="decoded sampled text, the stop marker removed")
    parsed_action: str | dict[str, Any] | None = Field(None, description="what was passed to env.step")
    tool_call: bool = Field(False, description="y_t was parsed as a tool call (the observation is a tool message)")
    valid_action: bool = Field(True, description="info['valid_action'] of the step")
    finish: Finish = Field("stop", description="how the turn ended: stop, length, eos, budget")
    stepped: bool = Field(True, description="whether env.step ran for this turn")
    sampler_logprobs: list[float] = Field(default_factory=list, description="per action token, from the engine")
    observation: str | None = Field(None, description="the step's obs as returned (reward line included)")
    user_thought: str | None = Field(None, description="z_t (privileged)")
    user_utterance: str | None = Field(None, description="u_t: the user's public reply without reward annotation")

    @property
    def action_tokens(self) -> int:
        return self.action_span[1] - self.action_span[0]


class Segment(BaseModel):
    """One training sequence: prompt followed by response."""

    model_config = ConfigDict(extra="forbid")

    rollout_id: str
    input_ids: list[int]
    prompt_len: int
    loss_mask: list[int] = Field(description="1 on the agent's sampled ids, 0 elsewhere")
    turn_of_position: list[int] = Field(description="owning turn index per position; 0 for the prompt")

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def action_tokens(self) -> int:
        return sum(self.loss_mask)


class Episode(BaseModel):
    """One episode of one env on one task, with its segments and turns."""

    model_config = ConfigDict(extra="forbid")

    rollout_id: str = Field(description="'{step}:{group_index}:{member_index}', unique within the run")
    group_id: str = Field(description="'{step}:{group_index}:{env_id}:{task_id}:{seed}'")
    role: str = "agent"
    env_id: str
    task_id: str
    seed: int
    segments: list[Segment] = Field(default_factory=list)
    turns: list[Turn] = Field(default_factory=list)
    messages: list[dict[str, Any]] = Field(default_factory=list, description="the public transcript (env.transcript)")
    terminated: bool = False
    truncated: bool = False
    episode_score: float = 0.0
    user_failure: str | None = None
    user_behavior: str | None = Field(
        None, description="the user's condition, info['user_behavior']['id'] ('control', 'B3', …); None: not reported"
    )
    behavior_enacted: bool | None = Field(
        None, description="info['user_behavior']['enacted'] at the episode's end (None under control)"
    )
    # privileged material (memory only unless log_privileged)
    opening_thought: str | None = Field(None, description="z_0 from the reset info, when present")
    privileged: list[dict[str, Any]] = Field(
        default_factory=list, description="info['privileged'] of reset and of every step, in order"
    )
    # filled by the trainer
    old_logprobs: list[list[float]] | None = Field(None, description="per segment, per position (0 at mask 0)")
    turn_advantages: list[float] | None = None
    info_gain: list[float] | None = Field(None, description="I_t per turn t < T (InfoPO)")
    notes: dict[int, str] = Field(default_factory=dict, description="coach note per coached turn (CSD)")

    @property
    def turn_rewards(self) -> list[float]:
        return [turn.reward for turn in self.turns]

    @property
    def turn_token_counts(self) -> list[int]:
        return [turn.action_tokens for turn in self.turns]

    @property
    def reward_sum(self) -> float:
        return float(sum(self.turn_rewards))

    @property
    def action_tokens(self) -> int:
        return sum(segment.action_tokens for segment in self.segments)

    def estimator_input(self) -> dict[str, Any]:
        """The per-turn metadata the advantage estimators read (``compute_advantages``)."""
        return {
            "group_id": self.group_id,
            "rollout_id": self.rollout_id,
            "role": self.role,
            "turn_rewards": self.turn_rewards,
            "turn_token_counts": self.turn_token_counts,
            "episode_score": self.episode_score,
            "info_gains": self.info_gain or [],
        }

    def dump(self, *, log_privileged: bool = False) -> dict[str, Any]:
        """A JSON-ready dict; privileged fields are left out unless ``log_privileged``."""
        if log_privileged:
            return self.model_dump(mode="json")
        data = self.model_dump(mode="json", exclude=set(PRIVILEGED_EPISODE_FIELDS))
        for turn in data["turns"]:
            for name in PRIVILEGED_TURN_FIELDS:
                turn.pop(name, None)
        return data
