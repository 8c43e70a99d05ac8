"""``make bench-compare``: run the side-by-side benchmarks and print one table of ratios (docs/performance.md).

Each benchmark runs as a subprocess (``python benchmarks/NAME.py`` with its short arguments under
``--quick``) with ``$MIMESIS_BENCH_ROWS`` naming a file in a temporary folder; every
``report_ratio(...)`` call it makes (benchmarks/ratios.py) appends one row there. The rows of all
benchmarks are then printed as one markdown table: comparison, anchor, anchor value, project
value, unit, ratio (project / anchor), goal, met, n, spread and the machine's 1-minute load average
when the benchmark started and when it reported.

- A benchmark whose script is not in this checkout is skipped with a line saying so.
- A benchmark that fails (non-zero exit, or past ``--timeout``) is a row saying so, with the tail of
  its log; the table still prints and the exit status is 1. Past the timeout (or on Ctrl-C) its whole
  process group is stopped, servers it started included.
- A benchmark that ran but reported no row is a row saying so (it does not end with ``report_ratio``).

Each benchmark's output goes to ``NAME.log`` in ``--log-dir`` (default: a new temporary folder,
printed). ``--out PATH`` also writes the table as ``PATH`` with the suffixes ``.json`` and ``.md``.

    python benchmarks/compare.py [--quick] [--only trl_trainer,env_overhead] [--out results/compare]
        [--timeout 3600] [--benchmarks list.json]

``--benchmarks FILE`` replaces the built-in list with a JSON list of
``{"name", "script", "args", "quick_args"}`` objects (script relative to the repository root, or
absolute).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ratios import ROWS_ENV, load_average

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Benchmark:
    """One side-by-side benchmark: its script and its arguments in full and in ``--quick`` mode."""

    name: str
    script: str
    args: list[str] = field(default_factory=list)
    quick_args: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return Path(self.script) if Path(self.script).is_absolute() else ROOT / self.script


BENCHMARKS = [
    Benchmark("trl_trainer", "benchmarks/trl_trainer.py", [], ["--quick"]),
    Benchmark("trainer_generation", "benchmarks/trainer_generation.py", [],
              ["--repeats", "2", "--groups", "1", "--turns", "2"]),
    Benchmark("local_engine", "benchmarks/local_engine.py", ["--turns", "8", "--batch", "8"],
              ["--turns", "4", "--batch", "8", "--skip-reuse-off"]),
    Benchmark("local_engine_fp32", "benchmarks/local_engine.py", ["--turns", "8", "--batch", "8", "--dtype", "float32"],
              ["--turns", "4", "--batch", "8", "--skip-reuse-off", "--dtype", "float32"]),
    Benchmark("update_scaling", "benchmarks/update_scaling.py", [],
              ["--sizes", "300,1500,3000", "--shapes", "multi,grpo", "--repeats", "1"]),
    Benchmark("content_retries", "benchmarks/content_retries.py", ["--json-modes", "auto,off"],
              ["--episodes", "4", "--turns", "2", "--json-modes", "off"]),
    # the overhead benchmarks take seconds at full size: quick mode keeps it (fewer repeats only add noise)
    Benchmark("env_overhead", "benchmarks/env_overhead.py", [], []),
    Benchmark("integration_overhead", "benchmarks/integration_overhead.py", [], []),
]  # fmt: skip
"""The side-by-side benchmarks, in the order they run (each ends with ``report_ratio`` rows)."""

COLUMNS = ["benchmark", "comparison", "anchor", "anchor value", "project value", "unit", "ratio", "goal", "met",
           "n", "spread", "load start/end"]  # fmt: skip


@dataclass
class Outcome:
    """What one benchmark gave: its rows, or why there are none."""

    benchmark: str
    rows: list[dict[str, Any]]
    status: str  # "ok", "no rows", "failed", "skipped"
    detail: str = ""
    seconds: float = 0.0
    load: tuple[float, float] | None = None
    log: str | None = None


def load_benchmarks(path: Path | None) -> list[Benchmark]:
    """The built-in list, or the JSON list in ``path`` (a bad file raises ``ValueError`` naming it)."""
    if path is None:
        return list(BENCHMARKS)
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
        benchmarks = [Benchmark(e["name"], e["script"], list(e.get("args", [])), list(e.get("quick_args", [])))
                      for e in entries]  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(
            f"--benchmarks {path}: {error}; expected a JSON list of {{name, script, args, quick_args}}"
        ) from error
    names = [b.name for b in benchmarks]
    if len(set(names)) != len(names) or not names:
        raise ValueError(f"--benchmarks {path}: names must be unique and at least one; got {names}")
    return benchmarks


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The JSON lines a benchmark appended (none if it wrote no file)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def log_tail(path: Path, lines: int = 15) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def run_bounded(command: list[str], environment: dict[str, str], output: Any, timeout: float) -> int | None:
    """Run ``command`` in its own process group; its exit status, or ``None`` when it ran past ``timeout``.

    Past the timeout, or when this process is interrupted, the whole group — the benchmark and any
    server it started — is stopped (:func:`stop_group`).
    """
    process = subprocess.Popen(command, cwd=ROOT, env=environment, stdout=output, stderr=subprocess.STDOUT,
                               start_new_session=True)  # fmt: skip
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(process)
        return None
    except BaseException:
        stop_group(process)
        raise


def stop_group(process: subprocess.Popen[bytes], grace: float = 10.0) -> None:
    """SIGTERM to the process group led by ``process``; after it exits (or ``grace`` seconds), SIGKILL to
    whatever of the group is left (a server that outlived its benchmark)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def run_benchmark(benchmark: Benchmark, quick: bool, log_dir: Path, timeout: float) -> Outcome:
    """Run one benchmark as a subprocess; its rows, or a failed / no-rows / skipped outcome."""
    if not benchmark.path.exists():
        return Outcome(benchmark.name, [], "skipped", f"{benchmark.script} is not in this checkout")
    rows_file = log_dir / f"{benchmark.name}.rows.jsonl"
    log = log_dir / f"{benchmark.name}.log"
    environment = {**os.environ, ROWS_ENV: str(rows_file),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    command = [sys.executable, str(benchmark.path), *(benchmark.quick_args if quick else benchmark.args)]
    print(f"[compare] {benchmark.name}: {' '.join(command[1:])} (log {log})", flush=True)
    load_start, started = load_average(), time.perf_counter()
    with log.open("w", encoding="utf-8") as output:
        code = run_bounded(command, environment, output, timeout)
    detail = f"exit status {code}" if code is not None else f"timed out after {timeout:g} s"
    outcome = Outcome(benchmark.name, read_rows(rows_file), "ok", "", time.perf_counter() - started,
                      (load_start, load_average()), str(log))  # fmt: skip
    if code != 0:
        outcome.status, outcome.detail = "failed", detail
        print(f"[compare] {benchmark.name} FAILED ({detail}); last lines of {log}:\n{log_tail(log)}", flush=True)
    elif not outcome.rows:
        outcome.status, outcome.detail = "no rows", "ran, but reported no ratio row (no report_ratio call)"
    print(f"[compare] {benchmark.name}: {outcome.status}, {len(outcome.rows)} row(s), {outcome.seconds:.0f} s",
          flush=True)  # fmt: skip
    return outcome


def number(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return f"{value:.4g}"


def load_cell(load: Any) -> str:
    return "—" if not load else f"{load[0]:.1f} / {load[1]:.1f}"


def row_cells(row: dict[str, Any]) -> list[str]:
    """The table cells of one reported row."""
    goal = row.get("goal")
    bar = "—" if goal is None else f"{'≥' if row['better'] == 'higher' else '≤'} {goal:g}"
    met = {None: "—", True: "yes", False: "**no**"}[row.get("meets_goal")]
    spread = row.get("spread")
    return [row["benchmark"], row["comparison"], row["anchor"], number(row["anchor_value"]),
            number(row["project_value"]), row["unit"], f"{number(row['ratio'])}×", bar, met, str(row["n"]),
            "—" if not spread else f"{spread[0]:.3g}–{spread[1]:.3g}", load_cell(row.get("load"))]  # fmt: skip


def table_lines(outcomes: list[Outcome]) -> list[str]:
    """The markdown table: every reported row, then one row per benchmark that failed or reported none."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for outcome in outcomes:
        cells_list = [row_cells(row) for row in outcome.rows]
        if outcome.status in ("failed", "no rows"):
            word = "FAILED" if outcome.status == "failed" else "no rows"
            cells_list.append([outcome.benchmark, f"{word}: {outcome.detail}", *["—"] * 9, load_cell(outcome.load)])
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |" for cells in cells_list]
    return lines


def machine() -> dict[str, Any]:
    """Where the numbers come from."""
    return {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(), "python": platform.python_version()}  # fmt: skip


def write_outputs(out: Path, outcomes: list[Outcome], markdown: str, quick: bool) -> list[Path]:
    """``out`` with ``.json`` (every row and outcome) and ``.md`` (the table); returns both paths."""
    out.parent.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out.with_suffix(".json"), out.with_suffix(".md")
    record = {"quick": quick, "machine": machine(), "outcomes": [asdict(outcome) for outcome in outcomes],
              "rows": [row for outcome in outcomes for row in outcome.rows]}  # fmt: skip
    json_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown, encoding="utf-8")
    return [json_path, md_path]


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[Benchmark]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="each benchmark's short mode (minutes, not hours)")
    parser.add_argument("--only", default=None, help="comma-separated benchmark names (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table to OUT.json and OUT.md")
    parser.add_argument("--log-dir", type=Path, default=None, help="each benchmark's log (default: a temp folder)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark before it fails")
    parser.add_argument("--benchmarks", type=Path, default=None, help="a JSON list replacing the built-in one")
    args = parser.parse_args(argv)
    try:
        benchmarks = load_benchmarks(args.benchmarks)
    except ValueError as error:
        parser.error(str(error))
    if args.only is not None:
        wanted = [name.strip() for name in args.only.split(",") if name.strip()]
        known = [b.name for b in benchmarks]
        unknown = [name for name in wanted if name not in known]
        if unknown or not wanted:
            parser.error(f"--only {args.only!r}: unknown {unknown}; choose from {','.join(known)}")
        benchmarks = [b for b in benchmarks if b.name in wanted]
    if args.timeout <= 0:
        parser.error(f"--timeout {args.timeout:g}: must be positive (seconds)")
    return args, benchmarks


def main(argv: list[str] | None = None) -> int:
    args, benchmarks = parse_args(argv)
    log_dir = args.log_dir or Path(tempfile.mkdtemp(prefix="bench-compare-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    for stale in log_dir.glob("*.rows.jsonl"):
        stale.unlink()
    print(f"[compare] {len(benchmarks)} benchmark(s), {'quick' if args.quick else 'full'} mode, logs in {log_dir}",
          flush=True)  # fmt: skip
    outcomes = [run_benchmark(benchmark, args.quick, log_dir, args.timeout) for benchmark in benchmarks]
    info = machine()
    header = (f"Measured on {info['processor']}, {info['cpus']} CPUs, {info['platform']}, Python {info['python']}"
              f" ({'quick' if args.quick else 'full'} mode). ratio = project / anchor.")  # fmt: skip
    skipped = [f"- {o.benchmark}: skipped, {o.detail}" for o in outcomes if o.status == "skipped"]
    markdown = "\n".join([header, "", *table_lines(outcomes), "", *skipped]).rstrip() + "\n"
    print("\n" + markdown, end="")
    if args.out is not None:
        for path in write_outputs(args.out, outcomes, markdown, args.quick):
            print(f"[compare] wrote {path}")
    return 1 if any(outcome.status == "failed" for outcome in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
