"""``store.query``: the reads of the chunk collection (searches, look-ups, counts).

Every read that readers make sees only the committed run of each source
(:func:`indexer.store.versions.source_filter`): :meth:`QueryNamespace.visible_filter`
builds that filter from the source records.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from weaviate.classes.query import Boost, Filter, HybridFusion, MetadataQuery
from weaviate.exceptions import WeaviateBaseError

from common.errors import WeaviateUnavailable
from ..models import SourceRecord
from . import schema, versions
from .connection import Collections, short
from .objects import default_vector

# What a search reads back: the StoredChunk fields only, not the keyword-only properties
# (identifiers, symbol_terms, path_terms: about as large as the content again).
RESULT_PROPERTIES = ["repo", "path", "language", "symbol", "kind", "start_line", "end_line",
                     "commit", "indexed_at", "content"]


@dataclass
class StoredChunk:
    """A chunk as read back from the index, with the score of the query that found it."""

    uuid: str
    repo: str
    path: str
    language: str
    symbol: str
    kind: str
    start_line: int
    end_line: int
    commit: str
    indexed_at: datetime | None
    content: str
    score: float = 0.0
    vector: list[float] | None = None

    def to_result(self) -> dict:
        """The result shape of ``coderag search --json`` (see docs/commands.md)."""
        return {"repo": self.repo, "path": self.path, "start_line": self.start_line,
                "end_line": self.end_line, "symbol": self.symbol, "kind": self.kind,
                "score": round(self.score, 6), "commit": self.commit}


@dataclass
class StoredObject:
    """One chunk object by id, with all its stored properties (the write side's view:
    ``content_hash``, ``run_gen``, ``vector_state``, ...) and its vector when asked for."""

    uuid: str
    properties: dict
    vector: list[float] | None = None


class QueryNamespace:
    """``store.query``: searches, look-ups and counts over the chunk collection."""

    def __init__(self, cols: Collections, sources):
        self._cols = cols
        self._sources = sources  # the SourcesNamespace: records for the visible filter

    # -- what readers see ----------------------------------------------------------------
    def visible_filter(self, repos: Sequence[str] | None = None, *,
                       records: Sequence[SourceRecord] | None = None):
        """The filter of what readers may see in ``repos`` (``None``: every source but the
        ref sources): the committed run of each source that has a record, and for a ref
        source named in ``repos`` its view (:func:`versions.ref_filter`: the base's
        unchanged files plus the ref's own chunks). Returns ``None`` when nothing is
        visible (no such source).

        Built from the source records (``records``: as ``store.sources.all()`` just
        returned them, when the caller has them; else they are read, one Weaviate query).
        It is not cached across calls: a run committed by any process is seen by the next
        call. One search computes it once and passes it as ``visible`` to each of its
        queries (:meth:`hybrid`, :meth:`keyword`, :meth:`by_symbol`)."""
        records = self._sources.all() if records is None else list(records)
        by_name = {r.name: r for r in records}
        if repos is not None:
            wanted = set(repos)
            records = [r for r in records if r.name in wanted]
        else:  # every source: the default branches, never a ref (a ref is read when named)
            records = [r for r in records if not r.base]
        parts = [versions.ref_filter(r, by_name.get(r.base)) if r.base else versions.source_filter(r)
                 for r in records]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Filter.any_of(parts)

    def _at_refs(self, chunks: list[StoredChunk], repos: Sequence[str] | None,
                 records: Sequence[SourceRecord] | None = None) -> list[StoredChunk]:
        """Chunks a ref shares with its base, read through a ref source named in ``repos``,
        carry the ref: its source name and its commit (the base's chunk of an unchanged
        file has the same lines at the ref's commit). Chunks of a source named in
        ``repos`` itself are left as they are. Uses ``records`` (the caller's source
        records) when given; else reads them, only when some chunk came through a ref."""
        if not repos or not chunks:
            return chunks
        wanted = set(repos)
        if all(c.repo in wanted for c in chunks):
            return chunks
        records = self._sources.all() if records is None else records
        views = {r.base: r for r in records if r.base and r.name in wanted}
        for c in chunks:
            view = views.get(c.repo) if c.repo not in wanted else None
            if view is not None:
                c.repo, c.commit = view.name, view.commit
        return chunks

    def _visible(self, repos: Sequence[str] | None, visible, records: Sequence[SourceRecord] | None = None):
        """``visible`` when the caller passed it, else :meth:`visible_filter` of ``repos``
        (from ``records`` when the caller has them)."""
        if visible is not None:
            return visible
        return self.visible_filter(list(repos) if repos else None, records=records)

    # -- searches ----------------------------------------------------------------------
    def hybrid(self, query: str, vector: Sequence[float], *, alpha: float, limit: int,
               repos: Sequence[str] | None = None,
               boosts: Sequence[tuple[str, Sequence[str], float]] = (),
               boost_weight: float = 0.3, boost_depth: int = 100, visible=None,
               records: Sequence[SourceRecord] | None = None) -> list[StoredChunk]:
        """Weaviate hybrid search (BM25 over :data:`schema.KEYWORD_PROPERTIES` + vector).

        alpha: 0 = keyword only, 1 = vector only; fusion is Weaviate's relativeScoreFusion.
        repos: restrict to these repos (``None`` = all, ``[]`` = none: returns ``[]``).
        boosts: ``(property, values, weight)`` soft-ranking conditions, blended by
        Weaviate's ``Boost``: a chunk whose ``property`` equals one of ``values`` scores the
        condition; negative weights demote. Final score = (1 - boost_weight) * hybrid +
        boost_weight * (sum of matched weights / sum of |weights|), over the top
        ``boost_depth`` hybrid candidates. Returns at most ``limit`` chunks, best first.
        ``visible``: :meth:`visible_filter` of ``repos``, when the caller already has it
        (read here otherwise); ``records``: the source records, when the caller has
        them (what a read through a ref needs; read here otherwise); likewise for the
        other reads.
        Raises :class:`WeaviateUnavailable` when the search fails.
        """
        if repos is not None and len(repos) == 0:
            return []  # an empty allow-list reads nothing (None means all repos)
        # Only the committed run of each source (indexer.store.versions).
        filters = self._visible(repos, visible, records)
        if filters is None:
            return []
        boost = None
        conds = [Boost.filter(_any_equal(prop, values), weight=w) for prop, values, w in boosts if values and w]
        if conds:
            boost = Boost.blend(conds, weight=boost_weight, depth=max(boost_depth, limit))
        try:
            res = self._cols.chunks.query.hybrid(
                query=query, vector=list(vector), alpha=alpha, limit=limit,
                query_properties=schema.KEYWORD_PROPERTIES, fusion_type=HybridFusion.RELATIVE_SCORE,
                filters=filters, boost=boost, include_vector=True,
                return_properties=RESULT_PROPERTIES, return_metadata=MetadataQuery(score=True))
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"hybrid search failed: {short(exc)}") from None
        return self._at_refs([_stored(o) for o in res.objects], repos, records)

    def by_symbol(self, repo: str, symbols: Sequence[str], limit: int = 50, *,
                  visible=None, records: Sequence[SourceRecord] | None = None) -> list[StoredChunk]:
        """Chunks of ``repo`` whose ``symbol`` is one of ``symbols`` (exact match).
        ``visible``: a :meth:`visible_filter` the caller has that covers ``repo`` (e.g. its
        search's); narrowed to ``repo`` here. ``records``: the source records, when the
        caller has them (else read for a ref source)."""
        if not symbols:
            return []
        if visible is not None and "@" in repo:
            visible = None  # maybe a ref source, which reads its base too: its own filter
        if visible is not None:
            visible = visible & Filter.by_property("repo").equal(repo)
        visible = self._visible([repo], visible, records)
        if visible is None:
            return []
        flt = visible & Filter.by_property("symbol").contains_any(list(symbols))
        res = self._cols.chunks.query.fetch_objects(filters=flt, limit=limit, return_properties=RESULT_PROPERTIES)
        return self._at_refs([_stored(o) for o in res.objects], [repo], records)

    def keyword(self, query: str, *, limit: int = 20, repos: Sequence[str] | None = None,
                include_vector: bool = True, visible=None,
                records: Sequence[SourceRecord] | None = None) -> list[StoredChunk]:
        """BM25 only (same properties and weights as the hybrid query's keyword half),
        best first, with BM25 scores. ``[]`` when no chunk holds any of the query's words
        (so ``limit=1`` answers "does the index know this word?").
        Raises :class:`WeaviateUnavailable` when the search fails."""
        if not query.strip() or (repos is not None and len(repos) == 0):
            return []
        filters = self._visible(repos, visible, records)  # committed runs only
        if filters is None:
            return []
        try:
            res = self._cols.chunks.query.bm25(query=query, limit=limit, query_properties=schema.KEYWORD_PROPERTIES,
                                               filters=filters, include_vector=include_vector,
                                               return_metadata=MetadataQuery(score=True))
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"keyword search failed: {short(exc)}") from None
        return self._at_refs([_stored(o) for o in res.objects], repos, records)

    # -- the write side's reads --------------------------------------------------------
    def by_ids(self, ids: Sequence[str], *, include_vector: bool = False,
               properties: Sequence[str] | None = None) -> list[StoredObject]:
        """The chunk objects with these ids (at most 100 per call is a sensible size),
        visible or not; ids that do not exist are left out. ``properties``: which to read
        (``None``: all)."""
        if not ids:
            return []
        kwargs = {} if properties is None else {"return_properties": list(properties)}
        res = self._cols.chunks.query.fetch_objects(filters=Filter.by_id().contains_any(list(ids)), limit=len(ids),
                                                    include_vector=include_vector, **kwargs)
        return [StoredObject(uuid=str(o.uuid), properties=dict(o.properties),
                             vector=default_vector(o) if include_vector else None) for o in res.objects]

    def where(self, flt, *, limit: int, include_vector: bool = False,
              properties: Sequence[str] | None = None) -> list[StoredObject]:
        """Up to ``limit`` chunk objects matching the Weaviate filter ``flt`` (``None``:
        any), visible or not (tests and checks; readers use the searches)."""
        kwargs = {} if properties is None else {"return_properties": list(properties)}
        res = self._cols.chunks.query.fetch_objects(filters=flt, limit=limit, include_vector=include_vector,
                                                    **kwargs)
        return [StoredObject(uuid=str(o.uuid), properties=dict(o.properties),
                             vector=default_vector(o) if include_vector else None) for o in res.objects]

    def all_objects(self, properties: Sequence[str]) -> Iterable[StoredObject]:
        """Every chunk object (a scan of the collection, without vectors): for checks
        that must see objects the filters may not (``doctor``, crash clean-up)."""
        for o in self._cols.chunks.iterator(return_properties=list(properties)):
            yield StoredObject(uuid=str(o.uuid), properties=dict(o.properties))

    def count(self, repo: str | None = None) -> int:
        """Number of searchable chunks (of the committed runs), in all repos or in one."""
        flt = self.visible_filter(None if repo is None else [repo])
        return self.count_where(flt) if flt is not None else 0

    def count_files(self, repo: str) -> int:
        """Number of distinct paths with at least one searchable chunk in ``repo`` (one
        group-by aggregation; files skipped at index time have no chunks and do not count)."""
        flt = self.visible_filter([repo])
        return self.count_files_where(flt) if flt is not None else 0

    def count_where(self, flt) -> int:
        """Objects matching the Weaviate filter ``flt``. Raises :class:`WeaviateUnavailable`."""
        try:
            return int(self._cols.chunks.aggregate.over_all(filters=flt, total_count=True).total_count or 0)
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate count failed: {short(exc)}") from None

    def count_files_where(self, flt) -> int:
        """Distinct paths among the objects matching ``flt``."""
        from weaviate.classes.aggregate import GroupByAggregate

        res = self._cols.chunks.aggregate.over_all(filters=flt, total_count=True,
                                                   group_by=GroupByAggregate(prop="path", limit=10_000_000))
        return sum(1 for g in res.groups if (g.total_count or 0) > 0)

    def max_run_gen(self, repo: str) -> int:
        """The highest ``run_gen`` among ``repo``'s objects, committed or not (0: none)."""
        from weaviate.classes.aggregate import Metrics

        res = self._cols.chunks.aggregate.over_all(filters=Filter.by_property("repo").equal(repo),
                                                   return_metrics=Metrics("run_gen").integer(maximum=True))
        top = res.properties.get("run_gen") if res.properties else None
        return int(getattr(top, "maximum", None) or 0)

    def any_vector_dimensions(self) -> int:
        """Length of the vectors in the chunk collection (0 when none has a vector)."""
        for obj in self._cols.chunks.query.fetch_objects(limit=20, include_vector=True).objects:
            vec = default_vector(obj)
            if vec:
                return len(vec)
        return 0

    def ids_in_vector_index(self, ids: Sequence[str], dimensions: int) -> set[str]:
        """Which of ``ids`` are in the vector index: one exact filtered ``near_vector``
        (keep ``ids`` under Weaviate's flat-search cut-off, as :mod:`.versions` does).
        Raises :class:`WeaviateUnavailable`."""
        probe = [1.0] + [0.0] * (dimensions - 1)
        try:
            res = self._cols.chunks.query.near_vector(near_vector=probe, filters=Filter.by_id().contains_any(list(ids)),
                                                      limit=len(ids), return_properties=[])
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"vector check failed: {str(exc).splitlines()[0][:200]}") from None
        return {str(o.uuid) for o in res.objects}

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, list[float]]:
        """content_hash -> vector for the given hashes already indexed (any repo; the index
        holds one model, see ``store.sources.check_model``): the embedding cache of
        incremental runs, a few filtered queries instead of a scan of the collection."""
        wanted = sorted(set(hashes))
        out: dict[str, list[float]] = {}
        for i in range(0, len(wanted), 100):
            part = wanted[i:i + 100]
            res = self._cols.chunks.query.fetch_objects(
                filters=Filter.by_property("content_hash").contains_any(part), limit=len(part) * 4,
                include_vector=True, return_properties=["content_hash"])
            for obj in res.objects:
                vec = default_vector(obj)
                if vec:
                    out.setdefault(obj.properties["content_hash"], vec)
        return out


def _any_equal(prop: str, values: Sequence[str]):
    flts = [Filter.by_property(prop).equal(v) for v in values]
    return flts[0] if len(flts) == 1 else Filter.any_of(flts)


def _stored(obj) -> StoredChunk:
    p = obj.properties
    score = getattr(obj.metadata, "score", None) if obj.metadata else None
    return StoredChunk(
        uuid=str(obj.uuid), repo=p.get("repo", ""), path=p.get("path", ""),
        language=p.get("language", ""), symbol=p.get("symbol", ""), kind=p.get("kind", ""),
        start_line=int(p.get("start_line") or 0), end_line=int(p.get("end_line") or 0),
        commit=p.get("commit", ""), indexed_at=p.get("indexed_at"), content=p.get("content", ""),
        score=float(score or 0.0), vector=default_vector(obj))
