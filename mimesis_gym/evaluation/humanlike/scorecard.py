"""The scorecard against humans: replay, metrics, one human-likeness index per user (docs/humans.md).

``run_scorecard`` replays the ``test`` half of each human corpus with every user under test (an
ordinary eval run of ``mimesis/HumanReplay-v0`` with the ``oracle`` agent playing the real replies,
under ``<out>/runs/replay``: the runner's pre-flight, retries, lock and resume), then compares the
users' turns with the humans of the ``dev`` half of the same corpus. Two rows frame every table: the
**ceiling** (the humans of the ``test`` half against the ``dev`` humans: what "as human as humans"
scores; a user that copies the humans scores exactly this) and the **floor** (``scripted``, the
replay env's template user, always run).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from mimesis_gym.behaviors.detect import Exchange
from mimesis_gym.core.redact import redact_url_credentials
from mimesis_gym.corpora import HumanConversation, load_corpus
from mimesis_gym.evaluation.humanlike import behaviour, lexical, userlm
from mimesis_gym.evaluation.humanlike.behaviour_rates import behaviour_rates, conversation_exchanges
from mimesis_gym.evaluation.humanlike.scorecard_report import CEILING, FLOOR, REFERENCE, write_scorecard
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore, safe_strings
from mimesis_gym.evaluation.user_metrics import role_flags

__all__ = [
    "CEILING",
    "FAMILIES",
    "FLOOR",
    "REFERENCE",
    "TERMS",
    "ScorecardConfig",
    "UserSample",
    "compute_scorecard",
    "run_scorecard",
    "samples_from_records",
    "z_term",
]

REPLAY_ENV = "replay"
AGENT = "oracle"

FAMILIES = ("behaviour", "lexical", "userlm", "role_length", "turing")
"""The index's families, in order: the index is the mean of those computed; each family is the mean
of its computed terms (docs/humans.md, "The index")."""


class ScorecardConfig(BaseModel):
    """What the scorecard runs: users under test, the corpora and the replay's budget."""

    users: list[str] = Field(min_length=1)
    humans_dir: str = Field(description="the folder that holds the corpora (e.g. ../shared/data/humans)")
    sources: list[str] = Field(
        default_factory=list, description="corpus names or jsonl:PATH; empty: every shipped corpus"
    )
    limit: int | None = Field(6, ge=1, description="conversations of each source's test half (file order); None: all")
    max_turns: int = Field(8, ge=1, description="real replies replayed per conversation (its user turns up to then)")
    history_chars: int = Field(8000, ge=1, description="the most recent real history the user sees, in characters")
    user_max_tokens: int = Field(128, ge=1, description="the user's budget per turn")
    role_max_tokens: int | None = Field(None, ge=1)
    concurrency: int = Field(8, ge=1)
    seed: int = Field(0, ge=0)
    judge: str | None = Field(None, description="the Turing-test judge (any user spec but scripted); None: no judge")
    tokenizer: lexical.Tokenizer = Field("words", description="the lexical metrics' tokenizer (words or o200k)")

    def source_names(self) -> list[str]:
        from mimesis_gym.envs.replay.tasks import normalise_sources

        return list(normalise_sources(self.sources or None))

    def scored_users(self) -> list[str]:
        """The users the replay plays: those under test, then the floor (unless already there)."""
        users = list(dict.fromkeys(user.strip() for user in self.users))
        return users if FLOOR in users else [*users, FLOOR]

    def eval_config(self) -> EvalConfig:
        """The replay as an eval run: the oracle plays the real replies to every user."""
        return EvalConfig(
            agents=[AGENT],
            users=self.scored_users(),
            envs=[REPLAY_ENV],
            split="test",
            max_turns=self.max_turns,
            concurrency=self.concurrency,
            role_max_tokens=self.role_max_tokens,
            seed=self.seed,
            privileged=True,
            env_args={
                REPLAY_ENV: {
                    "pack": "humans",
                    "data_dir": str(Path(self.humans_dir).expanduser().resolve()),
                    "sources": self.source_names(),
                    "per_source": self.limit,
                    "history_chars": self.history_chars,
                    "user_max_tokens": self.user_max_tokens,
                }
            },
        )


