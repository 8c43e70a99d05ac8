"""Shared fixtures: the upstream reference data in ../shared/data (skip with a reason when absent)."""

from pathlib import Path

import pytest

import mimesis_gym  # noqa: F401  (registers the env ids)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA", "OMP_NUM_THREADS")


def pytest_report_header(config) -> str:
    """The kernel path and thread count this run uses (``make test-portable`` forces both; docs/testing.md)."""
    import os

    forced = [f"{name}={os.environ[name]}" for name in KERNEL_VARIABLES if name in os.environ]
    try:
        import torch
    except ImportError:
        return "torch: not installed"
    capability = torch.backends.cpu.get_cpu_capability()
    return f"torch {torch.__version__}: CPU kernels {capability}, {torch.get_num_threads()} thread(s); " + (
        "forced: " + " ".join(forced) if forced else "nothing forced"
    )


@pytest.fixture(scope="session")
def userrl_dir() -> Path:
    root = SHARED_DATA / "userrl"
    if not root.is_dir():
        pytest.skip(f"UserRL reference data not found at {root} (expected ../shared/data/userrl)")
    return root


@pytest.fixture
def clean_user_registry():
    """Restore the user registry (registered aliases, entry-point state) after a test."""
    from mimesis_gym.users import registry

    with registry.scoped_user_registry():
        yield registry


@pytest.fixture
def clean_env_table():
    """Restore the env table and Gymnasium's registry after a test that registers envs."""
    from mimesis_gym.envs import scoped_env_registrations

    with scoped_env_registrations() as table:
        yield table


@pytest.fixture
def fault_server():
    """A fault-injecting chat-completions server on 127.0.0.1 (``tests/support/fault_server.py``)."""
    from tests.support.fault_server import FaultServer

    server = FaultServer()
    yield server
    server.close()
