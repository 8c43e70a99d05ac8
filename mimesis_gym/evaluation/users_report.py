"""``mimesis-gym users-report``: how does a user model behave? (docs/users-report.md)

The same probing agent (default: the fair scripted baseline) talks with every user under test on the
same tasks of every env that has a user; ABCD, where the simulator is the policy, runs each user
under test as the customer against the scripted support agent. Both are ordinary eval runs under
``<out>/runs/`` (the runner, its record store, its resume rules), stored with ``--privileged`` so
the user's utterances and the task's hidden data are at hand. The metrics
(:mod:`~mimesis_gym.evaluation.user_metrics`) are then computed from those records into
``users_report.json``, ``users_report.md`` and plots; ``reference_dir`` adds a ``human`` column
from real ABCD dialogues, computed the same way. ``user_behaviors`` probes every user under each
condition too (docs/behaviors.md): the probe run plays each on the envs whose user plays it (the
runner's conditions, as ``eval --user-behaviors``), and the report adds a column per (user,
behaviour), labelled ``user [B3]``, with the share of its episodes where the env saw it enacted.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator, model_validator

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.core.redact import redact_url_credentials
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.envs.recipe import EnvRecipe
from mimesis_gym.evaluation.conditions import ConditionPlan, plan_conditions, run_conditions
from mimesis_gym.evaluation.embeddings import TextEmbedder
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.rundir import write_text_atomic
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore, safe_strings
from mimesis_gym.evaluation.user_judge import DialogueVerdict, judge_dialogues, judged_rates
from mimesis_gym.evaluation.user_metrics import (
    Exchange,
    UserDialogue,
    answer_directness,
    behavior_enacted,
    disclosure_curve,
    hedging_rate,
    homogeneity,
    length_stats,
    role_fidelity,
    self_contradictions,
    unprompted_disclosure,
)

__all__ = [
    "CUSTOMER_ENV",
    "DEFAULT_PROBE_AGENT",
    "HUMAN",
    "UsersReportConfig",
    "compute_metrics",
    "condition_label",
    "customer_alias",
    "default_envs",
    "dialogues_from_records",
    "human_reference",
    "is_customer_env",
    "run_users_report",
    "silent_users",
    "write_users_report",
]

DEFAULT_PROBE_AGENT = "scripted:baseline"


def is_customer_env(env: str) -> bool:
    """Whether the simulated user of ``env`` is the agent's policy (the customer) rather than one of
    the env's roles: its env-table entry says ``summary="abcd"`` (ABCDBehavior)."""
    return ENV_TABLE.summary_table(env) == "abcd"


CUSTOMER_ENV = next(entry.short for entry in ENV_TABLE if is_customer_env(entry.short))
"""The shipped customer env (``abcd``), kept for imports; the report asks :func:`is_customer_env`."""
HUMAN = "human"
SCRIPTED_CUSTOMER = "oracle"
"""The agent alias that plays the env's scripted customer, standing for ``scripted`` in ABCD."""
HORIZON = 6


