"""Running the CSD coach: turn selection, requests, prompts, chat and scripted coaches.

See docs/algorithms.md, "The coach".

After an episode ends, a coach writes at most one note per selected turn. A :class:`CoachRequest`
holds the public history before ``y_t``, the user's thought chosen by the pairing, the user's next
utterance and, for the corrective style, ``y_t`` itself. Notes go through
:func:`~mimesis_gym.algorithms.learners.csd.notes.clean_note` (``NONE``/empty → no note, 600-character cut,
privacy leak filter). The teacher sees the note as one extra user message (:func:`note_message`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mimesis_gym.algorithms.config import CSDConfig
from mimesis_gym.algorithms.learners.csd.notes import clean_note, leaked_items
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.core.conventions import split_thought
from mimesis_gym.core.imports import import_object

__all__ = [
    "COACH_SYSTEM_PROMPTS",
    "NOTE_HEADER",
    "NOT_AVAILABLE",
    "ChatCoach",
    "CoachRequest",
    "CoachStats",
    "ScriptedCoach",
    "build_request",
    "coach_episodes",
    "load_callable",
    "note_message",
    "render_request",
    "select_turns",
]

NOT_AVAILABLE = "(not available)"
NOTE_HEADER = "=== HINDSIGHT CONTEXT ===\n[Guidance about what the user needs; use it to shape your reply.]"
MESSAGE_CHARS, HISTORY_CHARS, ACTION_CHARS = 1500, 8000, 4000

_RULES = """\
Rules:
- Write at most 3 sentences.
- Do not mention tool syntax, output format or protocol.
- Never state a fact that appears only in the private material (dates, places, budgets, names, \
numbers, unstated preferences). Say what to ask or clarify, never the answer itself.
- If there is nothing useful to say, reply with the single word NONE."""

COACH_SYSTEM_PROMPTS: dict[str, str] = {
    "prospective": f"""\
You coach an assistant that is talking with a user. You can see the conversation so far and some \
private material about the user that the assistant cannot see. Write a short briefing that the \
assistant will read just before it writes its next message.

State concretely what the user needs from that next message, in present, forward-looking terms \
("The user needs ...", "Ask about ..."). Be specific enough that a good reply becomes more likely \
and a poor one less likely.

{_RULES}""",
    "corrective": f"""\
You coach an assistant that is talking with a user. You can see the conversation so far, some \
private material about the user that the assistant cannot see, and the message the assistant wrote \
at this turn. Say what the assistant should have done differently at this turn.

Be concrete and specific enough that a better reply becomes more likely and a poor one less likely.

{_RULES}""",
}
"""The coach's system prompt per style (written for this library; pinned by a golden-text test)."""

Style = Literal["prospective", "corrective"]


@dataclass(frozen=True)
class CoachRequest:
    """What the coach sees for turn ``turn`` of an episode (missing items are ``NOT_AVAILABLE``)."""

    env_id: str
    turn: int
    history: str
    thought: str
    next_utterance: str
    style: Style = "corrective"
    action: str | None = None
    """``y_t`` as public text plus ``[tool_call] name(args)`` lines (corrective style only)."""


def note_message(note: str) -> str:
    """The content of the extra user message of a teacher row."""
    return f"{NOTE_HEADER}\n{note}"


