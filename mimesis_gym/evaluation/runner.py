"""The async episode runner (evaluation.md §1): plan, one coroutine per episode, crash-safe records.

Every (agent, user) pair × env × task × trial is a work unit with a stable key. Episodes run as
asyncio coroutines under separate limits for episodes in flight, agent calls and role calls; each
finished episode is appended and fsynced to ``episodes.jsonl`` at once, so a killed run resumes
without loss (``resume=True`` skips finished keys and repairs a torn last line).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import signal
import sys
import time
import traceback
import uuid
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from pydantic import BaseModel, Field

import mimesis_gym
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.core.chat import ChatReply, current_call_context
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json
from mimesis_gym.core.redact import redact
from mimesis_gym.envs import ENV_IDS, SHORT_NAMES
from mimesis_gym.evaluation.abcd_table import ABCD_ENV, abcd_summaries
from mimesis_gym.evaluation.aggregate import ENV_COLUMNS, env_score, mean_ranks, task_scores, weighted_avg
from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord, UserFailureRecord, unit_key
from mimesis_gym.evaluation.report import Section, SummaryRow, write_summary
from mimesis_gym.evaluation.store import ResultsStore, parse_record, serialise_record
from mimesis_gym.users.registry import make_chat_model, resolve_user

__all__ = ["EvalConfig", "Interrupted", "WorkUnit", "build_plan", "report_runs", "run_eval", "summarise"]

logger = logging.getLogger(__name__)


class EvalConfig(BaseModel):
    """Everything that defines a run; stored in ``run.json`` and reused by ``--resume``."""

    envs: list[str] = Field(default_factory=lambda: [e for e in ENV_COLUMNS if e in SHORT_NAMES.values()])
    agents: list[str] = Field(default_factory=lambda: ["tiny"])
    users: list[str] = Field(default_factory=lambda: ["scripted"])
    judge: str | None = Field(None, description="None: each user judges itself (J-self)")
    trials: int = 1
    seed: int = 0
    split: str = "test"
    limit: int | None = None
    max_turns: int = 16
    concurrency: int = 8
    agent_concurrency: int | None = None
    user_concurrency: int | None = None
    step_timeout: float = 120.0
    agent_max_tokens: int = 2048
    temperature: float = 0.0
    role_max_tokens: int | None = None
    user_failures: Literal["exclude", "include"] = "exclude"
    privileged: bool = False
    env_args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    data_dir: str | None = Field(None, description="UserRL root: every env uses pack='upstream' from it")
    user_kwargs: dict[str, Any] = Field(default_factory=dict, description="overrides for every HTTP user")
    on_no_tool_call: Literal["grammar", "end"] = "grammar"
    preset: str | None = None
    workers: int = Field(1, ge=1, description="worker processes (spawned); this process stays the only writer")
    ray_address: str | None = Field(None, description="run the workers as Ray actors on this cluster (extra `ray`)")

    def env_kwargs(self, env: str) -> dict[str, Any]:
        """The kwargs of env ``env`` (short name): upstream data when ``data_dir`` is set, then overrides."""
        kwargs: dict[str, Any] = {}
        if self.data_dir is not None:
            kwargs.update(pack="upstream", data_dir=self.data_dir)
        kwargs.update(self.env_args.get(env, {}))
        return kwargs


class Interrupted(Exception):
    """The run stopped on SIGINT/SIGTERM; finished episodes are recorded, the rest run on resume."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


class WorkUnit(BaseModel):
    agent: str
    user: str
    env_id: str
    env: str
    task_id: str
    trial: int
    seed: int

    @property
    def key(self) -> str:
        return unit_key(self.agent, self.user, self.env_id, self.task_id, self.trial, self.seed)


def _env_id(short: str) -> str:
    by_short = {name: env_id for env_id, name in SHORT_NAMES.items()}
    if short in by_short:
        return by_short[short]
    if short in ENV_IDS:
        return short
    raise ValueError(f"unknown env {short!r}; known: {', '.join(by_short)}")


