"""TravelGym roles: the search judge and utterance classifier (judges) and the responder (user).

See docs/envs/travel.md, "Roles".

Each role has a scripted implementation, computed from the shipped pack's structured data
(arguments, preference keywords, the catalogue), and an LLM implementation whose prompts the env
builds. Role values:

- ``search_judge`` → ``(verdict, aspect)`` with verdict ``"True"`` (and the aspect), ``"False"``,
  ``"N/A"``, or ``"outage"`` (the fallback of a failed call);
- ``classifier`` → ``(type, preference_id)``, type ``"1".."4"``, the id only for type 2; fallback ``("1", None)``;
- ``responder`` → the reply text; fallback ``None`` (the env shows its canned apology).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatReply
from mimesis_gym.core.jsonfix import JSONCoercionError
from mimesis_gym.core.roles import LLMRole, RoleOutputError, RoleResult, ScriptedRole
from mimesis_gym.envs._matching import norm
from mimesis_gym.envs.travel.prompts import NATURAL_REPLIES, ROLE_PROMPTS
from mimesis_gym.envs.travel.tasks import (
    ASPECT_LABELS,
    ASPECT_NOUNS,
    ASPECTS,
    DATE_ARGUMENTS,
    VAGUE_MARKERS,
    NumberedPreference,
    TravelTask,
    catalog_keywords,
    parse_date,
)

__all__ = [
    "QUESTION_WORDS",
    "LLMClassifier",
    "LLMResponder",
    "LLMSearchJudge",
    "ScriptedClassifier",
    "ScriptedResponder",
    "ScriptedSearchJudge",
    "classify_utterance",
    "extract_dates",
    "format_history",
    "judge_search",
    "mentioned_aspects",
    "normalise_aspect",
]

Verdict = tuple[str, "str | None"]
Classification = tuple[str, "str | None"]

QUESTION_WORDS = frozenset(
    [
        "what",
        "which",
        "who",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "do",
        "does",
        "did",
        "are",
        "is",
        "was",
        "were",
        "would",
        "will",
        "could",
        "can",
        "should",
        "shall",
        "may",
        "might",
        "have",
        "has",
        "any",
        "tell",
        "describe",
        "please",
    ]
)
"""First words that make an utterance a question for the scripted classifier."""

_NOUN_KEYS: dict[str, tuple[str, ...]] = {
    aspect: tuple(norm(n) for n in nouns) for aspect, nouns in ASPECT_NOUNS.items()
}
_VAGUE_KEYS = tuple(norm(marker) for marker in VAGUE_MARKERS)

_MONTH = (
    r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_MONTH_NUMBER = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH_DAY = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b")
_DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\b")
_ISO = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_US_FULL = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_NUMERIC = re.compile(r"\b(\d{1,2})[/-](\d{1,2})\b")


# ------------------------------------------------------------------------------------ shared helpers


def format_history(history: Sequence[Mapping[str, str]]) -> str:
    """The history block of role prompts: ``Agent: …`` (+ ``[Note: …]``), ``User: …``, ``Database: …``."""
    if not history:
        return "No previous conversation."
    blocks = []
    for entry in history:
        speaker = {"agent": "Agent", "user": "User", "database": "Database"}.get(entry["role"], entry["role"])
        block = f"{speaker}: {entry['content']}"
        if entry.get("note"):
            block += f"\n[Note: {entry['note']}]"
        blocks.append(block)
    return "\n\n".join(blocks)


def mentioned_aspects(text: str) -> set[str]:
    """The aspects whose nouns (``ASPECT_NOUNS``) occur in ``text`` as whole words."""
    normed = norm(text)
    return {aspect for aspect, nouns in _NOUN_KEYS.items() if any(noun in normed for noun in nouns)}


def normalise_aspect(value: str) -> str:
    """A judge's aspect name: lower case, stripped, ``rental car``/``car rental`` → ``rental_car``."""
    aspect = value.lower().strip()
    return "rental_car" if aspect in ("rental car", "car rental") else aspect


