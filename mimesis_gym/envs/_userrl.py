"""Reading UserRL's parquet rows (the tasks the paper trained and evaluated on), shared by the envs."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["create_kwargs", "parquet_rows", "prompt_pair", "read_json"]


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    """All rows of one parquet file as dicts (needs pyarrow, extra ``userrl``)."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("pack='upstream' reads parquet files: pip install 'mimesis-gym[userrl]'") from None
    return pq.read_table(path).to_pylist()


@lru_cache(maxsize=32)
def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def prompt_pair(row: dict[str, Any]) -> tuple[str, str]:
    """The row's system prompt and opening user message, verbatim."""
    messages = {message["role"]: message["content"] for message in row["prompt"]}
    return messages["system"], messages["user"]


def create_kwargs(row: dict[str, Any]) -> dict[str, Any]:
    """``extra_info.tools_kwargs.interact_with_env.create_kwargs`` (DESIGN 2.5)."""
    return dict(row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"])
