"""`--ray ADDRESS`: the evaluation loop in Ray actors on a real local Ray head (127.0.0.1, two workers)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mimesis_gym.evaluation.ray_workers import LOOPBACK_ONLY_VARIABLE
from mimesis_gym.evaluation.runner import EvalConfig
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.users.serve import free_port
from tests.test_runner import run, stable

ray = pytest.importorskip("ray", reason="the `ray` extra is not installed")

pytestmark = pytest.mark.slow  # a Ray head and two actors take ~30 s to start on two cores


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on 127.0.0.1 started for this module, stopped afterwards."""
    port = free_port()
    ray_cli = str(Path(sys.executable).with_name("ray"))
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", LOOPBACK_ONLY_VARIABLE: "0"}  # the head stays on loopback
    subprocess.run(
        [ray_cli, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
         "--include-dashboard=false", "--disable-usage-stats"],
        check=True, env=env, capture_output=True, timeout=180,
    )  # fmt: skip
    try:
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)


def test_ray_actors_give_the_same_records_as_a_local_run(tmp_path, ray_head):
    config = EvalConfig(
        envs=["turtle", "function"], agents=["scripted:random"], limit=3, trials=2, max_turns=4, concurrency=4
    )
    run(config, tmp_path / "local")
    config.workers, config.ray_address = 2, ray_head
    _, counts = run(config, tmp_path / "ray")
    assert counts == {"ok": 12}
    local = stable(ResultsStore(tmp_path / "local" / "episodes.jsonl").read())
    on_ray = stable(ResultsStore(tmp_path / "ray" / "episodes.jsonl").read())
    assert local == on_ray
    workers = {r.worker for r in ResultsStore(tmp_path / "ray" / "episodes.jsonl").read()}
    assert len(workers) == 2  # both actors played, none of it in this process
    assert all(not worker.endswith(f":{os.getpid()}") for worker in workers)


def test_a_loopback_address_keeps_the_driver_on_loopback(ray_head):
    from mimesis_gym.evaluation.ray_workers import connect

    connected = connect(ray_head)
    assert connected.is_initialized()
    assert connected._private.worker.global_worker.node_ip_address == "127.0.0.1"
    assert {node["NodeManagerAddress"] for node in connected.nodes() if node["Alive"]} == {"127.0.0.1"}
