"""A text space that holds any Unicode string (docs/env-contract.md, "Spaces").

Gymnasium's ``Text`` space only contains strings over a fixed character set (alphanumerics by
default), which rejects ordinary sentences. :class:`UnicodeText` contains every ``str`` up to
``max_length`` characters and samples random printable Unicode, so fuzzing with ``sample()``
exercises accents, scripts, symbols and emoji.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from typing import Any

import numpy as np
from gymnasium.spaces import Space

__all__ = ["UnicodeText", "printable_code_points"]


@lru_cache(maxsize=1)
def printable_code_points() -> np.ndarray:
    """Every assigned, printable, non-surrogate code point, as a sorted ``int32`` array.

    ``str.isprintable`` is false exactly for the categories Cc, Cf, Cs, Co, Cn and the separators
    other than the ASCII space, which is the set we want. Built once per process (~0.2 s).
    """
    return np.fromiter((code for code in range(sys.maxunicode + 1) if chr(code).isprintable()), dtype=np.int32)


class UnicodeText(Space[str]):
    """Any Python ``str`` of at most ``max_length`` characters.

    ``sample()`` draws a length uniformly from ``0..sample_max_length`` and each character
    uniformly from :func:`printable_code_points`, using this space's own ``np_random``.
    """

    def __init__(
        self,
        max_length: int = 1_000_000,
        *,
        sample_max_length: int = 256,
        seed: int | np.random.Generator | None = None,
    ) -> None:
        if max_length < 0 or sample_max_length < 0:
            raise ValueError("max_length and sample_max_length must be non-negative")
        self.max_length = max_length
        self.sample_max_length = min(sample_max_length, max_length)
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any | None = None, probability: Any | None = None) -> str:
        if mask is not None or probability is not None:
            raise NotImplementedError("UnicodeText.sample does not support masks or probabilities")
        length = int(self.np_random.integers(0, self.sample_max_length + 1))
        if length == 0:
            return ""
        table = printable_code_points()
        picks = table[self.np_random.integers(0, len(table), size=length)]
        return "".join(map(chr, picks.tolist()))

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and other.max_length == self.max_length
            and other.sample_max_length == self.sample_max_length
        )

    def __hash__(self) -> int:
        return hash((UnicodeText, self.max_length, self.sample_max_length))

    def to_jsonable(self, sample_n: Any) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: list[str]) -> list[str]:
        return list(sample_n)
