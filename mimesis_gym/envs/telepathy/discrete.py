"""TelepathyGym as a classic RL problem: discrete actions, a fixed-length vector observation.

``TelepathyDiscreteEnv`` drives a real ``mimesis/TelepathyGym-v0`` episode (scripted user, original
pack) and translates in both directions, so that off-the-shelf RL libraries (stable-baselines3,
CleanRL, …) can play twenty questions without a language model:

- **action** ``a`` (``Discrete(Q + M)``): ``a < Q`` sends ``[action] <question a>``; ``a >= Q`` sends
  ``[answer] <title of candidate a - Q>``.
- **observation** (``Box(0, 1, (4·Q + M + T + 1,), float32)``), laid out as ``self.layout`` says:

  | block | size | meaning |
  |---|---|---|
  | ``answers`` | 4·Q | per question, one-hot ``[unasked, yes, no, unknown]`` (unknown: "Maybe" or another reply) |
  | ``wrong_guesses`` | M | 1.0 for each candidate already guessed wrongly |
  | ``teaser`` | T | one-hot of the opening teaser ("I am thinking of an animal…"); T = 0 with ``show_teaser=False`` |
  | ``turn`` | 1 | turns used / ``max_episode_steps`` |

- **reward, terminated, truncated**: the wrapped env's, unchanged (1.0 for the correct guess, which
  terminates; 0.0 otherwise; truncation after ``max_episode_steps`` = 16 turns). A wrong guess costs a
  turn and earns 0.0, exactly as in the text env.
- **info**: the wrapped env's info plus ``action_text`` (the text sent).

The **candidates** (M) are the tasks of ``split`` (or ``task_ids``), optionally only some
``categories``; ``reset`` draws the target uniformly among them with this env's ``np_random``
(``options={"task_id": …}`` picks one) and seeds the wrapped env from it, so ``reset(seed=s)`` fixes
the whole episode.

The **questions** (Q) are derived once from what the scripted answerer understands: one hand-written
question per property of ``attributes.json``, ``Is it a <noun>?`` for every hypernym of a candidate,
``Is it <colour>?`` for every colour of a candidate. Each question is checked to be answered through
the intended vocabulary phrase. With ``distinct_questions=True`` (default) a question is dropped when
the candidates' records give it the same value for all of them, or the same values as an earlier
question (``gray`` after ``grey``, ``human being`` after ``person``). During an episode the answers are
read from the wrapped env's observation text, never looked up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from gymnasium.error import InvalidAction, ResetNeeded

from mimesis_gym.envs._matching import is_negated, norm
from mimesis_gym.envs.telepathy.roles import scripted_reply
from mimesis_gym.envs.telepathy.tasks import TelepathyPack, TelepathyTask

__all__ = [
    "ANSWER_STATES",
    "DISCRETE_ENV_ID",
    "PROPERTY_QUESTIONS",
    "InvalidDiscreteAction",
    "Question",
    "TelepathyDiscreteEnv",
    "derive_questions",
    "register_discrete_env",
]

ENV_ID = "mimesis/TelepathyGym-v0"
DISCRETE_ENV_ID = "mimesis/TelepathyDiscrete-v0"
"""The Gymnasium id :func:`register_discrete_env` registers (truncation comes from the wrapped env)."""
ANSWER_STATES = ("unasked", "yes", "no", "unknown")
"""The one-hot states of a question, in observation order."""

PROPERTY_QUESTIONS: dict[str, str] = {
    "alive": "Is it alive?",
    "real": "Does it exist in real life?",
    "fictional": "Is it fictional?",
    "man_made": "Is it man made?",
    "natural": "Is it found in nature?",
    "bigger_than_person": "Is it bigger than a person?",
    "bigger_than_car": "Is it bigger than a car?",
    "fits_in_hand": "Can it fit in your hand?",
    "edible": "Can you eat it?",
    "electronic": "Is it electronic?",
    "indoors": "Is it usually indoors?",
    "fly": "Can it fly?",
    "water": "Does it live in water?",
    "legs": "Does it have legs?",
    "four_legs": "Does it have four legs?",
    "wheels": "Does it have wheels?",
    "europe": "Is it from Europe?",
    "asia": "Is it from Asia?",
    "africa": "Is it from Africa?",
    "americas": "Is it from the Americas?",
    "old": "Is it more than 100 years old?",
    "modern": "Is it modern?",
    "transport": "Is it used for transport?",
    "music": "Does it make music?",
    "sport_related": "Is it related to sports?",
    "female": "Is it female?",
    "male": "Is it male?",
    "dangerous": "Is it dangerous?",
    "fur": "Does it have fur?",
    "meat_eater": "Does it eat meat?",
    "in_space": "Is it in space?",
    "sweet": "Is it sweet?",
    "famous": "Is it famous?",
}
"""A natural question per property name; a property missing here is asked as ``Is it <first pattern>?``."""


@dataclass(frozen=True)
class Question:
    """One question action: the text sent and the vocabulary entry it must be answered through."""

    text: str
    kind: str  # "property" | "hypernym" | "colour"
    subject: str  # the property name, the noun or the colour


def _article(noun: str) -> str:
    return "an" if noun[:1].lower() in "aeiou" else "a"


def _vocabulary_questions(pack: TelepathyPack, pool: Sequence[TelepathyTask]) -> list[Question]:
    """Every candidate question in vocabulary order: properties, then nouns, then colours."""
    vocabulary = pack.vocabulary
    assert vocabulary is not None
    questions = [
        Question(PROPERTY_QUESTIONS.get(name, f"Is it {patterns[0]}?"), "property", name)
        for name, patterns in vocabulary.properties
    ]
    pool_nouns = {norm(h) for task in pool for h in task.hypernyms or ()}
    nouns = list(vocabulary.nouns) + [h for task in pool for h in task.hypernyms or ()]
    seen: set[str] = set()
    for noun in nouns:
        if norm(noun) in pool_nouns and norm(noun) not in seen:
            seen.add(norm(noun))
            questions.append(Question(f"Is it {_article(noun)} {noun}?", "hypernym", noun))
    pool_colours = {norm(c) for task in pool for c in task.colors or ()}
    questions += [Question(f"Is it {c}?", "colour", c) for c in vocabulary.colours if norm(c) in pool_colours]
    return questions


def _answered_as_intended(question: Question, pack: TelepathyPack, task: TelepathyTask) -> bool:
    """Whether the scripted answerer reads ``question`` through the intended vocabulary entry."""
    _, matched = scripted_reply(question.text, task, pack)
    if matched is None or matched["kind"] != question.kind or is_negated(question.text):
        return False
    if question.kind == "property":
        patterns = dict(pack.vocabulary.properties)[question.subject]  # type: ignore[union-attr]
        return matched["phrase"] in patterns
    return norm(matched["phrase"]) == norm(question.subject)


def _recorded_value(question: Question, task: TelepathyTask) -> bool | None:
    """What the task's record says about a question's subject (the scripted answer, before wording)."""
    if question.kind == "property":
        return (task.attributes or {}).get(question.subject)
    if question.kind == "hypernym":
        return norm(question.subject) in {norm(name) for name in (*task.names, *(task.hypernyms or ()))}
    return norm(question.subject) in {norm(colour) for colour in task.colors or ()}


def derive_questions(
    pack: TelepathyPack, pool: Sequence[TelepathyTask], *, distinct: bool = True
) -> tuple[Question, ...]:
    """The question actions for ``pool`` (see the module docstring); raises ``ValueError`` when a
    hand-written property question is not understood as that property."""
    kept: list[Question] = []
    signatures: set[tuple[bool | None, ...]] = set()
    for question in _vocabulary_questions(pack, pool):
        if not _answered_as_intended(question, pack, pool[0]):
            if question.kind == "property" and question.subject in PROPERTY_QUESTIONS:
                raise ValueError(f"the scripted answerer does not read {question.text!r} as {question.subject!r}")
            continue
        if distinct:
            signature = tuple(_recorded_value(question, task) for task in pool)
            if len(set(signature)) == 1 or signature in signatures:
                continue
            signatures.add(signature)
        kept.append(question)
    return tuple(kept)


class InvalidDiscreteAction(InvalidAction, ValueError):
    """An action outside the ``Discrete`` space: a float, a string, a bool or an int out of range."""


class TelepathyDiscreteEnv(gym.Env[np.ndarray, np.int64]):
    """Twenty questions with ``Discrete`` actions and a ``Box`` observation (contract: module docstring).

    Args:
        split: the pool of candidate entities (``train``, ``test`` or ``demo`` of the original pack).
        task_ids: the candidates are these tasks (any split, in this order) instead of ``split``'s.
        categories: keep only candidates whose ``category`` is listed (e.g. ``["animal"]``).
        show_teaser: include the one-hot of the opening teaser (the category the user announces).
        distinct_questions: drop questions that cannot tell candidates apart or repeat another's answers.
        **env_kwargs: passed to ``gym.make("mimesis/TelepathyGym-v0", …)`` (e.g. ``reward_profile``,
            ``step_penalty``); ``user`` defaults to ``"scripted"``, the pack must be ``original``.

    Raises:
        ValueError: an unknown task id, an empty pool, or a pack without the scripted vocabulary.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(
        self,
        *,
        split: str = "train",
        task_ids: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        show_teaser: bool = True,
        distinct_questions: bool = True,
        **env_kwargs: Any,
    ) -> None:
        env_kwargs.setdefault("user", "scripted")
        self.conversation = gym.make(ENV_ID, split=split, **env_kwargs)
        pack: TelepathyPack = self.conversation.unwrapped.task_pack  # type: ignore[attr-defined]
        if pack.vocabulary is None:
            raise ValueError("TelepathyDiscreteEnv needs the original pack's vocabulary (pack='original')")
        if task_ids is None:
            self.candidates: tuple[TelepathyTask, ...] = tuple(pack.splits.get(split, ()))
        else:
            by_id = {task.id: task for tasks in pack.splits.values() for task in tasks}
            unknown = [task_id for task_id in task_ids if task_id not in by_id]
            if unknown:
                raise ValueError(f"unknown telepathy task ids {unknown}; known ids look like 'telepathy-0001'")
            self.candidates = tuple(by_id[task_id] for task_id in task_ids)
        if categories is not None:
            self.candidates = tuple(task for task in self.candidates if task.category in set(categories))
        if not self.candidates:
            raise ValueError(
                f"no candidate entities in split {split!r} with categories {categories}; "
                "splits are 'train', 'test', 'demo', categories look like 'animal' or 'musical_instrument'"
            )
        self.questions = derive_questions(pack, self.candidates, distinct=distinct_questions)
        self.teasers: tuple[str, ...] = (
            tuple(dict.fromkeys(task.description for task in self.candidates)) if show_teaser else ()
        )
        self.max_turns = int(self.conversation.spec.max_episode_steps or 16)  # type: ignore[union-attr]

        q, m, t = len(self.questions), len(self.candidates), len(self.teasers)
        self.layout = {
            "answers": slice(0, 4 * q),
            "wrong_guesses": slice(4 * q, 4 * q + m),
            "teaser": slice(4 * q + m, 4 * q + m + t),
            "turn": slice(4 * q + m + t, 4 * q + m + t + 1),
        }
        self.action_space = spaces.Discrete(q + m)
        self.observation_space = spaces.Box(0.0, 1.0, shape=(4 * q + m + t + 1,), dtype=np.float32)
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        self._needs_reset = True

    def action_text(self, action: int) -> str:
        """The text action that discrete ``action`` sends to the conversation env.

        Raises :class:`InvalidDiscreteAction` (a ``ValueError``) for anything the ``Discrete`` space
        does not contain, as Gymnasium's own envs reject such actions: ``3.7``, ``"3"`` and
        ``True`` are refused, not converted.
        """
        if isinstance(action, (bool, np.bool_)) or not self.action_space.contains(action):
            raise InvalidDiscreteAction(
                f"action {action!r} ({type(action).__name__}) is outside Discrete({self.action_space.n}): "
                f"pass an int from 0 to {self.action_space.n - 1}"
            )
        action = int(action)
        if action < len(self.questions):
            return f"[action] {self.questions[action].text}"
        return f"[answer] {self.candidates[action - len(self.questions)].title}"

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Draw a target among the candidates (or take ``options["task_id"]``) and start its episode."""
        super().reset(seed=seed)
        options = dict(options or {})
        if "task_id" not in options:
            options["task_id"] = self.candidates[int(self.np_random.integers(len(self.candidates)))].id
        text, info = self.conversation.reset(seed=int(self.np_random.integers(0, 2**31 - 1)), options=options)
        self._needs_reset = False
        self._obs = np.zeros(self.observation_space.shape, dtype=np.float32)
        answers = self._obs[self.layout["answers"]].reshape(-1, 4)
        answers[:, 0] = 1.0  # every question starts unasked
        teaser = self._obs[self.layout["teaser"]]
        first_line = text.split("\n", 1)[0]
        for index, description in enumerate(self.teasers):
            if first_line == description:
                teaser[index] = 1.0
        return self._obs.copy(), info

    def step(self, action: np.int64 | int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        """Send the action's text, record what the user said, and pass the reward through.

        Raises ``ResetNeeded`` before the first ``reset`` and after the episode terminated or was
        truncated, and :class:`InvalidDiscreteAction` for an action outside the space.
        """
        if self._needs_reset:
            raise ResetNeeded("call reset() before step(): the episode has not started, terminated or was truncated")
        sent = self.action_text(action)  # type: ignore[arg-type]
        text, reward, terminated, truncated, info = self.conversation.step(sent)
        self._needs_reset = bool(terminated or truncated)
        action = int(action)
        if action < len(self.questions):
            reply = text.split("\n", 1)[0].strip()  # the train profile appends a reward line
            state = {"Yes": 1, "No": 2}.get(reply, 3)
            row = self._obs[self.layout["answers"]].reshape(-1, 4)[action]
            row[:] = 0.0
            row[state] = 1.0
        elif not terminated:
            self._obs[self.layout["wrong_guesses"]][action - len(self.questions)] = 1.0
        self._obs[self.layout["turn"]] = min(1.0, int(info["turn"]) / self.max_turns)
        return self._obs.copy(), float(reward), bool(terminated), bool(truncated), {**info, "action_text": sent}

    def close(self) -> None:
        self.conversation.close()
        super().close()


def register_discrete_env() -> None:
    """Register :data:`DISCRETE_ENV_ID` with Gymnasium (idempotent), so ``gym.make`` and spec-based
    tools (``check_env``'s render and close checks, vector envs) work."""
    if DISCRETE_ENV_ID not in gym.registry:
        gym.register(id=DISCRETE_ENV_ID, entry_point=f"{__name__}:TelepathyDiscreteEnv")
