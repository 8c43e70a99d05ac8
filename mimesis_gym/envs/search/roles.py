"""SearchGym's only role: the answer judge. There is no simulated user persona.

See docs/envs/search.md, "The answer check and the judge".

The env checks a normalised exact match first (no role call); only a mismatch reaches the judge.
The scripted judge is UserRL's ``"rule"`` method (exact match, plus the pack's aliases); the LLM
judge decides "Yes"/"No" from the question, the model's answer and the correct answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.jsonfix import field_text
from mimesis_gym.core.roles import LLMRole, RoleResult, RoleSession, ScriptedRole
from mimesis_gym.envs._userrl import fill
from mimesis_gym.envs.search.tasks import SearchTask

__all__ = [
    "JUDGE_SYSTEM",
    "USERRL_PROMPTS",
    "Judgement",
    "LLMAnswerJudge",
    "ScriptedAnswerJudge",
    "exact_match",
    "norm",
]

USERRL_PROMPTS = ("ANSWER_SYS", "ANSWER_USER")
"""Constants of UserRL's ``searchgym/env/prompts.py`` used by ``prompt_set="userrl"``."""


def norm(text: str) -> str:
    """UserRL's answer normalisation: the lower-cased alphanumeric characters of ``text``, joined."""
    return "".join(ch.lower() for ch in text if ch.isalnum())


def exact_match(answer: str, gold: str, aliases: Sequence[str] = ()) -> bool:
    """``norm(answer)`` equals ``norm`` of the gold answer or of an alias (an empty ``norm`` never matches)."""
    key = norm(answer)
    return bool(key) and any(key == norm(candidate) for candidate in (gold, *aliases))


@dataclass(frozen=True, slots=True)
class Judgement:
    """The judge's decision: ``judgment`` is the judge's label ("Yes", "No", "Error" on failure)."""

    correct: bool
    judgment: str | None
    feedback: str | None = None


ERROR_JUDGEMENT = Judgement(False, "Error", None)


class ScriptedAnswerJudge(ScriptedRole[Judgement]):
    """Exact match against the answer and its aliases only."""

    name: ClassVar[str] = "answer_judge"

    def decide(self, *, answer: str, task: SearchTask, **_: Any) -> Judgement:
        correct = exact_match(answer, task.answer, task.aliases)
        return Judgement(correct, "Yes" if correct else "No")


JUDGE_SYSTEM = """\
You grade answers to questions. You are given a question, a model's answer to it and the correct answer. \
Decide whether the model's answer is correct.
- Say "Yes" if the model's answer names the same thing as the correct answer, or gives an identification that \
is clearly equivalent in the context of the question (different wording, spelling or level of detail that \
still picks out the same answer). Think about what the question asks; do not compare the strings alone.
- Say "No" otherwise, including for answers that are vague, partly wrong or name something else.
Then write one or two sentences of feedback to the model, addressed as "you". The feedback must never reveal \
the correct answer or hint at it.
Reply with a fenced JSON block:
```json
{"reasoning": "<your reasoning>", "judgment": "Yes|No", "feedback": "<feedback to the model>"}
```"""


class LLMAnswerJudge(LLMRole[Judgement]):
    """The LLM judge: correct iff ``judgment == "Yes"`` (``lenient``: case-insensitive after strip).

    A failed call, unparseable JSON or a missing key is a role failure: the answer counts as incorrect
    (judgment "Error"). A non-string ``judgment`` or ``feedback`` is kept as its ``str`` (UserRL
    accepted any type): ``5`` is judgment "5", incorrect.
    """

    name: ClassVar[str] = "answer_judge"
    json_keys: ClassVar[tuple[str, ...] | None] = ("reasoning", "judgment", "feedback")
    max_tokens = 512
    temperature = 0.0

    def build_messages(self, *, answer: str, task: SearchTask, **_: Any) -> list[dict[str, Any]]:
        if self.templates is not None:
            values = {"<question>": task.question, "<model_answer>": answer, "<correct_answer>": task.answer}
            return [
                {"role": "system", "content": fill(self.templates["ANSWER_SYS"], values)},
                {"role": "user", "content": fill(self.templates["ANSWER_USER"], values)},
            ]
        user = f"Question: {task.question}\n\nModel's answer: {answer}\n\nCorrect answer: {task.answer}"
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> Judgement:
        parsed = parsed or {}
        judgment, feedback = parsed.get("judgment"), parsed.get("feedback")
        # UserRL compared any judgment with "Yes" and passed any feedback on: neither rejects the reply.
        judgment, feedback = field_text(judgment), field_text(feedback)
        correct = judgment.strip().lower() == "yes" if self.lenient else judgment == "Yes"
        return Judgement(correct, judgment, feedback)

    def fallback(self, **_: Any) -> Judgement:
        return ERROR_JUDGEMENT

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[Judgement]:
        result = await super().__call__(session, **materials)
        if result.parsed is not None:  # the privileged "thought" is the JSON "reasoning" field
            session.step_thoughts.setdefault(self.name, {})["thought"] = result.parsed.get("reasoning")
        return result
