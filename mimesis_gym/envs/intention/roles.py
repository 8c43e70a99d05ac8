"""IntentionGym roles: the responder (user) and the coverage judge (docs/envs/intention.md, "Roles")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.jsonfix import coerce_json, field_text
from mimesis_gym.core.roles import LLMRole, RoleResult, ScriptedRole
from mimesis_gym.envs._matching import matches
from mimesis_gym.envs.intention.tasks import IMPORTANCE_LABELS, Detail, IntentionTask

__all__ = [
    "CANNED_REPLIES",
    "LEAD_INS",
    "LLMCoverageJudge",
    "LLMResponder",
    "ScriptedCoverageJudge",
    "ScriptedResponder",
    "detail_matches",
    "normalise_indices",
    "userrl_details",
    "userrl_history",
    "userrl_question",
]

CANNED_REPLIES = (
    "Hmm, fair question, let me think about it.",
    "Good point, I haven't quite decided on that yet.",
    "That's a reasonable thing to ask. I'm not sure yet.",
    "Let me get back to you on that one.",
    "Interesting question, I need a moment to think.",
)
LEAD_INS = ("Good question. ", "Let me think... ", "For that: ")
REDIRECT = "That's interesting, but what I really need is help with this: {task}"


def detail_matches(detail: Detail, question: str) -> bool:
    return any(matches(keyword, question) for keyword in detail.keywords or ())


class ScriptedResponder(ScriptedRole[str]):
    """Answers with the held option of the first targeted detail (remaining ones first)."""

    name: ClassVar[str] = "responder"

    def decide(
        self, *, question: str, task: IntentionTask, remaining: Sequence[Detail], held: Sequence[int], **_: Any
    ) -> RoleResult[str]:
        target = next((d for d in remaining if detail_matches(d, question)), None)
        if target is None:
            target = next((d for d in task.missing_details if detail_matches(d, question)), None)
        if target is None:
            reply = REDIRECT.format(task=task.task)
            return RoleResult(reply, utterance=reply, parsed={"target_detail": None})
        index = task.missing_details.index(target)
        option = target.options[held[index]]
        if option and option[-1] not in ".!?":
            option += "."
        reply = LEAD_INS[index % 3] + option
        return RoleResult(reply, utterance=reply, parsed={"target_detail": index})


class ScriptedCoverageJudge(ScriptedRole[list[int]]):
    name: ClassVar[str] = "coverage"

    def decide(self, *, question: str, remaining: Sequence[Detail], **_: Any) -> RoleResult[list[int]]:
        indices = [i for i, detail in enumerate(remaining) if detail_matches(detail, question)]
        return RoleResult(
            indices, parsed={"analysis": None, "is_task_related": bool(indices), "covered_detail_indices": indices}
        )


RESPONDER_SYSTEM = """\
You help someone answer questions about their own request for help, naturally and in their voice."""

RESPONDER_INSTRUCTIONS = """\
Reply as this person, in one short conversational message:
- If the question asks about your preferences or needs for this task, answer with authentic, \
coherent and realistic preferences.
- Otherwise answer helpfully if you can, and steer back to clarifying what you need.
- Never list the missing details and never give examples of them. Never solve the task yourself.
- Speak only as the person, never as an evaluator.
Answer in JSON: {"thought": "<your reasoning>", "response": "<your reply>"}"""

JUDGE_SYSTEM = """\
You evaluate how well a question clarifies a vague task. You only evaluate; you never answer the \
question."""

JUDGE_INSTRUCTIONS = """\
Rules: a question unrelated to clarifying the user's intent covers nothing (an empty list). \
Otherwise list every remaining detail the question directly addresses, that is, whose answer it \
would help reveal. Use the numbers of the list above.
Answer in JSON: {"analysis": "...", "is_task_related": true, "covered_detail_indices": [0, 2]}"""


def _exchanges(history: Sequence[tuple[str, str]], asker: str, answerer: str, numbered: bool) -> str:
    lines = []
    for number, (question, reply) in enumerate(history, start=1):
        tag = str(number) if numbered else ""
        lines.append(f"{asker}{tag}: {question}\n{answerer}{tag}: {reply}")
    return "\n".join(lines)


USERRL_PROMPTS = ("RESPONSE_GENERATION_PROMPT", "EVALUATION_PROMPT")
USERRL_SYSTEM_FUNCTIONS = ("generate_response_async", "evaluate_question_coverage_async")
"""What ``prompt_set="userrl"`` reads from UserRL's ``intentiongym/env/prompts.py``: two user-message
templates (``str.format``) and the system messages inside two functions."""


USERRL_FIRST_QUESTION = "This is the first question in our conversation."
"""UserRL's responder history text before the first exchange (its judge's is ``"None"``)."""


def userrl_question(question: str) -> str:
    """The current question as UserRL's prompts show it: a leading ``[action]``/``[answer]`` tag removed.

    The history keeps each question as the agent wrote it (tag included), as UserRL's env stored it.
    """
    if question.startswith(("[action]", "[answer]")):
        return question[len("[action]") :].strip()
    return question


def userrl_history(history: Sequence[tuple[str, str]], asker: str, answerer: str, numbered: bool, empty: str) -> str:
    """UserRL's history block: each exchange on two lines, each line ending with a newline."""
    if not history:
        return empty
    lines = []
    for number, (question, reply) in enumerate(history, start=1):
        tag = str(number) if numbered else ""
        lines.append(f"{asker}{tag}: {question}\n{answerer}{tag}: {reply}\n")
    return "\n\nPrevious conversation:\n" + "".join(lines)


