"""One env's user behaviours (:class:`EnvBehaviors`) and one episode's (:class:`EpisodeBehavior`).

An env declares, in its own package, an :class:`EnvBehaviors`: which role speaks as the user, which of
B1–B13 its user can play and why the others cannot, and the episode's **facts** — the env's own
material each behaviour needs (the requirement B2 adds, the false premise of B8, the values B9 must
not mention). The rest is shared:

- an **LLM user** gets the registry's ``user_directive`` plus a sentence written from the facts
  (:data:`SENTENCES`) and the env's ``rules_note``, appended to its system prompt;
- a **scripted user** answers as the env's rules say, then :func:`~mimesis_gym.behaviors.enact.enact`
  rewrites the reply;
- after every step the user's own reply joins the episode's exchanges, and the behaviour's rule
  (:mod:`mimesis_gym.behaviors.detect`) says whether it has been enacted so far.

The env's rewards and success never read any of this: the behaviour changes the user, not the scoring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from mimesis_gym.behaviors.detect import Detection, Exchange, detect
from mimesis_gym.behaviors.enact import EnactContext, enact
from mimesis_gym.behaviors.registry import BEHAVIOR_IDS, CONTROL, behavior

__all__ = ["NO_USER", "REQUIRED_FACTS", "SENTENCES", "EnvBehaviors", "EpisodeBehavior", "directive_for"]

REQUIRED_FACTS: dict[str, tuple[str, ...]] = {
    "B2": ("new_requirement_text", "new_requirement_words"),
    "B5": ("omitted_detail_text", "omitted_detail_words"),
    "B6": ("target_topic_text", "target_topic_words"),
    "B7": ("restrictions",),
    "B8": ("false_premise_text", "false_value"),
    "B11": ("contradiction_a_text", "value_a", "contradiction_b_text", "value_b"),
}
"""The facts an env must give for a behaviour it plays; the others have defaults."""

SENTENCES: dict[str, str] = {
    "B1": "When the agent proposes something, say only whether it suits you, never what you are missing.",
    "B2": 'After the agent first proposes something, add this requirement, beginning with "Actually": '
    "{new_requirement_text}",
    "B3": "Do not answer the first {dodges} questions the agent asks you; ask why it needs to know and tell it "
    "to just sort it out.",
    "B4": "When the agent says something cannot be done, insist that it do it anyway ({insist_text}).",
    "B5": "Do not say at first that {omitted_detail_text}; after the agent's first proposal, blame it for not "
    "having taken that into account.",
    "B6": "From your second message on, drop your request and ask about this instead: {target_topic_text}",
    "B7": "Insist on these restrictions: {restrictions_text}.",
    "B8": "Treat this as settled fact, although it is not: {false_premise_text}",
    "B9": "From your second message on, answer every other message with only a short, impatient complaint.",
    "B10": "After the agent's message number {leave_turn}, say you are done and leave the conversation{stop_hint}.",
    "B11": "Early on, say: {contradiction_a_text} Later, say: {contradiction_b_text}",
    "B12": "In your first reply, also ask the agent to {extra_requests_text}.",
    "B13": "Be dismissive and entitled in every message.",
}
"""The env sentence of each behaviour's directive, formatted with the episode's facts."""

_DEFAULT_FACTS: dict[str, Any] = {
    "dodges": 2,
    "insist_text": "it",
    "leave_turn": 3,
    "stop_text": "",
    "stop_hint": "",
    "extra_requests": (),
    "informative": (),
}


def _no_facts(env: Any) -> Mapping[str, Any]:
    return {}


def _identity_text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _replace_text(value: Any, text: str) -> Any:
    return text


@dataclass(frozen=True)
class EnvBehaviors:
    """How one env's user plays the behaviours.

    ``not_applicable`` maps every behaviour the user cannot play to the reason (shown when one is asked
    for, and in the applicability table); the rest are played. ``facts(env)`` gives the current
    episode's facts (after ``reset`` chose the task); ``text_of``/``with_text`` read and replace the
    reply text in the user role's value (a plain string by default). ``progress_kinds`` are the agent
    actions that count as real progress (B1, B2, B5); ``rules_note`` ends every directive, so an LLM
    user keeps the env's rules while it plays. The callables are module-level functions, so an env
    pickles.
    """

    user_role: str | None
    not_applicable: Mapping[str, str]
    facts: Callable[[Any], Mapping[str, Any]] = _no_facts
    progress_kinds: frozenset[str] = frozenset({"answer"})
    rules_note: str = ""
    opening_by_user: bool = False
    """Whether the opening observation is the user's own first message (TauGym)."""
    text_of: Callable[[Any], str | None] = _identity_text
    with_text: Callable[[Any, str], Any] = _replace_text

    def __post_init__(self) -> None:
        unknown = sorted(set(self.not_applicable) - set(BEHAVIOR_IDS))
        if unknown:
            raise ValueError(f"not_applicable names unknown behaviours {unknown}")
        if self.user_role is None and len(self.not_applicable) != len(BEHAVIOR_IDS):
            raise ValueError("an env without a user role plays no behaviour: list all 13 as not applicable")

    @property
    def applicable(self) -> tuple[str, ...]:
        """The behaviours this env's user plays, in registry order."""
        return tuple(b for b in BEHAVIOR_IDS if b not in self.not_applicable)

    def episode_facts(self, env: Any) -> dict[str, Any]:
        """The defaults overlaid with ``facts(env)``, plus the progress kinds; ``RuntimeError`` when a
        played behaviour's required fact is missing (an env bug)."""
        facts = {**_DEFAULT_FACTS, **dict(self.facts(env)), "progress_kinds": tuple(sorted(self.progress_kinds))}
        for behavior_id in self.applicable:
            missing = [name for name in REQUIRED_FACTS.get(behavior_id, ()) if name not in facts]
            if missing:
                raise RuntimeError(f"{type(env).__name__} plays {behavior_id} but gives no facts {missing}")
        return facts


