"""Lexical diversity of a user's turns, z-scored against real people (docs/humans.md, "Lexical diversity").

The four measures and their parameters are MirrorBench's (``mirrorbench/metrics/lexical``): the user
turns of one conversation are joined with a space and tokenised once, and each measure reads that one
token list. A simulated conversation's value is z-scored against the mean and sample standard
deviation of the human conversations' values, and the z-scores are averaged per measure.

Where we differ from the reference, on purpose (each stated in docs/humans.md):

- ``ttr`` is also given per conversation (types / tokens), so it can be z-scored like the other three;
  the reference computes it only over all conversations pooled, which :func:`corpus_ttr` reproduces.
- With fewer than two human values, or no spread among them, the reference reports z = 0 (a perfect
  score); we report ``None`` (no verdict).
- The default tokenizer is a dependency-free word tokenizer (:data:`WORD_PATTERN`); the reference's
  ``o200k_base`` encoding is ``tokenizer="o200k"`` when tiktoken and its file are there offline.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import statistics
import tempfile
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

__all__ = [
    "HDD_SAMPLE_SIZE",
    "LEXICAL_METRICS",
    "MATTR_WINDOW",
    "MIN_TOKENS",
    "O200K_SHA256",
    "O200K_URL",
    "TOKENIZERS",
    "WORD_PATTERN",
    "YULES_K_SCALE",
    "LexicalZ",
    "Tokenizer",
    "TokenizerUnavailable",
    "conversation_tokens",
    "conversation_values",
    "corpus_ttr",
    "hdd",
    "mattr",
    "o200k_cache_file",
    "tokenize",
    "ttr",
    "yules_k",
    "zscore_summary",
    "zscores",
]

LEXICAL_METRICS: tuple[str, ...] = ("mattr", "hdd", "yules_k", "ttr")
"""The measures, in the order the scorecard lists them."""

MATTR_WINDOW = 50
"""MATTR's moving window, in tokens (MirrorBench's ``window``)."""

HDD_SAMPLE_SIZE = 42
"""HD-D's sample size, in tokens (MirrorBench's ``sample_size``; McCarthy & Jarvis's 42)."""

YULES_K_SCALE = 10_000.0
"""Yule's K is ``YULES_K_SCALE * (sum f_i^2 - N) / N^2``."""

MIN_TOKENS = 5
"""MirrorBench flags a conversation with fewer tokens as unstable but still scores it; so do we
(only a conversation with no token at all has no value)."""

TURN_SEPARATOR = " "
"""How the user turns of one conversation are joined before tokenising (as MirrorBench does)."""

Tokenizer = Literal["words", "o200k"]
TOKENIZERS: tuple[str, ...] = ("words", "o200k")

WORD_PATTERN = re.compile(r"\w+(?:['’]\w+)*")
"""The ``words`` tokenizer: runs of letters/digits (any script), keeping inner apostrophes
(``don't``), matched on case-folded text; punctuation and whitespace are not tokens."""

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken would download ``o200k_base`` from; its cache file is named by this URL's SHA-1."""

