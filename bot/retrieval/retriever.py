"""Question -> ranked chunks: query analysis, Weaviate hybrid search, clean-up, cap.

This is the read side's only way into the index (through :class:`indexer.read.ChunkReader`).
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Collection, Sequence

from common.errors import EmptyIndex
from indexer.read import ChunkReader, Embedder, SourceRecord, StoredChunk, graph_links, graph_neighbours

from .expansion import DEFAULT_MAX_CONTEXT, expand

from ..refs import record_bases, unknown_repo
from ..tenancy import scope
from .query_analysis import QueryAnalysis, analyze, choose_alpha
from .ranking import Candidate, RankingConfig, hub_candidates, rank

# Candidates fetched per requested result, so that de-duplication still leaves top_k
# (without the ranking stage).
OVERFETCH = 3
# The ranking stage re-scores this many hybrid candidates (overfetch generously: the
# chunk that answers is often below rank 30 of the raw fusion on unseen repositories).
RANK_CANDIDATES = 100
# Chunks holding a quoted phrase's words (signal "quoted_phrase") added to the
# candidates, at most.
LOOKUP_LIMIT = 30
# A passed model and empty-index check is trusted this long (seconds): it costs two Weaviate
# round trips per search otherwise (7.7 ms p50 measured by bench/search_bench.py).
CHECK_TTL_S = 5.0
# Soft-ranking priors applied by Weaviate's Boost (see ChunkStore.query.hybrid):
# final = (1 - BOOST_WEIGHT) * hybrid + BOOST_WEIGHT * blended conditions. Chosen on the
# dev set (docs/benchmarks.md, "Retrieval quality").
BOOST_WEIGHT = 0.5
# Whether the hybrid query applies the Boost priors above (the ranking stage's role_prior
# re-scores roles after it; the name Boost is what ranks a named definition first).
HYBRID_BOOSTS = True
NAME_MATCH_WEIGHT = 1.0  # chunk defines a name the question mentions
ROLE_WEIGHTS = {"test": -1.0, "changelog": -1.0, "docs": -0.3, "example": -0.3}
_ASKS_ABOUT_TESTS = re.compile(r"\b(test|tests|tested|testing|spec|specs|coverage)\b", re.IGNORECASE)


@dataclass
class SearchHit:
    """One ranked result. ``origin`` is ``"hybrid"`` or ``"expansion"``; ``reason`` says why."""

    chunk: StoredChunk
    rank: int
    score: float
    cosine: float
    origin: str = "hybrid"
    reason: str = ""
    signals: dict = field(default_factory=dict)

    def to_result(self) -> dict:
        d = self.chunk.to_result()
        d["score"] = round(self.score, 6)
        if self.origin != "hybrid":
            d["origin"], d["reason"] = self.origin, self.reason
        return d


@dataclass
class SearchResult:
    """Hits best first, plus how the question was read. ``expand_ms``: milliseconds
    spent in call-graph expansion (0 when it did not run).

    ``timings``: milliseconds per stage of this search (``checks``: model and empty-index
    checks; ``analyze``; ``embed``: the question's vector; ``hybrid``: the Weaviate query
    and the phrase look-ups; ``links``: the call-graph edges among the top candidates for
    ``call_hub``; ``rank``: the ranking stage and rerank; ``graph``: expansion;
    ``total``), read by ``bench/search_bench.py``."""

    question: str
    analysis: QueryAnalysis
    alpha: float
    hits: list[SearchHit] = field(default_factory=list)
    expand_ms: float = 0.0
    # ranking scores of the ranked candidates (before de-duplication and the cap), best
    # first: the answerability decision reads the margin between them.
    ranked_scores: list[float] = field(default_factory=list)
    repos: list[str] | None = None
    timings: dict = field(default_factory=dict)
    # What the search read its chunks through (Gathered.visible, Gathered.records), for
    # follow-up reads of the same repos (the answerability look-ups).
    visible: object = None
    records: list | None = None

    @property
    def best_cosine(self) -> float:
        return max((h.cosine for h in self.hits), default=0.0)

    @property
    def has_name_match(self) -> bool:
        names = set(self.analysis.names)
        return any(h.chunk.symbol.rsplit(".", 1)[-1].lower() in names for h in self.hits if h.chunk.symbol)


def _cosine(a: Sequence[float] | None, b: Sequence[float]) -> float:
    if not a:
        return 0.0
    dot = sum(x * y for x, y in zip(a, b))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb) if na and nb else 0.0


def _overlaps(a: StoredChunk, b: StoredChunk) -> bool:
    return a.repo == b.repo and a.path == b.path and a.start_line <= b.end_line and b.start_line <= a.end_line


@dataclass
class Gathered:
    """First stage of one search: the question read, the hybrid alpha, the query vector
    and every candidate (hybrid plus looked up), before ranking. ``empty`` marks a
    question no source may be searched for (nothing allowed)."""

    question: str
    analysis: QueryAnalysis
    alpha: float
    qvec: list[float]
    candidates: list[Candidate]
    repos: list[str] | None = None
    allowed: frozenset[str] | None = None
    empty: bool = False
    timings: dict = field(default_factory=dict)
    # call edges among the top candidates (ranking signal call_hub): (repo, caller_path,
    # caller_symbol, callee_path, callee_symbol)
    links: list[tuple[str, str, str, str, str]] = field(default_factory=list)
    # The index's visible filter for ``repos`` (store.query.visible_filter), read once
    # for the whole search and passed to each of its queries (expansion too).
    visible: object = None
    # The source records the search read (or its caller passed), for reads through a ref.
    records: list | None = None


class Retriever:
    """Hybrid retrieval over a :class:`~indexer.read.ChunkReader` with one :class:`Embedder`, then the
    ranking stage (:mod:`.ranking`), an optional reranker, graph expansion and the cap."""

    def __init__(self, store: ChunkReader, embedder: Embedder, *, sessions=None,
                 max_context: int = DEFAULT_MAX_CONTEXT, ranking: RankingConfig | None = None,
                 reranker=None):
        """``sessions``: SQL session factory holding the call graph; ``None`` disables
        graph expansion. ``max_context``: cap on hybrid + expanded chunks.
        ``ranking``: which ranking signals run (default: all). ``reranker``: an object
        with ``rerank(question, candidates) -> candidates`` (e.g.
        :class:`bot.retrieval.rerank.VoyageReranker`), applied to the ranked list before
        the cap; ``None`` = the local ranking stands."""
        self.store = store
        self.embedder = embedder
        self.sessions = sessions
        self.max_context = max_context
        self.ranking = ranking or RankingConfig()
        self.reranker = reranker
        self._checked_at: float | None = None
        # graph neighbours per (repo, path, symbol, commit, callers): the graph only
        # changes with a re-index, which changes the commit
        self._neighbours: dict[tuple, list] = {}

    def neighbours_for(self, chunk: StoredChunk, callers: bool) -> list[tuple[str, str, int, str]]:
        """Direct callees (and callers, when asked) of ``chunk`` from the SQL call graph,
        as :func:`indexer.read.graph_neighbours` returns them; ``[]`` without a database."""
        if self.sessions is None or not chunk.symbol:
            return []
        key = (chunk.repo, chunk.path, chunk.symbol, chunk.commit, callers)
        if key not in self._neighbours:
            if len(self._neighbours) > 4096:
                self._neighbours.clear()
            self._neighbours[key] = graph_neighbours(self.sessions, chunk.repo, chunk.path,
                                                     chunk.symbol, callers=callers)
        return self._neighbours[key]

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
               allowed: Collection[str] | None = None,
               ranking: RankingConfig | None = None,
               records: Sequence[SourceRecord] | None = None) -> SearchResult:
        """Top ``top_k`` chunks for ``question``: hybrid candidates re-scored by the
        ranking stage (``ranking`` overrides the retriever's config for this call), the
        reranker when set, then (when a call graph is available and ``expand_graph``) the
        callees of the top chunks, and for impact/risk questions their callers, inserted
        after the first 5 results and capped at ``max_context`` (see :mod:`.expansion`).

        ``allowed``: the sources the asking channel may read (:mod:`bot.tenancy`;
        ``None`` = all). It is enforced end to end: the hybrid query is filtered to it,
        graph expansion only adds chunks from it, and any hit outside it is dropped. With
        nothing allowed the result is empty (the answer says "no coverage"). Allowed
        sources that are not indexed are simply not found (no error).

        ``records``: the source records (``store.sources.all()``) when the caller has read
        them already (e.g. to pick a named ref): the search reads them no second time.

        Raises :class:`EmptyIndex` when the index (or the chosen repos) has no chunks,
        and ``ModelMismatch`` if the index was built with another embedding model.
        """
        g = self.gather(question, repos=repos, alpha=alpha, allowed=allowed, records=records)
        return self.finish(g, top_k=top_k, expand_graph=expand_graph, ranking=ranking)

    def gather(self, question: str, *, repos: Sequence[str] | None = None,
               alpha: float | None = None, allowed: Collection[str] | None = None,
               records: Sequence[SourceRecord] | None = None) -> Gathered:
        """The first stage of :meth:`search` (same arguments and errors): the hybrid query
        for :data:`RANK_CANDIDATES` candidates, plus the chunks holding the words of a
        quoted phrase, plus the call-graph links among the top code candidates."""
        t0 = time.perf_counter()
        # Two Weaviate round trips: a passed check is trusted for CHECK_TTL_S seconds.
        if self._checked_at is None or time.monotonic() - self._checked_at > CHECK_TTL_S:
            self.store.sources.check_model(self.embedder.model_name)
            if self.store.query.count() == 0:
                raise EmptyIndex("the index is empty: run `coderag index PATH` first")
            self._checked_at = time.monotonic()
        if allowed is not None:
            allowed = frozenset(allowed)
            repos = scope(repos, allowed)
            if not repos:  # the channel may read nothing (or asked only for forbidden repos)
                qa = analyze(question)
                return Gathered(question, qa, choose_alpha(qa, alpha), [], [], repos=[],
                                allowed=allowed, empty=True)
        records = list(records) if records is not None else None
        if allowed is None and repos:
            records = self.store.sources.all() if records is None else records
            known = {s.name for s in records}
            missing = [r for r in repos if r not in known]
            if missing:
                raise unknown_repo(missing, record_bases(records))  # the repositories, not their refs
        t1 = time.perf_counter()
        qa = analyze(question)
        a = choose_alpha(qa, alpha)
        t2 = time.perf_counter()
        qvec = list(self.embedder.embed_query(question))
        t3 = time.perf_counter()
        repos = list(repos) if repos else None
        # One read of the source records for every query of this search (not cached across
        # searches: a run committed meanwhile is seen by the next one).
        visible = self.store.query.visible_filter(repos, records=records)
        raw = [] if visible is None else self.store.query.hybrid(
            qa.keyword_query, qvec, alpha=a, limit=RANK_CANDIDATES, repos=repos,
            boosts=self.boosts(qa) if HYBRID_BOOSTS else (), boost_weight=BOOST_WEIGHT, visible=visible,
            records=records)
        floor = min((c.score for c in raw), default=0.0)
        cands = [Candidate(chunk=c, hybrid=c.score) for c in raw]
        for phrase in qa.quoted[:3] if visible is not None else ():
            for c in self.store.query.keyword(phrase, limit=LOOKUP_LIMIT, repos=repos, visible=visible,
                                              records=records):
                cands.append(Candidate(chunk=c, hybrid=floor, origin="phrase_lookup"))
        t4 = time.perf_counter()
        links = self.links_among(cands)
        t5 = time.perf_counter()
        timings = {"checks": (t1 - t0) * 1000, "analyze": (t2 - t1) * 1000, "embed": (t3 - t2) * 1000,
                   "hybrid": (t4 - t3) * 1000, "links": (t5 - t4) * 1000}
        return Gathered(question, qa, a, qvec, cands, repos=repos, allowed=allowed, timings=timings,
                        links=links, visible=visible, records=records)

    def links_among(self, cands: Sequence[Candidate]) -> list[tuple[str, str, str, str, str]]:
        """Call edges among the top code candidates (ranking signal ``call_hub``), one SQL
        query per repo involved; ``[]`` without a database or when ``call_hub`` is off."""
        if self.sessions is None or not self.ranking.on("call_hub"):
            return []
        per_repo: dict[str, list[tuple[str, str]]] = {}
        for repo, path, symbol in hub_candidates(cands):
            per_repo.setdefault(repo, []).append((path, symbol))
        return [(repo, *edge) for repo, defs in per_repo.items()
                for edge in graph_links(self.sessions, repo, defs)]

    def finish(self, g: Gathered, *, top_k: int = 10, expand_graph: bool = True,
               ranking: RankingConfig | None = None) -> SearchResult:
        """The second stage of :meth:`search`: rank ``g``'s candidates, de-duplicate
        overlapping chunks, rerank (when a reranker is set), expand, cap. Pure of the
        index except for graph expansion, so an ablation can rank one
        :class:`Gathered` under many configs."""
        if g.empty:
            return SearchResult(question=g.question, analysis=g.analysis, alpha=g.alpha, repos=[])
        allowed = g.allowed
        t_rank = time.perf_counter()
        ranked = rank(g.analysis, g.candidates, ranking or self.ranking, links=g.links)
        kept: list[Candidate] = []
        for c in ranked:
            if any(_overlaps(c.chunk, k.chunk) for k in kept):
                continue
            kept.append(c)
        if self.reranker is not None:
            kept = self.reranker.rerank(g.question, kept)
        kept = kept[:top_k]
        for c in kept:
            c.chunk.score = c.score
        info = {c.chunk.uuid: c for c in kept}
        chunks = [c.chunk for c in kept]
        rank_ms = (time.perf_counter() - t_rank) * 1000
        expand_ms = 0.0
        if expand_graph and self.sessions is not None:
            t_expand = time.perf_counter()
            pairs = expand(g.question, chunks, store=self.store, neighbours_for=self.neighbours_for,
                           limit=top_k, max_context=self.max_context, allowed=allowed, visible=g.visible,
                           records=g.records)
            expand_ms = (time.perf_counter() - t_expand) * 1000
        else:
            pairs = [(c, "") for c in chunks]
        if allowed is not None:  # last line of defence: nothing outside the allow-list leaves
            pairs = [(c, r) for c, r in pairs if c.repo in allowed]
        timings = {**g.timings, "rank": rank_ms, "graph": expand_ms}
        timings["total"] = sum(timings.values())
        hits = [SearchHit(chunk=c, rank=i + 1, score=c.score, cosine=_cosine(c.vector, g.qvec),
                          origin="expansion" if reason else "hybrid", reason=reason,
                          signals=dict(info[c.uuid].signals) if c.uuid in info else {})
                for i, (c, reason) in enumerate(pairs)]
        return SearchResult(question=g.question, analysis=g.analysis, alpha=g.alpha, hits=hits,
                            ranked_scores=[c.score for c in ranked[:20]], repos=g.repos, expand_ms=expand_ms,
                            timings=timings, visible=g.visible, records=g.records)
