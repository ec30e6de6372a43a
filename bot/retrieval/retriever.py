"""Question -> ranked chunks: query analysis, Weaviate hybrid search, clean-up, cap.

This is the read side's only way into the index (through :class:`indexer.ChunkStore`).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Collection, Sequence

from indexer import ChunkStore, Embedder, EmptyIndex, StoredChunk, graph_neighbours

from .expansion import DEFAULT_MAX_CONTEXT, expand

from ..tenancy import scope
from .query_analysis import QueryAnalysis, analyze, choose_alpha

# Candidates fetched per requested result, so that de-duplication still leaves top_k.
OVERFETCH = 3
# Soft-ranking priors applied by Weaviate's Boost (see ChunkStore.hybrid_search):
# final = (1 - BOOST_WEIGHT) * hybrid + BOOST_WEIGHT * blended conditions. Chosen on the
# dev set (README "Retrieval quality").
BOOST_WEIGHT = 0.5
NAME_MATCH_WEIGHT = 1.0  # chunk defines a name the question mentions
ROLE_WEIGHTS = {"test": -1.0, "changelog": -1.0, "docs": -0.3, "example": -0.3}
_ASKS_ABOUT_TESTS = re.compile(r"\b(test|tests|tested|testing|spec|specs|coverage)\b", re.IGNORECASE)
# Cosine similarity (query vs. best chunk) under which, with no exact name match either,
# the index is judged to have nothing on the question. Calibrated for MiniLM on the
# dev set plus off-topic questions (README "No-coverage threshold").
MIN_RELEVANCE_COSINE = 0.30
# A passed model/empty-index check is trusted this long (seconds): the two Weaviate
# round trips it costs were ~8 ms of a ~69 ms warm search at 106k chunks
# (bench/search_bench.py). Failures are never cached.
CHECK_TTL_S = 5.0


@dataclass
class SearchHit:
    """One ranked result. ``origin`` is ``"hybrid"`` or ``"expansion"``; ``reason`` says why."""

    chunk: StoredChunk
    rank: int
    score: float
    cosine: float
    origin: str = "hybrid"
    reason: str = ""

    def to_result(self) -> dict:
        d = self.chunk.to_result()
        d["score"] = round(self.score, 6)
        if self.origin != "hybrid":
            d["origin"], d["reason"] = self.origin, self.reason
        return d


@dataclass
class SearchResult:
    """Hits best first, plus how the question was read.

    ``timings``: milliseconds per stage of this search (``checks``: model and
    empty-index checks; ``analyze``; ``embed``: the question's vector; ``hybrid``: the
    Weaviate query; ``graph``: SQL neighbour queries of expansion; ``fetch``: reading the
    expanded chunks, de-duplication and building the hits; ``total``), measured by ``bench/search_bench.py``.
    """

    question: str
    analysis: QueryAnalysis
    alpha: float
    hits: list[SearchHit] = field(default_factory=list)
    timings: dict = field(default_factory=dict)

    @property
    def best_cosine(self) -> float:
        return max((h.cosine for h in self.hits), default=0.0)

    @property
    def has_name_match(self) -> bool:
        names = set(self.analysis.names)
        return any(h.chunk.symbol.rsplit(".", 1)[-1].lower() in names for h in self.hits if h.chunk.symbol)

    @property
    def relevant(self) -> bool:
        """False when nothing found clears the no-coverage threshold."""
        return bool(self.hits) and (self.has_name_match or self.best_cosine >= MIN_RELEVANCE_COSINE)


def _cosine(a: Sequence[float] | None, b: Sequence[float]) -> float:
    if not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def _overlaps(a: StoredChunk, b: StoredChunk) -> bool:
    return a.repo == b.repo and a.path == b.path and a.start_line <= b.end_line and b.start_line <= a.end_line


class Retriever:
    """Hybrid retrieval over a :class:`ChunkStore` with one :class:`Embedder`."""

    def __init__(self, store: ChunkStore, embedder: Embedder, *, sessions=None,
                 max_context: int = DEFAULT_MAX_CONTEXT):
        """``sessions``: SQL session factory holding the call graph; ``None`` disables
        graph expansion. ``max_context``: cap on hybrid + expanded chunks."""
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.max_context = max_context
        self._checked_at: float | None = None

    def neighbours_for(self, chunk: StoredChunk, callers: bool) -> list[tuple[str, str, int, str]]:
        """Direct callees (and callers, when asked) of ``chunk`` from the SQL call graph,
        as :func:`indexer.graph_neighbours` returns them; ``[]`` without a database."""
        if self.sessions is None or not chunk.symbol:
            return []
        return graph_neighbours(self.sessions, chunk.repo, chunk.path, chunk.symbol, callers=callers)

    @staticmethod
    def boosts(qa: QueryAnalysis) -> list[tuple[str, list[str], float]]:
        """Boost conditions for this question: promote chunks named in it, demote tests
        (unless it asks about tests), changelogs, docs and examples."""
        out: list[tuple[str, list[str], float]] = []
        if qa.names:
            out.append(("name_lower", qa.names[:10], NAME_MATCH_WEIGHT))
        asks_tests = bool(_ASKS_ABOUT_TESTS.search(qa.question))
        for role, w in ROLE_WEIGHTS.items():
            if role == "test" and asks_tests:
                continue
            out.append(("role", [role], w))
        return out

    def search(self, question: str, *, top_k: int = 10, repos: Sequence[str] | None = None,
               alpha: float | None = None, expand_graph: bool = True,
               allowed: Collection[str] | None = None) -> SearchResult:
        """Top ``top_k`` chunks for ``question``: hybrid results, then (when a call graph
        is available and ``expand_graph``) the callees of the top chunks, and for
        impact/risk questions their callers, inserted after the first 5 results and
        capped at ``max_context`` (see :mod:`.expansion`).

        ``allowed``: the sources the asking channel may read (:mod:`bot.tenancy`;
        ``None`` = all). It is enforced end to end: the hybrid query is filtered to it,
        graph expansion only adds chunks from it, and any hit outside it is dropped. With
        nothing allowed the result is empty (the answer says "no coverage"). Allowed
        sources that are not indexed are simply not found (no error).

        Raises :class:`EmptyIndex` when the index (or the chosen repos) has no chunks,
        and ``ModelMismatch`` if the index was built with another embedding model (a
        passed check is reused for :data:`CHECK_TTL_S` seconds by this Retriever).
        """
        t0 = time.perf_counter()
        if self._checked_at is None or time.monotonic() - self._checked_at > CHECK_TTL_S:
            self.store.check_model(self.embedder.model_name)
            if self.store.count() == 0:
                raise EmptyIndex("the index is empty: run `coderag index PATH` first")
            self._checked_at = time.monotonic()
        if allowed is not None:
            allowed = frozenset(allowed)
            repos = scope(repos, allowed)
            if not repos:  # the channel may read nothing (or asked only for forbidden repos)
                qa = analyze(question)
                return SearchResult(question=question, analysis=qa, alpha=choose_alpha(qa, alpha))
        elif repos:
            known = {s["name"] for s in self.store.sources()}
            missing = [r for r in repos if r not in known]
            if missing:
                raise EmptyIndex(f"no indexed repo named {', '.join(missing)} (indexed: {', '.join(sorted(known)) or 'none'})")
        t1 = time.perf_counter()
        qa = analyze(question)
        a = choose_alpha(qa, alpha)
        t2 = time.perf_counter()
        qvec = self.embedder.embed_query(question)
        t3 = time.perf_counter()
        raw = self.store.hybrid_search(qa.keyword_query, qvec, alpha=a, limit=top_k * OVERFETCH,
                                       repos=repos, boosts=self.boosts(qa),
                                       boost_weight=BOOST_WEIGHT)
        t4 = time.perf_counter()
        graph_s = [0.0]
        kept: list[StoredChunk] = []
        for c in raw:
            if any(_overlaps(c, k) for k in kept):
                continue
            kept.append(c)
            if len(kept) >= top_k:
                break
        if expand_graph and self.sessions is not None:
            def timed_neighbours(chunk: StoredChunk, callers: bool):
                tg = time.perf_counter()
                try:
                    return self.neighbours_for(chunk, callers)
                finally:
                    graph_s[0] += time.perf_counter() - tg

            pairs = expand(question, kept, store=self.store, neighbours_for=timed_neighbours,
                           limit=top_k, max_context=self.max_context, allowed=allowed)
        else:
            pairs = [(c, "") for c in kept]
        if allowed is not None:  # last line of defence: nothing outside the allow-list leaves
            pairs = [(c, r) for c, r in pairs if c.repo in allowed]
        hits = [SearchHit(chunk=c, rank=i + 1, score=c.score, cosine=_cosine(c.vector, qvec),
                          origin="expansion" if reason else "hybrid", reason=reason)
                for i, (c, reason) in enumerate(pairs)]
        t5 = time.perf_counter()
        ms = lambda x: round(x * 1000, 2)  # noqa: E731
        timings = {"checks": ms(t1 - t0), "analyze": ms(t2 - t1), "embed": ms(t3 - t2),
                   "hybrid": ms(t4 - t3), "graph": ms(graph_s[0]),
                   "fetch": ms(t5 - t4 - graph_s[0]), "total": ms(t5 - t0)}
        return SearchResult(question=question, analysis=qa, alpha=a, hits=hits, timings=timings)