class UsersReportConfig(BaseModel):
    """What ``users-report`` runs: users under test, the probing agent, envs, tasks and pace."""

    users: list[str] = Field(min_length=1)
    agent: str = DEFAULT_PROBE_AGENT
    envs: list[str] = Field(default_factory=lambda: default_envs())
    limit: int = Field(2, ge=1)
    trials: int = Field(1, ge=1)
    max_turns: int = Field(6, ge=1)
    concurrency: int = Field(8, ge=1)
    agent_max_tokens: int = Field(256, ge=1)
    role_max_tokens: int | None = Field(None, ge=1, description="cap on every user/judge call's max_tokens")
    seed: int = Field(0, ge=0)
    embedder: str | None = Field(
        None, description="model for the embedding homogeneity (tiny or hf:PATH); None: lexical only"
    )
    judge: str | None = Field(
        None, description="LLM judge of role fidelity and consistency (any user spec but scripted); None: scripted only"
    )
    env_args: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="short env name -> kwargs for that env (e.g. abcd: behaviors, turn_budget)"
    )
    user_behaviors: list[str] = Field(
        default_factory=lambda: [CONTROL],
        description="conditions each user is probed under (control always, first); each on the envs that play it",
    )

    @field_validator("user_behaviors")
    @classmethod
    def _control_first_each_once(cls, names: list[str]) -> list[str]:
        return run_conditions(names)

    @model_validator(mode="after")
    def _env_args_name_envs_of_the_report(self) -> UsersReportConfig:
        stray = [env for env in self.env_args if env not in self.envs]
        if stray:
            raise ValueError(
                f"env_args names {stray[0]!r}, which is not an env of this report ({', '.join(self.envs)})"
            )
        return self

    @model_validator(mode="after")
    def _each_behaviour_is_played_somewhere(self) -> UsersReportConfig:
        if self.user_behaviors != [CONTROL]:
            self.condition_plan()  # a behaviour no probed env plays: the runner's one-line error, before any run
        return self

    def probed_envs(self) -> list[str]:
        """The envs the probing agent plays (ABCD aside: there the user under test is the policy)."""
        return [env for env in self.envs if not is_customer_env(env)]

    def condition_plan(self) -> ConditionPlan:
        """Which of ``user_behaviors`` each probed env plays, and the pairs skipped (``ConfigurationError``
        for a behaviour none plays)."""
        return plan_conditions([ENV_TABLE.find(env) for env in self.probed_envs()], self.user_behaviors)

    def dump(self) -> dict[str, Any]:
        """The config as the report stores it; ``user_behaviors`` only when more than control is probed,
        so a control-only report is the report as it was before behaviours."""
        return self.model_dump(exclude={"user_behaviors"} if self.user_behaviors == [CONTROL] else None)

    def eval_configs(self) -> dict[str, EvalConfig]:
        """The eval runs: ``probe`` (the agent against each user) and ``customer`` (ABCD)."""
        common = {
            "limit": self.limit,
            "trials": self.trials,
            "max_turns": self.max_turns,
            "concurrency": self.concurrency,
            "agent_max_tokens": self.agent_max_tokens,
            "role_max_tokens": self.role_max_tokens,
            "seed": self.seed,
            "privileged": True,
        }
        runs = {}
        probed = self.probed_envs()
        if probed:
            args = {env: kwargs for env, kwargs in self.env_args.items() if env in probed}
            runs["probe"] = EvalConfig(
                envs=probed,
                agents=[self.agent],
                users=self.users,
                env_args=args,
                user_behaviors=self.user_behaviors,
                **common,
            )
        customer_envs = _customer(self)
        if customer_envs:
            customers = [customer_alias(user) for user in self.users]
            args = {env: kwargs for env, kwargs in self.env_args.items() if env in customer_envs}
            runs["customer"] = EvalConfig(
                envs=customer_envs, agents=customers, users=["scripted"], env_args=args, **common
            )
        return runs


def condition_label(user: str, condition: str) -> str:
    """The report's column of ``user`` under ``condition``: the user alone under control, else ``user [B3]``."""
    return user if condition == CONTROL else f"{user} [{condition}]"


def default_envs() -> list[str]:
    """The paper's score columns and the ABCD customer env: the nine envs with a user."""
    return [entry.short for entry in ENV_TABLE if entry.column is not None or is_customer_env(entry.short)]


def customer_alias(user: str) -> str:
    """The agent alias that plays ``user`` as ABCD's customer (``scripted`` → the scripted customer)."""
    return SCRIPTED_CUSTOMER if user.strip().lower() == "scripted" else user


