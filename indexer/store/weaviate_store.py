"""Reads and writes of chunks and sources in Weaviate: the index's public interface.

The bot reads the index only through :class:`ChunkReader` (``hybrid_search``,
``fetch_by_symbol``, ``sources``, ``count``); the indexer writes through
:class:`ChunkWriter` (``write_chunks`` and friends). :class:`ChunkStore` is both.
"""
from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Iterable, Protocol, Sequence

import weaviate
from weaviate.classes.init import AdditionalConfig, GrpcConfig, Timeout
from weaviate.classes.query import Boost, Filter, HybridFusion, MetadataQuery
from weaviate.exceptions import WeaviateBaseError
from weaviate.util import generate_uuid5

from common.settings import Settings
from common.errors import ModelMismatch, WeaviateUnavailable
from common.redact import redact_text, redact_url
from ..models import SourceRecord
from . import schema, versions
from .objects import default_vector as _default_vector
from .faults import fault_point
from .versions import IndexIncomplete, IndexRun  # noqa: F401  (re-exported)
from .records import parse_weaviate_url, source_properties
from .repo_lock import check_fence
from .weaviate_server import EmbeddedWeaviate, is_ready

log = logging.getLogger(__name__)

WRITE_BATCH_SIZE = 200
# What a search reads back: the StoredChunk fields only, not the keyword-only properties
# (identifiers, symbol_terms, path_terms: about as large as the content again).
RESULT_PROPERTIES = ["repo", "path", "language", "symbol", "kind", "start_line", "end_line",
                     "commit", "indexed_at", "content"]
GRPC_MAX_RECONNECT_BACKOFF_MS = 5000
SCHEMA_PROPAGATION_TIMEOUT_S = 30.0


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


def connect(settings: Settings) -> weaviate.WeaviateClient:
    """A connected client: to ``WEAVIATE_URL`` if set, else to the embedded server.

    Raises :class:`WeaviateUnavailable` with a one-line reason if it cannot connect.
    """
    # gRPC reconnects with exponential backoff capped at 120 s by default: after a Weaviate
    # restart, searches of a long-running `serve` would fail for up to two minutes while
    # HTTP (and /readyz) is already fine. Cap the backoff at 5 s.
    grpc = GrpcConfig(channel_options=[("grpc.initial_reconnect_backoff_ms", 500),
                                       ("grpc.max_reconnect_backoff_ms", GRPC_MAX_RECONNECT_BACKOFF_MS)])
    extra = AdditionalConfig(timeout=Timeout(init=10, query=120, insert=300), grpc_config=grpc)
    if settings.weaviate_url:
        host, port, secure = parse_weaviate_url(settings.weaviate_url)
        grpc_port = settings.weaviate_grpc_port
        grpc_host = settings.weaviate_grpc_host or host
        where = redact_url(settings.weaviate_url)  # never print a password of the URL
    else:
        info = EmbeddedWeaviate(settings.home, settings.weaviate_binary).ensure()
        host, secure, port, grpc_port = "127.0.0.1", False, info.http_port, info.grpc_port
        grpc_host = host
        where = f"embedded Weaviate at {info.url}"
    try:
        # skip_init_checks: the client's init checks include a version look-up on pypi.org
        # (a network call from every command); readiness is checked below instead.
        client = weaviate.connect_to_custom(http_host=host, http_port=port, http_secure=secure,
                                            grpc_host=grpc_host, grpc_port=grpc_port,
                                            grpc_secure=secure, additional_config=extra,
                                            skip_init_checks=True)
        ready = client.is_ready()
    except WeaviateBaseError as exc:
        raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): {_short(exc)}") from None
    if not ready:
        client.close()
        raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): not ready")
    return client


def _http_url(settings: Settings) -> str:
    """Base URL of the Weaviate :func:`connect` talks to now ("" if unknown)."""
    if settings.weaviate_url:
        return settings.weaviate_url.rstrip("/")
    info = EmbeddedWeaviate(settings.home, settings.weaviate_binary).running()
    return info.url if info else ""


def _short(exc: Exception) -> str:
    text = redact_text(str(exc)).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


