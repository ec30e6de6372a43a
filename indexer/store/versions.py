"""Crash-safe index versions: every write is a *run* that readers see only once committed.

Why: Weaviate has no multi-object transactions. Before this, a run upserted chunks in
place and deleted the old ones afterwards, so a crash (Weaviate SIGKILLed, the indexer
killed) left old and new chunks side by side, visible to every search, for good; and
objects of an interrupted batch could sit in the object store without being in the
vector index, where a rewrite with the same id and vector never put them back.

How:

* Each run of one source gets a generation number ``gen`` (1, 2, ...). Every chunk it
  writes carries ``run_gen = gen`` (and the run's ``run_id``), and its object id is
  derived from the chunk *and* ``gen``
  (:func:`~indexer.store.weaviate_store.chunk_uuid`), so a run never overwrites an object
  of an earlier run: it only adds new objects.
* The source record (``CoderagSource``) is the commit point. It holds the committed
  ``run_gen`` G, a floor F and the ``replaced`` paths. Readers (hybrid search, symbol
  look-ups, counts) filter every source to ``F <= run_gen <= G`` (with F = 0: also
  the objects written before versioning, which have no ``run_gen``), minus, while a
  clean-up is pending, the older copies of the ``replaced`` paths
  (:func:`source_filter`). Objects of a run that has not committed have
  ``run_gen > G``: invisible, whatever state the crash left them in.
* A **full** run commits with F = G (only its own objects are visible). An
  **incremental** run (a push, a Confluence sync) writes only the changed files' chunks
  and commits with F unchanged and ``replaced`` = the changed, renamed and deleted paths:
  the carried objects of untouched files stay visible without being copied, so a
  one-file push costs the chunks of that file, one record write and one small clean-up.
* Before the commit, :func:`verify_run` counts the run's objects in Weaviate and checks
  that each one is in the vector index (a filtered ``near_vector`` over the ids: a
  filtered search over a small allow-list is an exact flat search that only returns
  objects present in the HNSW graph). Objects found without their vector are deleted and
  re-inserted with their stored vector (a plain rewrite would not re-index them); the
  commit happens only when counts and vectors are complete.
* After the commit, :func:`cleanup` deletes what the record hides (older generations,
  older copies of replaced paths) and uncommitted generations (orphans of crashed runs);
  :func:`begin_run` runs the same clean-up first, so a crash at any point is repaired by
  the next run of the source.

The calls a write path makes, in order (the pipeline, push re-index and Confluence sync
do exactly this)::

    run = store.runs.begin(source, mode="full" | "incremental")  # clean-up, new gen
    store.data.write_chunks(rows, run=run)                        # any number of calls
    run.replace_paths(paths)                                      # incremental only
    store.runs.verify(run)                                        # counts + vectors
    store.runs.commit(run, record)                                # the switch
    store.runs.cleanup(run)                                       # delete superseded

Concurrency: one run per source at a time (the pipeline's repo lock,
:mod:`indexer.freshness.repo_lock`); ``doctor --repair`` takes the same lock.
"""
from __future__ import annotations

import logging
import uuid as _uuid
from dataclasses import dataclass, field, replace
from typing import Iterable

from weaviate.classes.query import Filter
from weaviate.exceptions import WeaviateBaseError

from common.errors import WeaviateUnavailable
from ..models import SourceRecord
from .faults import fault_point
from .repo_lock import StaleRun, check_fence

# "ChunkStore" in annotations is indexer.store.weaviate_store.ChunkStore, which imports
# this module (not imported back, even for type checking: the acyclic import contract).
# These functions are the store's internals behind ``store.runs``; they use its
# ``query``, ``data`` and ``sources`` namespaces.

log = logging.getLogger(__name__)

# Ids per vector-presence probe: well under Weaviate's QUERY_MAXIMUM_RESULTS (10,000) and
# under its flatSearchCutoff (40,000), so every probe is an exact flat search.
VERIFY_BATCH = 1000
FULL, INCREMENTAL = "full", "incremental"