def extract_dates(text: str) -> set[tuple[int, int]]:
    """Every ``(month, day)`` written in ``text``: month names (full, 3-letter, ``sept``) or numbers."""
    lowered = text.lower()
    found: set[tuple[int, int]] = set()
    for match in _MONTH_DAY.finditer(lowered):
        found.add((_MONTH_NUMBER[match.group(1)[:3]], int(match.group(2))))
    for match in _DAY_MONTH.finditer(lowered):
        found.add((_MONTH_NUMBER[match.group(2)[:3]], int(match.group(1))))
    for match in _ISO.finditer(lowered):
        found.add((int(match.group(2)), int(match.group(3))))
    for match in _US_FULL.finditer(lowered):
        found.add((int(match.group(1)), int(match.group(2))))
    for match in _NUMERIC.finditer(lowered):
        found.add((int(match.group(1)), int(match.group(2))))
    return {(m, d) for m, d in found if 1 <= m <= 12 and 1 <= d <= 31}


# ------------------------------------------------------------------------------------ search judge


def _json_search(content: str) -> dict[str, Any] | None:
    if not content.lstrip().startswith("{"):
        return None
    try:
        data = json.loads(content)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or "arguments" not in data:
        return None
    if not any(key in data for key in ("aspect", "name", "function_name")):
        return None
    return data


def _argument_matches(key: str, truth: str, provided: Any) -> bool:
    if key in DATE_ARGUMENTS:
        wanted = parse_date(truth)
        return wanted is not None and wanted in extract_dates(str(provided))
    return norm(str(provided)) == norm(truth)


def judge_search(content: str, task: TravelTask) -> Verdict:
    """The scripted search judge: a JSON call or free text against the task's arguments."""
    call = _json_search(content)
    if call is not None:
        named = str(next(call[key] for key in ("aspect", "name", "function_name") if key in call))
        aspect = normalise_aspect(named)
        if aspect not in ASPECTS:  # e.g. "search_flights": the one aspect its words name
            found = mentioned_aspects(named.replace("_", " "))
            aspect = found.pop() if len(found) == 1 else aspect
        if aspect not in task.dimensions:
            return ("N/A", None)
        provided = call["arguments"]
        if not isinstance(provided, dict):
            return ("False", None)
        for key, truth in task.aspects[aspect].arguments.items():
            if key not in provided or not _argument_matches(key, truth, provided[key]):
                return ("False", None)
        return ("True", aspect)
    named_aspects = mentioned_aspects(content)
    if not named_aspects:
        return ("N/A", None)
    if len(named_aspects) > 1:
        return ("False", None)
    aspect = next(iter(named_aspects))
    if aspect not in task.dimensions:
        return ("N/A", None)
    normed = norm(content)
    dates = extract_dates(content)
    arguments = task.aspects[aspect].arguments
    for key, truth in arguments.items():
        if key in DATE_ARGUMENTS:
            if parse_date(truth) not in dates:
                return ("False", None)
        elif norm(truth) not in normed:
            return ("False", None)
    if aspect == "flight" and normed.find(norm(arguments["origin"])) >= normed.find(norm(arguments["destination"])):
        return ("False", None)
    return ("True", aspect)


class ScriptedSearchJudge(ScriptedRole[Verdict]):
    name: ClassVar[str] = "search_judge"

    def decide(self, *, request: str, task: TravelTask, **_: Any) -> RoleResult[Verdict]:
        verdict = judge_search(request, task)
        return RoleResult(verdict, parsed={"alignment_judgement": verdict[0], "alignment_aspect": verdict[1]})


_LENIENT_VERDICTS = {"true": "True", "false": "False", "n/a": "N/A", "na": "N/A"}


