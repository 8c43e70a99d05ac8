"""TelepathyGym roles: the answerer (user) and the guess judge (docs/envs/telepathy.md, "Roles")."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.jsonfix import field_text
from mimesis_gym.core.roles import LLMRole, RoleResult, ScriptedRole
from mimesis_gym.envs._matching import is_negated, norm, norm_tokens
from mimesis_gym.envs._roles import LLMYesNoRole
from mimesis_gym.envs._userrl import fill
from mimesis_gym.envs.telepathy.tasks import TelepathyPack, TelepathyTask

__all__ = [
    "ANSWERER_FALLBACK",
    "JUDGE_FALLBACK",
    "LLMAnswerer",
    "LLMGuessJudge",
    "ScriptedAnswerer",
    "ScriptedGuessJudge",
    "guess_is_correct",
]

ANSWERER_FALLBACK = "I can't answer that question right now. Please ask another one."
JUDGE_FALLBACK = "I can't evaluate your guess right now. Please try again."
CORRECT_FEEDBACK = "Yes! You read my mind. Well done!"
WRONG_FEEDBACK = "No, that is not what I am thinking of. Keep asking and try again!"

_KIND_RANK = {"property": 0, "identity": 1, "hypernym": 2, "colour": 3}
_LEADING = tuple(
    tuple(phrase.split())
    for phrase in (
        "it is",
        "its",
        "is it",
        "the answer is",
        "my guess is",
        "i think it is",
        "i think its",
        "you are thinking of",
        "a",
        "an",
        "the",
    )
)


@dataclass(frozen=True)
class _Entry:
    kind: str
    phrase: str  # vocabulary form
    forms: tuple[str, ...]  # padded norm forms that match (plural forms included)
    name: str = ""  # property name


def _plural_forms(phrase: str) -> tuple[str, ...]:
    words = norm_tokens(phrase)
    if not words:
        return ()
    head, last = words[:-1], words[-1]
    variants = {last, last + "s", last + "es"}
    if len(last) > 1 and last.endswith("y") and last[-2] not in "aeiou":
        variants.add(last[:-1] + "ies")
    return tuple(" " + " ".join([*head, variant]) + " " for variant in sorted(variants))


@lru_cache(maxsize=8)
def _vocabulary_entries(pack: TelepathyPack) -> tuple[_Entry, ...]:
    """Every candidate phrase, sorted by the choice rule: longest vocabulary form first, then kind."""
    vocabulary = pack.vocabulary
    assert vocabulary is not None
    entries: list[tuple[int, int, int, _Entry]] = []
    order = 0

    def add(kind: str, phrase: str, forms: tuple[str, ...], name: str = "") -> None:
        nonlocal order
        key = norm(phrase).strip()
        if key:
            entries.append((-len(key), _KIND_RANK[kind], order, _Entry(kind, phrase, forms, name)))
            order += 1

    for name, patterns in vocabulary.properties:
        for pattern in patterns:
            add("property", pattern, (norm(pattern),), name)
    for split in ("train", "test", "demo"):
        for task in pack.splits.get(split, ()):
            for phrase in task.names:
                add("identity", phrase, _plural_forms(phrase))
    seen = set()
    hypernyms = list(vocabulary.nouns) + [h for task in pack for h in (task.hypernyms or ())]
    for phrase in hypernyms:
        if norm(phrase) not in seen:
            seen.add(norm(phrase))
            add("hypernym", phrase, _plural_forms(phrase))
    for colour in vocabulary.colours:
        add("colour", colour, (norm(colour),))
    entries.sort(key=lambda item: item[:3])
    return tuple(entry for *_, entry in entries)


def scripted_reply(question: str, task: TelepathyTask, pack: TelepathyPack) -> tuple[str, dict[str, str] | None]:
    """The scripted answer to ``question`` about ``task`` and the vocabulary entry it used."""
    text = norm(question)
    chosen = next((entry for entry in _vocabulary_entries(pack) if any(f in text for f in entry.forms)), None)
    if chosen is None:
        return "Maybe", None
    names = {norm(name) for name in task.names}
    if chosen.kind == "identity":
        answer = "Yes" if norm(chosen.phrase) in names else "No"
    elif chosen.kind == "hypernym":
        answer = "Yes" if norm(chosen.phrase) in names | {norm(h) for h in task.hypernyms or ()} else "No"
    elif chosen.kind == "colour":
        answer = "Yes" if norm(chosen.phrase) in {norm(c) for c in task.colors or ()} else "No"
    else:
        value = (task.attributes or {}).get(chosen.name)
        answer = "Maybe" if value is None else "Yes" if value else "No"
    if is_negated(question):
        answer = {"Yes": "No", "No": "Yes"}.get(answer, answer)
    return answer, {"kind": chosen.kind, "phrase": chosen.phrase}


def _strip_leading(tokens: list[str]) -> list[str]:
    changed = True
    while changed and tokens:
        changed = False
        for phrase in _LEADING:
            if tuple(tokens[: len(phrase)]) == phrase and len(tokens) > len(phrase):
                tokens = tokens[len(phrase) :]
                changed = True
                break
    return tokens


def guess_is_correct(guess: str, task: TelepathyTask) -> bool:
    """The scripted guess judge: leading filler stripped, the rest equals a name (article optional)."""
    rest = " ".join(_strip_leading(norm_tokens(guess)))
    targets = set()
    for name in task.names:
        tokens = norm_tokens(name)
        targets.add(" ".join(tokens))
        if tokens and tokens[0] in ("a", "an", "the"):
            targets.add(" ".join(tokens[1:]))
    return bool(rest) and rest in targets


class ScriptedAnswerer(ScriptedRole[str]):
    name: ClassVar[str] = "answerer"

    def __init__(self, pack: TelepathyPack) -> None:
        self.pack = pack

    def decide(self, *, question: str, task: TelepathyTask, **_: Any) -> RoleResult[str]:
        answer, matched = scripted_reply(question, task, self.pack)
        return RoleResult(answer, utterance=answer, parsed={"matched": matched})


class ScriptedGuessJudge(ScriptedRole[tuple[float, str]]):
    name: ClassVar[str] = "guess_judge"

    def decide(self, *, guess: str, task: TelepathyTask, **_: Any) -> RoleResult[tuple[float, str]]:
        correct = guess_is_correct(guess, task)
        feedback = CORRECT_FEEDBACK if correct else WRONG_FEEDBACK
        return RoleResult(
            (1.0 if correct else 0.0, feedback), parsed={"judgment": "Yes" if correct else "No", "feedback": feedback}
        )


ANSWERER_SYSTEM = """\
You are a telepathic entity in a mind-reading game, and you are thinking of the target entity below. \
The player asks yes-or-no questions to find it. Answer honestly: "Yes" if the question is true of \
the target, "No" if it is false, and "Maybe" only when the question is ambiguous or cannot be \
decided. Be helpful, so that a good questioner can succeed.
Answer in a fenced JSON block: ```json\n{"thought": "<your reasoning>", "response": "Yes|No|Maybe"}\n```"""

JUDGE_SYSTEM = """\
You are a telepathic entity in a mind-reading game, and you are thinking of the target entity below. \
Judge whether the player's final guess identifies the target. Say "Yes" only for an exact or clearly \
equivalent (synonymous) identification; partial or close guesses are "No"; there is no partial \
credit. Write concise feedback to the player in the second person, congratulating or encouraging \
them, without ever revealing the target.
Answer in a fenced JSON block: ```json\n{"thought": "...", "judgment": "Yes|No", "feedback": "..."}\n```"""


USERRL_PROMPTS = ("ACTION_SYS", "ACTION_USER", "ANSWER_SYS", "ANSWER_USER")
"""Constants of UserRL's ``telepathygym/env/prompts.py`` used by ``prompt_set="userrl"``."""