@dataclass
class UserSample:
    """One user's turns on one conversation: ``turns`` are the user turns in order (twins where the
    user wrote one, given turns where the replay gave the human's), ``first`` the simulated opening
    (``None`` when not simulated), ``endings`` the ``(predicted, true)`` end decisions, ``twins`` the
    ``(context, human, simulated)`` triples a Turing judge may see, ``failures`` failed calls,
    ``exchanges`` the user turns as the behaviour rules read them (the user's own replies only)."""

    conversation: HumanConversation
    turns: list[str]
    first: str | None = None
    endings: list[tuple[bool, bool]] = field(default_factory=list)
    twins: list[tuple[tuple[tuple[str, str], ...], str, str]] = field(default_factory=list)
    failures: int = 0
    calls: int = 0
    exchanges: list[Exchange] = field(default_factory=list)


def human_sample(conversation: HumanConversation, replies: int | None = None) -> UserSample:
    """The humans themselves as a sample (the ceiling and the reference): every user turn is theirs,
    and they end exactly where they ended. ``replies`` cuts it where a replay of that many real
    replies stops (``max_turns``), so the ceiling covers the turns the users were asked for."""
    turns: list[str] = []
    endings: list[tuple[bool, bool]] = []
    seen_replies = 0
    for turn in conversation.turns:
        if turn.role == "assistant":
            seen_replies += 1
            continue
        if replies is not None and seen_replies > replies:
            break
        turns.append(turn.text)
        endings.append((False, False))
    if (
        conversation.turns
        and conversation.turns[-1].role == "assistant"
        and (replies is None or seen_replies <= replies)
    ):
        endings.append((True, True))
    first = turns[0] if conversation.goal_kind == "description" and conversation.turns[0].role == "user" else None
    exchanges = conversation_exchanges(conversation, replies=replies)
    return UserSample(conversation, turns, first=first, endings=endings, exchanges=exchanges)


def samples_from_records(
    records: Iterable[EpisodeRecord], conversations: Mapping[str, HumanConversation]
) -> dict[str, list[UserSample]]:
    """Each user's :class:`UserSample` per replayed conversation, from the replay's privileged records
    (``hidden.twins``). Episodes that ended in an agent or env error are left out."""
    samples: dict[str, list[UserSample]] = defaultdict(list)
    for record in records:
        if record.status in ("agent_error", "env_error") or record.task_id not in conversations:
            continue
        twins = ((record.privileged or {}).get("hidden") or {}).get("twins") or []
        samples[record.user].append(_sample(conversations[record.task_id], twins))
    return samples


def _sample(conversation: HumanConversation, twins: Sequence[Mapping[str, Any]]) -> UserSample:
    by_position = {int(twin["position"]): twin for twin in twins}
    user_turns = [index for index, turn in enumerate(conversation.turns) if turn.role == "user"]
    sample = UserSample(conversation, [], calls=len(twins))
    last = max(by_position, default=0)
    for position, index in enumerate(user_turns, start=1):
        if position > last:
            break  # the replay stopped before this turn (max_turns)
        twin = by_position.get(position)
        if twin is None:
            sample.turns.append(conversation.turns[index].text)  # given, not simulated
            continue
        if twin.get("failed"):
            sample.failures += 1
            continue
        sample.endings.append((bool(twin.get("ended")), False))
        text = str(twin.get("simulated") or "")
        if text.strip():
            sample.turns.append(text)
            context = tuple((turn.role, turn.text) for turn in conversation.turns[:index])
            sample.twins.append((context, conversation.turns[index].text, text))
            if position == 1:
                sample.first = text
    probe = by_position.get(len(user_turns) + 1)
    if probe is not None:
        if probe.get("failed"):
            sample.failures += 1
        else:
            sample.endings.append((bool(probe.get("ended")), True))
    written = {
        position: str(twin.get("simulated"))
        for position, twin in by_position.items()
        if not twin.get("failed") and str(twin.get("simulated") or "").strip()
    }
    sample.exchanges = conversation_exchanges(conversation, written)
    return sample


# ---------------------------------------------------------------------------------------------- terms


def z_term(z: float | None) -> float | None:
    """A z-score as a term in [0, 100]: ``100 · P(|Z| ≥ |z|)`` for a standard normal Z (100 at 0,
    32 at 1, 5 at 2)."""
    return None if z is None else 100.0 * math.erfc(abs(z) / math.sqrt(2.0))


def dice(a: float | None, b: float | None) -> float | None:
    """Dice–Sørensen similarity of two non-negative numbers ×100 (both 0: 100)."""
    if a is None or b is None:
        return None
    a, b = abs(a), abs(b)
    return 100.0 if a + b == 0 else 100.0 * 2.0 * min(a, b) / (a + b)


