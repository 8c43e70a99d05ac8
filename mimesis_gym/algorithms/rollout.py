"""Token-exact episode collection (docs/algorithms.md, "Collecting an episode", "Per-turn contexts").

``accumulate`` (default): the first prompt is the only tokenisation of a whole conversation; each
turn is generated from the **accumulated ids**, its sampled ids (stop id included) are appended with
mask 1, and the observation is appended as the rendered delta (``render.py``) with mask 0. Episodes
of a batch are generated together, one engine call per turn; envs are stepped concurrently in
threads (each env keeps its own event loop for LLM users).

``per_turn``: each turn is its own segment whose context is the chat template applied to the public
messages so far; only that turn's ids have mask 1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mimesis_gym.agents.grammar import grammar_instructions, parse_agent_text
from mimesis_gym.algorithms.config import RolloutConfig
from mimesis_gym.algorithms.engines.base import GenerationEngine, Sample, Sampling
from mimesis_gym.algorithms.records import Episode, Segment, Turn
from mimesis_gym.algorithms.render import ChatRenderer, probe_tool_call, strip_reward_line
from mimesis_gym.behaviors.registry import CONDITIONS, CONTROL

__all__ = ["Collector", "EpisodeRequest", "behavior_metrics", "by_condition", "rollout_metrics"]

logger = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class EpisodeRequest:
    """One episode to collect: which env (a zero-argument factory), task, reset seed and ids."""

    make_env: Callable[[], Any] = field(repr=False)
    env_id: str
    task_id: str
    seed: int
    group_id: str
    rollout_id: str


@dataclass
class _Running:
    """The state of one episode while it is being collected."""

    request: EpisodeRequest
    env: Any
    renderer: ChatRenderer
    plain_text: bool  # env.tools == []: the raw completion is the action
    messages: list[dict[str, Any]]  # public messages as the policy saw them (per_turn contexts)
    ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    owner: list[int] = field(default_factory=list)
    prompt_len: int = 0
    next_gen_prompt_len: int = 0
    turns: list[Turn] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)
    done: bool = False
    terminated: bool = False
    truncated: bool = False
    episode_score: float = 0.0
    failures: list[str] = field(default_factory=list)
    privileged: list[dict[str, Any]] = field(default_factory=list)
    opening_thought: str | None = None
    behavior: dict[str, Any] | None = None  # the latest info["user_behavior"]
    pending: tuple[Turn, Any] | None = None  # a turn waiting for its env step, and the action

    @property
    def response_len(self) -> int:
        return len(self.ids) - self.prompt_len


class Collector:
    """Collects episodes with a generation engine and one tokenizer.

    ``engine`` follows :class:`~mimesis_gym.algorithms.engines.base.GenerationEngine`; the renderer
    of each episode is built from ``tokenizer`` and the env's tools (cached per tool list).
    """

    def __init__(self, engine: GenerationEngine, tokenizer: Any, config: RolloutConfig) -> None:
        self.engine = engine
        self.tokenizer = tokenizer
        self.config = config
        self._renderers: dict[str, ChatRenderer] = {}
        self._renders_tools: dict[str, bool] = {}
        self._skipped_logged: set[str] = set()
        self.skipped_tasks: list[str] = []
        """Tasks skipped because their first prompt exceeded ``max_prompt_tokens``."""

    # -- setup ----------------------------------------------------------------------------------

    def renderer_for(self, tools: Sequence[dict[str, Any]]) -> tuple[ChatRenderer, bool]:
        """The renderer for an env's tools and whether it renders them."""
        import json

        key = json.dumps(list(tools), sort_keys=True)
        if key not in self._renderers:
            plain = ChatRenderer(self.tokenizer)
            rendered = bool(self.config.use_tools and tools and plain.renders_tools(tools))
            self._renderers[key] = ChatRenderer(self.tokenizer, tools=tools) if rendered else plain
            self._renders_tools[key] = rendered
        return self._renderers[key], self._renders_tools[key]

    def _start(self, request: EpisodeRequest) -> _Running | None:
        env = request.make_env()
        _, info = env.reset(seed=request.seed, options={"task_id": request.task_id, "episode_id": request.rollout_id})
        base = env.unwrapped
        tools = list(base.tools)
        renderer, renders_tools = self.renderer_for(tools)
        system = base.system_prompt
        if tools and not renders_tools:
            system += grammar_instructions(tools)  # the same note the evaluation agent appends
        messages = [{"role": "system", "content": system}, *base.opening_messages]
        prompt, gen_prompt_len = renderer.prompt_ids(messages)
        if len(prompt) > self.config.max_prompt_tokens:
            key = f"{request.env_id}:{request.task_id}"
            if key not in self._skipped_logged:
                self._skipped_logged.add(key)
                self.skipped_tasks.append(key)
                logger.warning(
                    "task %s skipped: its prompt has %d tokens > max_prompt_tokens=%d",
                    key,
                    len(prompt),
                    self.config.max_prompt_tokens,
                )
            env.close()
            return None
        state = _Running(request=request, env=env, renderer=renderer, plain_text=not tools, messages=messages)
        state.ids, state.mask, state.owner = list(prompt), [0] * len(prompt), [0] * len(prompt)
        state.prompt_len, state.next_gen_prompt_len = len(prompt), gen_prompt_len
        privileged = info.get("privileged") or {}
        if privileged:
            state.privileged.append(privileged)
            state.opening_thought = privileged.get("user_thought")
        if info.get("user_failure"):
            state.failures.append(info["user_failure"])
        state.behavior = info.get("user_behavior")
        return state

    # -- the loop -------------------------------------------------------------------------------

    def collect(
        self, requests: Sequence[EpisodeRequest], *, sampling: Sampling | None = None, seed: int | None = None
    ) -> list[Episode]:
        """Run every request to the end; episodes come back in request order (skipped tasks left out)."""
        sampling = sampling or Sampling(self.config.temperature, self.config.top_p, self.config.top_k)
        states = [state for state in map(self._start, requests) if state is not None]
        workers = ThreadPoolExecutor(max_workers=max(1, min(16, len(states)))) if states else None
        try:
            turn = 0
            while True:
                active = [state for state in states if not state.done]
                if not active:
                    break
                turn += 1
                width = self.config.max_concurrent_episodes
                for chunk_index, start in enumerate(range(0, len(active), width)):
                    chunk = [s for s in active[start : start + width] if self._has_budget(s)]
                    if not chunk:
                        continue
                    limits = [self._max_new_tokens(s) for s in chunk]
                    contexts = [self._context(s) for s in chunk]
                    chunk_seed = None if seed is None else seed * 1_000_003 + turn * 1_009 + chunk_index
                    samples = self.engine.generate(contexts, max_new_tokens=limits, sampling=sampling, seed=chunk_seed)
                    for state, context, sample in zip(chunk, contexts, samples, strict=True):
                        self._record_action(state, context, sample)
                stepping = [state for state in active if state.pending is not None]
                assert workers is not None
                results = list(workers.map(lambda s: s.env.step(s.pending[1]), stepping))
                for state, result in zip(stepping, results, strict=True):
                    self._record_step(state, *result)
        finally:
            if workers is not None:
                workers.shutdown()
            for state in states:
                state.env.close()
        return [self._episode(state) for state in states]

    def _has_budget(self, state: _Running) -> bool:
        if self._max_new_tokens(state) >= 1:
            return True
        state.done, state.truncated = True, not state.terminated
        return False

    def _max_new_tokens(self, state: _Running) -> int:
        remaining = self.config.max_response_tokens - state.response_len
        cap = self.config.max_tokens_per_turn
        return min(cap, remaining) if cap is not None else remaining

    def _context(self, state: _Running) -> list[int]:
        if self.config.context_mode == "accumulate":
            return state.ids
        ids, gen_prompt_len = state.renderer.prompt_ids(state.messages)
        state.next_gen_prompt_len = gen_prompt_len
        return ids

    def _record_action(self, state: _Running, context: list[int], sample: Sample) -> None:
        index = len(state.turns) + 1
        if self.config.context_mode == "accumulate":
            ids, mask, owner, segment = state.ids, state.mask, state.owner, 0
        else:
            ids, mask, owner = list(context), [0] * len(context), [0] * len(context)
            segment = len(state.segments)
        start = len(ids)
        ids.extend(sample.ids)
        keep = 0 if sample.finish == "length" and self.config.mask_truncated_turns else 1
        mask.extend([keep] * len(sample.ids))
        owner.extend([index] * len(sample.ids))
        visible = sample.ids[:-1] if sample.finish in ("stop", "eos") else sample.ids
        text = self.tokenizer.decode(visible, skip_special_tokens=False)
        action: Any = text if state.plain_text else parse_agent_text(text)
        turn = Turn(
            index=index,
            segment=segment,
            action_span=(start, len(ids)),
            gen_prompt_len=state.next_gen_prompt_len,
            action_text=text,
            parsed_action=action,
            tool_call=isinstance(action, dict),
            finish=sample.finish,
            stepped=sample.finish != "length",
            sampler_logprobs=list(sample.logprobs),
        )
        state.turns.append(turn)
        if self.config.context_mode == "per_turn":
            state.segments.append(
                Segment(
                    rollout_id=state.request.rollout_id,
                    input_ids=ids,
                    prompt_len=len(context),
                    loss_mask=mask,
                    turn_of_position=owner,
                )
            )
        assistant: dict[str, Any] = {"role": "assistant", "content": text}
        if turn.tool_call:
            assistant["tool_calls"] = [probe_tool_call(action, call_id=f"call_{index}")]
        state.messages.append(assistant)
        if sample.finish == "length":  # truncated mid-turn: the env is not stepped
            state.done, state.truncated = True, True
            return
        state.pending = (turn, action)

    def _record_step(
        self, state: _Running, obs: str, reward: float, terminated: bool, truncated: bool, info: dict[str, Any]
    ) -> None:
        turn, _ = state.pending  # type: ignore[misc]
        state.pending = None
        privileged = info.get("privileged") or {}
        turn.reward = float(reward)
        turn.valid_action = bool(info.get("valid_action", True))
        turn.observation = obs
        turn.user_thought = privileged.get("user_thought")
        utterance = privileged.get("user_utterance")
        turn.user_utterance = utterance if utterance is not None else strip_reward_line(obs)
        if privileged:
            state.privileged.append(privileged)
        if info.get("user_failure"):
            state.failures.append(info["user_failure"])
        state.behavior = info.get("user_behavior", state.behavior)
        state.episode_score = float(info.get("episode_score", state.episode_score))
        state.terminated = bool(terminated)
        ends = (
            terminated
            or truncated
            or turn.finish == "eos"
            or turn.index >= self.config.max_turns
            or (self.config.end_on_invalid_action and not turn.valid_action)
        )
        if ends:
            state.done, state.truncated = True, not terminated
            return
        call = probe_tool_call(turn.parsed_action, call_id=f"call_{turn.index}") if turn.tool_call else None  # type: ignore[arg-type]
        if call is not None:
            state.messages.append(
                {"role": "tool", "tool_call_id": call["id"], "name": "interact_with_env", "content": obs}
            )
        else:
            state.messages.append({"role": "user", "content": obs})
        if self.config.context_mode == "per_turn":
            return
        delta = state.renderer.observation_delta(obs, tool_call=call)
        if state.response_len + len(delta.ids) > self.config.max_response_tokens:
            turn.finish = "budget"
            state.done, state.truncated = True, True
            return
        start = len(state.ids)
        state.ids.extend(delta.ids)
        state.mask.extend([0] * len(delta.ids))
        state.owner.extend([turn.index] * len(delta.ids))
        turn.obs_span = (start, len(state.ids))
        if delta.feedback_span is not None:
            turn.feedback_span = (start + delta.feedback_span[0], start + delta.feedback_span[1])
        state.next_gen_prompt_len = delta.gen_prompt_len

    def _episode(self, state: _Running) -> Episode:
        request = state.request
        if self.config.context_mode == "accumulate":
            segments = [
                Segment(
                    rollout_id=request.rollout_id,
                    input_ids=state.ids,
                    prompt_len=state.prompt_len,
                    loss_mask=state.mask,
                    turn_of_position=state.owner,
                )
            ]
        else:
            segments = state.segments
        return Episode(
            rollout_id=request.rollout_id,
            group_id=request.group_id,
            env_id=request.env_id,
            task_id=request.task_id,
            seed=request.seed,
            segments=segments,
            turns=state.turns,
            messages=state.env.unwrapped.transcript,
            terminated=state.terminated,
            truncated=state.truncated and not state.terminated,
            episode_score=state.episode_score,
            user_failure=";".join(state.failures) or None,
            user_behavior=(state.behavior or {}).get("id"),
            behavior_enacted=(state.behavior or {}).get("enacted"),
            opening_thought=state.opening_thought,
            privileged=state.privileged,
        )


