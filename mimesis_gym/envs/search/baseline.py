"""Search: a self-ask chain — search the question, substitute what the top hit names, repeat, answer.

Each turn searches the current question. The hit whose title the question names is the subject;
the first new proper name in its snippet replaces the question's innermost relative phrase
(``the birthplace of X`` → the place the snippet names). Once no such phrase is left, the answer
is read from the subject's snippet by the question's type (a year, a number with its unit, the
region, an occupation, else the first new name). Only the question and the results are used.
"""

from __future__ import annotations

import re

from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["next_action", "rewrite"]

_HIT = re.compile(r"^\d+\.\s*(?P<title>.+)\n- Snippet:\s*(?P<snippet>.+)$", re.MULTILINE)
_NAME = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
_COMMON = frozenset(
    {
        *("The", "He", "She", "It", "Its", "His", "Her", "They", "Their", "Born", "From", "Among", "Colleagues"),
        *("Little", "Several", "A", "An", "In", "On", "At", "After", "Before", "During", "This", "That", "There"),
        *("Many", "Most", "Some", "Today", "River", "Otters", "Until", "When", "While", "With"),
    }
)
_RELATIVE = re.compile(
    r"\bthe\s+(?:(?!\bthe\b)[\w\s,'-])+?\s(?:of|through|where|created|designed|founded|built)\s+(?:the\s+)?$"
)


def _hits(feedback: str) -> list[tuple[str, str]]:
    return [(m.group("title").strip(), m.group("snippet").strip()) for m in _HIT.finditer(feedback)]


def _names(text: str, known: str) -> list[str]:
    found = []
    for name in _NAME.findall(text):
        words = [w for w in name.split() if w not in _COMMON]
        name = " ".join(words)
        if name and name.lower() not in known.lower() and name not in found:
            found.append(name)
    return found


def _subject(question: str, hits: list[tuple[str, str]]) -> tuple[str, str] | None:
    named = [(title, snippet) for title, snippet in hits if title.lower() in question.lower()]
    return max(named, key=lambda hit: len(hit[0])) if named else (hits[0] if hits else None)


def rewrite(question: str, subject: str, bridge: str) -> str | None:
    """``question`` with its innermost relative phrase ending at ``subject`` replaced by ``bridge``."""
    at = question.lower().find(subject.lower())
    if at < 0:
        return None
    head = question[:at]
    match = _RELATIVE.search(head)
    if match is None:
        return None
    tail = question[at + len(subject) :]
    tail = re.sub(r"^\s+(?:stands|is|was)\b", "", tail) if "where" in match.group(0) else tail
    return f"{head[: match.start()]}{bridge}{tail}"


def _extract(question: str, snippet: str, known: str) -> str:
    lowered = question.lower()
    if "year" in lowered or lowered.startswith("when"):
        years = [y for y in re.findall(r"\b1\d{3}\b|\b20\d{2}\b", snippet) if y not in question]
        if years:
            return years[0]
    if lowered.startswith("how "):
        unit = re.search(r"(\d[\d,.]*)\s+(?:kilometres|kilometers|metres|meters|miles|km|m)\b", snippet)
        numbers = re.findall(r"\b\d[\d,.]*\b", snippet)
        if unit or numbers:
            return (unit.group(1) if unit else numbers[0]).rstrip(".,")
    if "region" in lowered:
        region = re.search(r"region of ([A-Z][a-z]+)", snippet) or re.search(r"([A-Z][a-z]+) region", snippet)
        if region:
            return region.group(1)
    if "occupation" in lowered or "profession" in lowered:
        job = re.search(r"\b(?:worked as|was) an? ([a-z]+)", snippet)
        if job:
            return job.group(1)
    names = _names(snippet, known)
    return names[0] if names else snippet.split(".")[0]


def next_action(dialogue: Dialogue) -> Action:
    """Search the current question; rewrite it with the new name; answer once it is single-hop."""
    question = dialogue.opening.splitlines()[0].strip() if dialogue.opening else ""
    current = question
    for exchange in dialogue.of("search"):
        hit = _subject(exchange.content, _hits(exchange.feedback))
        if hit is None:
            continue
        names = _names(hit[1], exchange.content + " " + hit[0])
        step = rewrite(exchange.content, hit[0], names[0]) if names else None
        if step is None:
            answer = _extract(exchange.content, hit[1], exchange.content + " " + hit[0])
            if answer not in {e.content for e in dialogue.of("answer")}:
                return {"choice": "answer", "content": answer}
            break
        current = step
    if current in {e.content for e in dialogue.of("search")}:
        return {"choice": "finish", "content": ""}
    return {"choice": "search", "content": current}
