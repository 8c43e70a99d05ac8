"""A run is never mixed, duplicated or silently wrong; command-line mistakes are one line and exit 2."""

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mimesis_gym.cli import main
from mimesis_gym.evaluation.rundir import config_fingerprint
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.users.serve import free_port
from tests.support.fault_server import FaultServer, wait_until

BASE = ["eval", "--envs", "function", "--agent", "oracle", "--limit", "1", "--max-turns", "2", "--no-progress"]


def one_line(capsys):
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture
def finished_run(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*BASE, "--out", str(out)]) == 0
    capsys.readouterr()
    return out


# ---------------------------------------------------------------- resume rules


def test_run_json_stores_the_config_fingerprint(finished_run):
    meta = json.loads((finished_run / "run.json").read_text())
    assert meta["config_fingerprint"] == config_fingerprint(meta["config"])


def test_resume_refuses_an_edited_config(finished_run, capsys):
    path = finished_run / "run.json"
    meta = json.loads(path.read_text())
    meta["config"]["max_turns"] = 9
    path.write_text(json.dumps(meta))
    assert main(["eval", "--resume", "--out", str(finished_run)]) == 2
    assert "the config was edited after the run started" in one_line(capsys)


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--agent", "scripted:noop"], "agents: stored ['oracle'], given ['scripted:noop']"),
        (["--envs", "turtle"], "envs: stored ['function'], given ['turtle']"),
        (["--max-turns", "5"], "max_turns: stored 2, given 5"),
        (["--limit", "3"], "limit: stored 1, given 3"),
    ],
)
def test_resume_refuses_flags_that_change_the_plan(finished_run, capsys, flags, named):
    before = (finished_run / "episodes.jsonl").read_text()
    assert main(["eval", "--resume", "--out", str(finished_run), *flags]) == 2
    line = one_line(capsys)
    assert "cannot change what it plays" in line and named in line
    assert (finished_run / "episodes.jsonl").read_text() == before


def test_resume_accepts_the_same_values_and_pace_changes(finished_run, capsys):
    assert main(["eval", "--resume", "--out", str(finished_run), "--agent", "oracle", "--concurrency", "3"]) == 0
    meta = json.loads((finished_run / "run.json").read_text())
    assert meta["config"]["concurrency"] == 3 and meta["config"]["agents"] == ["oracle"]
    assert meta["config_fingerprint"] == config_fingerprint(meta["config"])


def test_a_second_process_on_the_same_run_fails_at_once(tmp_path, capsys):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--envs", "function,turtle", "--agent",
               "scripted:random:0.3", "--limit", "3", "--max-turns", "3", "--concurrency", "1", "--out", str(out),
               "--no-progress", "--no-preflight"]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: (out / "run.json").exists(), timeout=60)
        # refused, not queued: a lock that waited for the other run would resume the finished run (status 0)
        assert main(["eval", "--resume", "--out", str(out)]) == 2
        assert "is in use by another mimesis-gym process" in one_line(capsys)
    finally:
        assert child.wait(timeout=300) == 0, child.stderr.read()
    keys = [record.key for record in ResultsStore(out / "episodes.jsonl").read()]
    assert len(keys) == len(set(keys)) == 6


HOLD_LOCK = """
import sys
from pathlib import Path
from mimesis_gym.evaluation.rundir import RunLock
with RunLock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()  # hold the lock until the test closes our stdin (or kills us)
"""