class IndexIncomplete(WeaviateUnavailable):
    """A run's objects or vectors are not all in Weaviate after writing (and repairing);
    the run is not committed and the previous version stays the searchable one."""


@dataclass
class IndexRun:
    """One run of one source, between :func:`begin_run` and :func:`commit_run`.

    ``gen``: this run's generation; ``base_gen``/``base_floor``: the committed state it
    started from (0/0 for a new or pre-versioning source); ``ids``: object ids written;
    ``replaced``: paths whose older copies the commit hides (incremental runs)."""

    source: str
    mode: str
    gen: int
    run_id: str
    base_gen: int
    base_floor: int
    ids: set = field(default_factory=set)
    vectorless: set = field(default_factory=set)  # ids written without a vector on purpose
    replaced: set = field(default_factory=set)
    dimensions: int = 0
    base_existed: bool = False  # the source had a record when the run began
    verified: bool = False
    committed: bool = False
    repaired_vectors: int = 0

    def replace_paths(self, paths: Iterable[str]) -> None:
        """Incremental runs: the committed version no longer shows the older copies of
        ``paths`` (changed, renamed-away and deleted files; this run's copies stay)."""
        if self.mode != INCREMENTAL:
            raise ValueError("replace_paths() is for incremental runs (a full run replaces everything)")
        self.replaced.update(paths)

    @property
    def floor(self) -> int:
        return self.gen if self.mode == FULL else self.base_floor


# -- the committed state of a source ------------------------------------------------------

def record_state(record: SourceRecord | None) -> tuple[int, int, list[str]]:
    """``(gen, floor, replaced paths)`` of a source record; ``(0, 0, [])`` for no record
    or a record written before versioning (all its chunks visible)."""
    if record is None:
        return 0, 0, []
    return int(record.run_gen or 0), int(record.run_floor or 0), list(record.replaced or [])


def _gen_range(name: str, gen: int, floor: int):
    repo = Filter.by_property("repo").equal(name)
    if floor >= 1:
        return repo & Filter.by_property("run_gen").greater_or_equal(floor) & \
            Filter.by_property("run_gen").less_or_equal(gen)
    # Not(...) also matches objects without run_gen (written before versioning).
    return repo & Filter.not_(Filter.by_property("run_gen").greater_than(gen))


def source_filter(record: SourceRecord):
    """The Weaviate filter of the chunks a reader may see for one committed source."""
    gen, floor, replaced = record_state(record)
    if "replaced_json" in (record.damaged or "") and gen >= 1:
        # The list of replaced paths is unreadable: show only the newest generation (no
        # stale copy can show; older carried files wait for `doctor --repair`).
        return _gen_range(record.name, gen, gen)
    flt = _gen_range(record.name, gen, floor)
    if replaced:
        flt = flt & Filter.any_of([Filter.by_property("path").contains_none(sorted(replaced)),
                                   Filter.by_property("run_gen").equal(gen)])
    return flt


def ref_filter(record: SourceRecord, base: SourceRecord | None):
    """The filter of what a reader at a ref sees (``record``: a ref source, an overlay of
    ``base``, see :mod:`indexer.sources.refs`): the base's visible chunks of every path
    but the ref's differing ones, plus the ref source's own visible chunks (which are
    exactly those paths at the ref's commit). Without its base record, or when the
    differing paths do not decode, only the ref's own chunks (never base content that
    may differ from the ref)."""
    own = source_filter(record)
    if base is None or "differs_json" in (record.damaged or ""):
        return own
    shared = source_filter(base)
    if record.differs:
        shared = shared & Filter.by_property("path").contains_none(sorted(record.differs))
    return Filter.any_of([shared, own])


# -- the write protocol -----------------------------------------------------------------