def rollout_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Means over a batch's episodes: reward, score (overall and ``score/<env_id>``), turns, endings, tokens,
    and per user condition (:func:`behavior_metrics`)."""
    if not episodes:
        return {"reward/mean": 0.0, "score/mean": 0.0}
    n = len(episodes)
    stepped = [t for e in episodes for t in e.turns if t.stepped]
    metrics: dict[str, float] = {
        "reward/mean": sum(e.reward_sum for e in episodes) / n,
        "score/mean": sum(e.episode_score for e in episodes) / n,
        "episode/turns_mean": sum(len(e.turns) for e in episodes) / n,
        "episode/truncated_frac": sum(e.truncated for e in episodes) / n,
        "episode/invalid_action_frac": sum(not t.valid_action for t in stepped) / max(1, len(stepped)),
        "episode/user_failure_frac": sum(e.user_failure is not None for e in episodes) / n,
        "tokens/action_mean": sum(e.action_tokens for e in episodes) / n,
        "tokens/obs_mean": sum(t.obs_span[1] - t.obs_span[0] for e in episodes for t in e.turns if t.obs_span) / n,
    }
    by_env: dict[str, list[float]] = {}
    for episode in episodes:
        by_env.setdefault(episode.env_id, []).append(episode.episode_score)
    for env_id, scores in by_env.items():
        metrics[f"score/{env_id}"] = sum(scores) / len(scores)
    return {**metrics, **behavior_metrics(episodes)}


def by_condition(items: Iterable[tuple[str | None, T]]) -> dict[str, list[T]]:
    """The values of each user condition, from ``(condition, value)`` pairs, in registry order; nothing when
    every pair is under control (or its env reports no condition, ``None``): a run without hard users
    logs no per-condition metric."""
    groups: dict[str, list[T]] = {}
    for condition, value in items:
        if condition is not None:
            groups.setdefault(condition, []).append(value)
    if set(groups) <= {CONTROL}:
        return {}
    return {condition: groups[condition] for condition in CONDITIONS if condition in groups}


def behavior_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Per user condition of the batch (docs/algorithms.md, "Training against hard users"):
    ``reward/behavior/<condition>``, the mean episode reward, and for a behaviour
    ``enacted/behavior/<condition>``, the share of its episodes whose user enacted it (the env's rule)."""
    metrics: dict[str, float] = {}
    for condition, group in by_condition((e.user_behavior, e) for e in episodes).items():
        metrics[f"reward/behavior/{condition}"] = sum(e.reward_sum for e in group) / len(group)
        if condition != CONTROL:
            metrics[f"enacted/behavior/{condition}"] = sum(e.behavior_enacted is True for e in group) / len(group)
    return metrics