def build_plan(config: EvalConfig) -> tuple[list[WorkUnit], dict[str, int]]:
    """Every unit in order (pair × env in column order × task × trial) and the planned task counts."""
    ordered = sorted(
        (_env_id(e) for e in config.envs),
        key=lambda i: ENV_COLUMNS.index(SHORT_NAMES[i]) if SHORT_NAMES[i] in ENV_COLUMNS else len(ENV_COLUMNS),
    )
    tasks: dict[str, list[str]] = {}
    for env_id in ordered:
        kwargs = config.env_kwargs(SHORT_NAMES[env_id])
        env_class = load_env_creator(gym.spec(env_id).entry_point)
        pack = env_class.load_task_pack(kwargs.get("pack", "original"), kwargs.get("data_dir"))
        tasks[env_id] = [task.id for task in pack.pool(config.split)][: config.limit]
    units = [
        WorkUnit(
            agent=agent,
            user=user,
            env_id=env_id,
            env=SHORT_NAMES[env_id],
            task_id=task_id,
            trial=trial,
            seed=config.seed + trial,
        )
        for agent in config.agents
        for user in config.users
        for env_id in ordered
        for task_id in tasks[env_id]
        for trial in range(config.trials)
    ]
    return units, {SHORT_NAMES[env_id]: len(ids) for env_id, ids in tasks.items()}