def begin_run(store: "ChunkStore", source: str, mode: str) -> IndexRun:
    """Start a run of ``source``: finish the clean-up of its committed state (orphans of
    crashed runs, superseded objects) and allocate the next generation, above every
    ``run_gen`` present for the source so a crashed run's ids are never reused."""
    if mode not in (FULL, INCREMENTAL):
        raise ValueError(f"mode must be {FULL!r} or {INCREMENTAL!r}, got {mode!r}")
    record = store.sources.get(source)
    gen, floor, _ = record_state(record)
    top = store.query.max_run_gen(source)  # before the clean-up: never reuse a generation
    if record is not None:
        cleanup(store, record)
    else:
        _delete(store, Filter.by_property("repo").equal(source))  # leftovers of a run that never committed
    if top > gen:
        # A run crashed. Weaviate killed mid-write can come back with some of that run's
        # objects in the object store but not in the property index, where the filtered
        # deletes above do not see them: sweep them by a scan of the objects themselves.
        _sweep_hidden(store, source, gen, floor)
    run = IndexRun(source=source, mode=mode, gen=max(gen, top) + 1, run_id=_uuid.uuid4().hex,
                   base_gen=gen, base_floor=floor, base_existed=record is not None)
    log.info("%s: %s run %d started (committed: %d)", source, mode, run.gen, gen)
    return run


def verify_run(store: "ChunkStore", run: IndexRun) -> dict:
    """Check that every object ``run`` wrote is in Weaviate and in its vector index; put
    back (delete + insert with the stored vector) the ones that are not in the vector
    index. Returns ``{"objects", "found", "missing_vectors", "repaired_vectors"}``.

    Raises :class:`IndexIncomplete` when objects are missing or a vector cannot be put
    back (the run must then not be committed)."""
    fault_point("before_verify", source=run.source, gen=run.gen)
    check_fence(run.source)
    flt = Filter.by_property("repo").equal(run.source) & Filter.by_property("run_gen").equal(run.gen)
    found = store.query.count_where(flt)
    if found != len(run.ids):
        raise IndexIncomplete(f"{run.source}: run {run.gen} wrote {len(run.ids)} chunks but Weaviate holds "
                              f"{found}; the previous version stays searchable, run the index again")
    missing = missing_vectors(store, run.ids - run.vectorless, run.dimensions)
    repaired = 0
    if missing:
        log.warning("%s: %d chunks of run %d are not in the vector index; re-inserting them",
                    run.source, len(missing), run.gen)
        repaired, unrecoverable = reinsert_with_vectors(store, missing)
        still = missing_vectors(store, missing, run.dimensions)
        if unrecoverable or still:
            raise IndexIncomplete(f"{run.source}: {len(still) or len(unrecoverable)} chunks of run {run.gen} "
                                  f"have no vector in Weaviate; the previous version stays searchable")
    run.verified = True
    run.repaired_vectors = repaired
    return {"objects": len(run.ids), "found": found, "missing_vectors": len(missing), "repaired_vectors": repaired}


def commit_run(store: "ChunkStore", run: IndexRun, record: SourceRecord, *,
               count_files: bool = False) -> SourceRecord:
    """Make ``run`` the searchable version of its source: write the source record
    (``record``: name, kind, commit, model, ...; ``chunks``, ``vectors_pending`` and
    ``keyword_only`` are counted here, and ``files`` when ``count_files``) with the run's
    generation. Verifies first if :func:`verify_run` was not called. Returns the record
    as saved.

    Raises ``ValueError`` for a record of another source, :class:`StaleRun` when another
    run committed the source meanwhile (or this run lost its lock), and
    :class:`IndexIncomplete` from the verification."""
    if record.name != run.source:
        raise ValueError(f"record for {record.name!r} given to a run of {run.source!r}")
    if not run.verified:
        verify_run(store, run)
    fault_point("before_commit", source=run.source, gen=run.gen)
    check_fence(run.source)  # the lock was lost (the heartbeat saw another owner)
    # Fencing: compare-and-swap on the committed generation this run started from. A run
    # that stalled past its lock's TTL while another run indexed and committed the source
    # finds a newer generation here and must not write its older one over it.
    current = store.sources.get(run.source)
    now_gen = record_state(current)[0]
    if now_gen != run.base_gen or (current is not None) != run.base_existed:
        raise StaleRun(f"{run.source}: another index run committed generation {now_gen} (commit "
                       f"{(current.commit if current is not None else '')[:7] or '-'}) while this run was stalled; "
                       "this run's older result was dropped and the newer version stays")
    rec = replace(record, run_gen=run.gen, run_floor=run.floor, run_id=run.run_id,
                  replaced=sorted(run.replaced) if run.mode == INCREMENTAL else [], damaged="")
    flt = source_filter(rec)
    count = store.query.count_where
    # Recorded states, not damage (doctor reads them): chunks waiting for their vector
    # (a first index committed keyword-ready) and keyword-only chunks of the policy.
    rec = replace(rec, chunks=count(flt),
                  vectors_pending=count(flt & Filter.by_property("vector_state").equal("pending")),
                  keyword_only=count(flt & Filter.by_property("vector_state").equal("none")))
    if count_files:
        rec = replace(rec, files=store.query.count_files_where(flt))
    store.sources.save(rec)
    run.committed = True
    fault_point("after_commit", source=run.source, gen=run.gen)
    return rec


