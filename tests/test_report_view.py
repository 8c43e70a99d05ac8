"""``mimesis-gym view`` and ``report RUN_DIR`` (docs/evaluation.md, "The report page"), over real loopback HTTP."""

from __future__ import annotations

import re
import signal
import socket
import struct
import subprocess
import sys
import threading

import httpx
import pytest

from mimesis_gym.cli import main
from mimesis_gym.evaluation.report_server import authority_host, is_loopback_host, make_report_server
from mimesis_gym.evaluation.rundir import RunLock
from tests.support.synthetic_runs import synthetic_records, write_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("view") / "run", synthetic_records(20))


def start_view(run_dir, *extra):
    """``mimesis-gym view`` in a child process; its URL once it listens."""
    child = subprocess.Popen(
        [sys.executable, "-m", "mimesis_gym.cli", "view", str(run_dir), "--port", "0", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    line = child.stderr.readline()
    match = re.search(r"at (http://127\.0\.0\.1:\d+/)", line)
    assert match, line
    return child, match.group(1)


def test_view_serves_only_the_page_and_ctrl_c_ends_it_cleanly(run_dir):
    child, url = start_view(run_dir)
    try:
        page = httpx.get(url, timeout=10)
        assert page.status_code == 200 and page.headers["content-type"] == "text/html; charset=utf-8"
        assert page.content == (run_dir / "report.html").read_bytes()
        assert httpx.get(url + "report.html?x=1", timeout=10).content == page.content
        assert httpx.head(url, timeout=10).status_code == 200
        for path in ("episodes.jsonl", "run.json", "../run.json", "plots/avg_by_user.png", "%2e%2e/run.json"):
            assert httpx.get(url + path, timeout=10).status_code == 404, path
    finally:
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    assert child.returncode == 0 and "Traceback" not in err and err.strip().endswith("stopped")


def test_sigterm_ends_view_cleanly_too(run_dir):
    child, url = start_view(run_dir)
    assert httpx.get(url, timeout=10).status_code == 200
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 0 and "Traceback" not in err


def test_view_answers_only_loopback_host_names(run_dir):
    child, url = start_view(run_dir)
    port = url.rsplit(":", 1)[1].strip("/")
    try:
        for host in ("evil.example", f"evil.example:{port}", f"rebind.attacker.test:{port}", f"10.0.0.1:{port}"):
            refused = httpx.get(url, headers={"Host": host}, timeout=10)
            assert refused.status_code == 403 and "unknown Host" in refused.text, host
            assert "episodes" not in refused.text
            assert httpx.head(url, headers={"Host": host}, timeout=10).status_code == 403, host
        for host in ("localhost", f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
            page = httpx.get(url, headers={"Host": host}, timeout=10)
            assert page.status_code == 200 and page.content == (run_dir / "report.html").read_bytes(), host
    finally:
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
    assert child.returncode == 0 and "Traceback" not in err


def serving(server):
    """Serve ``server`` in a thread whose handler threads ``server_close`` joins (the test waits for them)."""
    server.daemon_threads = False
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    return thread


def stop(server, thread):
    server.shutdown()
    server.server_close()
    thread.join(timeout=30)


def test_a_wildcard_bind_answers_ip_addresses_but_no_other_names(run_dir):
    server = make_report_server(run_dir, "0.0.0.0", 0, allow_remote=True)
    thread = serving(server)
    url = f"http://127.0.0.1:{server.server_address[1]}/"
    try:
        assert httpx.get(url, headers={"Host": "192.168.1.10:8765"}, timeout=10).status_code == 200
        assert httpx.get(url, headers={"Host": "my-box.example:8765"}, timeout=10).status_code == 403
    finally:
        stop(server, thread)


@pytest.mark.parametrize(
    ("authority", "host"),
    [("localhost", "localhost"), ("LocalHost:8765", "localhost"), ("[::1]:8765", "::1"), ("127.0.0.1:", "127.0.0.1"),
     ("::1", None), ("evil.example:80@localhost", None), ("localhost/x", None), ("", None), ("a b", None)],
)  # fmt: skip
def test_authority_host(authority, host):
    assert authority_host(authority) == host


def test_clients_leaving_mid_download_are_not_tracebacks(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "report.html").write_bytes(b"<p>" + b"x" * (32 << 20))  # far more than the socket buffers hold
    server = make_report_server(run, port=0)
    thread = serving(server)
    try:
        for _ in range(2):
            client = socket.socket()
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.connect(server.server_address[:2])
            client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            assert client.recv(16).startswith(b"HTTP/1.")  # the page is on its way
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            client.close()  # a reset, as a closed tab or a dropped tunnel gives
    finally:
        stop(server, thread)  # joins the handler threads: their errors, if any, are printed by now
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Error" not in err, err


def test_a_rewritten_report_shows_on_reload(run_dir, tmp_path):
    run = write_run(tmp_path / "run", synthetic_records(3))
    server = make_report_server(run, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        before = httpx.get(server.url, timeout=10).text
        (run / "report.html").write_text(before.replace("3 episodes", "three episodes"), encoding="utf-8")
        assert "three episodes" in httpx.get(server.url, timeout=10).text
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--host", "0.0.0.0"], "is not a loopback address"),
        (["--host", "192.168.1.10"], "--allow-remote"),
        (["--port", "70000"], "from 0 to 65535"),
    ],
)
def test_view_refuses_in_one_line(run_dir, capsys, argv, message):
    try:
        code = main(["view", str(run_dir), *argv])
    except SystemExit as stop:  # argparse's own errors exit from the parser
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_view_without_a_report_names_the_fix(tmp_path, capsys):
    assert main(["view", str(tmp_path)]) == 2
    assert f"mimesis-gym report {tmp_path}" in capsys.readouterr().err


def test_view_on_a_busy_port_says_so(run_dir, capsys):
    server = make_report_server(run_dir, port=0)
    try:
        assert main(["view", str(run_dir), "--port", str(server.server_address[1])]) == 2
        assert "cannot listen on 127.0.0.1" in capsys.readouterr().err
    finally:
        server.server_close()


def test_allow_remote_binds_another_address(run_dir):
    server = make_report_server(run_dir, "0.0.0.0", 0, allow_remote=True)
    try:
        assert server.server_address[0] == "0.0.0.0"
    finally:
        server.server_close()


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("10.0.0.1", False), ("example.org", False), ("::", False)],
)  # fmt: skip
def test_loopback_hosts(host, loopback):
    assert is_loopback_host(host) is loopback


def test_report_needs_out_to_merge_several_runs(run_dir, capsys):
    assert main(["report", str(run_dir), str(run_dir)]) == 2
    assert "pass --out" in capsys.readouterr().err


def test_report_refuses_a_run_directory_an_eval_holds(run_dir, capsys):
    with RunLock(run_dir):
        assert main(["report", str(run_dir)]) == 2
    assert "in use by another mimesis-gym process" in capsys.readouterr().err


def test_report_from_scores_still_needs_out(tmp_path, capsys):
    assert main(["report", "--from-scores", str(tmp_path / "scores.csv")]) == 2
    assert "--from-scores needs --out" in capsys.readouterr().err
