"""Names of a package that load on first use, so that importing the package never imports torch.

A package's ``__init__`` maps each public name to the module that defines it and hands the pair of
functions :func:`lazy_exports` returns to Python as its module-level ``__getattr__`` and ``__dir__``::

    __getattr__, __dir__ = lazy_exports(__name__, {"CSD": ".learner"})

``from package import CSD`` then imports ``package.learner`` at that moment only.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: ``exports`` maps a name to its module (``.x``: in the package).

    An unknown name raises ``AttributeError`` as for any module; ``__dir__`` lists the exported names.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module, package), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