async def run_users_report(
    config: UsersReportConfig,
    out: Path,
    *,
    resume: bool = False,
    reference_dir: Path | None = None,
    progress: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run (or resume) the eval runs under ``out/runs/``, then compute and write the report.

    Users are named as the records name them: a credential inside the URL of a user spec is redacted.
    """
    for name, eval_config in config.eval_configs().items():
        run_dir = out / "runs" / name
        again = resume and (run_dir / "run.json").exists()
        await run_eval(eval_config, run_dir, resume=again, progress=progress, log=log)
    shown = [redact_url_credentials(user) for user in config.users]
    dialogues = []
    for name in config.eval_configs():
        records = ResultsStore(out / "runs" / name / "episodes.jsonl").latest().values()
        dialogues += dialogues_from_records(records, users=shown)
    reference = human_reference(reference_dir) if reference_dir is not None else []
    embedder = TextEmbedder(config.embedder) if config.embedder else None
    columns = [condition_label(user, condition) for user in shown for condition in config.user_behaviors]
    users = [*columns, *([HUMAN] if reference else [])]
    dialogues += reference
    verdicts = await _judge(config, dialogues) if config.judge else None
    report = compute_metrics(dialogues, users=users, embedder=embedder, verdicts=verdicts)
    if config.user_behaviors != [CONTROL]:
        report["user_behaviors"] = _where_played(config)
    report["config"] = safe_strings(config.dump())
    write_users_report(report, out)
    return report


def _where_played(config: UsersReportConfig) -> dict[str, dict[str, list[str]]]:
    """Per condition, the probed envs that played it and those that could not (their user does not play
    it; ABCD, whose customer is the policy, plays control only)."""
    plan = config.condition_plan()
    return {
        condition: {
            "envs": [env for env, conditions in plan.played.items() if condition in conditions],
            "not_played": [*plan.skipped.get(condition, {}), *([] if condition == CONTROL else _customer(config))],
        }
        for condition in config.user_behaviors
    }


def _customer(config: UsersReportConfig) -> list[str]:
    """The report's envs whose policy is the user under test (:func:`is_customer_env`)."""
    return [env for env in config.envs if is_customer_env(env)]


def silent_users(report: Mapping[str, Any]) -> list[str]:
    """One line for each user of ``report`` that gave no reply at all (its rates measure nothing),
    naming the user and its failed calls by kind."""
    lines = []
    for user, metrics in report["users"].items():
        if metrics["replies"]:
            continue
        counts = metrics.get("failure_counts") or {}
        if counts:
            kinds = ", ".join(f"{kind} {count}" for kind, count in counts.items())
            why = f"{sum(counts.values())} call(s) failed ({kinds})"
        else:
            why = "no failed call was recorded either (its episodes ended in agent or env errors, see runs/)"
        lines.append(f"no replies from user {user}: {why}")
    return lines


def dialogues_from_records(records: Iterable[EpisodeRecord], *, users: Sequence[str]) -> list[UserDialogue]:
    """The user's side of each stored episode (privileged records), labelled with the user under test
    (``user [B3]`` when the record's user played a behaviour, :func:`condition_label`).

    In a role env the user's replies are the turns' ``user_utterance`` and each answers the agent's
    message of that turn; in ABCD the user under test is the agent (the customer): its messages answer
    the support agent's previous utterance (the opening observation first)."""
    by_customer = {customer_alias(user): user for user in users}
    items_of = _ItemCache()
    dialogues = []
    for record in records:
        if record.status in ("agent_error", "env_error"):
            continue
        customer = is_customer_env(record.env)
        if customer:
            user = by_customer.get(record.agent, record.agent)
            exchanges = _customer_exchanges(record)
        else:
            user = record.user
            exchanges = _role_exchanges(record)
        failures = Counter(failure.kind for failure in record.user_failures) if not customer else {}
        dialogues.append(
            UserDialogue(
                env=record.env,
                user=condition_label(user, record.user_behavior),
                task_id=record.task_id,
                exchanges=tuple(exchanges),
                items=tuple(items_of(record)),
                failures=dict(failures),
                attempts=len(exchanges) + sum(failures.values()),
                behavior=record.user_behavior,
                enacted=record.behavior_enacted,
            )
        )
    return dialogues


def _role_exchanges(record: EpisodeRecord) -> list[Exchange]:
    turns = {turn.get("turn"): turn for turn in (record.privileged or {}).get("turns", [])}
    exchanges = []
    for step in record.steps:
        utterance = (turns.get(step.turn) or {}).get("user_utterance")
        if utterance is not None:
            exchanges.append(Exchange(prompt=step.content, reply=utterance))
    return exchanges


def _customer_exchanges(record: EpisodeRecord) -> list[Exchange]:
    opening = next((m["content"] for m in record.transcript if m.get("role") == "user"), "")
    prompts = [opening, *(step.observation for step in record.steps)]
    return [
        Exchange(prompt=prompts[index], reply=step.content)
        for index, step in enumerate(record.steps)
        if step.valid_action and step.action_kind != "finish"
    ]


class _ItemCache:
    """Rebuilds each record's task (same env id, task and seed, scripted roles) to read its items."""

    def __init__(self) -> None:
        self._envs: dict[str, Any] = {}
        self._items: dict[tuple[str, str, int], list[DisclosureItem]] = {}

    def __call__(self, record: EpisodeRecord) -> list[DisclosureItem]:
        key = (record.env_id, record.task_id, record.seed)
        if key not in self._items:
            env = self._envs.get(record.env_id)
            if env is None:
                env = self._envs[record.env_id] = EnvRecipe(env_id=record.env_id).build().unwrapped
            env.reset(seed=record.seed, options={"task_id": record.task_id})
            self._items[key] = env.disclosure_items()
        return self._items[key]


def human_reference(abcd_dir: Path) -> list[UserDialogue]:
    """Real customers' side of ABCD's dialogues: the ``test`` split of ``abcd_v1.1.json[.gz]``, or
    every dialogue of ``abcd_sample.json``.

    Each customer message is one exchange answering the agent's previous message (consecutive
    customer messages answer the same one); ``action`` lines (the agent's tool use) are skipped."""
    from mimesis_gym.envs.abcd.disclosure import abcd_disclosure_items
    from mimesis_gym.envs.abcd.tasks import read_conversations

    splits = read_conversations(abcd_dir)
    dialogues = []
    for conversation in splits.get("test") or splits.get("sample") or []:
        prompt = ""
        exchanges = []
        for speaker, text in conversation.get("original", []):
            if speaker == "agent":
                prompt = text
            elif speaker == "customer":
                exchanges.append(Exchange(prompt=prompt, reply=text))
        dialogues.append(
            UserDialogue(
                env=CUSTOMER_ENV,
                user=HUMAN,
                task_id=str(conversation.get("convo_id", len(dialogues))),
                exchanges=tuple(exchanges),
                items=tuple(abcd_disclosure_items(conversation.get("scenario", {}))),
            )
        )
    return dialogues


async def _judge(config: UsersReportConfig, dialogues: list[UserDialogue]) -> dict[int, DialogueVerdict | None]:
    """The LLM judge's verdict of every dialogue, by ``id(dialogue)``."""
    from mimesis_gym.users import make_chat_model

    assert config.judge is not None
    model = make_chat_model(config.judge, party="judge")
    if model is None:
        raise ValueError(f"judge {config.judge!r} is scripted: the users report's judge needs a model")
    try:
        verdicts = await judge_dialogues(
            model, dialogues, concurrency=config.concurrency, role_max_tokens=config.role_max_tokens
        )
    finally:
        close = getattr(model, "aclose", None)
        if close is not None:
            await close()
    return {id(dialogue): verdict for dialogue, verdict in zip(dialogues, verdicts, strict=True)}


def _summary(
    dialogues: list[UserDialogue],
    embedder: TextEmbedder | None = None,
    verdicts: Mapping[int, DialogueVerdict | None] | None = None,
) -> dict[str, Any]:
    unprompted, revealed = unprompted_disclosure(dialogues)
    direct, complete, questions = answer_directness(dialogues)
    similar, pairs = homogeneity(dialogues)
    close = homogeneity(dialogues, embedder.similarity)[0] if embedder is not None else None
    contradicted, repeated = self_contradictions(dialogues)
    failures: Counter[str] = Counter()
    attempts = 0
    for dialogue in dialogues:
        failures.update(dialogue.failures)
        attempts += dialogue.attempts
    enacted = behavior_enacted(dialogues)
    return {
        **({"behavior_enacted": enacted} if enacted is not None else {}),
        "dialogues": len(dialogues),
        "replies": sum(len(d.exchanges) for d in dialogues),
        "disclosure_curve": disclosure_curve(dialogues, HORIZON),
        "unprompted_disclosure": unprompted,
        "items_revealed": revealed,
        "answered_directly": direct,
        "answer_completeness": complete,
        "item_questions": questions,
        "role_faults": role_fidelity(dialogues),
        "reply_words": length_stats(dialogues),
        "hedging": hedging_rate(dialogues),
        "homogeneity": similar,
        "homogeneity_pairs": pairs,
        "homogeneity_embedding": close,
        "judge": (
            judged_rates([verdicts[id(d)] for d in dialogues], sum(1 for d in dialogues if d.exchanges))
            if verdicts is not None
            else None
        ),
        "self_contradiction": contradicted,
        "repeated_questions": repeated,
        "failures": {kind: count / attempts for kind, count in sorted(failures.items())} if attempts else {},
        "failure_counts": dict(sorted(failures.items())),
    }


def compute_metrics(
    dialogues: Sequence[UserDialogue],
    *,
    users: Sequence[str],
    embedder: TextEmbedder | None = None,
    verdicts: Mapping[int, DialogueVerdict | None] | None = None,
) -> dict[str, Any]:
    """Every metric per user (all envs pooled) and per (user, env); with an ``embedder``, also the
    embedding homogeneity (``homogeneity_embedding``, else ``None``); with the LLM judge's
    ``verdicts`` (by ``id(dialogue)``), its rates under ``judge`` (else ``None``). A column of dialogues
    played under a behaviour (``user [B3]``) also has ``behavior_enacted``, the share of them where the
    behaviour's rule saw it; a control column has no such key."""
    if embedder is not None:
        embedder.prepare(exchange.reply for dialogue in dialogues for exchange in dialogue.exchanges)
    grouped: dict[str, list[UserDialogue]] = defaultdict(list)
    for dialogue in dialogues:
        grouped[dialogue.user].append(dialogue)
    report: dict[str, Any] = {"horizon": HORIZON, "users": {}}
    for user in users:
        own = grouped.get(user, [])
        per_env: dict[str, list[UserDialogue]] = defaultdict(list)
        for dialogue in own:
            per_env[dialogue.env].append(dialogue)
        report["users"][user] = {
            **_summary(own, embedder, verdicts),
            "envs": {env: _summary(items, embedder, verdicts) for env, items in sorted(per_env.items())},
        }
    return report


def _cell(value: Any, percent: bool = True) -> str:
    if value is None:
        return "–"
    if isinstance(value, int):
        return str(value)
    return f"{100 * value:.0f}%" if percent else f"{value:.1f}"


ROWS: tuple[tuple[str, Callable[[dict[str, Any]], Any], bool], ...] = (
    ("disclosed by reply 1", lambda m: m["disclosure_curve"][0], True),
    (f"disclosed by reply {HORIZON}", lambda m: m["disclosure_curve"][-1], True),
    ("unprompted disclosure", lambda m: m["unprompted_disclosure"], True),
    ("answered directly", lambda m: m["answered_directly"], True),
    ("answer completeness", lambda m: m["answer_completeness"], True),
    ("role faults (any)", lambda m: m["role_faults"]["any"], True),
    ("acts as assistant", lambda m: m["role_faults"]["assistant"], True),
    ("says it is an AI", lambda m: m["role_faults"]["ai"], True),
    ("words per reply (mean)", lambda m: m["reply_words"]["mean"], False),
    ("words per reply (p90)", lambda m: m["reply_words"]["p90"], False),
    ("hedging", lambda m: m["hedging"], True),
    ("homogeneity (3-gram Jaccard)", lambda m: m["homogeneity"], True),
    ("homogeneity (embedding cosine)", lambda m: m["homogeneity_embedding"], True),
    ("acts as assistant (judge)", lambda m: m["judge"]["assistant_like"], True),
    ("contradictions (judge)", lambda m: m["judge"]["contradictions"], True),
    ("judge failures", lambda m: m["judge"]["judge_failures"], False),
    ("self-contradiction", lambda m: m["self_contradiction"], True),
    ("user failures", lambda m: sum(m["failures"].values()) if m["failures"] else 0.0, True),
    ("replies", lambda m: m["replies"], False),
)


OPTIONAL_ROWS = {
    "homogeneity (embedding cosine)": "homogeneity_embedding",
    "acts as assistant (judge)": "judge",
    "contradictions (judge)": "judge",
    "judge failures": "judge",
}
"""Rows shown only when the report measured their metric key (``--embedder``, ``--judge``)."""


ENACTED = "behaviour enacted"
"""The row of a report that probed behaviours: the share of a column's dialogues where its behaviour showed."""


def markdown(report: dict[str, Any]) -> str:
    """``users_report.md``: one column per user (and per user and behaviour), one row per metric; then the
    per-env breakdown."""
    users = list(report["users"])
    lines = ["# Users report", "", "| metric | " + " | ".join(users) + " |", "|---" * (len(users) + 1) + "|"]
    measured = {key for key in OPTIONAL_ROWS.values() if any(report["users"][u].get(key) is not None for u in users)}
    behaviors = report.get("user_behaviors")
    if behaviors:
        lines.append(
            f"| {ENACTED} | " + " | ".join(_cell(report["users"][u].get("behavior_enacted")) for u in users) + " |"
        )
    for label, pick, percent in ROWS:
        if label in OPTIONAL_ROWS and OPTIONAL_ROWS[label] not in measured:
            continue  # its option (--embedder, --judge) was not given
        lines.append(f"| {label} | " + " | ".join(_cell(pick(report["users"][u]), percent) for u in users) + " |")
    envs = sorted({env for u in users for env, m in report["users"][u]["envs"].items() if m["replies"]})
    per_env: list[tuple[str, Callable[[dict[str, Any]], Any], bool]] = list(ROWS[:6])
    if behaviors:
        per_env.insert(0, (ENACTED, lambda m: m.get("behavior_enacted"), True))
    for label, pick, percent in per_env:
        header = "| env | " + " | ".join(users) + " |"
        lines += ["", f"## {label}, per env", "", header, "|---" * (len(users) + 1) + "|"]
        for env in envs:
            cells = [report["users"][u]["envs"].get(env) for u in users]
            lines.append(f"| {env} | " + " | ".join(_cell(pick(c), percent) if c else "–" for c in cells) + " |")
    if behaviors:
        lines += ["", *_behaviors_note(behaviors)]
    lines += ["", "What each metric counts and its blind spots: docs/users-report.md.", ""]
    return "\n".join(lines)


def _behaviors_note(behaviors: Mapping[str, Any]) -> list[str]:
    """Where each behaviour was probed, and how to read its columns."""
    lines = [
        "A column `user [B3]` is the user probed under that behaviour (docs/behaviors.md), on the envs that "
        "play it; compare it with the user's own column on those envs (the per-env tables). Where "
        f"*{ENACTED}* is low, the user did not play the behaviour and its column says little about it.",
        "",
    ]
    for condition, where in behaviors.items():
        if condition == CONTROL:
            continue
        missing = f" (not played by {', '.join(where['not_played'])})" if where["not_played"] else ""
        lines.append(f"- {condition}: {', '.join(where['envs'])}{missing}")
    return lines


def write_users_report(report: dict[str, Any], out: Path) -> None:
    """``users_report.json`` and ``users_report.md`` (written whole, then renamed), and plots when
    matplotlib is installed (extra ``plots``)."""
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "users_report.json", json.dumps(report, indent=2, sort_keys=True) + "\n")
    write_text_atomic(out / "users_report.md", markdown(report))
    try:
        from mimesis_gym.evaluation.user_plots import write_user_plots
    except ImportError:  # matplotlib missing: the tables stand alone
        return
    write_user_plots(report, out / "plots")
