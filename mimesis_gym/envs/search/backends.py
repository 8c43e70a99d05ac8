"""SearchGym's search backends: the closed-book notice, offline BM25, Serper web search.

See docs/envs/search.md, "Search backends (search_backend)".

A backend is any object with ``async search(query: str, k: int) -> SearchResult``. A result holds
either ``hits`` — ``(title, text, extra)`` triples, rendered ``"{i}. {title}\\n- Snippet: {text}"``
(``extra["label"] == "Answer"`` renders ``- Answer:``) — or a ``message`` shown as it is.

The Serper API key is read from ``$SERPER_API_KEY`` at request time only: it is never stored on a
backend, so it cannot reach a pickle, a repr, a log record or an observation; it is sent only over
https or to a loopback host (:func:`~mimesis_gym.core.http.check_key_transport`).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from mimesis_gym.core.http import InsecureTransportError, check_key_transport
from mimesis_gym.envs.search.tasks import Passage, load_corpus

__all__ = [
    "BACKEND_NAMES",
    "DEFAULT_NOTICE",
    "NO_RESULTS",
    "SERPER_KEY_VARIABLE",
    "SERPER_TIMEOUT_MESSAGE",
    "BM25Backend",
    "BM25Index",
    "Hit",
    "NoticeBackend",
    "SearchBackend",
    "SearchResult",
    "SerperBackend",
    "bm25_index",
    "import_backend_class",
]

logger = logging.getLogger(__name__)

BACKEND_NAMES = ("notice", "bm25", "serper")
SERPER_KEY_VARIABLE = "SERPER_API_KEY"
NO_RESULTS = "No results found."
SERPER_TIMEOUT_MESSAGE = "Search Error: Timeout"
DEFAULT_NOTICE = (
    "Search is not available in this evaluation: no results can be retrieved, and searching again will "
    "not help. Answer the question from your own knowledge."
)


class Hit(NamedTuple):
    """One search hit; ``extra`` carries backend details (``{"label": "Answer"}`` for an answer box)."""

    title: str
    text: str
    extra: Mapping[str, Any] = {}


@dataclass(frozen=True)
class SearchResult:
    """What a backend returns: ``message`` (shown verbatim) when set, else the rendered ``hits``."""

    hits: Sequence[tuple[str, str, Mapping[str, Any]]] = ()
    message: str | None = None

    def render(self) -> str:
        if self.message is not None:
            return self.message
        if not self.hits:
            return NO_RESULTS
        lines = []
        for number, (title, text, extra) in enumerate(self.hits, start=1):
            label = (extra or {}).get("label", "Snippet")
            lines.append(f"{number}. {title}\n- {label}: {text}")
        return "\n".join(lines)


@runtime_checkable
class SearchBackend(Protocol):
    """The protocol every backend (built-in or ``"<module>:<Class>"``) satisfies."""

    async def search(self, query: str, k: int) -> SearchResult: ...


# ---------------------------------------------------------------------------------------------- notice


@dataclass(frozen=True)
class NoticeBackend:
    """Closed book (the paper's SearchGym setting): every search returns the same notice."""

    notice: str = DEFAULT_NOTICE

    async def search(self, query: str, k: int) -> SearchResult:
        return SearchResult(message=self.notice)


# ---------------------------------------------------------------------------------------------- BM25


class BM25Index:
    """A ``bm25s`` index over a corpus: documents ``title + ". " + text``, English stopwords, no stemmer."""

    def __init__(self, passages: Sequence[Passage], k1: float, b: float) -> None:
        import bm25s

        self.passages = tuple(passages)
        documents = [f"{passage.title}. {passage.text}" for passage in self.passages]
        self._bm25s = bm25s
        self.retriever = bm25s.BM25(k1=k1, b=b)
        self.retriever.index(bm25s.tokenize(documents, stopwords="en", show_progress=False), show_progress=False)

    def tokens(self, query: str) -> list[str]:
        """The query's tokens, with the settings used for the documents."""
        tokenized = self._bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        return list(tokenized[0])

    def top(self, query: str, k: int) -> list[tuple[Passage, float]]:
        """Passages with a positive score, best first, ties in corpus order; at most ``k``."""
        tokens = self.tokens(query)
        if not tokens or k <= 0:
            return []
        scores = np.asarray(self.retriever.get_scores(tokens))
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.passages[int(index)], float(scores[index])) for index in order if scores[index] > 0]


@lru_cache(maxsize=8)
def bm25_index(corpus_path: str, k1: float, b: float) -> BM25Index:
    """The index of one corpus file, built once per process (per path and parameters)."""
    logger.debug("building the BM25 index of %s", corpus_path)
    return BM25Index(load_corpus(Path(corpus_path)), k1, b)