def _cut_tail(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[-limit:]


def _public(content: Any) -> str:
    utterance, _ = split_thought(content if isinstance(content, str) else json.dumps(content))
    return utterance


def history_lines(messages: Sequence[dict[str, Any]]) -> str:
    """``[role] content`` lines (agents' private reasoning removed, each cut to 1,500 chars), last 8,000 chars."""
    lines = []
    for message in messages:
        content = message.get("content") or ""
        if message.get("role") == "assistant":
            content = _public(content)
        lines.append(f"[{message.get('role')}] {content[:MESSAGE_CHARS]}")
    return _cut_tail("\n".join(lines), HISTORY_CHARS)


def _opening_count(episode: Episode) -> int:
    stepped = sum(1 for turn in episode.turns if turn.stepped)
    return max(0, len(episode.messages) - 2 * stepped)


def build_request(
    episode: Episode,
    turn_index: int,
    *,
    style: Style = "corrective",
    pairing: Literal["answered", "reaction"] = "reaction",
    ablate_privileged: bool = False,
) -> CoachRequest:
    """The request for turn ``turn_index`` (1-based) of ``episode``.

    The defaults are the paper's coach (as :class:`~mimesis_gym.algorithms.config.CSDConfig`'s): it sees the
    history ``H_t``, the agent's message ``y_t``, the user's private reaction ``z_t`` to it and the user's next
    utterance. ``pairing="answered"`` gives the thought behind the message ``y_t`` answers instead (the release).
    """
    turn = episode.turns[turn_index - 1]
    before = episode.messages[: _opening_count(episode) + 2 * (turn_index - 1)]
    if pairing == "answered":
        thought = episode.opening_thought if turn_index == 1 else episode.turns[turn_index - 2].user_thought
    elif pairing == "reaction":
        thought = turn.user_thought
    else:
        raise ValueError(f"pairing must be 'answered' or 'reaction'; got {pairing!r}")
    utterance = turn.user_utterance if turn.stepped else None
    if ablate_privileged:
        thought, utterance = "", None
    action = None
    if style == "corrective":
        text = _public(turn.action_text)
        if isinstance(turn.parsed_action, dict):
            text += f"\n[tool_call] interact_with_env({json.dumps(turn.parsed_action, ensure_ascii=False)})"
        action = text[:ACTION_CHARS]
    return CoachRequest(
        env_id=episode.env_id,
        turn=turn_index,
        history=history_lines(before) or NOT_AVAILABLE,
        thought=NOT_AVAILABLE if thought is None else thought,
        next_utterance=NOT_AVAILABLE if utterance is None else utterance,
        style=style,
        action=action,
    )


def render_request(request: CoachRequest) -> list[dict[str, str]]:
    """The chat messages of a coach call."""
    parts = [
        f"Environment: {request.env_id}",
        f"Turn: {request.turn}",
        f"Conversation so far:\n{request.history}",
        f"The user's private thought (private material): {request.thought}",
        f"The user's next reply (private material): {request.next_utterance}",
    ]
    if request.style == "corrective":
        parts.append(f"The assistant's message at this turn:\n{request.action or NOT_AVAILABLE}")
    parts.append("Write the note now.")
    return [
        {"role": "system", "content": COACH_SYSTEM_PROMPTS[request.style]},
        {"role": "user", "content": "\n\n".join(parts)},
    ]


def skipped_env(env_id: str, skip_envs: Sequence[str]) -> bool:
    """Whether the env ``env_id`` is one of ``skip_envs`` (ids or the env table's short names, as
    :meth:`~mimesis_gym.envs.table.EnvTable.find` resolves them); a ``module:`` prefix on either side
    does not count (it only says which module registers the id)."""
    if not skip_envs:
        return False
    from mimesis_gym.envs import ENV_TABLE  # read when names are given (iterating the table loads plug-ins)

    bare = env_id.rpartition(":")[2]
    return any(ENV_TABLE.find(name).id.rpartition(":")[2] == bare for name in skip_envs)


def select_turns(episode: Episode, config: CSDConfig) -> list[int]:
    """Eligible turns (1-based): at most ``max_coached_turns``, turns with a thought first; none in ``skip_envs``."""
    if skipped_env(episode.env_id, config.skip_envs):
        return []
    candidates = [turn.index for turn in episode.turns if turn.action_tokens > 0]

    def has_thought(index: int) -> bool:
        turn = episode.turns[index - 1]
        if config.pairing == "reaction":
            return bool(turn.user_thought)
        return bool(episode.opening_thought if index == 1 else episode.turns[index - 2].user_thought)

    chosen = sorted(candidates, key=lambda i: (not has_thought(i), i))[: config.max_coached_turns]
    return sorted(chosen)


def load_callable(target: str | Callable[..., Any]) -> Callable[..., Any]:
    """A callable from ``"module:function"`` (or the callable itself), for ``csd.coach.callable``."""
    if callable(target):
        return target
    return import_object(str(target), setting="csd.coach.callable")


class ScriptedCoach:
    """A coach from a callable ``CoachRequest → str | None`` (sync or async)."""

    def __init__(self, function: str | Callable[..., Any]) -> None:
        self.function = load_callable(function)

    async def note(self, request: CoachRequest, *, seed: int | None = None) -> tuple[str | None, bool]:
        """``(raw note, failed)``."""
        result = self.function(request)
        if inspect.isawaitable(result):
            result = await result
        return result, False


class ChatCoach:
    """A coach backed by a chat model of the users registry (``max_tokens`` 300 by default)."""

    def __init__(self, model: Any, *, max_tokens: int = 300, temperature: float = 1.0) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature

    async def note(self, request: CoachRequest, *, seed: int | None = None) -> tuple[str | None, bool]:
        reply = await self.model.chat(
            render_request(request), max_tokens=self.max_tokens, temperature=self.temperature, seed=seed
        )
        if reply.failure is not None:
            return None, True
        return reply.text, False


@dataclass
class CoachStats:
    """Counts of one batch's coaching (the ``csd/*`` metrics)."""

    episodes: int = 0
    requests: int = 0
    notes: int = 0
    none: int = 0
    failed: int = 0
    dropped_leak: int = 0
    notes_by_rollout: dict[str, int] = field(default_factory=dict)

    def metrics(self) -> dict[str, float]:
        requests = max(1, self.requests)
        return {
            "csd/notes_per_episode": self.notes / max(1, self.episodes),
            "csd/none_frac": self.none / requests,
            "csd/coach_fail_frac": self.failed / requests,
            "csd/notes_dropped_leak": float(self.dropped_leak),
        }


def _privileged_text(episode: Episode) -> str:
    return json.dumps(episode.privileged, ensure_ascii=False, default=str)


def _public_text(episode: Episode) -> str:
    return "\n".join(str(message.get("content") or "") for message in episode.messages)


async def _coach_all(
    coach: Any, jobs: list[tuple[Episode, int, CoachRequest]], concurrency: int, seed: int
) -> list[tuple[str | None, bool]]:
    semaphore = asyncio.Semaphore(concurrency)

    async def one(k: int, request: CoachRequest) -> tuple[str | None, bool]:
        async with semaphore:
            try:
                return await coach.note(request, seed=seed + k)
            except Exception:  # a failed call gives no note
                return None, True

    return list(await asyncio.gather(*(one(k, request) for k, (_, _, request) in enumerate(jobs))))


def coach_episodes(
    episodes: Sequence[Episode], coach: Any, config: CSDConfig, *, seed: int = 0, runner: Any = None
) -> CoachStats:
    """Write ``episode.notes`` for the selected turns of every episode (all calls concurrently).

    ``runner`` runs a coroutine to completion (a :class:`~mimesis_gym.core.asyncbridge.LoopThread`'s
    ``run``, so a chat model's clients stay on one loop); default ``asyncio.run``.
    """
    stats = CoachStats(episodes=len(episodes))
    jobs: list[tuple[Episode, int, CoachRequest]] = []
    for episode in episodes:
        for index in select_turns(episode, config):
            request = build_request(
                episode,
                index,
                style=config.coach.style,
                pairing=config.pairing,
                ablate_privileged=config.ablate_privileged,
            )
            jobs.append((episode, index, request))
    stats.requests = len(jobs)
    if not jobs:
        return stats
    coroutine = _coach_all(coach, jobs, config.coach.concurrency, seed)
    results = runner(coroutine) if runner is not None else asyncio.run(coroutine)
    for (episode, index, _), (raw, failed) in zip(jobs, results, strict=True):
        if failed:
            stats.failed += 1
            continue
        text = (raw or "").strip()
        if not text or text.upper().startswith("NONE"):
            stats.none += 1
            continue
        privileged, public = _privileged_text(episode), _public_text(episode)
        cut = text[: config.coach.max_note_chars]
        if config.coach.leak_filter and leaked_items(cut, privileged, public):
            stats.dropped_leak += 1
            continue
        note = clean_note(
            cut, privileged=privileged, public=public, max_chars=config.coach.max_note_chars, leak_filter=False
        )
        if note is not None:
            episode.notes[index] = note
            stats.notes += 1
            stats.notes_by_rollout[episode.rollout_id] = stats.notes_by_rollout.get(episode.rollout_id, 0) + 1
    return stats
