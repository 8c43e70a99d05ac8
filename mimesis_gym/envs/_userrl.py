"""Reading UserRL's parquet rows (the tasks the paper trained and evaluated on), shared by the envs."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from mimesis_gym.core.tasks import require_upstream_files, resolve_upstream_dir
from mimesis_gym.core.text import clean_json
from mimesis_gym.core.upstream import UpstreamFile

__all__ = [
    "USERRL_VARIABLE",
    "ParquetRow",
    "create_kwargs",
    "fill",
    "parquet_rows",
    "parquet_splits",
    "prompt_pair",
    "prompts_file",
    "read_json",
    "read_prompt_strings",
    "userrl_data_root",
    "userrl_root",
]

T = TypeVar("T")

USERRL_VARIABLE = "MIMESIS_GYM_USERRL_DIR"
"""The environment variable naming a UserRL checkout when no ``data_dir`` is given."""


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    """All rows of one parquet file as dicts (needs pyarrow, extra ``userrl``), every string encodable."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError("pack='upstream' reads parquet files: pip install 'mimesis-gym[userrl]'") from None
    return clean_json(pq.read_table(path).to_pylist())


@lru_cache(maxsize=32)
def read_json(path: Path) -> Any:
    """One JSON file, every string encodable (:func:`~mimesis_gym.core.text.clean_json`)."""
    return clean_json(json.loads(path.read_text(encoding="utf-8")))


def prompt_pair(row: dict[str, Any]) -> tuple[str, str]:
    """The row's system prompt and opening user message, verbatim."""
    messages = {message["role"]: message["content"] for message in row["prompt"]}
    return messages["system"], messages["user"]


def create_kwargs(row: dict[str, Any]) -> dict[str, Any]:
    """``extra_info.tools_kwargs.interact_with_env.create_kwargs`` of a UserRL parquet row."""
    return dict(row["extra_info"]["tools_kwargs"]["interact_with_env"]["create_kwargs"])


def read_prompt_strings(path: Path, names: Sequence[str], functions: Sequence[str] = ()) -> dict[str, str]:
    """String constants of UserRL's ``prompts.py``, read with ``ast`` — never imported or executed.

    ``names``: module-level assignments ``NAME = "..."``. ``functions``: for each function name, the
    ``"content"`` string of the first ``{"role": "system", "content": ...}`` dict literal in its body
    (returned under the function's name). Missing file → ``FileNotFoundError``; a missing or
    non-literal constant → ``ValueError`` naming it.
    """
    if not path.is_file():
        raise FileNotFoundError(f"prompt_set='userrl' reads {path}, which does not exist")
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            if name in names and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                found[name] = node.value.value
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in functions:
            for inner in ast.walk(node):
                if isinstance(inner, ast.Dict) and _system_content(inner) is not None:
                    found[node.name] = _system_content(inner)  # type: ignore[assignment]
                    break
    missing = [name for name in (*names, *functions) if name not in found]
    if missing:
        raise ValueError(f"{path}: no string literal for {', '.join(missing)}")
    return found


def _system_content(node: ast.Dict) -> str | None:
    fields = {
        key.value: value
        for key, value in zip(node.keys, node.values, strict=True)
        if isinstance(key, ast.Constant) and isinstance(key.value, str)
    }
    role, content = fields.get("role"), fields.get("content")
    if (
        isinstance(role, ast.Constant)
        and role.value == "system"
        and isinstance(content, ast.Constant)
        and isinstance(content.value, str)
    ):
        return content.value
    return None


def fill(template: str, replacements: dict[str, str]) -> str:
    """``template`` with each placeholder (e.g. ``<surface>``) replaced by ``str.replace``, in order."""
    for placeholder, value in replacements.items():
        template = template.replace(placeholder, value)
    return template


class ParquetRow(NamedTuple):
    """One row of a UserRL split parquet: its split, the row itself, and its (system prompt, opening)."""

    split: str
    row: dict[str, Any]
    system: str
    opening: str


def parquet_splits(root: Path, parquets: Mapping[str, str], build: Callable[[ParquetRow], T]) -> dict[str, list[T]]:
    """Each split's tasks: ``build`` applied to every row of the split's parquet under ``root``, in
    file order (``parquets``: split → the parquet's path relative to ``root``)."""
    return {
        split: [build(ParquetRow(split, row, *prompt_pair(row))) for row in parquet_rows(root / relative)]
        for split, relative in parquets.items()
    }


def prompts_file(path: str) -> UpstreamFile:
    """A UserRL prompt file an env reads with ``prompt_set="userrl"``, as its upstream declaration names it."""
    return UpstreamFile(path, "read by prompt_set='userrl'")


def userrl_root(data_dir: str | None) -> Path:
    """The UserRL root for ``prompt_set="userrl"``: ``data_dir`` or ``$MIMESIS_GYM_USERRL_DIR``."""
    return resolve_upstream_dir(data_dir, USERRL_VARIABLE)


def userrl_data_root(data_dir: str | None, gym: str, files: Sequence[str | Path], *, any_of: bool = False) -> Path:
    """The resolved UserRL root of ``gym``'s upstream pack (``data_dir`` or ``$MIMESIS_GYM_USERRL_DIR``),
    checked to hold ``files`` (with ``any_of``: one of them) before anything is read: otherwise an
    :class:`~mimesis_gym.core.tasks.UpstreamDataError` naming the folder, the files and the fix."""
    root = resolve_upstream_dir(data_dir, USERRL_VARIABLE).resolve()
    require_upstream_files(
        root,
        files,
        what=f"{gym} (pack='upstream')",
        folder="the root of a UserRL checkout",
        variable=USERRL_VARIABLE,
        any_of=any_of,
    )
    return root
