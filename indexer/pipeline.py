"""The one indexing pipeline: documents from any source -> chunks -> vectors -> Weaviate,
call-graph rows in SQL, one :class:`~indexer.models.SourceRecord`, the sync state.

Sources (:mod:`indexer.sources.repository`: a commit or a diff; :mod:`indexer.confluence`:
a space) only yield :class:`~indexer.models.Document` objects inside a
:class:`~indexer.models.SourceBatch`; :meth:`IndexingPipeline.run` never knows where
they came from. The stages are in :mod:`indexer.stages`, the result types in
:mod:`indexer.results`. The order of work, for every source:

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
6. the sync state (last indexed commit / cursor), then the clean-up of superseded chunks;
7. the subscribers (:class:`Subscriber`: runbook drift and "who knows this", registered by
   whoever builds the pipeline) get a :class:`RunEvent` with the paths the run changed and
   the decoded documents they asked for, so none of them reads the commit again. A
   subscriber that fails is logged and the run still succeeds.

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

``coderag index`` and ``coderag sync repo --full`` both run
:func:`indexer.sources.repository.index_commit`.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from dataclasses import replace as with_fields
from typing import Callable, Iterator, Sequence

from common.settings import Settings

from .chunking.models import Chunk
from .documents import chunk_properties, embed_chunks, file_role
from . import embedding_policy
from .embedding_policy import EmbeddingPolicy
from .embeddings import Embedder
from .graph import FileFacts
from .graph.sql_store import replace_files, save_repo_graph
from .models import (GRAPH_FILES, GRAPH_NONE, GRAPH_REPO, REPLACE_ALL, REPLACE_PATHS, VECTOR_NONE, VECTOR_OK,
                     VECTOR_PENDING, Document, SourceBatch, SourceRecord)
from .results import PipelineResult, RunEvent, Subscriber  # noqa: F401  (the subscriber contract)
from .stages import EMBED_BATCH, STREAM_BATCH, STREAM_DEPTH, InFlight, ParseState, Progress, iter_documents, \
    no_progress, run_stages
from .store import versions
from .store.faults import fault_point
from .store.sync_state import record_success
from .store.versions import IndexIncomplete
from .store.weaviate_store import ChunkStore, chunk_uuid, utcnow

log = logging.getLogger(__name__)


def _vector_state(chunk: Chunk, vector, policy: EmbeddingPolicy) -> str:
    """``vector_state`` of a written chunk: ``""`` (has its vector), ``"none"`` (keyword-only
    by the embedding policy) or ``"pending"`` (the second phase of a first index fills it)."""
    if vector:
        return VECTOR_OK
    return VECTOR_NONE if policy.mode(file_role(chunk.path)) == "none" else VECTOR_PENDING


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
    (``None``: :data:`indexer.embedding_policy.DEFAULT_POLICY`, looked up at each run).
    ``subscribers``: told about every committed run, in order (:class:`Subscriber`)."""

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
    subscribers: list[Subscriber] = field(default_factory=list)

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
        cache = (self.store.query.vectors_for_hashes(c.content_hash for c, w in zip(chunks, wanted) if w)
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
        bar = progress or (lambda description, total: no_progress)
        t0 = time.perf_counter()
        self.store.sources.check_model(self.embedder.model_name)
        if batch.replace not in (REPLACE_ALL, REPLACE_PATHS):
            raise ValueError(f"unknown replace policy {batch.replace!r}")
        graph = batch.graph != GRAPH_NONE
        full = batch.replace == REPLACE_ALL
        prev = self.store.sources.get(batch.name)
        # Searchable early: a first index (or a rerun of one whose vectors never finished)
        # commits its chunks keyword-ready, then fills in the vectors (phase 2).
        early = self.early_search and full and (prev is None or int(prev.vectors_pending or 0) > 0)
        res = PipelineResult(record=SourceRecord(name=batch.name), skips=batch.skips)
        state = ParseState()
        subscribers = list(self.subscribers)

        def keep(path: str) -> bool:
            return any(sub.wants(batch.kind, path) for sub in subscribers)
        differs = frozenset(batch.differs) if batch.base else None  # a ref: chunks of these paths only
        inflight = InFlight()
        # Crash safety (indexer.store.versions): begin a run (finishes a crashed run's
        # clean-up, allocates a new generation), write into it, verify counts and vectors,
        # save the call graph, commit (the source record: the switch readers follow), clean
        # up. A first index commits keyword-ready first and saves the graph right after.
        run = self.store.runs.begin(batch.name, "full" if full else "incremental")
        indexed_at = utcnow()
        pending: list[str] = []  # ids of the chunks phase 2 gives a vector (early only)
        parse_bar = bar("Chunking files", batch.document_count or 0)
        write_bar = bar("Writing to Weaviate" if early else "Embedding and writing", None)

        def produce() -> Iterator[list[tuple[Chunk, str]]]:
            out: list[tuple[Chunk, str]] = []
            for chunks, version in iter_documents(batch.documents, batch.skips, state, graph=graph,
                                                  advance=parse_bar, keep=keep,
                                                  chunked=None if differs is None else differs.__contains__):
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
                res.chunks_written += self.store.data.write_chunks(rows, run=run)
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
        self.store.runs.verify(run)

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
            record = self.store.sources.get(batch.name) or record
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
        res.chunks_deleted = self.store.runs.cleanup(run)
        stored = self.store.sources.get(batch.name)  # the clean-up cleared ``replaced``
        if stored is not None:
            res.record = stored
        res.seconds_total = time.perf_counter() - t0  # the run itself; the subscribers' work comes after
        self._notify(subscribers, batch, state)
        return res

    def source_removed(self, source: str) -> None:
        """Tell the subscribers that have a ``removed(pipeline, source)`` method that
        ``source`` left the index (a named ref no longer selected): they drop what they
        keep of it. A failing one is logged."""
        for sub in self.subscribers:
            removed = getattr(sub, "removed", None)
            if removed is None:
                continue
            try:
                removed(self, source)
            except Exception as exc:  # noqa: BLE001 - the removal has happened; their rows wait
                log.warning("%s: %s could not forget it: %s", source, sub.name, exc)

    def _notify(self, subscribers: list[Subscriber], batch: SourceBatch, state: ParseState) -> None:
        """Step 7: hand every subscriber the :class:`RunEvent` of the committed ``batch``
        (a failing one is logged; the run has succeeded and stays so)."""
        if not subscribers:
            return
        full = batch.replace == REPLACE_ALL
        deleted = frozenset(batch.deleted_paths)
        event = RunEvent(source=batch.name, kind=batch.kind, root=batch.root, commit=batch.commit,
                         changed_paths=None if full else frozenset(set(batch.replaced_paths) - deleted),
                         deleted_paths=deleted, documents=dict(state.kept))
        for sub in subscribers:
            try:
                sub(self, event)
            except Exception as exc:  # noqa: BLE001 - a subscriber never fails the index run
                log.warning("%s: could not update %s: %s", batch.name, sub.name, exc)
        state.kept.clear()

    def _fill_vectors(self, run, pending: list[str], record: SourceRecord, inflight: InFlight,
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
        rec = self.store.sources.get(run.source) or record
        left = len(pending)
        advance = bar("Embedding chunks", len(pending))
        batches = 0

        def produce():
            for i in range(0, len(pending), self.stream_batch):
                part = pending[i:i + self.stream_batch]
                got = self.store.query.by_ids(part)
                inflight.add(len(got))
                yield [(o.uuid, o.properties) for o in got]

        def transform(objs):
            t = time.perf_counter()
            chunks = [versions.chunk_from_properties(p) for _u, p in objs]
            with self.embed_lock:
                vecs = embed_chunks(self.embedder, chunks, self.embedding_policy)
            res.seconds_embed += time.perf_counter() - t
            return objs, vecs

        def consume(done) -> None:
            nonlocal left, batches, rec
            objs, vecs = done
            t = time.perf_counter()
            data = [(u, dict(p, vector_state=VECTOR_OK), v) for (u, p), v in zip(objs, vecs) if v]
            with self.write_lock:
                if data:
                    self.store.data.insert(data)
            run.dimensions = run.dimensions or next((len(v) for v in vecs if v), 0)
            left -= len(objs)
            batches += 1
            rec = with_fields(rec, vectors_pending=left)
            self.store.sources.save(rec)
            res.seconds_write += time.perf_counter() - t
            inflight.add(-len(objs))
            advance(len(objs))
            fault_point("vector_batch", source=run.source, gen=run.gen, batch=batches, pending=left)

        run_stages(produce, transform, consume, depth=self.stream_depth)
        missing = self.store.runs.missing_vectors(pending, run.dimensions)
        if missing:
            log.warning("%s: %d filled chunks are not in the vector index; re-inserting them", run.source,
                        len(missing))
            self.store.runs.reinsert_with_vectors(missing)
            still = self.store.runs.missing_vectors(missing, run.dimensions)
            if still:
                self.store.sources.save(with_fields(rec, vectors_pending=len(still)))
                raise IndexIncomplete(f"{run.source}: {len(still)} chunks of run {run.gen} have no vector; "
                                      "keyword search works, run the index again for the vectors")
        self.store.sources.save(with_fields(rec, vectors_pending=0, dimensions=rec.dimensions or run.dimensions))
        return len(pending)

    def _save_record(self, batch: SourceBatch, run) -> SourceRecord:
        """Commit ``run`` with the source record of ``batch``. ``files`` and ``chunks`` are
        counted in the index as the committed run shows it (they include files an
        incremental run did not touch), as are ``vectors_pending`` and ``keyword_only``
        (:func:`versions.commit_run`); ``skipped`` is this run's for a full run, the
        previous record's otherwise."""
        prev = self.store.sources.get(batch.name)
        skipped = (dict(batch.skips.counts) if batch.replace == REPLACE_ALL
                   else dict(prev.skipped or {}) if prev is not None else {})
        record = SourceRecord(
            name=batch.name, kind=batch.kind, root=batch.root, commit=batch.commit, indexed_at=utcnow(),
            model=self.embedder.model_name,
            dimensions=run.dimensions or int(getattr(self.embedder, "dimensions", 0) or 0),
            url_template=batch.url_template, skipped=skipped, embedding_policy=self.embedding_policy.name,
            base=batch.base, ref=batch.ref, differs=sorted(batch.differs) if batch.base else [])
        return self.store.runs.commit(run, record, count_files=True)