O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The SHA-256 tiktoken pins for the ``o200k_base`` file."""


# ---------------------------------------------------------------------------------------------------
# Tokenising
# ---------------------------------------------------------------------------------------------------


class TokenizerUnavailable(RuntimeError):
    """The ``o200k`` tokenizer cannot be loaded here (no tiktoken, or no verified offline file);
    the message names the fix."""


def tokenize(text: str, tokenizer: Tokenizer = "words") -> list[Hashable]:
    """``text`` as tokens: case-folded words (``words``) or ``o200k_base`` token ids (``o200k``).

    Raises ``ValueError`` for an unknown tokenizer and :class:`TokenizerUnavailable` (naming the fix) when
    ``o200k`` cannot be loaded offline."""
    if tokenizer == "words":
        return list(WORD_PATTERN.findall(text.casefold()))
    if tokenizer == "o200k":
        return list(_o200k_encoding().encode(text, disallowed_special=()))
    raise ValueError(f"unknown tokenizer {tokenizer!r}: use one of {', '.join(TOKENIZERS)}")


def conversation_tokens(user_turns: Sequence[str], tokenizer: Tokenizer = "words") -> list[Hashable]:
    """The tokens of one conversation's user turns, joined by :data:`TURN_SEPARATOR` (MirrorBench's way)."""
    if isinstance(user_turns, str):
        raise TypeError("user_turns must be a sequence of turn texts, not one str")
    return tokenize(TURN_SEPARATOR.join(user_turns), tokenizer) if user_turns else []


def o200k_cache_file() -> Path:
    """Where tiktoken looks for ``o200k_base`` offline: ``$TIKTOKEN_CACHE_DIR`` (else
    ``$DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``) / ``sha1(O200K_URL)``."""
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    folder = Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / "data-gym-cache"
    return folder / hashlib.sha1(O200K_URL.encode()).hexdigest()


@lru_cache(maxsize=1)
def _o200k_encoding() -> Any:
    """tiktoken's ``o200k_base``, loaded only from a verified local file (never downloaded)."""
    path = o200k_cache_file()
    fix = (
        f"put o200k_base.tiktoken (SHA-256 {O200K_SHA256}) at {path}, or point TIKTOKEN_CACHE_DIR at a "
        "folder holding it under that name (docs/humans.md, 'Lexical diversity', shows how to make it "
        "from the npm package tiktoken 1.0.22), or use tokenizer='words'"
    )
    if not path.is_file():
        raise TokenizerUnavailable(f"tokenizer 'o200k': no encoding file at {path}: {fix}")
    if hashlib.sha256(path.read_bytes()).hexdigest() != O200K_SHA256:
        raise TokenizerUnavailable(f"tokenizer 'o200k': {path} is not o200k_base (its SHA-256 differs): {fix}")
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(
            "tokenizer 'o200k' needs the tiktoken package: `pip install tiktoken`, or use tokenizer='words'"
        ) from exc
    return tiktoken.get_encoding("o200k_base")


# ---------------------------------------------------------------------------------------------------
# The four measures, on one token list
# ---------------------------------------------------------------------------------------------------


def ttr(tokens: Sequence[Hashable]) -> float:
    """Type–token ratio: distinct tokens / tokens (0.0 for no token)."""
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def mattr(tokens: Sequence[Hashable], window: int = MATTR_WINDOW) -> float:
    """Moving-average TTR: the mean TTR of every ``window``-token stretch; the plain TTR when the
    list is no longer than the window (0.0 for no token)."""
    if window <= 0:
        raise ValueError(f"MATTR window must be positive, got {window}")
    if len(tokens) <= window:
        return ttr(tokens)
    counts = Counter(tokens[:window])
    total = len(counts)
    for start in range(1, len(tokens) - window + 1):
        leaving, entering = tokens[start - 1], tokens[start + window - 1]
        counts[leaving] -= 1
        if counts[leaving] == 0:
            del counts[leaving]
        counts[entering] += 1
        total += len(counts)
    return total / (window * (len(tokens) - window + 1))


def hdd(tokens: Sequence[Hashable], sample_size: int = HDD_SAMPLE_SIZE) -> float:
    """HD-D: the expected TTR of a random ``sample_size``-token draw without replacement, i.e.
    ``sum over types of P(type drawn at least once) / sample_size`` with the hypergeometric
    ``P = 1 - C(N - f, s) / C(N, s)``; the sample shrinks to ``N`` for shorter lists (0.0 for no token)."""
    if sample_size <= 0:
        raise ValueError(f"HD-D sample size must be positive, got {sample_size}")
    population = len(tokens)
    if population == 0:
        return 0.0
    sample = min(sample_size, population)
    all_draws = math.comb(population, sample)
    seen = sum(1.0 - math.comb(population - freq, sample) / all_draws for freq in Counter(tokens).values())
    return seen / sample


def yules_k(tokens: Sequence[Hashable]) -> float:
    """Yule's K: ``YULES_K_SCALE * (sum f_i^2 - N) / N^2`` over the type frequencies f_i (higher =
    more repetition; 0.0 for no token or all-distinct tokens)."""
    if not tokens:
        return 0.0
    frequencies = Counter(tokens).values()
    population = len(tokens)
    return YULES_K_SCALE * (sum(f * f for f in frequencies) - population) / (population * population)