NO_USER = EnvBehaviors(
    user_role=None,
    not_applicable=dict.fromkeys(BEHAVIOR_IDS, "the env has no user who talks: nothing to play"),
)
"""The behaviours of an env without a user (FunctionGym, SearchGym): none."""


def directive_for(behavior_id: str, facts: Mapping[str, Any], rules_note: str = "") -> str:
    """The directive an LLM user gets: the registry's ``user_directive``, the env sentence written from
    ``facts`` and the env's ``rules_note``."""
    values = dict(facts)
    values.setdefault("restrictions_text", "; ".join(values.get("restrictions", ())))
    values.setdefault("extra_requests_text", ", ".join(values.get("extra_requests", ())) or "check everything twice")
    sentence = SENTENCES[behavior_id].format(**values)
    parts = [behavior(behavior_id).user_directive, sentence, rules_note]
    return " ".join(part.strip() for part in parts if part and part.strip())


@dataclass
class EpisodeBehavior:
    """One episode's behaviour: the condition, its facts, the exchanges so far and the enactment state.

    The env opens a step with :meth:`begin_step` and closes it with :meth:`end_step`; roles call
    :meth:`direct` (LLM) and :meth:`enact` (scripted) through their :class:`~mimesis_gym.core.roles.RoleSession`.
    """

    condition: str
    spec: EnvBehaviors
    facts: dict[str, Any]
    exchanges: list[Exchange] = field(default_factory=list)
    state: dict[str, Any] = field(default_factory=dict)
    _step: tuple[int, str, str] | None = None

    @property
    def active(self) -> bool:
        return self.condition != CONTROL

    @property
    def directive(self) -> str | None:
        """The LLM user's directive, or ``None`` under control."""
        if not self.active:
            return None
        return directive_for(self.condition, self.facts, self.spec.rules_note)

    def begin_step(self, turn: int, agent_kind: str, agent_text: str) -> None:
        self._step = (turn, agent_kind, agent_text)

    def end_step(self, user_text: str | None) -> None:
        """Record the step's exchange (the user's own reply, ``None`` when the user did not speak)."""
        if self._step is None:
            return
        turn, kind, text = self._step
        self.exchanges.append(Exchange(turn, kind, text, user_text))
        self._step = None

    def direct(self, role: str, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``messages`` of an LLM role call, with the directive appended to the system message when
        ``role`` is the user (a system message is added when there is none)."""
        directive = self.directive
        if directive is None or role != self.spec.user_role:
            return messages
        block = f"How you behave in this conversation: {directive}"
        if messages and messages[0].get("role") == "system":
            first = dict(messages[0])
            first["content"] = f"{first.get('content', '')}\n\n{block}"
            return [first, *messages[1:]]
        return [{"role": "system", "content": block}, *messages]

    def enact(self, role: str, result: Any) -> Any:
        """A scripted ``role``'s :class:`~mimesis_gym.core.roles.RoleResult` (a dataclass with ``value``,
        ``failed`` and ``utterance``; this package imports nothing of ``core``) rewritten for the
        behaviour (unchanged under control, for other roles, for failed calls and where the value
        carries no text)."""
        if not self.active or role != self.spec.user_role or result.failed or self._step is None:
            return result
        text = self.spec.text_of(result.value)
        if text is None:
            return result
        turn, kind, agent_text = self._step
        ctx = EnactContext(self.condition, turn, kind, agent_text, text, self.facts, tuple(self.exchanges), self.state)
        played = enact(ctx)
        if played == text:
            return result
        return replace(result, value=self.spec.with_text(result.value, played), utterance=played)

    def detection(self) -> Detection | None:
        """Whether the behaviour has been enacted so far (``None`` under control)."""
        if not self.active:
            return None
        return detect(self.condition, self.exchanges, self.facts)

    def info(self) -> dict[str, Any]:
        """``info["user_behavior"]``: ``{"id", "enacted", "turns"}`` (``enacted`` ``None`` under control)."""
        found = self.detection()
        return {
            "id": self.condition,
            "enacted": None if found is None else found.enacted,
            "turns": [] if found is None else list(found.turns),
        }
