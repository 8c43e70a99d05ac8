"""Shared fixtures: the upstream reference data in ../shared/data (skip with a reason when absent)."""

from pathlib import Path

import pytest

import mimesis_gym  # noqa: F401  (registers the env ids)

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def userrl_dir() -> Path:
    root = SHARED_DATA / "userrl"
    if not root.is_dir():
        pytest.skip(f"UserRL reference data not found at {root} (expected ../shared/data/userrl)")
    return root