class LLMSearchJudge(LLMRole[Verdict]):
    """Keys ``alignment_judgement`` (required) and ``alignment_aspect`` (read on "True")."""

    name: ClassVar[str] = "search_judge"
    json_keys: ClassVar[tuple[str, ...] | None] = ("alignment_judgement",)
    max_tokens = 2048

    def build_messages(self, *, request: str, task: TravelTask, **_: Any) -> list[dict[str, Any]]:
        arguments = "\n\n".join(
            f"Aspect Name: {d}\n{json.dumps(dict(task.aspects[d].arguments), indent=4)}" for d in task.dimensions
        )
        if self.templates is not None:
            system = self.templates["JUDGE_SEARCH_SYSTEM"]
            user = self.templates["JUDGE_SEARCH_USER"].format(agent_request=request, ground_truth_arguments=arguments)
        else:
            system = ROLE_PROMPTS["search_system"]
            user = ROLE_PROMPTS["search_user"].format(request=request, arguments=arguments)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, *, task: TravelTask, **_: Any) -> Verdict:
        data = parsed or {}
        raw = data.get("alignment_judgement")
        if self.lenient:
            if isinstance(raw, bool):
                raw = "True" if raw else "False"
            elif isinstance(raw, str):
                raw = _LENIENT_VERDICTS.get(raw.strip().lower(), raw)
        if raw not in ("True", "False", "N/A") or not isinstance(raw, str):
            raise RoleOutputError(f"alignment_judgement must be 'True', 'False' or 'N/A', got {raw!r}")
        if raw != "True":
            return (raw, None)
        if "alignment_aspect" not in data:
            raise JSONCoercionError("alignment_judgement is 'True' but alignment_aspect is missing")
        named = data["alignment_aspect"]
        if not isinstance(named, str):
            raise RoleOutputError(f"alignment_aspect must be a string, got {named!r}")
        aspect = normalise_aspect(named)
        if aspect not in task.dimensions:
            raise RoleOutputError(f"alignment_aspect {named!r} is not an aspect of this trip")
        return ("True", aspect)

    def fallback(self, **_: Any) -> Verdict:
        return ("outage", None)


# ------------------------------------------------------------------------------------ classifier


def _hits(keys: Sequence[str], normed: str) -> int:
    """How many match-form keywords occur in the match-form text."""
    return sum(1 for key in keys if key in normed)


def classify_utterance(utterance: str, remaining: Sequence[NumberedPreference], task: TravelTask) -> Classification:
    """The scripted classifier: keyword hits decide types 2 and 3, aspect nouns and vague markers type 4."""
    normed = norm(utterance)
    words = normed.split()
    if not ("?" in utterance or (words and words[0] in QUESTION_WORDS)):
        return ("1", None)
    named = mentioned_aspects(utterance)
    best: NumberedPreference | None = None
    best_hits = 0
    for pref in remaining:
        if named and pref.dimension not in named:
            continue
        hits = _hits(pref.pref.meta.keys if pref.pref.meta else (), normed)
        if hits > best_hits:
            best, best_hits = pref, hits
    if best is not None:
        return ("2", best.id)
    remaining_ids = {pref.id for pref in remaining}
    for pref in task.numbered:
        if pref.id not in remaining_ids and pref.pref.meta and _hits(pref.pref.meta.keys, normed):
            return ("3", None)
    vocabulary = catalog_keywords()
    for aspect in named or ASPECTS:
        if _hits(vocabulary.get(aspect, ()), normed):
            return ("3", None)
    if named or any(marker in normed for marker in _VAGUE_KEYS):
        return ("4", None)
    return ("1", None)


class ScriptedClassifier(ScriptedRole[Classification]):
    name: ClassVar[str] = "classifier"

    def decide(
        self, *, utterance: str, remaining: Sequence[NumberedPreference], task: TravelTask, **_: Any
    ) -> RoleResult[Classification]:
        value = classify_utterance(utterance, remaining, task)
        return RoleResult(value, parsed={"type": value[0], "preference_id": value[1]})


def preference_lines(prefs: Sequence[NumberedPreference]) -> str:
    """The classifier's list of remaining preferences."""
    return "\n\n".join(f"Preference ID: {p.id}\tAspect: {p.aspect}\nPreference: {p.pref.preference}" for p in prefs)


def preference_block(pref: NumberedPreference) -> str:
    """One preference as the responders see it (with its implicit elicitation statement)."""
    return (
        f"Preference ID: {pref.id}\tAspect: {pref.aspect}\nPreference: {pref.pref.preference}\n"
        f"Implicit Elicitation Statement: {pref.pref.implicit_elicitation}"
    )