def ks_distance(a: Sequence[float], b: Sequence[float]) -> float | None:
    """The two-sample Kolmogorov–Smirnov statistic: the largest gap between the empirical CDFs."""
    if not a or not b:
        return None
    xs, ys = sorted(a), sorted(b)
    i = j = 0
    gap = 0.0
    while i < len(xs) and j < len(ys):
        value = min(xs[i], ys[j])
        while i < len(xs) and xs[i] == value:
            i += 1
        while j < len(ys) and ys[j] == value:
            j += 1
        gap = max(gap, abs(i / len(xs) - j / len(ys)))
    return gap


def _mean(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return sum(present) / len(present) if present else None


def _words(samples: Sequence[UserSample]) -> list[float]:
    return [float(len(text.split())) for sample in samples for text in sample.turns]


def _fault_rate(samples: Sequence[UserSample]) -> float | None:
    turns = [text for sample in samples for text in sample.turns]
    return sum(1 for text in turns if role_flags(text)) / len(turns) if turns else None


def _features(samples: Sequence[UserSample]) -> list[dict[str, float]]:
    rows = [behaviour.conversation_features(sample.turns) for sample in samples]
    return [row for row in rows if row is not None]


def _lexical_values(samples: Sequence[UserSample], tokenizer: lexical.Tokenizer) -> list[dict[str, float | None]]:
    return [lexical.conversation_values(sample.turns, tokenizer=tokenizer) for sample in samples if sample.turns]


@dataclass
class Reference:
    """What a source's ``dev`` humans look like, computed once per source."""

    row: dict[str, float]
    lexical: list[dict[str, float | None]]
    words: list[float]
    fault_rate: float | None
    first_turn_diversity: float | None
    intent_decomposition: float | None


def _decomposition(samples: Sequence[UserSample]) -> float | None:
    """UserLM's intent overlap of the user turns with a described goal (``None`` without one)."""
    intents: list[str] = []
    turns: list[str] = []
    for sample in samples:
        if sample.conversation.goal_kind == "description":
            intents += [sample.conversation.goal] * len(sample.turns)
            turns += sample.turns
    return userlm.intent_decomposition(intents, turns) if turns else None


def reference_of(samples: Sequence[UserSample], tokenizer: lexical.Tokenizer) -> Reference:
    firsts = [sample.first for sample in samples if sample.first]
    return Reference(
        row=behaviour.feature_row(_features(samples)),
        lexical=_lexical_values(samples, tokenizer),
        words=_words(samples),
        fault_rate=_fault_rate(samples),
        first_turn_diversity=userlm.first_turn_diversity(firsts) if len(firsts) > 1 else None,
        intent_decomposition=_decomposition(samples),
    )


TERMS = (
    *behaviour.DIMENSIONS,
    *lexical.LEXICAL_METRICS,
    "first_turn_diversity",
    "intent_decomposition",
    "termination",
    "role_faults",
    "length",
    "turing",
)
"""Every term of the index, each in [0, 100] (docs/humans.md, "The index")."""


def sample_parts(samples: Sequence[UserSample], turing: float | None = None) -> dict[str, Any]:
    """The raw numbers of one user on one source that need no reference (counts, rates, F1)."""
    words = _words(samples)
    endings = [pair for s in samples for pair in s.endings]
    firsts = [s.first for s in samples if s.first]
    return {
        "conversations": len(samples),
        "turns": sum(len(s.turns) for s in samples),
        "calls": sum(s.calls for s in samples),
        "failed_calls": sum(s.failures for s in samples),
        "first_turn_diversity": userlm.first_turn_diversity(firsts) if len(firsts) > 1 else None,
        "intent_overlap": _decomposition(samples),
        "termination_f1": userlm.termination_f1([p for p, _ in endings], [t for _, t in endings]) if endings else None,
        "role_fault_rate": _fault_rate(samples),
        "words_per_turn": sum(words) / len(words) if words else None,
        "turing_pick_rate": turing,
    }


def score_samples(
    samples: Sequence[UserSample],
    reference: Reference | None,
    tokenizer: lexical.Tokenizer,
    turing: float | None = None,
) -> dict[str, Any]:
    """Every part, term and family of one user on one source, and its index. Without a
    ``reference`` (a source whose dev half is empty) only the parts are given; terms and index are None."""
    parts = sample_parts(samples, turing)
    terms: dict[str, float | None] = dict.fromkeys(TERMS)
    parts["lexical_z"] = dict.fromkeys(lexical.LEXICAL_METRICS)
    parts["length_ks"] = None
    if reference is not None:
        features = _features(samples)
        if features:
            terms.update(behaviour.dimension_scores(reference.row, behaviour.feature_row(features)))
        values = _lexical_values(samples, tokenizer)
        if values and reference.lexical:
            parts["lexical_z"] = lexical.zscores(values, reference.lexical)
        for name in lexical.LEXICAL_METRICS:
            terms[name] = z_term(parts["lexical_z"].get(name))
        terms["first_turn_diversity"] = dice(parts["first_turn_diversity"], reference.first_turn_diversity)
        terms["intent_decomposition"] = dice(parts["intent_overlap"], reference.intent_decomposition)
        f1 = parts["termination_f1"]
        terms["termination"] = None if f1 is None else 100.0 * f1
        rate = parts["role_fault_rate"]
        if rate is not None and reference.fault_rate is not None:
            terms["role_faults"] = 100.0 * (1 - abs(rate - reference.fault_rate))
        parts["length_ks"] = ks_distance(_words(samples), reference.words)
        terms["length"] = None if parts["length_ks"] is None else 100.0 * (1 - parts["length_ks"])
        terms["turing"] = None if turing is None else 100.0 * min(1.0, 2.0 * (1.0 - turing))
    families = {
        "behaviour": _mean(terms[dim] for dim in behaviour.DIMENSIONS),
        "lexical": _mean(terms[name] for name in lexical.LEXICAL_METRICS),
        "userlm": _mean(terms[name] for name in ("first_turn_diversity", "intent_decomposition", "termination")),
        "role_length": _mean([terms["role_faults"], terms["length"]]),
        "turing": terms["turing"],
    }
    return {"parts": parts, "terms": terms, "families": families, "index": _mean(families.values())}


# ---------------------------------------------------------------------------------------------- report


def compute_scorecard(
    samples: Mapping[str, Sequence[UserSample]],
    dev: Mapping[str, Sequence[HumanConversation]],
    test: Mapping[str, Sequence[HumanConversation]],
    *,
    users: Sequence[str],
    replies: int | None = None,
    tokenizer: lexical.Tokenizer = "words",
    turing: Mapping[tuple[str, str], float | None] | None = None,
) -> dict[str, Any]:
    """The scorecard: per source and overall, a row per user and the ceiling.

    ``samples`` maps each user to its samples (all sources); ``dev`` maps each source to its ``dev``
    conversations (the reference), ``test`` to the conversations replayed (the ceiling: their humans,
    cut at ``replies`` real replies as the replay was). ``turing`` maps ``(user, source)`` to a
    judge's pick rate. The overall row of a user is the mean over sources of each number.
    ``behaviour_rates`` gives, for the dev humans, each user and the ceiling (all sources pooled), the
    share of conversations where each fact-free behaviour rule fires; it is not part of the index."""
    turing = turing or {}
    rows = [*users, CEILING]
    report: dict[str, Any] = {"sources": {}, "overall": {}, "users": list(rows), "tokenizer": tokenizer}
    pooled: dict[str, list[UserSample]] = {user: list(samples.get(user, [])) for user in users}
    pooled[CEILING] = [human_sample(c, replies) for items in test.values() for c in items]
    pooled[REFERENCE] = [human_sample(c) for items in dev.values() for c in items]
    pooled_features = {name: _features(items) for name, items in pooled.items()}
    report["feature_rows"] = {
        name: behaviour.feature_row(rows) if rows else None for name, rows in pooled_features.items()
    }
    report["behaviour_rates"] = {
        name: behaviour_rates([sample.exchanges for sample in pooled[name]]) for name in (REFERENCE, *rows)
    }
    for source, conversations in dev.items():
        reference = reference_of([human_sample(c) for c in conversations], tokenizer) if conversations else None
        table: dict[str, Any] = {"reference_conversations": len(conversations)}
        for user in rows:
            if user == CEILING:
                own = [human_sample(c, replies) for c in test.get(source, [])]
            else:
                own = [sample for sample in samples.get(user, []) if sample.conversation.source == source]
            table[user] = score_samples(own, reference, tokenizer, turing.get((user, source)))
        report["sources"][source] = table
    for user in rows:
        per_source = [report["sources"][source][user] for source in dev]
        report["overall"][user] = {
            "index": _mean(entry["index"] for entry in per_source),
            "families": {family: _mean(entry["families"][family] for entry in per_source) for family in FAMILIES},
            "terms": {term: _mean(entry["terms"][term] for entry in per_source) for term in TERMS},
            "turns": sum(entry["parts"]["turns"] for entry in per_source),
            "failed_calls": sum(entry["parts"]["failed_calls"] for entry in per_source),
        }
    return report


async def run_scorecard(
    config: ScorecardConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run (or resume) the replay under ``out/runs/replay``, then compute and write the scorecard
    (``users_report.json``, ``users_report.md``, plots and ``report.html`` in ``out``)."""
    lexical.tokenize("", config.tokenizer)  # an unusable tokenizer stops the scorecard before the replay
    judge = await _judge_model(config) if config.judge else None
    try:
        report = await _replay_and_score(config, out, judge, resume=resume, progress=progress, log=log)
    finally:
        close = getattr(judge, "aclose", None)
        if close is not None:
            await close()
    return report


async def _judge_model(config: ScorecardConfig) -> Any:
    """The Turing judge's chat model, probed before the replay (a dead judge stops the scorecard first)."""
    from mimesis_gym.evaluation.humanlike.turing import make_turing_judge
    from mimesis_gym.evaluation.preflight import run_preflight

    assert config.judge is not None
    model = make_turing_judge(config.judge)
    try:
        await run_preflight([("judge", config.judge, model)])
    except BaseException:
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()
        raise
    return model


async def _replay_and_score(
    config: ScorecardConfig,
    out: Path,
    judge: Any,
    *,
    resume: bool,
    progress: bool,
    log: Callable[[str], None] | None,
) -> dict[str, Any]:
    eval_config = config.eval_config()
    run_dir = out / "runs" / REPLAY_ENV
    again = resume and (run_dir / "run.json").exists()
    await run_eval(eval_config, run_dir, resume=again, progress=progress, log=log)
    records = list(ResultsStore(run_dir / "episodes.jsonl").latest().values())
    sources = config.source_names()
    humans = Path(config.humans_dir).expanduser()
    dev: dict[str, list[HumanConversation]] = {}
    by_id: dict[str, HumanConversation] = {}
    for source in sources:
        loaded = load_corpus(source, humans).conversations
        dev[_source_name(source, loaded)] = [c for c in loaded if c.split == "dev"]
        by_id.update({c.id: c for c in loaded})
    test: dict[str, list[HumanConversation]] = defaultdict(list)
    for task_id in sorted({record.task_id for record in records if record.task_id in by_id}):
        test[by_id[task_id].source].append(by_id[task_id])
    shown = {user: redact_url_credentials(user) for user in config.scored_users()}
    samples = samples_from_records(records, by_id)
    samples = {shown.get(user, user): items for user, items in samples.items()}
    turing = await _turing(config, samples, judge) if judge is not None else None
    report = compute_scorecard(
        samples,
        dev,
        test,
        users=[shown[user] for user in config.scored_users()],
        replies=config.max_turns,
        tokenizer=config.tokenizer,
        turing=turing["rates"] if turing else None,
    )
    report["turing"] = turing["results"] if turing else None
    report["config"] = safe_strings(config.model_dump())
    write_scorecard(report, out, records)
    return report


def _source_name(spec: str, loaded: Sequence[HumanConversation]) -> str:
    return loaded[0].source if loaded else spec


async def _turing(config: ScorecardConfig, samples: Mapping[str, Sequence[UserSample]], model: Any) -> dict[str, Any]:
    """The judge's pick rate per (user, source) over every twin with a human turn beside it."""
    from mimesis_gym.evaluation.humanlike.turing import TuringItem, turing_test

    rates: dict[tuple[str, str], float | None] = {}
    results: dict[str, dict[str, Any]] = {}
    for user, items in samples.items():
        by_source: dict[str, list[TuringItem]] = defaultdict(list)
        for sample in items:
            conversation = sample.conversation
            for index, (context, human, simulated) in enumerate(sample.twins):
                by_source[conversation.source].append(
                    TuringItem(
                        key=f"{user}|{conversation.id}|{index}",
                        goal=conversation.goal,
                        context=context,
                        human=human,
                        simulated=simulated,
                    )
                )
        for source, turing_items in by_source.items():
            result = await turing_test(
                model,
                turing_items,
                concurrency=config.concurrency,
                role_max_tokens=config.role_max_tokens,
                seed=config.seed,
            )
            rates[(user, source)] = result.pick_rate
            results.setdefault(user, {})[source] = result.model_dump()
    return {"rates": rates, "results": results}