def _userrl_messages(templates: dict[str, str], prefix: str, values: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": fill(templates[f"{prefix}_SYS"], values)},
        {"role": "user", "content": fill(templates[f"{prefix}_USER"], values)},
    ]


class LLMAnswerer(LLMYesNoRole):
    name: ClassVar[str] = "answerer"
    fallback_text: ClassVar[str] = ANSWERER_FALLBACK

    def build_messages(
        self, *, question: str, task: TelepathyTask, history: tuple[tuple[str, str], ...] = (), **_: Any
    ) -> list[dict[str, Any]]:
        if self.templates is not None:
            values = {"<target_entity>": task.target_entity, "<user_question>": question}
            return _userrl_messages(self.templates, "ACTION", values)
        return self.question_messages(ANSWERER_SYSTEM, [f"Target entity: {task.target_entity}"], question, history)


class LLMGuessJudge(LLMRole[tuple[float, str]]):
    name: ClassVar[str] = "guess_judge"
    json_keys: ClassVar[tuple[str, ...] | None] = ("judgment", "feedback")
    max_tokens = 2048

    def build_messages(self, *, guess: str, task: TelepathyTask, **_: Any) -> list[dict[str, Any]]:
        if self.templates is not None:
            values = {"<target_entity>": task.target_entity, "<user_guess>": guess}
            return _userrl_messages(self.templates, "ANSWER", values)
        user = f"Target entity: {task.target_entity}\n\nThe player's guess: {guess}"
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> tuple[float, str]:
        parsed = parsed or {}
        judgment, feedback = parsed.get("judgment"), parsed.get("feedback")
        feedback = field_text(feedback)  # UserRL passed a non-string feedback on as it was
        lenient = self.lenient and isinstance(judgment, str)
        correct = judgment.strip().lower() == "yes" if lenient else judgment == "Yes"  # type: ignore[union-attr]
        return (1.0 if correct else 0.0), feedback

    def fallback(self, **_: Any) -> tuple[float, str]:
        return 0.0, JUDGE_FALLBACK