_MEASURES = {"mattr": mattr, "hdd": hdd, "yules_k": yules_k, "ttr": ttr}


def conversation_values(user_turns: Sequence[str], tokenizer: Tokenizer = "words") -> dict[str, float | None]:
    """One value per measure of :data:`LEXICAL_METRICS` for one conversation's user turns; all
    ``None`` when the turns hold no token (the reference's "unstable" conversation)."""
    tokens = conversation_tokens(user_turns, tokenizer)
    return {name: (_MEASURES[name](tokens) if tokens else None) for name in LEXICAL_METRICS}


def corpus_ttr(token_lists: Iterable[Sequence[Hashable]]) -> float:
    """MirrorBench's TTR: distinct / total tokens over all conversations pooled (0.0 for none).
    Grows smaller with more text, so compare only corpora of like size."""
    pooled = [token for tokens in token_lists for token in tokens]
    return ttr(pooled)


# ---------------------------------------------------------------------------------------------------
# Against humans
# ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LexicalZ:
    """One measure of a simulated set against the human baseline (MirrorBench's aggregate).

    ``mean_z`` is the mean over simulated conversations of ``(value - baseline_mean) / baseline_sd``,
    a conversation with no token counting as value 0.0 (as the reference does); ``None`` when there
    is no simulated conversation or the baseline has no spread (fewer than 2 human values, or all
    equal)."""

    metric: str
    mean_z: float | None
    sd_z: float | None
    n: int
    baseline_mean: float | None
    baseline_sd: float | None
    baseline_n: int
    mean_simulated: float | None
    simulated_without_tokens: int
    humans_without_tokens: int


def _value(row: Mapping[str, float | None], metric: str) -> float | None:
    """``row[metric]`` as a float or ``None``; a row without the key is a caller's mistake."""
    try:
        value = row[metric]
    except KeyError:
        raise KeyError(f"a value row lacks {metric!r}: rows must come from conversation_values") from None
    return None if value is None else float(value)


def _measure_z(
    metric: str, simulated: Sequence[Mapping[str, float | None]], human: Sequence[Mapping[str, float | None]]
) -> LexicalZ:
    """:class:`LexicalZ` of one measure."""
    baseline = [value for value in (_value(row, metric) for row in human) if value is not None]
    sim_values = [_value(row, metric) for row in simulated]
    present = [value for value in sim_values if value is not None]
    base_mean = statistics.fmean(baseline) if baseline else None
    base_sd = statistics.stdev(baseline) if len(baseline) > 1 else None
    z: list[float] = []
    if base_mean is not None and base_sd:
        z = [((0.0 if value is None else value) - base_mean) / base_sd for value in sim_values]
    return LexicalZ(
        metric=metric,
        mean_z=statistics.fmean(z) if z else None,
        sd_z=(statistics.stdev(z) if len(z) > 1 else 0.0) if z else None,
        n=len(z),
        baseline_mean=base_mean,
        baseline_sd=base_sd,
        baseline_n=len(baseline),
        mean_simulated=statistics.fmean(present) if present else None,
        simulated_without_tokens=len(sim_values) - len(present),
        humans_without_tokens=len(human) - len(baseline),
    )


def zscore_summary(
    simulated: Sequence[Mapping[str, float | None]], human: Sequence[Mapping[str, float | None]]
) -> dict[str, LexicalZ]:
    """Per measure, the simulated conversations' values (rows of :func:`conversation_values`)
    z-scored against the human rows' mean and sample standard deviation (human rows without tokens
    are left out of the baseline)."""
    return {metric: _measure_z(metric, simulated, human) for metric in LEXICAL_METRICS}


def zscores(
    simulated: Sequence[Mapping[str, float | None]], human: Sequence[Mapping[str, float | None]]
) -> dict[str, float | None]:
    """The mean z per measure of :func:`zscore_summary` (0 = as diverse as the humans on average;
    ``None`` where there is no verdict)."""
    return {metric: row.mean_z for metric, row in zscore_summary(simulated, human).items()}