class ChunkReader(Protocol):
    """The read interface of the index: all the bot (retrieval, answers, health) uses.
    :class:`ChunkStore` implements it."""

    def hybrid_search(self, query: str, vector: Sequence[float], *, alpha: float, limit: int,
                      repos: Sequence[str] | None = None,
                      boosts: Sequence[tuple[str, Sequence[str], float]] = (),
                      boost_weight: float = 0.3, boost_depth: int = 100, visible=None) -> list[StoredChunk]: ...

    def fetch_by_symbol(self, repo: str, symbols: Sequence[str], limit: int = 50, *,
                        visible=None) -> list[StoredChunk]: ...

    def keyword_search(self, query: str, *, limit: int = 20, repos: Sequence[str] | None = None,
                       include_vector: bool = True, visible=None) -> list[StoredChunk]: ...

    def visible_filter(self, repos: Sequence[str] | None = None, *,
                       records: Sequence[SourceRecord] | None = None): ...

    def sources(self) -> list[SourceRecord]: ...

    def count(self, repo: str | None = None) -> int: ...

    def count_files(self, repo: str) -> int: ...


class ChunkWriter(ChunkReader, Protocol):
    """The write interface of the index: what the indexing pipeline and the write-side
    use cases (:mod:`indexer.operations`) call. :class:`ChunkStore` implements it."""

    def check_model(self, model_name: str) -> None: ...

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, list[float]]: ...

    def write_chunks(self, rows: Iterable[tuple[dict, list[float]]], run: "IndexRun | None" = None) -> int: ...

    def begin_run(self, source: str, mode: str = "full") -> "IndexRun": ...

    def verify_run(self, run: "IndexRun") -> dict: ...

    def commit_run(self, run: "IndexRun", record: dict) -> dict: ...

    def cleanup_run(self, run: "IndexRun") -> int: ...

    def source_record(self, name: str) -> dict | None: ...

    def delete_stale(self, repo: str, run_id: str) -> int: ...

    def delete_paths(self, repo: str, paths: Iterable[str], keep_run_id: str | None = None) -> int: ...

    def delete_repo(self, repo: str) -> None: ...

    def reset(self) -> None: ...

    def save_source(self, record: "SourceRecord | dict") -> None: ...


def chunk_uuid(repo: str, path: str, start_line: int, content_hash: str, gen: int | None = None) -> str:
    """Deterministic id of a chunk in run generation ``gen`` (see :mod:`.versions`): a run
    never overwrites an object of another run, and a chunk written twice by one run is
    one object. ``gen=None``: the id scheme of unversioned writes."""
    key = f"{repo}\0{path}\0{start_line}\0{content_hash}"
    return generate_uuid5(key if gen is None else f"{key}\0{gen}")