def cleanup_run(store: "ChunkStore", run: IndexRun) -> int:
    """After :func:`commit_run`: delete the objects the committed record hides; returns
    how many. Safe to skip (a crash here): the next :func:`begin_run` does it."""
    if not run.committed:
        raise ValueError("cleanup_run() before commit_run()")
    fault_point("before_cleanup", source=run.source, gen=run.gen)
    deleted = cleanup(store, store.sources.get(run.source))
    if run.gen > run.base_gen + 1 and run.mode == FULL:
        # A crashed run came before this one: its late writes (client retries that reached
        # a restarted server) or objects missing from the property index go too.
        deleted += _sweep_hidden(store, run.source, run.gen, run.floor)
    return deleted


def cleanup(store: "ChunkStore", record: SourceRecord) -> int:
    """Delete what the committed ``record`` hides: uncommitted generations, generations
    below the floor (and pre-versioning objects once the floor is set), older copies of
    the replaced paths; then clear ``replaced`` in the record. Returns objects deleted."""
    name = record.name
    gen, floor, replaced = record_state(record)
    repo = Filter.by_property("repo").equal(name)
    deleted = _delete(store, repo & Filter.by_property("run_gen").greater_than(gen))
    if floor >= 1:
        deleted += _delete(store, repo & Filter.not_(Filter.by_property("run_gen").greater_or_equal(floor)))
    if replaced:
        not_current = Filter.not_(Filter.by_property("run_gen").equal(gen))
        for i in range(0, len(replaced), 200):
            deleted += _delete(store, repo & not_current &
                               Filter.by_property("path").contains_any(replaced[i:i + 200]))
        store.sources.save(replace(record, replaced=[]))
    return deleted


# -- checks shared with doctor ------------------------------------------------------------

def missing_vectors(store: "ChunkStore", ids: Iterable[str], dimensions: int = 0) -> list[str]:
    """The ids among ``ids`` whose object is not in the vector index (absent objects
    included). One exact filtered ``near_vector`` per :data:`VERIFY_BATCH` ids."""
    ids = sorted(str(i) for i in ids)
    if not ids:
        return []
    dims = dimensions or store.query.any_vector_dimensions()
    if not dims:
        return ids  # no object in the collection has a vector
    missing: list[str] = []
    for i in range(0, len(ids), VERIFY_BATCH):
        part = ids[i:i + VERIFY_BATCH]
        present = store.query.ids_in_vector_index(part, dims)
        missing.extend(u for u in part if u not in present)
    return missing


def reinsert_with_vectors(store: "ChunkStore", ids: list[str], embedder=None) -> tuple[int, list[str]]:
    """Delete and re-insert the objects ``ids`` with a vector: the one stored with the
    object, else one of another chunk with the same ``content_hash``, else (when an
    ``embedder`` is given) a fresh embedding of the stored text. Returns
    ``(re-inserted, ids that could not be given a vector)``."""
    objs, lost = [], []
    for i in range(0, len(ids), 100):
        part = ids[i:i + 100]
        by_id = {o.uuid: o for o in store.query.by_ids(part, include_vector=True)}
        no_vec = {u: by_id[u] for u in part if u in by_id and not by_id[u].vector}
        cache = store.query.vectors_for_hashes(o.properties.get("content_hash", "") for o in no_vec.values())
        for u in part:
            obj = by_id.get(u)
            if obj is None:
                lost.append(u)
                continue
            vec = obj.vector or cache.get(obj.properties.get("content_hash", ""))
            if vec is None and embedder is not None:
                vec = _embed_stored(embedder, obj.properties)
            if vec is None:
                lost.append(u)
                continue
            props = dict(obj.properties)
            if props.get("vector_state"):
                props["vector_state"] = ""  # it has its vector now
            objs.append((u, props, vec))
    for i in range(0, len(objs), 100):
        part = objs[i:i + 100]
        store.data.delete_ids([u for u, _p, _v in part])
        store.data.insert(part)
    return len(objs), lost