@pytest.fixture
def lock_holder(finished_run):
    """A second, real process holding the run directory's lock (as a live ``eval`` does)."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(finished_run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "held"
        yield child
    finally:
        child.kill()
        child.wait(timeout=30)


def test_deleting_the_lock_file_does_not_free_a_live_run(finished_run, lock_holder, capsys):
    (finished_run / ".lock").unlink()
    before = (finished_run / "episodes.jsonl").read_text()
    assert main(["eval", "--resume", "--out", str(finished_run), "--no-progress"]) == 2
    assert "is in use by another mimesis-gym process" in one_line(capsys)
    assert main(["report", str(finished_run)]) == 2
    assert "is in use by another mimesis-gym process" in one_line(capsys)
    assert (finished_run / "episodes.jsonl").read_text() == before


def test_a_lock_left_by_a_dead_process_does_not_block(finished_run, lock_holder, capsys):
    lock_holder.kill()  # SIGKILL: no cleanup runs; the kernel drops the lock with the process
    lock_holder.wait(timeout=30)
    assert (finished_run / ".lock").read_text().strip() == str(lock_holder.pid)  # its note stays behind
    assert main(["eval", "--resume", "--out", str(finished_run), "--no-progress"]) == 0
    assert (finished_run / ".lock").read_text().strip() == str(os.getpid())


def corrupt_a_middle_line(run):
    """Line 2 of a three-record run becomes a valid JSON object that is not a record."""
    path = run / "episodes.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    assert len(lines) == 3
    lines[1] = '{"schema_version": 1, "note": "not a record"}\n'
    path.write_text("".join(lines))
    return path


def test_a_corrupt_middle_line_is_named_with_its_repairs(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*BASE, "--limit", "3", "--out", str(run)]) == 0
    capsys.readouterr()
    path = corrupt_a_middle_line(run)
    before = path.read_text()
    for command in (["eval", "--resume", "--out", str(run), "--no-progress"], ["report", str(run)]):
        assert main(command) == 2
        line = one_line(capsys)
        assert f"{path}:2: not an episode record (missing run_id, agent, user, judge and " in line
        assert "delete that line" in line and "--skip-corrupt" in line
    assert path.read_text() == before  # nothing cut, nothing appended
    assert json.loads((run / "run.json").read_text())["status"] == "complete"
    assert main(["eval", "--out", str(tmp_path / "new"), "--skip-corrupt", *BASE[1:]]) == 2
    assert "use it with --resume" in one_line(capsys)


def test_skip_corrupt_skips_counts_and_replays_the_lost_episode(tmp_path, capsys):
    run = tmp_path / "run"
    assert main([*BASE, "--limit", "3", "--out", str(run)]) == 0
    capsys.readouterr()
    path = corrupt_a_middle_line(run)
    assert main(["eval", "--resume", "--out", str(run), "--no-progress", "--skip-corrupt"]) == 0
    err = capsys.readouterr().err
    assert f"skipped 1 corrupt line(s) of {path} (line 2); their episodes play again" in err
    meta = json.loads((run / "run.json").read_text())
    assert meta["resumes"][-1]["skipped_corrupt_lines"] == [2] and meta["resumes"][-1]["run"] == 1
    store = ResultsStore(path, skip_corrupt=True)
    assert len(store.latest()) == 3 and store.skipped == (2,)  # the lost episode was played again
    assert main(["report", str(run), "--skip-corrupt"]) == 0
    assert f"skipped 1 corrupt line(s) of {path} (line 2)" in capsys.readouterr().err


def test_where_a_directory_cannot_be_locked_the_lock_file_is(tmp_path, monkeypatch):
    import fcntl
    import stat

    from mimesis_gym.evaluation.rundir import RunInUseError, RunLock

    real = fcntl.flock

    def flock(fd, operation):  # as on NFS: flock on a descriptor not open for writing fails
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(errno.EBADF, os.strerror(errno.EBADF))
        return real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    with RunLock(tmp_path), pytest.raises(RunInUseError, match="is in use by another mimesis-gym process"):
        RunLock(tmp_path).acquire()
    with RunLock(tmp_path):  # released with its holder
        assert (tmp_path / ".lock").read_text().strip() == str(os.getpid())


# ---------------------------------------------------------------- a full disk (ENOSPC injected at the write)


def disk_full() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def fill_disk_at_record(monkeypatch, n: int) -> None:
    """The store's n-th write gets half its bytes onto the disk, and every write after it finds the disk full."""
    import mimesis_gym.evaluation.store as store

    writes = []

    class FullDiskOs:
        def __getattr__(self, name):
            return getattr(os, name)

        @staticmethod
        def write(fd, data):
            writes.append(len(data))
            if len(writes) < n:
                return os.write(fd, data)
            if len(writes) == n:
                return os.write(fd, bytes(data[: len(data) // 2]))
            raise disk_full()

    monkeypatch.setattr(store, "os", FullDiskOs())


def fill_disk_on(monkeypatch, name: str, *, stays_full: bool = False) -> None:
    """Writing the file ``name`` gets half its text onto the disk, then finds the disk full; with
    ``stays_full`` every later ``write_text`` fails too (nothing was freed)."""
    real = Path.write_text
    full = []

    def write_text(self, data, *args, **kwargs):
        if self.name == name or (full and stays_full):
            full.append(self.name)
            real(self, data[: len(data) // 2], *args, **kwargs)
            raise disk_full()
        return real(self, data, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)


def disk_full_line(capsys) -> str:
    line = one_line(capsys)
    assert line.startswith("mimesis-gym eval: disk full (no space left on device) writing "), line
    return line


def no_temp_files(out: Path) -> bool:
    return not list(out.rglob("*.tmp"))


def eval_on_a_full_disk(monkeypatch, capsys, out: Path, name: str, *, stays_full: bool = False) -> str:
    """A new run whose write of the file ``name`` finds the disk full: exit 74 and its one line."""
    fill_disk_on(monkeypatch, name, stays_full=stays_full)
    assert main([*BASE, "--out", str(out)]) == 74
    return disk_full_line(capsys)


def test_a_full_disk_while_recording_stops_the_run_resumably(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    fill_disk_at_record(monkeypatch, 2)
    assert main([*BASE, "--limit", "3", "--out", str(out)]) == 74
    line = disk_full_line(capsys)
    assert f"writing {out / 'episodes.jsonl'}; run.json marked interrupted; free space and rerun with --resume" in line
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "interrupted" and "disk full" in meta["error"]
    assert len(ResultsStore(out / "episodes.jsonl").read()) == 1  # the torn second record was cut back
    assert (out / "episodes.jsonl").read_text().endswith("\n") and no_temp_files(out)
    monkeypatch.undo()
    assert main(["eval", "--resume", "--out", str(out), "--no-progress"]) == 0
    keys = [record.key for record in ResultsStore(out / "episodes.jsonl").read()]
    assert len(keys) == len(set(keys)) == 3


def test_a_full_disk_while_writing_the_report_leaves_no_temp_file(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    line = eval_on_a_full_disk(monkeypatch, capsys, out, "report.html.tmp")
    assert f"writing {out / 'report.html'}; run.json marked interrupted; free space and rerun with --resume" in line
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
    assert no_temp_files(out) and not (out / "report.html").exists()
    monkeypatch.undo()
    assert main(["eval", "--resume", "--out", str(out), "--no-progress"]) == 0
    assert (out / "report.html").is_file() and json.loads((out / "run.json").read_text())["status"] == "complete"


def test_a_full_disk_that_also_refuses_run_json_says_so(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    line = eval_on_a_full_disk(monkeypatch, capsys, out, "summary.json.tmp", stays_full=True)
    assert f"writing {out / 'summary.json'}; run.json could not be updated (it still says 'running')" in line
    assert "free space and rerun with --resume" in line
    assert json.loads((out / "run.json").read_text())["status"] == "running" and no_temp_files(out)
    monkeypatch.undo()
    assert main(["eval", "--resume", "--out", str(out), "--no-progress"]) == 0


def test_a_full_disk_before_run_json_exists_says_to_start_again(tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    line = eval_on_a_full_disk(monkeypatch, capsys, out, "run.json.tmp")
    assert f"writing {out / 'run.json'}; run.json could not be written; free space, delete {out} and run again" in line
    assert not (out / "run.json").exists() and no_temp_files(out)


# ---------------------------------------------------------------- values and names


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--limit", "0", "must be an integer >= 1, got 0"),
        ("--trials", "-1", "must be an integer >= 1, got -1"),
        ("--max-turns", "0", "must be an integer >= 1, got 0"),
        ("--concurrency", "0", "must be an integer >= 1, got 0"),
        ("--workers", "0", "must be an integer >= 1, got 0"),
        ("--step-timeout", "0", "must be a number > 0"),
        ("--step-timeout", "nan", "must be a number > 0"),
        ("--temperature", "-0.5", "must be a number >= 0 and <= 2"),
        ("--temperature", "inf", "must be a number >= 0 and <= 2"),
        ("--role-max-tokens", "0", "must be an integer >= 1, got 0"),
        ("--limit", "two", "'two' is not an integer"),
    ],
)
def test_out_of_range_numbers_are_usage_errors(tmp_path, capsys, flag, value, message):
    with pytest.raises(SystemExit) as exited:
        main([*BASE, "--out", str(tmp_path / "run"), flag, value])
    assert exited.value.code == 2
    line = one_line(capsys)
    assert flag in line and message in line
    assert not (tmp_path / "run").exists()


def test_repeated_names_collapse(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*BASE, "--out", str(out), "--agent", "oracle,oracle", "--envs", "function,function"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert (meta["config"]["agents"], meta["config"]["envs"], meta["plan"]["units"]) == (["oracle"], ["function"], 1)


def test_one_env_named_two_ways_plays_once(tmp_path, capsys):
    out = tmp_path / "run"
    assert main([*BASE, "--out", str(out), "--envs", "function,FUNCTION,mimesis/FunctionGym-v0"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert (meta["config"]["envs"], meta["plan"]["units"]) == (["function"], 1)
    assert len(ResultsStore(out / "episodes.jsonl").read()) == 1
    # a resume may name it either way too: the same run, nothing played twice
    assert main(["eval", "--resume", "--out", str(out), "--envs", "mimesis/FunctionGym-v0", "--no-progress"]) == 0
    assert len(ResultsStore(out / "episodes.jsonl").read()) == 1


def test_a_run_stored_with_an_env_id_resumes_under_its_short_name(finished_run, capsys):
    path = finished_run / "run.json"
    meta = json.loads(path.read_text())
    meta["config"]["envs"] = ["mimesis/FunctionGym-v0", "function"]  # as earlier versions stored --envs
    meta["config_fingerprint"] = config_fingerprint(meta["config"])
    path.write_text(json.dumps(meta))
    assert main(["eval", "--resume", "--out", str(finished_run), "--envs", "function", "--no-progress"]) == 0
    assert len(ResultsStore(finished_run / "episodes.jsonl").read()) == 1
    assert json.loads(path.read_text())["config"]["envs"] == ["function"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [
        ("function.no_such_key=1", "mimesis/FunctionGym-v0 takes no 'no_such_key'; it takes"),
        ("turtle.lenient_parsing=true", "'turtle' is not an env of this run (function)"),
        ("function.user=gpt-5.5", "set by the runner from its own flags"),
        ("function", "--env-arg wants ENV.KEY=VALUE"),
    ],
)
def test_bad_env_args_are_reported_before_the_run(tmp_path, capsys, arg, message):
    assert main([*BASE, "--out", str(tmp_path / "run"), "--env-arg", arg]) == 2
    assert message in one_line(capsys)
    assert not (tmp_path / "run" / "run.json").exists()


def test_a_data_dir_without_the_upstream_data_is_one_line_and_writes_nothing(tmp_path, capsys):
    wrong = tmp_path / "not-userrl"
    wrong.mkdir()
    out = tmp_path / "runs" / "run"
    assert main([*BASE, "--envs", "turtle", "--data-dir", str(wrong), "--out", str(out)]) == 2
    line = one_line(capsys)
    assert f"TurtleGym (pack='upstream') reads its files under {wrong.resolve()}, which holds none" in line
    assert "gyms/TurtleGym/turtlegym/data/all_stories_refined.json" in line and "--data-dir" in line
    assert not (tmp_path / "runs").exists()  # checked before the run directory (or its parent) is made


def test_unusable_out_directories_are_usage_errors(tmp_path, capsys):
    a_file = tmp_path / "file.txt"
    a_file.write_text("x")
    assert main([*BASE, "--out", str(a_file)]) == 2
    assert "is a file, not a directory" in one_line(capsys)
    assert main([*BASE, "--out", str(a_file / "run")]) == 2
    assert "cannot be used" in one_line(capsys)
    assert main([*BASE, "--out", "/proc/mimesis-gym-test/run"]) == 2
    assert "cannot be used" in one_line(capsys)


def test_user_kwargs_of_a_scripted_user_are_refused(tmp_path, capsys):
    assert main([*BASE, "--out", str(tmp_path / "run"), "--user-arg", "timeout_s=3", "--users", "scripted"]) == 0
    capsys.readouterr()  # the runner passes --user-arg to HTTP users only; the env itself refuses it:
    import gymnasium as gym

    with pytest.raises(ValueError, match="user 'scripted' takes no user_kwargs; got timeout_s"):
        gym.make("mimesis/FunctionGym-v0", user="scripted", user_kwargs={"timeout_s": 3})


# ---------------------------------------------------------------- report --from-scores

HEADER = "user,agent,travel,turtle,function,tau,persuade,intention,telepathy,search\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("u,a,1,2,3,4,5,nan,7,8\n", "intention='nan' is not a finite, non-negative score"),
        ("u,a,1,2,3,4,5,6,inf,8\n", "telepathy='inf' is not a finite, non-negative score"),
        ("u,a,-1,2,3,4,5,6,7,8\n", "travel='-1' is not a finite, non-negative score"),
        ("u,a,1,2,3,4,5,6,7,8\nu,a,1,2,3,4,5,6,7,8\n", ":3: a second row for user 'u', agent 'a'"),
        ("u,a,1,2,3\n", ":2: the row has a different number of fields than the header"),
        ("u,a,1,2,3,4,5,6,7,8,9\n", ":2: the row has a different number of fields than the header"),
        ("", "no score rows (only a header)"),
        (",a,1,2,3,4,5,6,7,8\n", "user and agent must not be empty"),
    ],
)
def test_report_from_scores_rejects_bad_tables(tmp_path, capsys, body, message):
    table = tmp_path / "scores.csv"
    table.write_text(HEADER + body, encoding="utf-8")
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "out")]) == 2
    assert message in one_line(capsys)


def test_report_from_scores_reads_a_byte_order_mark(tmp_path, capsys):
    table = tmp_path / "scores.csv"
    table.write_text(HEADER + "u,a,1,2,3,4,5,6,7,8\n", encoding="utf-8-sig")
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "out")]) == 0


# ---------------------------------------------------------------- play, serve-user, Ctrl-C


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--split", "nope"], "has no split 'nope'"),
        (["--split", "demo", "--task", "fn-nope"], "unknown task_id 'fn-nope'"),
        (["--user", "no-such-user"], "unknown user alias 'no-such-user'"),
        (["--as", "user", "--user", "mimesis-9b"], "--user mimesis-9b has no effect with --as user"),
    ],
)
def test_play_with_an_unknown_split_task_or_user_is_a_usage_error(capsys, flags, message):
    assert main(["play", "function", *flags]) == 2
    assert message in one_line(capsys)