class ChunkStore:
    """The chunk and source collections on one Weaviate connection (implements
    :class:`ChunkReader` and :class:`ChunkWriter`). Use as a context manager."""

    def __init__(self, client: weaviate.WeaviateClient, *, replication_factor: int = 1):
        """``replication_factor``: used only when this store creates the collections
        (``CODERAG_REPLICATION_FACTOR``); existing collections keep theirs."""
        self.client = client
        self.replication_factor = replication_factor
        self._settings: Settings | None = None  # set by open(): lets reconnect_if_down() redial
        self._url = ""

    @classmethod
    def open(cls, settings: Settings) -> "ChunkStore":
        """Connect (starting the embedded server if needed) and create missing collections."""
        store = cls(connect(settings), replication_factor=settings.replication_factor)
        store._settings = settings
        store._url = _http_url(settings)
        try:
            store._prepare_schema()
        except WeaviateUnavailable:
            store.close()
            raise
        return store

    def _prepare_schema(self) -> None:
        """:meth:`ensure_schema`, with a Weaviate failure raised as :class:`WeaviateUnavailable`."""
        try:
            self.ensure_schema()
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate schema setup failed: {_short(exc)}") from None

    def reconnect_if_down(self) -> bool:
        """For long-running processes: if Weaviate does not answer on this connection,
        connect again (for the embedded server: to the ports it runs on now, starting it
        if needed) and swap the new client in; returns True when it reconnected.

        Only stores made by :meth:`open` know how to reconnect (others return False).
        Raises :class:`WeaviateUnavailable` when the new connection fails too."""
        if self._settings is None:
            return False
        # A plain readiness probe with a 2 s timeout: the client's own call waits out its
        # query timeout when something else now listens on the old port.
        if self._url and is_ready(self._url):
            return False
        old = self.client
        self.client = connect(self._settings)
        self._prepare_schema()
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old connection is dead anyway
            pass
        self._url = _http_url(self._settings)
        log.warning("reconnected to Weaviate at %s", redact_url(self._url))
        return True

    def __enter__(self) -> "ChunkStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.client.close()

    # -- schema and model -------------------------------------------------------------
    def ensure_schema(self) -> None:
        """Create the chunk and source collections when missing. In a cluster, a new
        collection reaches the other nodes' schema a moment later and a QUORUM read
        routed there fails ("could not find class"): after creating one, wait (up to
        :data:`SCHEMA_PROPAGATION_TIMEOUT_S`) until both answer a query."""
        created = False
        if not self.client.collections.exists(schema.CHUNK_COLLECTION):
            self.client.collections.create(**schema.chunk_collection_config(self.replication_factor))
            created = True
        if not self.client.collections.exists(schema.SOURCE_COLLECTION):
            self.client.collections.create(**schema.source_collection_config(self.replication_factor))
            created = True
        self.chunks = self.client.collections.get(schema.CHUNK_COLLECTION)
        self.sources_col = self.client.collections.get(schema.SOURCE_COLLECTION)
        if not created:
            self._add_missing_properties()
        if created and self.replication_factor > 1:
            self._wait_until_queryable()

    def _add_missing_properties(self) -> None:
        """Collections created by an older coderag lack the versioning properties
        (``run_gen``, ...): add them (objects written before keep no value there)."""
        for col, props in ((self.chunks, schema.CHUNK_PROPERTIES), (self.sources_col, schema.SOURCE_PROPERTIES)):
            have = {p.name for p in col.config.get().properties}
            for prop in props:
                if prop.name not in have:
                    col.config.add_property(prop)

    def _wait_until_queryable(self) -> None:
        deadline = time.monotonic() + SCHEMA_PROPAGATION_TIMEOUT_S
        while True:
            try:
                for col in (self.chunks, self.sources_col):
                    for _ in range(3):  # the coordinator picks replicas per request
                        col.query.fetch_objects(limit=1)
                return
            except WeaviateBaseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def index_model(self) -> str | None:
        """Embedding model of the vectors already in the index, or ``None`` if it is empty."""
        models = {s.model for s in self.sources() if s.model}
        if len(models) > 1:
            raise ModelMismatch(f"the index mixes embedding models {sorted(models)}; run `coderag reset`")
        return models.pop() if models else None

    def check_model(self, model_name: str) -> None:
        """Raise :class:`ModelMismatch` if the index was built with another model."""
        current = self.index_model()
        if current and current != model_name:
            raise ModelMismatch(
                f"the index was built with embedding model {current!r} but {model_name!r} is "
                f"configured; use the same model (VOYAGE_API_KEY set or not), or `coderag reset` and re-index")

    # -- writes ------------------------------------------------------------------------
    def write_chunks(self, rows: Iterable[tuple[dict, list[float]]], run: IndexRun | None = None) -> int:
        """Upsert ``(properties, vector)`` rows, ``WRITE_BATCH_SIZE`` objects per synchronous
        ``insert_many`` request (ids from :func:`chunk_uuid`, so a rewrite replaces the
        object); returns how many were written. ``rows`` may be a generator: it is consumed
        lazily, so embedding and writing interleave.

        Synchronous on purpose: the client's background batcher re-queues objects it could
        not send and can wait forever in ``flush`` when a replica is gone; here every
        request either succeeds or raises. Raises :class:`WeaviateUnavailable` if Weaviate
        rejects any object or cannot be reached.

        ``run`` (from :meth:`begin_run`): the rows become objects of that run (its
        ``run_gen``/``run_id`` and run-specific ids), invisible to readers until
        :meth:`commit_run`; the run remembers the ids for :meth:`verify_run`. Without a
        run: unversioned upserts (kept for old callers; readers see them only for
        sources whose record predates versioning).
        """
        from weaviate.classes.data import DataObject

        written, objs, batches = 0, [], 0
        for p, v in rows:
            gen = None
            if run is not None:
                if run.source != p["repo"]:
                    raise ValueError(f"chunk of {p['repo']!r} written to a run of {run.source!r}")
                p = dict(p, run_gen=run.gen, run_id=run.run_id)
                gen = run.gen
                run.dimensions = run.dimensions or len(v or [])
            uid = chunk_uuid(p["repo"], p["path"], p["start_line"], p["content_hash"], gen)
            if run is not None:
                run.ids.add(uid)
                if not v:  # keyword-only by the embedding policy: no vector to verify
                    run.vectorless.add(uid)
            objs.append(DataObject(properties=p, vector=v, uuid=uid))
            if len(objs) >= WRITE_BATCH_SIZE:
                if run is not None:
                    check_fence(run.source)  # a run that lost its lock stops writing
                written += self._insert(objs)
                objs, batches = [], batches + 1
                fault_point("write_batch", batch=batches, objects=written)
        if objs:
            written += self._insert(objs)
            fault_point("write_batch", batch=batches + 1, objects=written)
        return written

    # -- versioned runs (see indexer.store.versions for the protocol) --------------------
    def begin_run(self, source: str, mode: str = "full") -> IndexRun:
        """Start a run of ``source`` (``mode`` ``"full"`` or ``"incremental"``): finishes the
        clean-up a crash may have left, returns the :class:`IndexRun` to write with."""
        return versions.begin_run(self, source, mode)

    def verify_run(self, run: IndexRun) -> dict:
        """Count ``run``'s objects and check their vectors (repairing missing ones);
        raises :class:`IndexIncomplete`. See :func:`versions.verify_run`."""
        return versions.verify_run(self, run)

    def commit_run(self, run: IndexRun, record: dict) -> dict:
        """Switch readers to ``run`` by writing the source ``record``; see
        :func:`versions.commit_run` (``chunks``, and ``files`` when ``None``, are counted)."""
        return versions.commit_run(self, run, record)

    def cleanup_run(self, run: IndexRun) -> int:
        """Delete what the committed run superseded; returns how many objects."""
        return versions.cleanup_run(self, run)

    def source_record(self, name: str) -> dict | None:
        """The committed source record of ``name`` (as :meth:`sources` lists it), or ``None``."""
        obj = self.sources_col.query.fetch_object_by_id(generate_uuid5("source\0" + name))
        return _source_props(obj.properties) if obj is not None else None

    def visible_filter(self, repos: Sequence[str] | None = None, *,
                       records: Sequence[SourceRecord] | None = None):
        """The filter of what readers may see in ``repos`` (``None``: every source): the
        committed run of each source that has a record. Returns ``None`` when nothing is
        visible (no such source).

        Built from the source records (``records``: as :meth:`sources` just returned them,
        when the caller has them; else they are read, one Weaviate query). It is not
        cached across calls: a run committed by any process is seen by the next call. One
        search computes it once and passes it as ``visible`` to each of its queries
        (:meth:`hybrid_search`, :meth:`keyword_search`,
        :meth:`fetch_by_symbol`)."""
        records = self.sources() if records is None else list(records)
        if repos is not None:
            wanted = set(repos)
            records = [r for r in records if r["name"] in wanted]
        parts = [versions.source_filter(r) for r in records]
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else Filter.any_of(parts)

    def _visible(self, repos: Sequence[str] | None, visible):
        """``visible`` when the caller passed it, else :meth:`visible_filter` of ``repos``."""
        return visible if visible is not None else self.visible_filter(list(repos) if repos else None)

    def count_where(self, flt) -> int:
        """Objects matching the Weaviate filter ``flt``."""
        try:
            return int(self.chunks.aggregate.over_all(filters=flt, total_count=True).total_count or 0)
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate count failed: {_short(exc)}") from None

    def count_files_where(self, flt) -> int:
        """Distinct paths among the objects matching ``flt``."""
        from weaviate.classes.aggregate import GroupByAggregate

        res = self.chunks.aggregate.over_all(filters=flt, group_by=GroupByAggregate(prop="path", limit=10_000_000),
                                             total_count=True)
        return sum(1 for g in res.groups if (g.total_count or 0) > 0)

    def any_vector_dimensions(self) -> int:
        """Length of the vectors in the chunk collection (0 when none has a vector)."""
        for obj in self.chunks.query.fetch_objects(limit=20, include_vector=True).objects:
            vec = _default_vector(obj)
            if vec:
                return len(vec)
        return 0

    def _insert(self, objs: list) -> int:
        try:
            res = self.chunks.data.insert_many(objs)
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"Weaviate rejected chunks: {_short(exc)}") from None
        if res.errors:
            first = next(iter(res.errors.values()))
            raise WeaviateUnavailable(f"Weaviate rejected {len(res.errors)} chunks: {str(first.message)[:200]}")
        return len(objs)

    def delete_stale(self, repo: str, run_id: str) -> int:  # unversioned writes only
        """Delete ``repo``'s chunks written by any run but ``run_id``; returns how many."""
        flt = Filter.by_property("repo").equal(repo) & Filter.by_property("run_id").not_equal(run_id)
        return self._delete_all(flt)

    def _delete_all(self, flt) -> int:
        """``delete_many`` until nothing matches: one call removes at most
        QUERY_MAXIMUM_RESULTS (10,000 by default) objects."""
        deleted = 0
        while True:
            res = self.chunks.data.delete_many(where=flt)
            deleted += int(res.successful)
            if int(res.matches) < 10000 or not int(res.successful):
                return deleted

    def delete_paths(self, repo: str, paths: Iterable[str], keep_run_id: str | None = None) -> int:
        """Delete ``repo``'s chunks whose ``path`` is one of ``paths`` (except those written
        by run ``keep_run_id``, when given: the fresh copies of re-indexed files); returns
        how many. Incremental re-indexing calls it for changed, renamed and deleted files."""
        paths = sorted(set(paths))
        deleted = 0
        for i in range(0, len(paths), 200):
            flt = Filter.by_property("repo").equal(repo) & Filter.by_property("path").contains_any(paths[i:i + 200])
            if keep_run_id:
                flt = flt & Filter.by_property("run_id").not_equal(keep_run_id)
            deleted += self._delete_all(flt)
        return deleted

    def vectors_for_hashes(self, hashes: Iterable[str]) -> dict[str, list[float]]:
        """content_hash -> vector for the given hashes already indexed (any repo; the index
        holds one model, see :meth:`check_model`): the embedding cache of incremental runs,
        a few filtered queries instead of a scan of the collection."""
        wanted = sorted(set(hashes))
        out: dict[str, list[float]] = {}
        for i in range(0, len(wanted), 100):
            part = wanted[i:i + 100]
            res = self.chunks.query.fetch_objects(
                filters=Filter.by_property("content_hash").contains_any(part), limit=len(part) * 4,
                include_vector=True, return_properties=["content_hash"])
            for obj in res.objects:
                vec = _default_vector(obj)
                if vec:
                    out.setdefault(obj.properties["content_hash"], vec)
        return out

    def delete_repo(self, repo: str) -> None:
        """Remove every chunk and the source record of ``repo``."""
        self._delete_all(Filter.by_property("repo").equal(repo))
        self.sources_col.data.delete_many(where=Filter.by_property("name").equal(repo))

    def reset(self) -> None:
        """Drop both collections (all repos, all vectors) and recreate them empty."""
        for name in (schema.CHUNK_COLLECTION, schema.SOURCE_COLLECTION):
            self.client.collections.delete(name)
        self.ensure_schema()

    def save_source(self, record: SourceRecord | dict) -> None:
        """Insert or replace the source record (keyed by ``record.name``); a dict is the
        record's fields (what :mod:`.versions` passes, with the run generation fields)."""
        props = record.to_dict() if isinstance(record, SourceRecord) else dict(record)
        props.pop("damaged", None)  # a read-time finding, never stored
        props["skipped_json"] = json.dumps(props.pop("skipped", {}))
        if props.get("indexed_at") is None:
            props.pop("indexed_at", None)
        if "replaced" in props:
            props["replaced_json"] = json.dumps(sorted(props.pop("replaced") or []))
        uid = generate_uuid5("source\0" + props["name"])
        if self.sources_col.data.exists(uid):
            self.sources_col.data.replace(uuid=uid, properties=props, vector=[0.0])
        else:
            self.sources_col.data.insert(properties=props, uuid=uid, vector=[0.0])

    # -- reads -------------------------------------------------------------------------
    def sources(self) -> list[SourceRecord]:
        """Every indexed source's record, sorted by name."""
        out = [SourceRecord.from_properties(_source_props(obj.properties)) for obj in self.sources_col.iterator()]
        return sorted(out, key=lambda r: r.name)

    def count(self, repo: str | None = None) -> int:
        """Number of searchable chunks (of the committed runs), in all repos or in one."""
        flt = self.visible_filter(None if repo is None else [repo])
        return self.count_where(flt) if flt is not None else 0

    def count_files(self, repo: str) -> int:
        """Number of distinct paths with at least one searchable chunk in ``repo`` (one
        group-by aggregation; files skipped at index time have no chunks and do not count)."""
        flt = self.visible_filter([repo])
        return self.count_files_where(flt) if flt is not None else 0

    def hybrid_search(self, query: str, vector: Sequence[float], *, alpha: float, limit: int,
                      repos: Sequence[str] | None = None,
                      boosts: Sequence[tuple[str, Sequence[str], float]] = (),
                      boost_weight: float = 0.3, boost_depth: int = 100, visible=None) -> list[StoredChunk]:
        """Weaviate hybrid search (BM25 over :data:`schema.KEYWORD_PROPERTIES` + vector).

        alpha: 0 = keyword only, 1 = vector only; fusion is Weaviate's relativeScoreFusion.
        repos: restrict to these repos (``None`` = all, ``[]`` = none: returns ``[]``).
        boosts: ``(property, values, weight)`` soft-ranking conditions, blended by
        Weaviate's ``Boost``: a chunk whose ``property`` equals one of ``values`` scores the
        condition; negative weights demote. Final score = (1 - boost_weight) * hybrid +
        boost_weight * (sum of matched weights / sum of |weights|), over the top
        ``boost_depth`` hybrid candidates. Returns at most ``limit`` chunks, best first.
        ``visible``: :meth:`visible_filter` of ``repos``, when the caller already has it
        (read here otherwise); likewise for the other reads.
        """
        if repos is not None and len(repos) == 0:
            return []  # an empty allow-list reads nothing (None means all repos)
        # Only the committed run of each source (indexer.store.versions).
        filters = self._visible(repos, visible)
        if filters is None:
            return []
        boost = None
        conds = [Boost.filter(_any_equal(prop, values), weight=w) for prop, values, w in boosts if values and w]
        if conds:
            boost = Boost.blend(conds, weight=boost_weight, depth=max(boost_depth, limit))
        try:
            res = self.chunks.query.hybrid(
                query=query, vector=list(vector), alpha=alpha, limit=limit,
                query_properties=schema.KEYWORD_PROPERTIES, fusion_type=HybridFusion.RELATIVE_SCORE,
                filters=filters, boost=boost, include_vector=True,
                return_properties=RESULT_PROPERTIES, return_metadata=MetadataQuery(score=True))
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"hybrid search failed: {_short(exc)}") from None
        return [_stored(o) for o in res.objects]

    def fetch_by_symbol(self, repo: str, symbols: Sequence[str], limit: int = 50, *,
                        visible=None) -> list[StoredChunk]:
        """Chunks of ``repo`` whose ``symbol`` is one of ``symbols`` (exact match).
        ``visible``: a :meth:`visible_filter` the caller has that covers ``repo`` (e.g. its
        search's); narrowed to ``repo`` here."""
        if not symbols:
            return []
        if visible is not None:
            visible = visible & Filter.by_property("repo").equal(repo)
        visible = self._visible([repo], visible)
        if visible is None:
            return []
        flt = visible & Filter.by_property("symbol").contains_any(list(symbols))
        res = self.chunks.query.fetch_objects(filters=flt, limit=limit, return_properties=RESULT_PROPERTIES)
        return [_stored(o) for o in res.objects]


    def keyword_search(self, query: str, *, limit: int = 20, repos: Sequence[str] | None = None,
                       include_vector: bool = True, visible=None) -> list[StoredChunk]:
        """BM25 only (same properties and weights as the hybrid query's keyword half),
        best first, with BM25 scores. ``[]`` when no chunk holds any of the query's words
        (so ``limit=1`` answers "does the index know this word?")."""
        if not query.strip() or (repos is not None and len(repos) == 0):
            return []
        filters = self._visible(repos, visible)  # committed runs only
        if filters is None:
            return []
        try:
            res = self.chunks.query.bm25(query=query, limit=limit, query_properties=schema.KEYWORD_PROPERTIES,
                                         filters=filters, include_vector=include_vector,
                                         return_metadata=MetadataQuery(score=True))
        except WeaviateBaseError as exc:
            raise WeaviateUnavailable(f"keyword search failed: {_short(exc)}") from None
        return [_stored(o) for o in res.objects]


def _source_props(properties) -> dict:
    """Stored source properties, decoded and validated (:func:`.records.source_properties`)."""
    return source_properties(properties)


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
        score=float(score or 0.0), vector=_default_vector(obj))


def new_run_id() -> str:
    """A fresh id for one indexing run (marks the chunks it wrote)."""
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(timezone.utc)
