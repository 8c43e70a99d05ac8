"""Importing the object a ``"package.module:name"`` path names (config files name callables this way).

The part after the colon may be dotted (``"pkg.mod:Class.method"``). Only Python's own import
machinery runs: the path is never evaluated as code.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["import_object"]


def import_object(path: str, *, setting: str = "an import path") -> Any:
    """The object ``path`` (``"package.module:name"``) names.

    Raises ``ValueError`` naming ``setting`` when ``path`` lacks the module or the name;
    ``ImportError`` / ``AttributeError`` from a module or attribute that does not exist propagate.
    """
    module, _, name = str(path).partition(":")
    if not module or not name:
        raise ValueError(f"{setting} must be 'module:function'; got {path!r}")
    value: Any = importlib.import_module(module)
    for part in name.split("."):
        value = getattr(value, part)
    return value
