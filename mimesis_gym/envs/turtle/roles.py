"""TurtleGym roles: the oracle (user) answering questions and the rubric judge scoring stories.

See docs/envs/turtle.md, "Roles".
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleResult, ScriptedRole
from mimesis_gym.envs._matching import is_negated, spec_matches
from mimesis_gym.envs._roles import LLMYesNoRole
from mimesis_gym.envs._userrl import fill
from mimesis_gym.envs.turtle.tasks import Criterion, Fact, TurtleTask

__all__ = [
    "FALLBACK_TEXT",
    "LLMOracle",
    "LLMRubric",
    "ScriptedOracle",
    "ScriptedRubric",
    "scripted_answer",
    "scripted_criterion_score",
]

FALLBACK_TEXT = "Feedback is not available right now. Please try again."

# -- scripted ------------------------------------------------------------------------------------


def scripted_answer(question: str, facts: Sequence[Fact]) -> tuple[str, Fact | None]:
    """The strongest matching fact's answer (ties: earliest), inverted for a negated question."""
    best: Fact | None = None
    for fact in facts:
        if spec_matches(fact.keywords, question) and (best is None or len(fact.keywords) > len(best.keywords)):
            best = fact
    if best is None:
        return "Maybe", None
    answer = best.answer
    if is_negated(question):
        answer = {"Yes": "No", "No": "Yes"}.get(answer, answer)
    return answer, best


def scripted_criterion_score(criterion: Criterion, story: str) -> float:
    """1.0 when every keyword group matches, 0.5 when at least half do, else 0.0."""
    groups = criterion.keywords or []
    if not groups:
        return 0.0
    hit = sum(1 for group in groups if spec_matches([group], story))
    fraction = hit / len(groups)
    return 1.0 if fraction == 1 else 0.5 if fraction >= 0.5 else 0.0


class ScriptedOracle(ScriptedRole[str]):
    name: ClassVar[str] = "oracle"

    def decide(self, *, question: str, task: TurtleTask, **_: Any) -> RoleResult[str]:
        answer, fact = scripted_answer(question, task.facts or ())
        return RoleResult(answer, utterance=answer, parsed={"fact": fact.statement if fact else None})


class ScriptedRubric(ScriptedRole[list[float]]):
    name: ClassVar[str] = "rubric"

    def decide(self, *, story: str, task: TurtleTask, **_: Any) -> list[float]:
        return [scripted_criterion_score(criterion, story) for criterion in task.criteria]


# -- LLM -----------------------------------------------------------------------------------------

ORACLE_SYSTEM = """\
You are the host of a Turtle Soup game, a lateral-thinking puzzle. You know the puzzle's surface \
(what the player was told) and its bottom (the true hidden story). The player asks you questions \
to uncover the bottom. Reply with exactly one word:
- "Yes" if the question is correct or consistent with the bottom;
- "No" if it contradicts the bottom or is far from it;
- "Maybe" if the surface and bottom cannot decide it, or it is irrelevant.
Be decisive and use "Maybe" as rarely as you can.
Answer in a fenced JSON block: ```json\n{"thought": "<your reasoning>", "response": "Yes|No|Maybe"}\n```"""

RUBRIC_SYSTEM = """\
You judge a player's story in a Turtle Soup game against the hidden true story (the bottom), using \
an evaluation protocol. For every criterion of the protocol give a score of 0 (not even close), 0.5 \
(partly aligned) or 1.0 (fully correct), with a short thought that justifies it. Keep the criteria \
in the protocol's number and order and copy each statement exactly. Then write concise feedback to \
the player in the second person that names only what they got right and reveals nothing of the \
bottom or of the protocol.
Answer in a fenced JSON block: ```json\n{"scores": [{"statement": "...", "thought": "...", "score": 1.0}, ...], \
"feedback": "..."}\n```"""


USERRL_PROMPTS = ("ACTION_SYS", "ACTION_USER", "ANSWER_SYS", "ANSWER_USER")
"""Constants of UserRL's ``turtlegym/env/prompts.py`` used by ``prompt_set="userrl"``."""


def _protocol(task: TurtleTask) -> str:
    """The rubric's criteria as UserRL serialised them: ``json.dumps`` with 4-space indent, non-ASCII escaped."""
    return json.dumps([{"statement": c.statement} for c in task.criteria], indent=4)


class LLMOracle(LLMYesNoRole):
    name: ClassVar[str] = "oracle"
    fallback_text: ClassVar[str] = FALLBACK_TEXT

    def build_messages(
        self, *, question: str, task: TurtleTask, history: Sequence[tuple[str, str]] = (), **_: Any
    ) -> list[dict[str, Any]]:
        if self.templates is not None:
            values = {"<surface>": task.surface, "<bottom>": task.bottom, "<query>": question}
            return [
                {"role": "system", "content": fill(self.templates["ACTION_SYS"], values)},
                {"role": "user", "content": fill(self.templates["ACTION_USER"], values)},
            ]
        return self.question_messages(
            ORACLE_SYSTEM, [f"Surface: {task.surface}", f"Bottom: {task.bottom}"], question, history
        )


class LLMRubric(LLMRole[list[float]]):
    name: ClassVar[str] = "rubric"
    json_keys: ClassVar[tuple[str, ...] | None] = ("scores",)
    max_tokens = 2048

    def build_messages(self, *, story: str, task: TurtleTask, **_: Any) -> list[dict[str, Any]]:
        protocol = _protocol(task)
        if self.templates is not None:
            values = {"<protocol>": protocol, "<surface>": task.surface, "<bottom>": task.bottom, "<user>": story}
            return [
                {"role": "system", "content": fill(self.templates["ANSWER_SYS"], values)},
                {"role": "user", "content": fill(self.templates["ANSWER_USER"], values)},
            ]
        user = (
            f"Surface: {task.surface}\n\nBottom: {task.bottom}\n\nThe player's story: {story}\n\n"
            f"Evaluation protocol:\n{protocol}"
        )
        return [{"role": "system", "content": RUBRIC_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, *, task: TurtleTask, **_: Any) -> list[float]:
        scores = (parsed or {}).get("scores")
        if not isinstance(scores, list) or len(scores) != len(task.criteria):
            got = len(scores) if isinstance(scores, list) else type(scores).__name__
            raise RoleOutputError(f"scores must be a list of {len(task.criteria)} items, got {got}")
        values = []
        for item in scores:
            score = item.get("score") if isinstance(item, dict) else None
            if isinstance(score, (int, float)) and not isinstance(score, bool):
                values.append(float(score))
            elif self.lenient and isinstance(score, str):
                try:
                    values.append(float(score))
                except ValueError:
                    raise RoleOutputError(f"score {score!r} is not a number") from None
            else:
                raise RoleOutputError(f"every score must be a number, got {score!r}")
        return values

    def fallback(self, **_: Any) -> list[float]:
        return []
