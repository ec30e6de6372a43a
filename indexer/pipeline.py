"""The one indexing pipeline: documents from any source -> chunks -> vectors -> Weaviate,
call-graph rows in SQL, one :class:`~indexer.models.SourceRecord`, the sync state.

Sources (``indexer.sources.git``: a commit or a diff; ``indexer.confluence``: a space)
only yield :class:`~indexer.models.Document` objects inside a
:class:`~indexer.models.SourceBatch`; :meth:`IndexingPipeline.run` never knows where
they came from. The order of work, for every source:

1. begin a run (:mod:`indexer.store.versions`: a new generation, invisible to readers);
2. stream: a parse thread reads and chunks the documents (tree-sitter symbols, doc
   sections, windows) and extracts their call-graph facts; the calling thread reuses the
   vector of every chunk whose content hash is already indexed and embeds the rest under
   the :mod:`embedding policy <indexer.embedding_policy>`; a write thread writes the
   embedded batches into the run. The three stages overlap through bounded queues
   (:func:`run_stages`), so a repository is never held whole;
3. incremental runs (``REPLACE_PATHS``: a push, a Confluence sync): hide the older chunks
   of the batch's paths and of ``replaced_paths`` (a full run, ``REPLACE_ALL``, hides all
   older chunks);
4. verify the run (counts, vectors), swap the call-graph rows (whole repo, or the touched
   files) in one SQL transaction, commit the source record (the switch readers follow);
5. first index only (no committed record yet, or one whose vectors never finished):
   step 2 wrote the chunks *without* embedding them (``vector_state="pending"``) and step
   4 committed them **keyword-ready** (the call graph is saved right after that commit,
   not before it, so keyword search does not wait for graph resolution): they are
   searchable by BM25 and name as soon as the record is saved. Phase 2 (:meth:`IndexingPipeline._fill_vectors`) then reads them
   back by id in batches, embeds them and rewrites them with their vector (the same
   overlapping stages), lowering the record's ``vectors_pending`` as it goes
   (``coderag status``: "vectors 40% done"), checks every vector is in the vector index,
   and saves the record complete;
6. the sync state (last indexed commit / cursor), then the clean-up of superseded chunks.

A crash at any point leaves the previous committed version searchable (old chunks are
hidden only by a commit and deleted after it) and the sync state unchanged, so the next
run redoes the same work; a crash in phase 2 leaves the keyword-ready generation
searchable, its record saying how many vectors are missing, and the next full run (or
sync) starts a first index again.

Memory bound (peak RSS does not grow with the repository): the stages hold at most
``(2 * STREAM_DEPTH + 3) * STREAM_BATCH`` chunks at once (one batch in each of the three
stages, ``STREAM_DEPTH`` waiting in each of the two queues: 7 x 256 = 1,792 chunks with
the defaults), plus the chunks of the one file being split into batches. A chunk is at
most 150 lines (``indexer.chunking.chunk_file``'s ``max_chunk_lines``) and a file at
most ``CODERAG_MAX_FILE_BYTES`` (1 MiB); as Weaviate properties (content, identifiers,
path and symbol words: about 3x the text) plus a 384-float vector (about 12 KiB as a
Python list) a typical 2 KiB chunk costs ~20 KiB, so ~36 MiB for the stages. What does
grow with the repository, and its size: the ids of the run (``IndexRun.ids``: one
36-character string per chunk, ~100 bytes, 3 MiB for sqlalchemy's 30,708 chunks; phase 2
holds the pending ids again), the set of paths, and the call-graph facts
(:class:`~indexer.graph.FileFacts`: definitions, calls and imports of every file, needed
at the end to resolve the repo-wide graph; sqlalchemy: 40,128 definitions, 205,760
edges, tens of MiB; they are dropped before phase 2). Measured peak RSS:
docs/benchmarks.md.

``coderag index`` and ``coderag sync repo --full`` both call :func:`index_commit`.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from contextlib import nullcontext
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Iterator, Sequence

from common.settings import Settings

from .chunking import chunk_file
from .chunking.models import Chunk
from .documents import chunk_properties, embed_chunks, embedding_texts, file_role  # noqa: F401  (re-exported)
from . import embedding_policy
from .embedding_policy import EmbeddingPolicy
from .embeddings import Embedder, make_embedder
from .graph import FileFacts, extract_file
from .graph.sql_store import replace_files, save_repo_graph
from .knowledge import on_repo_indexed
from .models import (GRAPH_FILES, GRAPH_NONE, GRAPH_REPO, KIND_GIT, REPLACE_ALL, REPLACE_PATHS, VECTOR_NONE,
                     VECTOR_OK, VECTOR_PENDING, Document, Skips, SourceBatch, SourceRecord)
from .sources import filters, git
from .store import versions
from .store.faults import fault_point
from .store.repo_lock import repo_index_lock
from .store.sync_state import record_success
from .store.versions import IndexIncomplete
from .store.weaviate_store import ChunkStore, chunk_uuid, new_run_id, utcnow  # noqa: F401

log = logging.getLogger(__name__)

#: Chunks per embedding request batch of :meth:`IndexingPipeline.vectors` (Voyage accepts
#: up to 1,000 texts per call; 256 keeps one request well under its 120k-token limit).
EMBED_BATCH = 256
#: Chunks per batch handed between the streaming stages (also one embedder call): the
#: same 256 as :data:`EMBED_BATCH`, for the same reason.
STREAM_BATCH = EMBED_BATCH
#: Batches waiting in each of the two queues between the stages: 2 keeps the embedder
#: fed while the parser or the writer is briefly slower, without piling up memory.
STREAM_DEPTH = 2

Progress = Callable[[str, int | None], Callable[[int], None]]


def _no_progress(n: int = 1) -> None:
    return None


@dataclass
class _ParseState:
    """What the parse stage learns besides the chunks: the call-graph facts per path
    (``None``: no call graph for that document), every document's path, counters and
    timings (final once the documents are exhausted)."""

    facts: dict[str, FileFacts | None] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    files_indexed: int = 0
    chunk_count: int = 0
    parse_warnings: int = 0
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0


def iter_documents(documents: Iterable[Document], skips: Skips, state: _ParseState, *, graph: bool = True,
                   advance: Callable[[int], None] = _no_progress) -> Iterator[tuple[list[Chunk], str]]:
    """Chunk each document (:func:`indexer.chunking.chunk_file`, by path extension) and,
    with ``graph``, extract its call-graph facts into ``state.facts``; yields ``(chunks,
    document version)`` per document with chunks, one document at a time. Never stops
    for one bad document: a chunker failure is counted in ``skips`` as ``unreadable``.
    ``advance(n)`` is called once per document and per file the source skipped while
    reading (decode failures)."""
    t0 = time.perf_counter()
    graph_s = 0.0
    seen_skips = sum(skips.counts.values())
    try:
        for doc in documents:
            state.paths.add(doc.path)
            state.facts[doc.path] = None
            try:
                chunks = chunk_file(doc.path, doc.text)
            except Exception as exc:  # noqa: BLE001 - a chunker bug must not stop the run
                log.warning("could not chunk %s: %s", doc.path, exc)
                skips.add(filters.SKIP_UNREADABLE, doc.path)
                chunks = []
            if chunks:
                state.files_indexed += 1
                state.chunk_count += len(chunks)
                if any(c.extra.get("syntax_errors") for c in chunks):
                    state.parse_warnings += 1
            if graph:
                tg = time.perf_counter()
                try:
                    state.facts[doc.path] = extract_file(doc.path, doc.text)
                except Exception as exc:  # noqa: BLE001 - graph extraction must not stop the run either
                    log.warning("could not extract the call graph of %s: %s", doc.path, exc)
                graph_s += time.perf_counter() - tg
            now_skips = sum(skips.counts.values())
            advance(1 + now_skips - seen_skips)
            seen_skips = now_skips
            if chunks:
                tp = time.perf_counter()
                yield chunks, doc.version
                t0 += time.perf_counter() - tp  # time spent downstream is not parsing
        now_skips = sum(skips.counts.values())
        if now_skips > seen_skips:
            advance(now_skips - seen_skips)
    finally:
        state.seconds_graph += graph_s
        state.seconds_parse += time.perf_counter() - t0 - graph_s


@dataclass
class ParsedDocuments(_ParseState):
    """The parse stage's state plus the chunks themselves, in lists: ``versions[i]`` is the
    document version of ``chunks[i]``."""

    chunks: list[Chunk] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)


def parse_documents(documents: Iterable[Document], skips: Skips, *, graph: bool = True,
                    advance: Callable[[int], None] = _no_progress) -> ParsedDocuments:
    """All of :func:`iter_documents` in lists (holds every chunk: for tools and benches
    such as ``parse_repository``, never for the indexing run itself)."""
    out = ParsedDocuments()
    for chunks, version in iter_documents(documents, skips, out, graph=graph, advance=advance):
        out.chunks.extend(chunks)
        out.versions.extend([version] * len(chunks))
    return out


@dataclass
class PipelineResult:
    """What one :meth:`IndexingPipeline.run` did. Times are wall-clock seconds; the stage
    seconds (parse, embed, write) overlap, so they add up to more than ``seconds_total``.
    The results of the use cases (:class:`IndexSummary`, ``SyncResult``,
    ``SpaceSyncResult``) embed it as ``run`` (see :class:`RunCounters`) instead of copying
    its counters.

    ``vectors_pending``: chunks committed keyword-ready whose vector the second phase
    filled in (first index only, see :meth:`IndexingPipeline.run`); ``keyword_only``:
    chunks the embedding policy leaves without a vector; ``seconds_keyword_ready``: from
    the start of the run until the keyword-ready commit (``None``: single-phase run);
    ``max_chunks_in_flight``: most chunks held by the stages at once (the memory bound)."""

    record: SourceRecord
    files_indexed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    keyword_only: int = 0
    vectors_pending: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    graph_definitions: int = 0
    graph_edges: int = 0
    parse_warnings: int = 0
    skips: Skips = field(default_factory=Skips)
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0
    seconds_embed: float = 0.0
    seconds_write: float = 0.0
    seconds_keyword_ready: float | None = None
    seconds_total: float = 0.0
    max_chunks_in_flight: int = 0

    @classmethod
    def parsed(cls, name: str, parsed: ParsedDocuments, skips: Skips) -> "PipelineResult":
        """The result so far of a run of source ``name`` that has chunked its documents
        (``parsed``, :func:`parse_documents`) and nothing more: files, chunks, definitions,
        parse warnings, ``skips`` and the parse and graph times."""
        return cls(record=SourceRecord(name=name), files_indexed=parsed.files_indexed, chunks=len(parsed.chunks),
                   parse_warnings=parsed.parse_warnings, skips=skips, seconds_parse=parsed.seconds_parse,
                   seconds_graph=parsed.seconds_graph,
                   graph_definitions=sum(len(f.definitions) for f in parsed.facts.values() if f))


# -- bounded stages -----------------------------------------------------------------------

_DONE = object()


class _InFlight:
    """Counts the chunks the stages hold (added when a batch is made, removed once it is
    written); ``peak`` is checked by the tests against the documented bound."""

    def __init__(self) -> None:
        self.now = 0
        self.peak = 0
        self._lock = threading.Lock()

    def add(self, n: int) -> None:
        with self._lock:
            self.now += n
            self.peak = max(self.peak, self.now)


def run_stages(produce: Callable[[], Iterator], transform: Callable, consume: Callable, *,
               depth: int = STREAM_DEPTH) -> None:
    """Three overlapping stages joined by two ``queue.Queue(maxsize=depth)``: a producer
    thread iterates ``produce()``, the calling thread applies ``transform(item)`` (the
    embedder: ONNX Runtime, torch and the Voyage client release the GIL), a writer thread
    calls ``consume(transformed)``. At most ``2 * depth + 3`` items are alive at once (one
    in each stage, ``depth`` waiting in each queue).

    The first exception of any stage stops the other two and is re-raised here once both
    threads have ended (nothing is left running, nothing more is written)."""
    parsed: queue.Queue = queue.Queue(maxsize=depth)
    done: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()
    errors: list[BaseException] = []

    def put(q: queue.Queue, item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def get(q: queue.Queue):
        while True:
            try:
                return q.get(timeout=0.2)
            except queue.Empty:
                if stop.is_set():
                    return _DONE

    def producer() -> None:
        try:
            for item in produce():
                if not put(parsed, item):
                    return
        except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
            errors.append(exc)
            stop.set()
        finally:
            put(parsed, _DONE)

    def writer() -> None:
        try:
            while True:
                item = get(done)
                if item is _DONE or stop.is_set():
                    return
                consume(item)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=producer, name="coderag-parse", daemon=True),
               threading.Thread(target=writer, name="coderag-write", daemon=True)]
    for th in threads:
        th.start()
    try:
        while True:
            item = get(parsed)
            if item is _DONE:
                break
            if not put(done, transform(item)):
                break
    except BaseException as exc:  # noqa: BLE001
        errors.append(exc)
        stop.set()
    finally:
        if not stop.is_set():
            put(done, _DONE)
        for th in threads:
            th.join()
    if errors:
        raise errors[0]


def _vector_state(chunk: Chunk, vector, policy: EmbeddingPolicy) -> str:
    """``vector_state`` of a written chunk: ``""`` (has its vector), ``"none"`` (keyword-only
    by the embedding policy) or ``"pending"`` (the second phase of a first index fills it)."""
    if vector:
        return VECTOR_OK
    return VECTOR_NONE if policy.mode(file_role(chunk.path)) == "none" else VECTOR_PENDING

#: The counters a :class:`RunCounters` result reads from its run, each with the value it
#: has when nothing ran (``run`` is ``None``).
_RUN_DEFAULTS: dict[str, Callable[[], object]] = {
    f.name: (f.default_factory if f.default_factory is not MISSING else (lambda value=f.default: value))
    for f in fields(PipelineResult) if f.name != "record"}


class RunCounters:
    """Base of the results that embed the :class:`PipelineResult` of their run as ``run``
    (``None``: nothing ran, e.g. a sync whose head was already indexed).

    A counter of the run that the result does not declare itself (``embedded``,
    ``chunks_written``, ``skips``, ``seconds_total``...) reads the run's (its zero value
    without a run); :meth:`to_dict` is the result's JSON output, the attributes named in
    ``KEYS``, in that order."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    def __getattr__(self, name: str):
        # only called for attributes the instance and its class do not have
        if name in _RUN_DEFAULTS:
            run = self.__dict__.get("run")
            return _RUN_DEFAULTS[name]() if run is None else getattr(run, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def to_dict(self) -> dict:
        """The result as the ``--json`` output prints it: ``KEYS`` -> values (a ``Counter``
        or dict value as a plain dict copy)."""
        out = {}
        for key in self.KEYS:
            value = getattr(self, key)
            out[key] = dict(value) if isinstance(value, dict) else value
        return out


@dataclass
class IndexingPipeline:
    """The write side's one road, shared by every run of a process: the stores, the
    embedder, ``embed_lock`` (embedder calls are serialised: local models are not
    thread-safe) and ``write_lock`` (Weaviate batch writes of concurrent repo workers are
    serialised). ``sessions``: the SQL session factory (``None``: no call graph and no
    sync state, e.g. a bare ``index_repository`` call in a test).

    ``stream_batch`` / ``stream_depth``: chunks per batch handed between the stages and
    batches waiting between two stages (:data:`STREAM_BATCH`, :data:`STREAM_DEPTH`; the
    memory bound of the module docstring). ``early_search``: a first index commits a
    keyword-ready generation before embedding (searchable early); ``False`` embeds
    before the one commit, as every later run does. ``policy``: the embedding policy
    (``None``: :data:`indexer.embedding_policy.DEFAULT_POLICY`, looked up at each run)."""

    settings: Settings
    store: ChunkStore
    sessions: object | None
    embedder: Embedder
    embed_lock: threading.Lock = field(default_factory=threading.Lock)
    write_lock: threading.Lock = field(default_factory=threading.Lock)
    policy: EmbeddingPolicy | None = None
    stream_batch: int = STREAM_BATCH
    stream_depth: int = STREAM_DEPTH
    early_search: bool = True

    @property
    def embedding_policy(self) -> EmbeddingPolicy:
        """The policy this pipeline embeds with: ``policy``, else the one
        ``settings.embedding_policy`` names (``default``: the current default)."""
        return self.policy or embedding_policy.named(self.settings.embedding_policy)

    def vectors(self, chunks: Sequence[Chunk]) -> tuple[list[list[float] | None], int]:
        """One vector per chunk (``None``: keyword-only by the policy): cached ones by
        content hash, the rest embedded in batches of :data:`EMBED_BATCH`. Returns
        ``(vectors, number embedded)``."""
        vectors: list[list[float] | None] = []
        embedded = 0
        for start in range(0, len(chunks), EMBED_BATCH):
            part, n = self._embed_batch(list(chunks[start:start + EMBED_BATCH]))
            vectors.extend(part)
            embedded += n
        return vectors, embedded

    def _cached_vectors(self, chunks: Sequence[Chunk], *, reuse: bool = True
                        ) -> tuple[list[list[float] | None], list[bool]]:
        """``(vectors, wanted)`` for a batch: ``wanted[i]`` says whether the policy gives
        chunk ``i`` a vector; ``vectors[i]`` is the stored vector of its content hash (any
        repo; ``reuse=False``: none) for a wanted chunk, else ``None``. A chunk the policy
        leaves keyword-only gets no vector even when an older index (another policy) has
        one for its content, so the index matches its record; its hash is not looked up."""
        wanted = [self.embedding_policy.mode(file_role(c.path)) != "none" for c in chunks]
        cache = (self.store.vectors_for_hashes(c.content_hash for c, w in zip(chunks, wanted) if w)
                 if reuse and any(wanted) else {})
        return [cache.get(c.content_hash) if w else None for c, w in zip(chunks, wanted)], wanted

    def _embed_batch(self, chunks: list[Chunk], *, reuse: bool = True) -> tuple[list[list[float] | None], int]:
        """Vectors for one batch: reused by content hash (``reuse``), else embedded under
        ``embed_lock``. Returns ``(vectors, number embedded)``."""
        vectors, wanted = self._cached_vectors(chunks, reuse=reuse)
        todo = [i for i, v in enumerate(vectors) if v is None and wanted[i]]
        if todo:
            with self.embed_lock:
                fresh = embed_chunks(self.embedder, [chunks[i] for i in todo], self.embedding_policy)
            for i, vec in zip(todo, fresh):
                vectors[i] = vec
        return vectors, len(todo)

    def run(self, batch: SourceBatch, progress: Progress | None = None) -> PipelineResult:
        """Index ``batch`` (see the module docstring for the order of work and the memory
        bound); returns the :class:`PipelineResult` whose ``record`` is the saved source
        record.

        ``progress(description, total)`` returns an ``advance(n)`` callable (the CLI
        passes rich progress bars; ``None`` for silence). Raises ``ModelMismatch`` (index
        built with another model), ``WeaviateUnavailable`` (``IndexIncomplete`` when the
        written run does not verify); SQL errors propagate.
        """
        bar = progress or (lambda description, total: _no_progress)
        t0 = time.perf_counter()
        self.store.check_model(self.embedder.model_name)
        if batch.replace not in (REPLACE_ALL, REPLACE_PATHS):
            raise ValueError(f"unknown replace policy {batch.replace!r}")
        graph = batch.graph != GRAPH_NONE
        full = batch.replace == REPLACE_ALL
        prev = self.store.source_record(batch.name)
        # Searchable early: a first index (or a rerun of one whose vectors never finished)
        # commits its chunks keyword-ready, then fills in the vectors (phase 2).
        early = self.early_search and full and (prev is None or int(prev.get("vectors_pending") or 0) > 0)
        res = PipelineResult(record=SourceRecord(name=batch.name), skips=batch.skips)
        state = _ParseState()
        inflight = _InFlight()
        # Crash safety (indexer.store.versions): begin a run (finishes a crashed run's
        # clean-up, allocates a new generation), write into it, verify counts and vectors,
        # save the call graph, commit (the source record: the switch readers follow), clean
        # up. A first index commits keyword-ready first and saves the graph right after.
        run = self.store.begin_run(batch.name, "full" if full else "incremental")
        indexed_at = utcnow()
        pending: list[str] = []  # ids of the chunks phase 2 gives a vector (early only)
        parse_bar = bar("Chunking files", batch.document_count or 0)
        write_bar = bar("Writing to Weaviate" if early else "Embedding and writing", None)

        def produce() -> Iterator[list[tuple[Chunk, str]]]:
            out: list[tuple[Chunk, str]] = []
            for chunks, version in iter_documents(batch.documents, batch.skips, state, graph=graph,
                                                  advance=parse_bar):
                inflight.add(len(chunks))
                out.extend((c, version) for c in chunks)
                while len(out) >= self.stream_batch:
                    yield out[:self.stream_batch]
                    out = out[self.stream_batch:]
            if out:
                yield out

        def transform(items: list[tuple[Chunk, str]]):
            t = time.perf_counter()
            chunks = [c for c, _v in items]
            if early:  # only what is cached by content hash now; the rest waits for phase 2
                vectors, _wanted = self._cached_vectors(chunks)
                embedded = 0
            else:
                vectors, embedded = self._embed_batch(chunks)
            res.embedded += embedded
            res.seconds_embed += time.perf_counter() - t
            return items, vectors

        def consume(done) -> None:
            items, vectors = done
            t = time.perf_counter()
            rows = []
            for (chunk, version), vec in zip(items, vectors):
                vstate = _vector_state(chunk, vec, self.embedding_policy)
                if vstate == VECTOR_PENDING:
                    pending.append(chunk_uuid(batch.name, chunk.path, chunk.start_line, chunk.content_hash, run.gen))
                elif vstate == VECTOR_NONE:
                    res.keyword_only += 1
                props = chunk_properties(chunk, repo=batch.name, commit=version, indexed_at=indexed_at,
                                         run_id=run.run_id)
                props["vector_state"] = vstate
                rows.append((props, vec))
            with self.write_lock:
                res.chunks_written += self.store.write_chunks(rows, run=run)
            res.seconds_write += time.perf_counter() - t
            inflight.add(-len(items))
            write_bar(len(items))

        run_stages(produce, transform, consume, depth=self.stream_depth)
        res.files_indexed, res.chunks = state.files_indexed, state.chunk_count
        res.parse_warnings, res.seconds_parse, res.seconds_graph = (state.parse_warnings, state.seconds_parse,
                                                                    state.seconds_graph)
        res.graph_definitions = sum(len(f.definitions) for f in state.facts.values() if f)
        res.reused_vectors = res.chunks - res.embedded - res.keyword_only - len(pending)
        if not full:
            run.replace_paths(state.paths | set(batch.replaced_paths))
        self.store.verify_run(run)

        def save_graph() -> None:
            if self.sessions is not None and graph:
                tg = time.perf_counter()
                if batch.graph == GRAPH_REPO:
                    res.graph_edges = save_repo_graph(self.sessions, batch.name, batch.commit,
                                                      [f for f in state.facts.values() if f is not None])
                elif batch.graph == GRAPH_FILES:
                    changes: dict[str, FileFacts | None] = {p: None for p in set(batch.replaced_paths)}
                    changes.update(state.facts)
                    res.graph_edges = replace_files(self.sessions, batch.name, batch.commit, changes)
                res.seconds_graph += time.perf_counter() - tg
            state.facts.clear()  # the call graph is saved: the facts go before phase 2

        if not early:
            save_graph()
        record = self._save_record(batch, run)
        if early:
            # A first index is keyword-searchable before its call graph is resolved and
            # saved (sqlalchemy: ~30 s of resolution). A crash from here on leaves the sync
            # state unsaved, so the next run is a first index again and saves the graph.
            res.seconds_keyword_ready = time.perf_counter() - t0
            res.vectors_pending = len(pending)
            fault_point("keyword_ready", source=batch.name, gen=run.gen, pending=len(pending))
            save_graph()
            if pending:
                res.embedded += self._fill_vectors(run, pending, record, inflight, bar, res)
            record = SourceRecord.from_properties(self.store.source_record(batch.name) or record.to_dict())
        res.record = record
        res.max_chunks_in_flight = inflight.peak
        if batch.after_commit is not None:
            batch.after_commit()
        if self.sessions is not None:
            # The "last indexed commit" a push diffs from (and the Confluence cursor):
            # after `coderag index`, a push re-indexes only what changed since this commit.
            # Saved only once the vectors are complete: a crash in phase 2 makes the next
            # sync a full run again (which, the record being "vectors pending", is early too).
            record_success(self.sessions, batch.name, batch.kind, commit=batch.commit, mode=batch.state_mode,
                           indexed_at=res.record.indexed_at, cursor=batch.state_cursor,
                           reconciled=batch.state_reconciled)
        # Superseded chunks go (a crash here: the next run's begin_run does it).
        res.chunks_deleted = self.store.cleanup_run(run)
        stored = self.store.source_record(batch.name)  # the clean-up cleared ``replaced``
        if stored is not None:
            res.record = SourceRecord.from_properties(stored)
        res.seconds_total = time.perf_counter() - t0
        return res

    def _fill_vectors(self, run, pending: list[str], record: SourceRecord, inflight: _InFlight,
                      bar: Callable, res: PipelineResult) -> int:
        """Phase 2 of a first index: give the committed, keyword-ready chunks ``pending``
        (object ids of ``run``) their vectors, in the same three overlapping stages (read
        back :data:`STREAM_BATCH` objects by id, embed, rewrite them with their vector and
        ``vector_state=""``), lowering the record's ``vectors_pending`` after every batch
        (what ``coderag status`` shows as "vectors N% done"). Then checks every filled
        object is in the vector index (repairing as :func:`versions.verify_run` does) and
        saves the record with ``vectors_pending=0``. Returns chunks embedded.

        Raises :class:`IndexIncomplete` when vectors cannot be put in; the keyword-ready
        generation stays committed (searchable by keyword) and the record says how much
        is missing, so the next full run does it again."""
        from weaviate.classes.data import DataObject
        from weaviate.classes.query import Filter

        rec = dict(self.store.source_record(run.source) or record.to_dict())
        left = len(pending)
        advance = bar("Embedding chunks", len(pending))
        batches = 0

        def produce():
            for i in range(0, len(pending), self.stream_batch):
                part = pending[i:i + self.stream_batch]
                got = self.store.chunks.query.fetch_objects(filters=Filter.by_id().contains_any(part),
                                                            limit=len(part))
                inflight.add(len(got.objects))
                yield [(str(o.uuid), dict(o.properties)) for o in got.objects]

        def transform(objs):
            t = time.perf_counter()
            chunks = [versions.chunk_from_properties(p) for _u, p in objs]
            with self.embed_lock:
                vecs = embed_chunks(self.embedder, chunks, self.embedding_policy)
            res.seconds_embed += time.perf_counter() - t
            return objs, vecs

        def consume(done) -> None:
            nonlocal left, batches
            objs, vecs = done
            t = time.perf_counter()
            data = [DataObject(uuid=u, properties=dict(p, vector_state=VECTOR_OK), vector=v)
                    for (u, p), v in zip(objs, vecs) if v]
            with self.write_lock:
                if data:
                    self.store._insert(data)
            run.dimensions = run.dimensions or next((len(v) for v in vecs if v), 0)
            left -= len(objs)
            batches += 1
            rec["vectors_pending"] = left
            self.store.save_source(rec)
            res.seconds_write += time.perf_counter() - t
            inflight.add(-len(objs))
            advance(len(objs))
            fault_point("vector_batch", source=run.source, gen=run.gen, batch=batches, pending=left)

        run_stages(produce, transform, consume, depth=self.stream_depth)
        missing = versions.missing_vectors(self.store, pending, run.dimensions)
        if missing:
            log.warning("%s: %d filled chunks are not in the vector index; re-inserting them", run.source,
                        len(missing))
            versions.reinsert_with_vectors(self.store, missing)
            still = versions.missing_vectors(self.store, missing, run.dimensions)
            if still:
                rec["vectors_pending"] = len(still)
                self.store.save_source(rec)
                raise IndexIncomplete(f"{run.source}: {len(still)} chunks of run {run.gen} have no vector; "
                                      "keyword search works, run the index again for the vectors")
        rec["vectors_pending"] = 0
        rec["dimensions"] = rec.get("dimensions") or run.dimensions
        self.store.save_source(rec)
        return len(pending)

    def _save_record(self, batch: SourceBatch, run) -> SourceRecord:
        """Commit ``run`` with the source record of ``batch``. ``files`` and ``chunks`` are
        counted in the index as the committed run shows it (they include files an
        incremental run did not touch), as are ``vectors_pending`` and ``keyword_only``
        (:func:`versions.commit_run`); ``skipped`` is this run's for a full run, the
        previous record's otherwise."""
        prev = self.store.source_record(batch.name)
        skipped = (dict(batch.skips.counts) if batch.replace == REPLACE_ALL
                   else dict(prev.get("skipped") or {}) if prev is not None else {})
        record = SourceRecord(
            name=batch.name, kind=batch.kind, root=batch.root, commit=batch.commit, indexed_at=utcnow(),
            model=self.embedder.model_name,
            dimensions=run.dimensions or int(getattr(self.embedder, "dimensions", 0) or 0),
            url_template=batch.url_template, skipped=skipped, embedding_policy=self.embedding_policy.name)
        rec = dict(record.to_dict(), files=None)  # None: counted at commit
        return SourceRecord.from_properties(self.store.commit_run(run, rec))


def commit_batch(root: Path, commit: str, name: str, settings: Settings, *, url_template: str = "",
                 files: list[git.RepoFile] | None = None, symlinks: list[str] | None = None) -> SourceBatch:
    """A full-index batch of every file of ``commit`` in the repository at ``root``
    (``files``/``symlinks``: the commit's listing, when the caller already has it).
    Symlinks are never followed; they are counted as skipped (``symlink``)."""
    skips = Skips()
    if files is None:
        symlinks = []
        files = git.list_files(root, commit, symlinks=symlinks)
    for link in symlinks or ():
        skips.add(filters.SKIP_SYMLINK, link)
    documents, count = git.commit_documents(root, commit, files, settings.max_file_bytes, skips)
    return SourceBatch(name=name, kind=KIND_GIT, root=str(root), commit=commit, documents=documents,
                       replace=REPLACE_ALL, graph=GRAPH_REPO, url_template=url_template, skips=skips,
                       document_count=count, state_mode="full")


def index_commit(pipeline: IndexingPipeline, root: Path, commit: str, name: str, *, url_template: str = "",
                 progress: Progress | None = None, files: list[git.RepoFile] | None = None,
                 symlinks: list[str] | None = None) -> PipelineResult:
    """Full index of ``commit`` as source ``name``: ``coderag index`` and
    ``coderag sync repo --full`` (and a push whose base is unknown) all come here."""
    batch = commit_batch(root, commit, name, pipeline.settings, url_template=url_template, files=files,
                         symlinks=symlinks)
    res = pipeline.run(batch, progress)
    if pipeline.sessions is not None:
        # Knowledge hook: runbook drift and "who" for the whole commit (never raises).
        on_repo_indexed(pipeline.sessions, pipeline.settings, name, root, commit)
    return res


# ----------------------------------------------------------------------- coderag index

@dataclass
class IndexSummary(RunCounters):
    """What one ``coderag index`` run did (``coderag index --json``, keys :attr:`KEYS`): the
    repo, its commit, the files listed (``files_seen``, symlinks included), the paths with
    uncommitted changes, the embedding model, and the counters and wall-clock times of
    ``run``, the :class:`PipelineResult` (chunked only, for :func:`parse_repository`)."""

    repo: str
    root: str
    commit: str
    files_seen: int = 0
    dirty_paths: list = field(default_factory=list)
    model: str = ""
    run: PipelineResult | None = None

    KEYS = ("repo", "root", "commit", "files_seen", "files_indexed", "chunks", "embedded", "reused_vectors",
            "deleted_stale", "skipped", "skipped_examples", "parse_warnings", "dirty_paths", "seconds_parse",
            "seconds_graph", "graph_definitions", "graph_edges", "seconds_embed", "seconds_write",
            "seconds_total", "model", "keyword_only", "vectors_pending", "seconds_keyword_ready",
            "max_chunks_in_flight")

    @property
    def deleted_stale(self) -> int:
        """Chunks of the previous version the run deleted (the run's ``chunks_deleted``)."""
        return self.chunks_deleted

    @property
    def skipped(self) -> dict:
        """Files not indexed, by reason (``too_large``: 3, ...)."""
        return dict(self.skips.counts)

    @property
    def skipped_examples(self) -> dict:
        """One skipped path per reason."""
        return dict(self.skips.examples)


@dataclass
class ParsedRepo:
    """Chunks of one commit and the bookkeeping of how they were obtained (no writes)."""

    root: Path
    commit: str
    chunks: list[Chunk]
    summary: IndexSummary
    facts: list[FileFacts] = field(default_factory=list)


def parse_repository(path: str | Path, name: str | None, settings: Settings,
                     progress: Progress | None = None) -> ParsedRepo:
    """List, filter, read and chunk every file of the repository's HEAD commit, without
    embedding or writing (the first stage of :func:`index_repository`).

    Never stops for one bad file: binary, vendored, generated, too large and
    unreadable files, and symlinks (never followed), are counted in ``summary.skipped`` by reason.
    Raises :class:`~common.errors.NotAGitRepository`.
    """
    root = git.repo_root(path)
    commit = git.head_commit(root)
    links: list[str] = []
    files = git.list_files(root, commit, symlinks=links)
    batch = commit_batch(root, commit, name or root.name, settings, files=files, symlinks=links)
    bar = progress or (lambda description, total: _no_progress)
    parsed = parse_documents(batch.documents, batch.skips, advance=bar("Chunking files", batch.document_count or 0))
    summary = IndexSummary(repo=batch.name, root=str(root), commit=commit, files_seen=len(files) + len(links),
                           dirty_paths=git.dirty_paths(root), run=PipelineResult.parsed(batch.name, parsed, batch.skips))
    return ParsedRepo(root=root, commit=commit, chunks=parsed.chunks, summary=summary,
                      facts=[f for f in parsed.facts.values() if f is not None])


def index_repository(path: str | Path, *, name: str | None = None, settings: Settings,
                     store: ChunkStore, embedder: Embedder | None = None,
                     progress: Progress | None = None, sessions=None,
                     pipeline: IndexingPipeline | None = None) -> IndexSummary:
    """Index one local repository at its HEAD commit (``coderag index``) through
    :func:`index_commit`; returns the :class:`IndexSummary`.

    ``sessions``: the SQL session factory for the call graph and the sync state (skipped
    when ``None``). ``pipeline``: an existing pipeline to run through (else one is built
    from the other arguments). Raises ``NotAGitRepository``, ``ModelMismatch`` and
    ``WeaviateUnavailable``.
    """
    root = git.repo_root(path)  # fail fast on a bad path, before loading the embedding model
    commit = git.head_commit(root)
    pipeline = pipeline or IndexingPipeline(settings=settings, store=store, sessions=sessions,
                                            embedder=embedder or make_embedder(settings))
    repo = name or root.name
    # One run per repo at a time (see indexer.store.repo_lock): an overlapping run
    # would delete this run's chunks as "stale".
    guard = repo_index_lock(pipeline.sessions, repo) if pipeline.sessions is not None else nullcontext()
    with guard:
        links: list[str] = []
        files = git.list_files(root, commit, symlinks=links)
        res = index_commit(pipeline, root, commit, repo, progress=progress, files=files, symlinks=links)
    return IndexSummary(repo=repo, root=str(root), commit=commit, files_seen=len(files) + len(links),
                        dirty_paths=git.dirty_paths(root), model=pipeline.embedder.model_name, run=res)