class _LimitedModel:
    """A shared user/judge chat model behind a semaphore, recording every call per episode."""

    def __init__(self, model: Any, semaphore: asyncio.Semaphore) -> None:
        self.model = model
        self.semaphore = semaphore
        self.calls: dict[str, list[tuple[str, int, ChatReply, int | None]]] = defaultdict(list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        async with self.semaphore:
            reply = await self.model.chat(messages, **kwargs)
        context = current_call_context()
        tier = None
        if kwargs.get("json_keys") and reply.failure is None:
            try:
                tier = coerce_json(reply.text, kwargs["json_keys"]).tier
            except JSONCoercionError:
                tier = None
        self.calls[context.episode_id or ""].append((context.role or "?", context.turn, reply, tier))
        return reply


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


async def _run_unit(
    unit: WorkUnit,
    config: EvalConfig,
    run_id: str,
    agent: Any,
    users: dict[str, Any],
    judge: Any,
    agent_semaphore: asyncio.Semaphore,
) -> EpisodeRecord:
    """Play one unit to its end; never raises for agent, user or env problems (they become statuses)."""
    started, clock = _now(), time.perf_counter()
    episode_id = hashlib.sha1(unit.key.encode()).hexdigest()[:16]
    user_model = users[unit.user]
    kwargs: dict[str, Any] = config.env_kwargs(unit.env)
    if config.role_max_tokens is not None:
        kwargs["role_max_tokens"] = config.role_max_tokens
    record = EpisodeRecord(
        run_id=run_id,
        agent=unit.agent,
        user=unit.user,
        judge=config.judge or "self",
        env_id=unit.env_id,
        env=unit.env,
        task_id=unit.task_id,
        trial=unit.trial,
        seed=unit.seed,
        key=unit.key,
        status="ok",
        started_at=started,
        worker=f"{platform.node()}:{os.getpid()}",
    )
    env = None
    try:
        env = gym.make(
            unit.env_id,
            user=user_model if user_model is not None else "scripted",
            judge=judge,
            privileged=config.privileged,
            **kwargs,
        ).unwrapped
        obs, info = await env.areset(seed=unit.seed, options={"task_id": unit.task_id, "episode_id": episode_id})
        conv = agent.start(env.system_prompt, env.tools, env.opening_messages)
        conv.env = env
        record.score_context = env.score_context()
        agent_usage = {"calls": 0, "attempts": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
        record.usage["agent"] = agent_usage
        for turn in range(config.max_turns):
            agent_clock = time.perf_counter()
            async with agent_semaphore:
                decision = await agent.act(conv, seed=unit.seed * 1000 + turn)
            agent_latency = time.perf_counter() - agent_clock
            agent_usage["calls"] += 1
            agent_usage["attempts"] += decision.usage.attempts
            agent_usage["prompt_tokens"] += decision.usage.prompt_tokens
            agent_usage["completion_tokens"] += decision.usage.completion_tokens
            agent_usage["seconds"] += agent_latency
            if decision.end:
                break
            if decision.failure is not None:
                if decision.failure.kind != "context_length":
                    record.status = "agent_error"
                    record.error = f"agent: {decision.failure.kind}: {decision.failure.detail}"
                break
            step_clock = time.perf_counter()
            try:
                obs, reward, terminated, _, info = await asyncio.wait_for(
                    env.astep(decision.action), timeout=config.step_timeout
                )
            except asyncio.TimeoutError:
                record.status = "user_failure"
                record.user_failures.append(
                    UserFailureRecord(turn=turn + 1, role="env", kind="step_timeout", info_kind="timeout")
                )
                break
            truncated = not terminated and turn + 1 >= config.max_turns
            agent.observe(conv, decision, obs)
            record.steps.append(
                StepRecord(
                    turn=info["turn"],
                    action_kind=info["action_kind"],
                    content=_content(decision.action),
                    valid_action=info["valid_action"],
                    observation=obs,
                    reward=reward,
                    reward_parts=info["reward_parts"],
                    terminated=terminated,
                    truncated=truncated,
                    user_failure=info["user_failure"],
                    agent_latency_s=agent_latency,
                    step_latency_s=time.perf_counter() - step_clock,
                )
            )
            record.episode_score = info["episode_score"]
            if info["user_failure"] and record.status == "ok":
                record.status = "user_failure"
            if terminated or truncated:
                record.terminated, record.truncated = terminated, truncated
                break
        record.transcript = list(conv.messages)
        if config.privileged:
            record.privileged = {"thoughts": [t.to_dict() for t in env.thought_records]}
    except Exception as error:  # the env broke: reported apart, run again on resume
        record.status = "env_error"
        frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" at {frame.filename}:{frame.lineno}" if frame else ""
        record.error = redact(f"{type(error).__name__}: {error}{where}")[:500]
    finally:
        if env is not None:
            env.close()
    record.rewards = [step.reward for step in record.steps]
    record.n_turns = len(record.steps)
    _collect_role_calls(record, [m for m in (user_model, judge) if isinstance(m, _LimitedModel)], episode_id)
    record.finished_at = _now()
    record.duration_s = time.perf_counter() - clock
    return record


def _content(action: Any) -> str:
    if isinstance(action, dict):
        content = action.get("content", "")
        return content if isinstance(content, str) else json.dumps(content)
    text = str(action).strip()
    if text.startswith("[") and "]" in text:
        return text[text.index("]") + 1 :].strip()
    return text


def _collect_role_calls(record: EpisodeRecord, models: Sequence[_LimitedModel], episode_id: str) -> None:
    usage: dict[str, dict[str, Any]] = dict(record.usage)
    seen: set[int] = set()
    for model in models:
        if id(model) in seen:
            continue
        seen.add(id(model))
        for role, turn, reply, tier in model.calls.pop(episode_id, []):
            entry = usage.setdefault(
                role,
                {
                    "calls": 0,
                    "attempts": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "reasoning_tokens": 0,
                    "seconds": 0.0,
                    "json_tiers": {},
                },
            )
            entry["calls"] += 1
            entry["attempts"] += reply.usage.attempts
            entry["prompt_tokens"] += reply.usage.prompt_tokens
            entry["completion_tokens"] += reply.usage.completion_tokens
            entry["reasoning_tokens"] += reply.usage.reasoning_tokens
            entry["seconds"] += reply.usage.latency_s
            if tier is not None:
                entry["json_tiers"][str(tier)] = entry["json_tiers"].get(str(tier), 0) + 1
            if reply.failure is not None:
                record.user_failures.append(
                    UserFailureRecord(
                        turn=turn,
                        role=role,
                        kind=reply.failure.kind,
                        info_kind=reply.failure.info_kind,
                        detail=reply.failure.detail,
                        attempts=reply.failure.attempts,
                        status=reply.failure.status,
                    )
                )
    record.usage = usage


def _env_scores(scored: dict[str, list[tuple[str, float]]], planned: dict[str, int]) -> dict[str, float | None]:
    """×100 env scores from (task id, episode score) pairs per env; ``None`` when nothing was scored."""
    return {
        column: (env_score(task_scores(scored[column])) or 0.0) * 100 if scored.get(column) else None
        for column in ENV_COLUMNS
        if column in planned
    }


def summarise(records: Sequence[EpisodeRecord], planned: dict[str, int], mode: str, judge: str | None) -> list[Section]:
    """Sections (one per user) of rows (one per agent) scored with the paper's protocol.

    Both scoring modes are computed (``score_exclude``, ``score_include``); ``mode`` picks the
    headline. Every cell also carries its episode counts and user failures by ``role:kind``.
    """
    include: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    exclude: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    cells: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    users: list[str] = []
    agents: list[str] = []
    for record in records:
        users += [record.user] if record.user not in users else []
        agents += [record.agent] if record.agent not in agents else []
        pair = (record.user, record.agent)
        include[pair][record.env].append((record.task_id, record.episode_score))
        if record.status == "ok":
            exclude[pair][record.env].append((record.task_id, record.episode_score))
        cell = cells[pair].setdefault(
            record.env, {"n_episodes": 0, "n_user_failure_episodes": 0, "n_agent_error": 0, "n_env_error": 0,
                         "failures_by_kind": {}}
        )  # fmt: skip
        cell["n_episodes"] += 1
        if record.status == "user_failure":
            cell["n_user_failure_episodes"] += 1
            kinds = {f"{f.role}:{f.info_kind}" for f in record.user_failures} or {
                part for step in record.steps if step.user_failure for part in step.user_failure.split(";")
            }
            for kind in kinds:
                cell["failures_by_kind"][kind] = cell["failures_by_kind"].get(kind, 0) + 1
        elif record.status in ("agent_error", "env_error"):
            cell[f"n_{record.status}"] += 1
    sections = []
    columns = [c for c in ENV_COLUMNS if c in planned]
    for user in users:
        both = {agent: (_env_scores(exclude[(user, agent)], planned), _env_scores(include[(user, agent)], planned))
                for agent in agents}  # fmt: skip
        headline = {agent: both[agent][0 if mode == "exclude" else 1] for agent in agents}
        ranks = mean_ranks(headline, columns)
        rows = []
        for agent in agents:
            avg, partial = weighted_avg(headline[agent], planned)
            mr, mr_partial = ranks[agent]
            for cell in cells[(user, agent)].values():
                cell["user_failure_rate"] = cell["n_user_failure_episodes"] / cell["n_episodes"]
            rows.append(
                SummaryRow(agent=agent, label=agent, scores=headline[agent], score_exclude=both[agent][0],
                           score_include=both[agent][1], avg=avg, avg_partial=partial, mr=mr, mr_partial=mr_partial,
                           cells=cells[(user, agent)])
            )  # fmt: skip
        sections.append(Section(user=resolve_user(user).label, judge=judge or "self", rows=rows))
    return sections


def _summarise_and_write(
    records: Sequence[EpisodeRecord], planned: dict[str, int], mode: str, judge: str | None, out: Path
) -> list[Section]:
    """Score the records (the eight-env table and, apart, the ABCD table) and write the summary files."""
    scored = [record for record in records if record.env != ABCD_ENV]
    sections = summarise(scored, planned, mode, judge)
    labels = {record.user: resolve_user(record.user).label for record in records}
    abcd = abcd_summaries(records, labels)
    write_summary(out, sections, mode=mode, weights={k: v for k, v in planned.items() if k != ABCD_ENV}, abcd=abcd)
    return sections


def report_runs(run_dirs: Sequence[Path], out: Path, *, mode: str | None = None, force: bool = False) -> list[Section]:
    """Merge the records of several runs into one summary (rows = agents, sections = users).

    Runs whose planned task counts or turn caps differ are refused unless ``force``.
    """
    records: dict[str, EpisodeRecord] = {}
    planned: dict[str, int] = {}
    reference: tuple[dict[str, int], int] | None = None
    judge = None
    chosen_mode = mode
    for run_dir in run_dirs:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        identity = (meta["plan"]["tasks"], meta["config"]["max_turns"])
        if reference is not None and identity != reference and not force:
            raise ValueError(f"{run_dir} differs from the first run in its task plan or turn cap (use --force)")
        reference = reference or identity
        planned.update(meta["plan"]["tasks"])
        judge = judge or meta["config"].get("judge")
        chosen_mode = chosen_mode or meta["config"].get("user_failures", "exclude")
        records.update(ResultsStore(run_dir / "episodes.jsonl").latest())
    return _summarise_and_write(list(records.values()), planned, chosen_mode or "exclude", judge, out)


def _write_run_json(out: Path, meta: dict[str, Any]) -> None:
    tmp = out / "run.json.tmp"
    tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out / "run.json")


class _Runtime:
    """The shared pieces of a process's episodes: limits, user/judge models and agents.

    With ``workers`` processes, each gets its share of the per-run limits (evaluation.md §1.3).
    """

    def __init__(self, config: EvalConfig, workers: int) -> None:
        share = max(1, workers)
        self.config = config
        self.episodes = asyncio.Semaphore(max(1, config.concurrency // share))
        self.agent_calls = asyncio.Semaphore(max(1, (config.agent_concurrency or config.concurrency) // share))
        user_calls = asyncio.Semaphore(max(1, (config.user_concurrency or 2 * config.concurrency) // share))
        self.users: dict[str, Any] = {}
        for alias in config.users:
            overrides = config.user_kwargs if resolve_user(alias).kind == "http" else {}
            model = make_chat_model(alias, **overrides)
            self.users[alias] = None if model is None else _LimitedModel(model, user_calls)
        self.judge: Any = None  # J-self: the user's model judges (scripted users get scripted judges)
        if config.judge is not None:
            judge_model = make_chat_model(config.judge)
            self.judge = "scripted" if judge_model is None else _LimitedModel(judge_model, user_calls)
        self.agents = {
            alias: make_agent(
                alias,
                max_tokens=config.agent_max_tokens,
                temperature=config.temperature,
                on_no_tool_call=config.on_no_tool_call,
            )
            for alias in config.agents
        }

    async def run(self, unit: WorkUnit, run_id: str) -> EpisodeRecord:
        return await _run_unit(
            unit, self.config, run_id, self.agents[unit.agent], self.users, self.judge, self.agent_calls
        )


def _worker_main(config_json: str, run_id: str, units: Any, results: Any, workers: int) -> None:
    """A worker process: pull units until the sentinel, push each record back as JSON."""
    config = EvalConfig.model_validate_json(config_json)

    async def loop() -> None:
        runtime = _Runtime(config, workers)

        async def lane() -> None:
            while True:
                payload = await asyncio.to_thread(units.get)
                if payload is None:
                    return
                record = await runtime.run(WorkUnit.model_validate_json(payload), run_id)
                await asyncio.to_thread(results.put, serialise_record(record))

        await asyncio.gather(*(lane() for _ in range(max(1, config.concurrency // workers))))

    asyncio.run(loop())


class _Sink:
    """The coordinator's side of scale-out: append each record from a worker, count it, tick the bar."""

    def __init__(self, store: ResultsStore, counts: dict[str, int], bar: Any, stop: asyncio.Event) -> None:
        self.store, self.counts, self.bar, self.stop = store, counts, bar, stop

    async def accept(self, payload: str) -> bool:
        """Store one record sent as JSON by a worker; False once a drain has been requested."""
        return await self.add(parse_record(payload))

    async def add(self, record: EpisodeRecord) -> bool:
        """Store one record; False once a drain has been requested."""
        await self.store.append(record)
        self.counts[record.status] += 1
        if self.bar is not None:
            self.bar.update(1)
        return not self.stop.is_set()


async def _run_in_workers(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """Spread units over ``config.workers`` spawned processes; this process stays the only writer."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    units, results = context.Queue(), context.Queue()
    for unit in todo:
        units.put(unit.model_dump_json())
    lanes = max(1, config.concurrency // config.workers)
    for _ in range(config.workers * lanes):
        units.put(None)
    processes = [
        context.Process(target=_worker_main, args=(config.model_dump_json(), run_id, units, results, config.workers))
        for _ in range(config.workers)
    ]
    for process in processes:
        process.start()
    try:
        for _ in range(len(todo)):
            if not await sink.accept(await asyncio.to_thread(results.get)):
                break
    finally:
        for process in processes:
            if sink.stop.is_set():
                process.terminate()
            process.join(timeout=30)


async def _run_on_ray(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """The same loop in ``config.workers`` Ray actors on the cluster at ``config.ray_address``."""
    from mimesis_gym.evaluation.ray_workers import run_units_on_ray

    await run_units_on_ray(
        config.ray_address or "auto",
        config.model_dump_json(),
        run_id,
        [unit.model_dump_json() for unit in todo],
        actors=config.workers,
        lanes=max(1, config.concurrency // config.workers),
        accept=sink.accept,
    )


async def run_eval(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] = (),
    handle_signals: bool = False,
    drain_timeout: float = 60.0,
) -> tuple[list[Section], dict[str, int]]:
    """Run (or resume) an evaluation into ``out``; returns the summary sections and status counts.

    With ``handle_signals``, the first SIGINT/SIGTERM starts no new episode, lets running ones
    finish for up to ``drain_timeout`` seconds, cancels the rest (not recorded), writes ``run.json``
    with status ``interrupted`` and raises :class:`Interrupted`; a second signal cancels at once.
    """
    stop = asyncio.Event()
    received: list[int] = []
    tasks: list[asyncio.Future[None]] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()
        if len(received) > 1:  # a second signal: cancel at once
            for task in tasks:
                task.cancel()

    loop = asyncio.get_running_loop()
    if handle_signals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
    out.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(out / "episodes.jsonl")
    units, planned = build_plan(config)
    meta: dict[str, Any]
    if resume:
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        store.repair()
        meta.setdefault("resumes", [])
    else:
        meta = {"schema_version": 1, "run_id": uuid.uuid4().hex, "created_at": _now(), "resumes": []}
    meta.update(
        status="running", command=list(argv), config=config.model_dump(mode="json"),
        plan={"units": len(units), "tasks": planned, "agents": config.agents, "users": config.users},
        versions={"mimesis_gym": mimesis_gym.__version__, "python": sys.version.split()[0],
                  "gymnasium": gym.__version__},
        host={"platform": platform.platform(), "cpus": os.cpu_count()},
    )  # fmt: skip
    finished = store.finished_keys()
    todo = [unit for unit in units if unit.key not in finished]
    if resume:
        meta["resumes"].append({"at": _now(), "skipped": len(units) - len(todo), "run": len(todo)})
    _write_run_json(out, meta)

    bar = None
    if progress and sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(total=len(units), initial=len(units) - len(todo), desc="episodes", file=sys.stderr)
    counts: dict[str, int] = defaultdict(int)
    sink = _Sink(store, counts, bar, stop)
    if config.ray_address is not None and todo:
        tasks.append(asyncio.ensure_future(_run_on_ray(config, todo, meta["run_id"], sink)))
    elif config.workers > 1 and todo:
        tasks.append(asyncio.ensure_future(_run_in_workers(config, todo, meta["run_id"], sink)))
    elif todo:
        runtime = _Runtime(config, workers=1)  # the models live here only when this process plays

        async def one(unit: WorkUnit) -> None:
            async with runtime.episodes:
                if stop.is_set():
                    return
                record = await runtime.run(unit, meta["run_id"])
            await sink.add(record)

        tasks.extend(asyncio.ensure_future(one(unit)) for unit in todo)
    everything = asyncio.ensure_future(asyncio.gather(*tasks))
    try:
        stopper = asyncio.ensure_future(stop.wait())
        await asyncio.wait({everything, stopper}, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not everything.done():
            try:
                await asyncio.wait_for(asyncio.shield(everything), timeout=drain_timeout)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        elif everything.exception() is not None:
            raise everything.exception()  # type: ignore[misc]
    finally:
        if handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
        if bar is not None:
            bar.close()
    records = list(store.latest().values())
    sections = _summarise_and_write(records, planned, config.user_failures, config.judge, out)
    totals: dict[str, int] = defaultdict(int)
    for record in records:
        totals[record.status] += 1
    errors = totals.get("agent_error", 0) + totals.get("env_error", 0)
    status = "interrupted" if received else "complete_with_errors" if errors else "complete"
    meta.update(status=status, finished_at=_now(), counts=dict(totals))
    _write_run_json(out, meta)
    if received:
        raise Interrupted(received[0])
    return sections, dict(totals)