class LLMClassifier(LLMRole[Classification]):
    """Keys ``type`` (required) and ``preference_id`` (read for type 2)."""

    name: ClassVar[str] = "classifier"
    json_keys: ClassVar[tuple[str, ...] | None] = ("type",)
    max_tokens = 2048

    def build_messages(
        self,
        *,
        utterance: str,
        remaining: Sequence[NumberedPreference],
        task: TravelTask,
        history: Sequence[Mapping[str, str]] = (),
        **_: Any,
    ) -> list[dict[str, Any]]:
        fields = {
            "scenario": task.scenario,
            "conversation_history": format_history(history),
            "latest_utterance": utterance,
            "preferences_list": preference_lines(remaining),
        }
        if self.templates is not None:
            system = self.templates["JUDGE_PROMPT_SYSTEM"]
            user = self.templates["JUDGE_PROMPT_USER"].format(**fields)
        else:
            system = ROLE_PROMPTS["classifier_system"]
            user = ROLE_PROMPTS["classifier_user"].format(
                scenario=fields["scenario"],
                history=fields["conversation_history"],
                utterance=utterance,
                preferences=fields["preferences_list"] or "(none)",
            )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def parse(
        self, reply: ChatReply, parsed: dict[str, Any] | None, *, remaining: Sequence[NumberedPreference], **_: Any
    ) -> Classification:
        data = parsed or {}
        kind = str(data.get("type")).strip()
        if kind not in ("1", "2", "3", "4"):
            raise RoleOutputError(f"type must be 1, 2, 3 or 4, got {data.get('type')!r}")
        if kind != "2":
            return (kind, None)
        if "preference_id" not in data:
            raise JSONCoercionError("type 2 without preference_id")
        raw = data["preference_id"]
        if not isinstance(raw, str) or raw.strip() not in {pref.id for pref in remaining}:
            raise RoleOutputError(f"preference_id {raw!r} is not a remaining preference")
        return ("2", raw.strip())

    def fallback(self, **_: Any) -> Classification:
        return ("1", None)


# ------------------------------------------------------------------------------------ responder


class ScriptedResponder(ScriptedRole["str | None"]):
    """preference → the implicit statement; proactive → a lead-in naming the aspect, then the statement;
    natural → one of four neutral replies drawn with ``choose_canned`` (``np_random.integers(4)``)."""

    name: ClassVar[str] = "responder"

    def decide(
        self,
        *,
        mode: str,
        preference: NumberedPreference | None = None,
        choose_canned: Callable[[], int] | None = None,
        **_: Any,
    ) -> RoleResult[str | None]:
        if mode == "natural":
            assert choose_canned is not None
            reply = NATURAL_REPLIES[choose_canned()]
        else:
            assert preference is not None
            statement = preference.pref.implicit_elicitation
            reply = (
                statement
                if mode == "preference"
                else f"By the way, about the {ASPECT_LABELS.get(preference.aspect, preference.aspect)}: {statement}"
            )
        return RoleResult(reply, utterance=reply, parsed={"response": reply})


class LLMResponder(LLMRole["str | None"]):
    """One chat per reply mode (``preference``, ``proactive``, ``natural``); keys ``thought``, ``response``."""

    name: ClassVar[str] = "responder"
    json_keys: ClassVar[tuple[str, ...] | None] = ("response",)
    max_tokens = 2048

    _USERRL: ClassVar[dict[str, tuple[str, str]]] = {
        "preference": ("RESPONSE_PREFERENCE_SYSTEM", "RESPONSE_PREFERENCE_USER"),
        "proactive": ("RESPONSE_ELICIT_SYSTEM", "RESPONSE_ELICIT_USER"),
        "natural": ("RESPONSE_NATURAL_SYSTEM", "RESPONSE_NATURAL_USER"),
    }

    def build_messages(
        self,
        *,
        mode: str,
        utterance: str,
        preference: NumberedPreference | None = None,
        history: Sequence[Mapping[str, str]] = (),
        **_: Any,
    ) -> list[dict[str, Any]]:
        history_text = format_history(history)
        block = preference_block(preference) if preference is not None else ""
        if self.templates is not None:
            system_name, user_name = self._USERRL[mode]
            fields = {"conversation_history": history_text, "latest_utterance": utterance}
            if mode != "natural":
                fields["preference"] = block
            system, user = self.templates[system_name], self.templates[user_name].format(**fields)
        else:
            system = ROLE_PROMPTS[f"{mode}_system"]
            user = ROLE_PROMPTS[f"{mode}_user"].format(preference=block, history=history_text, utterance=utterance)
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> str | None:
        response = (parsed or {}).get("response")
        if not isinstance(response, str):
            raise RoleOutputError(f"response must be a string, got {type(response).__name__}")
        return response.strip()

    def fallback(self, **_: Any) -> str | None:
        return None