def test_report_on_a_directory_that_is_not_a_run_is_a_usage_error(tmp_path, capsys):
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "missing does not exist; give the --out directory of a `mimesis-gym eval` run" in one_line(capsys)
    assert main(["report", str(tmp_path)]) == 2
    assert "is not an eval run directory (no run.json)" in one_line(capsys)
    assert list(tmp_path.iterdir()) == []  # no lock file left behind


def test_serve_user_without_vllm_fails(capsys):
    assert main(["serve-user", "tiny", "--python", sys.executable]) == 2
    assert f"vLLM is not importable by {sys.executable}" in one_line(capsys)


def test_ctrl_c_in_play_ends_cleanly():
    child = subprocess.Popen(
        [sys.executable, "-m", "mimesis_gym.cli", "play", "function", "--split", "demo"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(0.5)
        child.stdin.write("[action] 1 2 3 4\n")
        child.stdin.flush()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            time.sleep(1.0)
            child.send_signal(signal.SIGINT)
            break
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 130, err
    assert "Traceback" not in err and "== interrupted ==" in out


def test_ctrl_c_while_the_summary_is_written_leaves_a_resumable_run(tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--envs", "function,turtle,telepathy,intention",
               "--agent", "oracle,scripted:noop", "--limit", "2", "--max-turns", "2", "--out", str(out),
               "--no-progress", "--no-preflight"]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    episodes = out / "episodes.jsonl"

    def all_recorded() -> bool:
        return episodes.exists() and episodes.read_text().count("\n") >= 16

    try:
        assert wait_until(all_recorded, timeout=300)
        child.send_signal(signal.SIGINT)  # the run is now scoring and plotting the summary
        _, err = child.communicate(timeout=120)
    finally:
        child.kill()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert child.returncode in (0, 130)
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] in ("complete", "interrupted")
    assert (out / "summary.md").exists()
    assert main(["eval", "--resume", "--out", str(out), "--no-progress"]) == 0


def test_sigterm_while_the_user_is_retried_prints_one_line_and_no_traceback(tmp_path):
    server = FaultServer()
    server.script(*["status:503"] * 200)  # every user call fails and is retried (Retry-After: 1)
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mimesis_gym.cli", "eval", "--envs", "intention", "--agent", "oracle",
               "--users", f"openai:fault-model@{server.base_url}", "--limit", "2", "--max-turns", "2",
               "--out", str(out), "--no-progress", "--no-preflight", "--drain-timeout", "0"]  # fmt: skip
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "OPENAI_API_KEY": "test-key"})  # fmt: skip
    try:
        assert wait_until(lambda: len(server.requests) >= 2, timeout=120)  # the episodes are in their retries
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=120)
    finally:
        child.kill()
        server.close()
    assert child.returncode == 143
    assert "Traceback" not in err and "never retrieved" not in err, err
    assert err.count("interrupted; resume with:") == 1
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"


def test_ray_address_without_a_cluster_fails_fast(tmp_path, capsys):
    """The connection probe answers (its message), not Ray's own connection retries."""
    assert main([*BASE, "--out", str(tmp_path / "run"), "--ray", f"127.0.0.1:{free_port()}", "--workers", "2"]) == 2
    line = one_line(capsys)
    assert "no Ray cluster answers there" in line and "ray start --head" in line and "127.0.0.1" in line
    assert os.environ.get("RAY_ADDRESS") is None or True