@dataclass(frozen=True)
class BM25Backend:
    """Offline search over a JSONL corpus; the index is built on the first search, never pickled."""

    corpus_path: str
    k1: float = 1.5
    b: float = 0.75

    async def search(self, query: str, k: int) -> SearchResult:
        hits = bm25_index(self.corpus_path, self.k1, self.b).top(query, k)
        return SearchResult(hits=[Hit(passage.title, passage.text, {"id": passage.id}) for passage, _ in hits])


# ---------------------------------------------------------------------------------------------- Serper


@dataclass(frozen=True)
class SerperBackend:
    """Google results through the Serper API (``POST {base_url}/search``), retried while nothing organic.

    At most ``max_attempts`` requests, ``retry_sleep`` seconds apart, while the response has no
    ``organic`` results; then ``Search Error: Timeout``. An HTTP status ≥ 400 or a transport error
    (timeouts included) ends the search with ``Search failed: HTTP <status>`` / ``Search failed:
    <error class>``. The web is not deterministic; this backend is off unless ``$SERPER_API_KEY`` is set.
    """

    base_url: str = "https://google.serper.dev"
    num: int = 15
    max_attempts: int = 7
    retry_sleep: float = 5.0
    timeout: float = 10.0

    async def search(self, query: str, k: int) -> SearchResult:
        import httpx

        key = os.environ.get(SERPER_KEY_VARIABLE)
        if not key:
            return SearchResult(message=f"Search failed: ${SERPER_KEY_VARIABLE} is not set")
        url = self.base_url.rstrip("/") + "/search"
        try:
            check_key_transport(url)
        except InsecureTransportError as error:
            return SearchResult(message=f"Search failed: {error}")
        headers = {"X-API-KEY": key, "Content-Type": "application/json"}
        client = _loop_client()
        try:
            for attempt in range(self.max_attempts):
                response = await client.post(
                    url, json={"q": query, "num": self.num}, headers=headers, timeout=self.timeout
                )
                if response.status_code >= 400:
                    return SearchResult(message=f"Search failed: HTTP {response.status_code}")
                try:
                    data = response.json()
                except ValueError:
                    return SearchResult(message="Search failed: the response is not JSON")
                if isinstance(data, dict) and data.get("organic"):
                    return SearchResult(hits=serper_hits(data, k))
                if attempt + 1 < self.max_attempts:
                    await retry_pause(self.retry_sleep)
        except httpx.HTTPError as error:
            return SearchResult(message=f"Search failed: {type(error).__name__}")
        return SearchResult(message=SERPER_TIMEOUT_MESSAGE)


_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()


def _loop_client() -> Any:
    """One pooled ``httpx.AsyncClient`` per event loop, shared by every search on it (not one per search).

    The key is never stored on the client: it goes in each request's headers.
    """
    import httpx

    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(loop)
    if client is None or client.is_closed:
        client = _CLIENTS[loop] = httpx.AsyncClient(trust_env=False)
    return client


async def retry_pause(seconds: float) -> None:
    """The wait between Serper attempts (a module function, so tests can observe it)."""
    await asyncio.sleep(seconds)


def serper_hits(data: Mapping[str, Any], k: int) -> list[Hit]:
    """UserRL's rendering: the answer box first (answer, else snippet), then organic items with both
    ``title`` and ``snippet``; at most ``k`` hits, texts stripped."""
    hits: list[Hit] = []
    box = data.get("answerBox")
    if isinstance(box, dict) and isinstance(box.get("title"), str):
        if isinstance(box.get("answer"), str):
            hits.append(Hit(box["title"].strip(), box["answer"].strip(), {"label": "Answer"}))
        elif isinstance(box.get("snippet"), str):
            hits.append(Hit(box["title"].strip(), box["snippet"].strip()))
    organic = data.get("organic")
    for item in organic if isinstance(organic, list) else []:
        if len(hits) >= k:
            break
        if isinstance(item, dict) and isinstance(item.get("title"), str) and isinstance(item.get("snippet"), str):
            hits.append(Hit(item["title"].strip(), item["snippet"].strip()))
    return hits[:k]


# ---------------------------------------------------------------------------------------------- third party


def import_backend_class(spec: str) -> type:
    """The class named by ``"<module>:<Class>"``; ``ValueError`` naming the problem otherwise."""
    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        known = ", ".join(BACKEND_NAMES)
        raise ValueError(f"search_backend must be one of {known} or '<module>:<Class>'; got {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise ValueError(f"search_backend {spec!r}: cannot import {module_name!r} ({error})") from None
    backend_class = getattr(module, class_name, None)
    if not isinstance(backend_class, type) or not callable(getattr(backend_class, "search", None)):
        raise ValueError(f"search_backend {spec!r}: {class_name!r} is not a class with an async search(query, k)")
    return backend_class