def userrl_details(remaining: Sequence[Detail]) -> str:
    """UserRL's numbered list of the remaining details, each entry followed by a blank line."""
    listed = "".join(
        f"{i}. [{IMPORTANCE_LABELS[d.level]}] {d.description}\n   Example question type expected: {d.inquiry}\n\n"
        for i, d in enumerate(remaining)
    )
    return listed or "None - all details have been covered!"


class LLMResponder(LLMRole[str]):
    """Plain-text or JSON replies: a reply without ``{`` is used whole (UserRL behaviour)."""

    name: ClassVar[str] = "responder"
    json_keys: ClassVar[tuple[str, ...] | None] = None
    max_tokens = 2048

    def __init__(
        self,
        model: Any,
        *,
        lenient: bool = False,
        knows_details: bool = True,
        templates: dict[str, str] | None = None,
    ) -> None:
        super().__init__(model, lenient=lenient, templates=templates)
        self.knows_details = knows_details

    def build_messages(
        self, *, question: str, task: IntentionTask, history: Sequence[tuple[str, str]] = (), **_: Any
    ) -> list[dict[str, Any]]:
        if self.templates is not None:
            record = task.record() if self.knows_details else {"task": task.task, "category": task.category}
            user = self.templates["RESPONSE_GENERATION_PROMPT"].format(
                task=repr(record),
                category=task.category,
                question=userrl_question(question),
                conversation_history=userrl_history(
                    history[-3:], "Helper", "You", numbered=False, empty=USERRL_FIRST_QUESTION
                ),
            )
            return [
                {"role": "system", "content": self.templates["generate_response_async"]},
                {"role": "user", "content": user},
            ]
        parts = [f"Your request: {task.task}\nCategory: {task.category}"]
        if self.knows_details:
            details = "\n".join(
                f"- {d.description} (for example: {d.inquiry}; possible answers: {', '.join(d.options)})"
                for d in task.missing_details
            )
            parts.append(f"What you have in mind but did not say yet:\n{details}")
        recent = _exchanges(history[-3:], "Helper", "You", numbered=False)
        parts.append(f"Earlier exchanges:\n{recent}" if recent else "This is the first question.")
        parts.append(f"The helper's question: {question}")
        parts.append(RESPONDER_INSTRUCTIONS)
        return [{"role": "system", "content": RESPONDER_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> str:
        if "{" not in reply.text:
            return reply.text.strip()
        # A missing "response" fails the coercion (bad_json → canned reply), as in the other envs; a
        # non-string one is kept as its str, as UserRL used whatever value the reply held.
        return field_text(coerce_json(reply.text, ["response"]).data["response"])

    def fallback(self, *, choose_canned: Callable[[], int], **_: Any) -> str:
        return CANNED_REPLIES[choose_canned()]


def normalise_indices(data: dict[str, Any], lenient: bool) -> list[int]:
    """UserRL's normalisation of ``covered_detail_indices`` (duplicates kept unless ``lenient``)."""
    raw = data.get("covered_detail_indices")
    related = data.get("is_task_related", True)
    if lenient and isinstance(related, str) and related.strip().lower() in ("true", "false"):
        related = related.strip().lower() == "true"
    if not isinstance(raw, list) or not related:
        return []
    indices = [int(i) for i in raw if isinstance(i, (int, str)) and str(i).isdigit()]
    if lenient:
        indices = list(dict.fromkeys(indices))
    return indices


class LLMCoverageJudge(LLMRole[list[int]]):
    name: ClassVar[str] = "coverage"
    json_keys: ClassVar[tuple[str, ...] | None] = ("covered_detail_indices",)
    max_tokens = 2048

    def build_messages(
        self,
        *,
        question: str,
        task: IntentionTask,
        remaining: Sequence[Detail],
        history: Sequence[tuple[str, str]] = (),
        **_: Any,
    ) -> list[dict[str, Any]]:
        if self.templates is not None:
            user = self.templates["EVALUATION_PROMPT"].format(
                task=repr(task.record()),
                category=task.category,
                question=userrl_question(question),
                conversation_history=userrl_history(history[-3:], "Q", "A", numbered=True, empty="None"),
                details_list=userrl_details(remaining),
            )
            return [
                {"role": "system", "content": self.templates["evaluate_question_coverage_async"]},
                {"role": "user", "content": user},
            ]
        if remaining:
            listed = "\n".join(
                f"{i}. [{IMPORTANCE_LABELS[d.level]}] {d.description}\n   Example question type expected: {d.inquiry}\n"
                for i, d in enumerate(remaining)
            )
        else:
            listed = "None - all details have been covered!"
        recent = _exchanges(history[-3:], "Q", "A", numbered=True) or "None"
        user = (
            f"Task: {task.task}\nCategory: {task.category}\n\nRemaining missing details:\n{listed}\n"
            f"Previous conversation:\n{recent}\n\nLatest question: {question}\n\n{JUDGE_INSTRUCTIONS}"
        )
        return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> list[int]:
        return normalise_indices(parsed or {}, self.lenient)

    def fallback(self, **_: Any) -> list[int]:
        return []
