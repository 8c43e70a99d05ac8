"""``benchmarks/compare.py`` (``make bench-compare``), ``benchmarks/ratios.py``'s rows and trl_trainer's flags.

compare.py runs real subprocesses: small benchmark scripts written here that report their rows
through the real ``report_ratio`` (one that reports two rows, one that fails, one that reports
none, one whose script is missing), and its table and JSON are read back.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMPARE = ROOT / "benchmarks" / "compare.py"

REPORTING = f"""
import sys
sys.path.insert(0, {str(ROOT / "benchmarks")!r})
from ratios import load_average, report_ratio

load = load_average()
report_ratio("fake", "generated tokens/s, KeywordEcho", unit="tokens/s", anchor="TRL GRPOTrainer",
             anchor_value=10.0, project_value=15.0, better="higher", n=2, spread=[1.4, 1.6, 1.5], goal=1.2,
             load_at_start=load)
report_ratio("fake", "seconds per step | KeywordEcho", unit="s", anchor="TRL GRPOTrainer",
             anchor_value=20.0, project_value=30.0, better="lower", n=2, goal=1.1)
print("quick" if "--quick" in sys.argv else "full")
"""


def load_ratios():
    """benchmarks/ratios.py as a module (the benchmarks folder is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_ratios", ROOT / "benchmarks" / "ratios.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def fake_benchmarks(tmp_path: Path) -> Path:
    """A --benchmarks list: one benchmark reporting two rows, one failing, one silent, one missing."""
    (tmp_path / "reporting.py").write_text(REPORTING)
    (tmp_path / "failing.py").write_text("import sys\nprint('about to fail')\nsys.exit(3)\n")
    (tmp_path / "silent.py").write_text("print('measured, reported nothing')\n")
    entries = [
        {"name": "reporting", "script": str(tmp_path / "reporting.py"), "args": [], "quick_args": ["--quick"]},
        {"name": "failing", "script": str(tmp_path / "failing.py")},
        {"name": "silent", "script": str(tmp_path / "silent.py")},
        {"name": "missing", "script": str(tmp_path / "not_here.py")},
    ]
    listing = tmp_path / "benchmarks.json"
    listing.write_text(json.dumps(entries))
    return listing


def run_compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(COMPARE), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


def test_compare_prints_one_table_and_writes_json(fake_benchmarks: Path, tmp_path: Path) -> None:
    out = tmp_path / "results" / "compare"
    done = run_compare("--benchmarks", str(fake_benchmarks), "--quick", "--out", str(out),
                       "--log-dir", str(tmp_path / "logs"))  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # the failing benchmark fails the run
    table = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert table[0].startswith("| benchmark | comparison | anchor | anchor value | project value | unit | ratio |")
    rows = {line.split(" | ")[1]: line for line in table[1:]}
    assert "| 1.5× | ≥ 1.2 | yes | 2 | 1.4–1.6 |" in rows["generated tokens/s, KeywordEcho"]
    assert "| 1.5× | ≤ 1.1 | **no** | 2 | — | — |" in rows["seconds per step \\| KeywordEcho"]
    assert "FAILED: exit status 3" in rows["FAILED: exit status 3"]
    assert any(key.startswith("no rows:") for key in rows)
    assert "- missing: skipped, " in done.stdout and "not_here.py is not in this checkout" in done.stdout
    assert "about to fail" in done.stdout  # the failing benchmark's log tail
    assert (tmp_path / "logs" / "reporting.log").read_text().splitlines()[-1] == "quick"  # --quick gave quick_args

    record = json.loads(out.with_suffix(".json").read_text())
    assert record["quick"] is True and record["machine"]["cpus"] >= 1
    statuses = {o["benchmark"]: o["status"] for o in record["outcomes"]}
    assert statuses == {"reporting": "ok", "failing": "failed", "silent": "no rows", "missing": "skipped"}
    first, second = record["rows"]
    assert (first["ratio"], first["meets_goal"], first["spread"]) == (1.5, True, [1.4, 1.6])
    assert len(first["load"]) == 2 and second["load"] is None
    assert (second["ratio"], second["meets_goal"]) == (1.5, False)
    assert out.with_suffix(".md").read_text().count("\n| ") == len(table)


HANGING = """
import subprocess, sys, time
server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1], "w").write(str(server.pid))
print("started a server", flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its parent counts as gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_compare_stops_a_benchmark_past_its_timeout_and_its_server(tmp_path: Path) -> None:
    (tmp_path / "hanging.py").write_text(HANGING)
    pid_file = tmp_path / "server.pid"
    listing = tmp_path / "list.json"
    listing.write_text(json.dumps([{"name": "hanging", "script": str(tmp_path / "hanging.py"),
                                    "args": [str(pid_file)]}]))  # fmt: skip
    done = run_compare("--benchmarks", str(listing), "--timeout", "3", "--log-dir", str(tmp_path / "logs"))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "| hanging | FAILED: timed out after 3 s |" in done.stdout
    assert "started a server" in done.stdout  # the log's tail
    server = int(pid_file.read_text())
    for _ in range(50):  # the orphaned server is reaped by init soon after it is killed
        if not alive(server):
            break
        time.sleep(0.1)
    assert not alive(server)


def test_compare_only_and_full_mode(fake_benchmarks: Path, tmp_path: Path) -> None:
    done = run_compare("--benchmarks", str(fake_benchmarks), "--only", "reporting,missing",
                       "--log-dir", str(tmp_path / "logs"))  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "logs" / "reporting.log").read_text().splitlines()[-1] == "full"
    assert not (tmp_path / "logs" / "failing.log").exists()
    assert "(full mode)" in done.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "nope"], "--only 'nope': unknown ['nope']; choose from reporting,failing,silent,missing"),
        (["--timeout", "0"], "--timeout 0: must be positive"),
    ],
)
def test_compare_usage_errors(fake_benchmarks: Path, args: list[str], message: str) -> None:
    done = run_compare("--benchmarks", str(fake_benchmarks), *args)
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr


def test_compare_bad_benchmark_list(tmp_path: Path) -> None:
    listing = tmp_path / "list.json"
    listing.write_text('[{"script": "x.py"}]')
    done = run_compare("--benchmarks", str(listing))
    assert done.returncode == 2
    assert f"--benchmarks {listing}: 'name'" in done.stderr and "Traceback" not in done.stderr


def test_ratio_rows_and_verdicts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    ratios = load_ratios()
    rows_file = tmp_path / "rows.jsonl"
    monkeypatch.setenv(ratios.ROWS_ENV, str(rows_file))
    faster = ratios.report_ratio("b", "tokens/s", unit="tokens/s", anchor="TRL", anchor_value=4.0,
                                 project_value=5.0, better="higher", n=3, spread=[1.3, 1.1, 1.2], goal=1.2,
                                 load_at_start=0.5)  # fmt: skip
    slower = ratios.report_ratio("b", "s/step", unit="s", anchor="TRL", anchor_value=4.0, project_value=5.0,
                                 better="lower", n=3, goal=1.2)  # fmt: skip
    assert (faster.ratio, faster.meets_goal, faster.spread) == (1.25, True, (1.1, 1.3))
    assert (slower.ratio, slower.meets_goal, slower.load) == (1.25, False, None)
    assert faster.load is not None and faster.load[0] == 0.5
    assert ratios.RatioRow("b", "c", "s", "a", 0.0, 1.0, "lower", 1).ratio != 0.0  # nan, not a division error
    assert ratios.RatioRow("b", "c", "s", "a", 1.0, 1.0, "lower", 1).meets_goal is None
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].endswith("→ 1.25× (goal ≥ 1.2)  goal met")
    assert printed[1].endswith("→ 1.25× (goal ≤ 1.2)  goal NOT met")
    written = [json.loads(line) for line in rows_file.read_text().splitlines()]
    assert [(w["comparison"], w["meets_goal"], w["spread"]) for w in written] == [
        ("tokens/s", True, [1.1, 1.3]),
        ("s/step", False, None),
    ]
    with pytest.raises(ValueError, match="better must be 'higher' or 'lower', not 'faster'"):
        ratios.report_ratio("b", "c", unit="s", anchor="a", anchor_value=1.0, project_value=1.0,
                            better="faster", n=1)  # type: ignore[arg-type]  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--envs", "keyword,nope"], "--envs 'keyword,nope': unknown ['nope']; choose from ['keyword', 'telepathy']"),
        (["--steps", "1"], "--steps 1: at least 2 (the first is a warm-up)"),
        (["--group", "1"], "--group 1: GRPO needs at least 2 rollouts per prompt"),
    ],
)
def test_trl_trainer_rejects_bad_flags_in_one_line(args: list[str], message: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "trl_trainer.py"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr and "Traceback" not in done.stderr