def _embed_stored(embedder, props: dict) -> list[float]:
    """Embed a chunk rebuilt from its stored properties (:func:`chunk_from_properties`).
    Only chunks that should have a vector are repaired, so the default embedding policy
    applies with its ``"none"`` read as ``"full"`` (head plus all sub-windows): e.g. a test
    chunk of an index built before the policy that lost its vector gets one; a docs
    section gets its head input, as indexing gives it."""
    from ..documents import embed_chunks
    from ..embedding_policy import DEFAULT_POLICY

    return embed_chunks(embedder, [chunk_from_properties(props)], DEFAULT_POLICY.with_every_vector())[0]


def chunk_from_properties(props: dict):
    """The :class:`~indexer.chunking.models.Chunk` a stored object was written from, as far
    as embedding needs it (path, symbol, context line, text: same embedder inputs). The
    stored ``content`` is the context line, if any, then the text; a chunk spans
    ``end_line - start_line + 1`` lines."""
    from ..chunking.models import Chunk

    content = props.get("content") or ""
    lines = content.split("\n")
    span = int(props.get("end_line") or 0) - int(props.get("start_line") or 0) + 1
    context, text = (lines[0], "\n".join(lines[1:])) if len(lines) == span + 1 else ("", content)
    chunk = Chunk(path=props.get("path", ""), language=props.get("language", ""), kind=props.get("kind", ""),
                  symbol=props.get("symbol", ""), start_line=int(props.get("start_line") or 0),
                  end_line=int(props.get("end_line") or 0), text=text, context=context)
    if chunk.kind == "api_operation":  # its operationId and summary are embedded too (documents.embedding_texts)
        from ..chunking.openapi import operation_names

        op_id, summary = operation_names(content)
        if op_id:
            chunk.extra["operation_id"], chunk.docstring = op_id, summary
    return chunk


def _sweep_hidden(store: "ChunkStore", source: str, gen: int, floor: int) -> int:
    """Delete, by id, the objects of ``source`` that the committed state ``(gen, floor)``
    hides (uncommitted generations, generations below the floor), found by iterating the
    objects (O(collection size): only after a crash). Returns how many were deleted."""
    hidden = []
    try:
        for obj in store.query.all_objects(["repo", "run_gen"]):
            p = obj.properties
            if p.get("repo") != source:
                continue
            g = p.get("run_gen")
            if (g is None and floor >= 1) or (g is not None and (int(g) > gen or int(g) < floor)):
                hidden.append(obj.uuid)
        for i in range(0, len(hidden), 1000):
            store.data.delete_ids(hidden[i:i + 1000])
        # A filtered delete resolves ids through the inverted index, which such objects may
        # be missing from too: delete the survivors one by one, by key (only after a crash).
        for uid in hidden:
            store.data.delete_by_id_if_exists(uid)
    except WeaviateBaseError as exc:
        raise WeaviateUnavailable(f"Weaviate sweep failed: {str(exc).splitlines()[0][:200]}") from None
    if hidden:
        log.warning("%s: deleted %d objects of crashed runs that filters did not see", source, len(hidden))
    return len(hidden)


def _delete(store: "ChunkStore", flt) -> int:
    try:
        return store.data.delete_where(flt)
    except WeaviateBaseError as exc:
        raise WeaviateUnavailable(f"Weaviate delete failed: {str(exc).splitlines()[0][:200]}") from None
