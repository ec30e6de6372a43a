"""The one indexing pipeline: documents from any source -> chunks -> vectors -> Weaviate,
call-graph rows in SQL, one :class:`~indexer.models.SourceRecord`, the sync state.

Sources (``indexer.sources.git``: a commit or a diff; ``indexer.confluence``: a space)
only yield :class:`~indexer.models.Document` objects inside a
:class:`~indexer.models.SourceBatch`; :meth:`IndexingPipeline.run` never knows where
they came from. The order of work, for every source:

1. chunk each document (tree-sitter symbols, doc sections, windows) and extract its
   call-graph facts (code only);
2. reuse the vector of every chunk whose content hash is already indexed (the index
   holds one model, enforced by ``check_model``), embed the rest in batches of
   :data:`EMBED_BATCH`;
3. write the chunks under a fresh ``run_id``;
4. delete what they replace: all the source's older chunks (``REPLACE_ALL``, a full
   index) or the older chunks of the batch's paths and of ``replaced_paths``
   (``REPLACE_PATHS``: a push, a Confluence sync);
5. swap the call-graph rows (whole repo, or the touched files) in one SQL transaction;
6. save the source record (files and chunks counted from the index), then the sync
   state (last indexed commit / cursor).

A crash at any point leaves the previous version searchable (old chunks are deleted
only after the new ones are written) and the sync state unchanged, so the next run
redoes the same work.

``coderag index`` and ``coderag sync repo --full`` both call :func:`index_commit`.
"""
from __future__ import annotations

import logging
import threading
import time
from contextlib import nullcontext
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Callable, ClassVar, Iterable, Sequence

from common.settings import Settings

from .chunking import chunk_file
from .chunking.models import Chunk
from .documents import chunk_properties, embed_chunks, embedding_texts  # noqa: F401  (embed_chunks re-exported)
from .embeddings import Embedder, make_embedder
from .graph import FileFacts, extract_file
from .graph.sql_store import replace_files, save_repo_graph
from .knowledge import on_repo_indexed
from .models import (GRAPH_FILES, GRAPH_NONE, GRAPH_REPO, KIND_GIT, REPLACE_ALL, REPLACE_PATHS, Document, Skips,
                     SourceBatch, SourceRecord)
from .sources import filters, git
from .store.repo_lock import repo_index_lock
from .store.sync_state import record_success
from .store.weaviate_store import ChunkStore, new_run_id, utcnow

log = logging.getLogger(__name__)

#: Chunks per embedding request batch (Voyage accepts up to 1,000 texts per call; 256
#: keeps one request well under its 120k-token limit for code chunks).
EMBED_BATCH = 256

Progress = Callable[[str, int], Callable[[int], None]]


def _no_progress(n: int = 1) -> None:
    return None


@dataclass
class ParsedDocuments:
    """Chunks and graph facts of a batch's documents. ``facts[path]`` is ``None`` for a
    document without a call graph; every document's path is in ``paths``."""

    chunks: list[Chunk] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)  # the document version of each chunk
    facts: dict[str, FileFacts | None] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    files_indexed: int = 0
    parse_warnings: int = 0
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0


def parse_documents(documents: Iterable[Document], skips: Skips, *, graph: bool = True,
                    advance: Callable[[int], None] = _no_progress) -> ParsedDocuments:
    """Chunk every document (:func:`indexer.chunking.chunk_file`, by path extension) and,
    with ``graph``, extract its call-graph facts. Never stops for one bad document: a
    chunker failure is counted in ``skips`` as ``unreadable``. ``advance(n)`` is called
    once per document and per file the source skipped while reading (decode failures)."""
    out = ParsedDocuments()
    t0 = time.perf_counter()
    seen_skips = sum(skips.counts.values())
    for doc in documents:
        out.paths.add(doc.path)
        out.facts[doc.path] = None
        try:
            chunks = chunk_file(doc.path, doc.text)
        except Exception as exc:  # noqa: BLE001 - a chunker bug must not stop the run
            log.warning("could not chunk %s: %s", doc.path, exc)
            skips.add(filters.SKIP_UNREADABLE, doc.path)
            chunks = []
        if chunks:
            out.files_indexed += 1
            out.chunks.extend(chunks)
            out.versions.extend([doc.version] * len(chunks))
            if any(c.extra.get("syntax_errors") for c in chunks):
                out.parse_warnings += 1
        if graph:
            tg = time.perf_counter()
            try:
                out.facts[doc.path] = extract_file(doc.path, doc.text)
            except Exception as exc:  # noqa: BLE001 - graph extraction must not stop the run either
                log.warning("could not extract the call graph of %s: %s", doc.path, exc)
            out.seconds_graph += time.perf_counter() - tg
        now_skips = sum(skips.counts.values())
        advance(1 + now_skips - seen_skips)
        seen_skips = now_skips
    now_skips = sum(skips.counts.values())
    if now_skips > seen_skips:
        advance(now_skips - seen_skips)
    out.seconds_parse = time.perf_counter() - t0 - out.seconds_graph
    return out


@dataclass
class PipelineResult:
    """What one :meth:`IndexingPipeline.run` did. Times are wall-clock seconds. The results
    of the use cases (:class:`IndexSummary`, ``SyncResult``, ``SpaceSyncResult``) embed it
    as ``run`` (see :class:`RunCounters`) instead of copying its counters."""

    record: SourceRecord
    files_indexed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused_vectors: int = 0
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
    seconds_total: float = 0.0

    @classmethod
    def parsed(cls, name: str, parsed: ParsedDocuments, skips: Skips) -> "PipelineResult":
        """The result so far of a run of source ``name`` that has chunked its documents
        (``parsed``, :func:`parse_documents`) and nothing more: files, chunks, definitions,
        parse warnings, ``skips`` and the parse and graph times."""
        return cls(record=SourceRecord(name=name), files_indexed=parsed.files_indexed, chunks=len(parsed.chunks),
                   parse_warnings=parsed.parse_warnings, skips=skips, seconds_parse=parsed.seconds_parse,
                   seconds_graph=parsed.seconds_graph,
                   graph_definitions=sum(len(f.definitions) for f in parsed.facts.values() if f))


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
    sync state, e.g. a bare ``index_repository`` call in a test)."""

    settings: Settings
    store: ChunkStore
    sessions: object | None
    embedder: Embedder
    embed_lock: threading.Lock = field(default_factory=threading.Lock)
    write_lock: threading.Lock = field(default_factory=threading.Lock)

    def vectors(self, chunks: Sequence[Chunk]) -> tuple[list[list[float]], int]:
        """One vector per chunk: cached ones by content hash, the rest embedded (in
        batches of :data:`EMBED_BATCH`). Returns ``(vectors, number embedded)``."""
        return self._vectors(chunks, None)

    def _vectors(self, chunks: Sequence[Chunk], progress: Progress | None) -> tuple[list[list[float]], int]:
        cache = self.store.vectors_for_hashes(c.content_hash for c in chunks) if chunks else {}
        vectors = [cache.get(c.content_hash) for c in chunks]
        todo = [i for i, v in enumerate(vectors) if v is None]
        advance = progress("Embedding chunks", len(todo)) if progress else _no_progress
        for start in range(0, len(todo), EMBED_BATCH):
            idx = todo[start:start + EMBED_BATCH]
            with self.embed_lock:
                fresh = embed_chunks(self.embedder, [chunks[i] for i in idx])
            for i, vec in zip(idx, fresh):
                vectors[i] = vec
            advance(len(idx))
        return vectors, len(todo)  # type: ignore[return-value]

    def run(self, batch: SourceBatch, progress: Progress | None = None) -> PipelineResult:
        """Index ``batch`` (see the module docstring for the order of work); returns the
        :class:`PipelineResult` whose ``record`` is the saved source record.

        ``progress(description, total)`` returns an ``advance(n)`` callable (the CLI
        passes rich progress bars; ``None`` for silence). Raises ``ModelMismatch`` (index
        built with another model), ``WeaviateUnavailable``; SQL errors propagate.
        """
        bar = progress or (lambda description, total: _no_progress)
        t0 = time.perf_counter()
        self.store.check_model(self.embedder.model_name)
        graph = batch.graph != GRAPH_NONE
        parsed = parse_documents(batch.documents, batch.skips, graph=graph,
                                 advance=bar("Chunking files", batch.document_count or 0))
        res = PipelineResult.parsed(batch.name, parsed, batch.skips)

        t1 = time.perf_counter()
        vectors, res.embedded = self._vectors(parsed.chunks, progress)
        res.reused_vectors = len(parsed.chunks) - res.embedded
        res.seconds_embed = time.perf_counter() - t1

        t2 = time.perf_counter()
        if batch.replace not in (REPLACE_ALL, REPLACE_PATHS):
            raise ValueError(f"unknown replace policy {batch.replace!r}")
        # Crash safety (indexer.store.versions): begin a run (finishes a crashed run's
        # clean-up, allocates a new generation), write into it, verify counts and vectors,
        # save the call graph, commit (the source record: the switch readers follow), clean up.
        run = self.store.begin_run(batch.name, "full" if batch.replace == REPLACE_ALL else "incremental")
        indexed_at = utcnow()
        advance = bar("Writing to Weaviate", len(parsed.chunks))

        def rows():
            for chunk, version, vec in zip(parsed.chunks, parsed.versions, vectors):
                yield chunk_properties(chunk, repo=batch.name, commit=version, indexed_at=indexed_at,
                                       run_id=run.run_id), vec
                advance(1)

        with self.write_lock:
            res.chunks_written = self.store.write_chunks(rows(), run=run)
        if batch.replace == REPLACE_PATHS:
            run.replace_paths(parsed.paths | set(batch.replaced_paths))
        self.store.verify_run(run)
        if self.sessions is not None and graph:
            tg = time.perf_counter()
            if batch.graph == GRAPH_REPO:
                res.graph_edges = save_repo_graph(self.sessions, batch.name, batch.commit,
                                                  [f for f in parsed.facts.values() if f is not None])
            elif batch.graph == GRAPH_FILES:
                changes: dict[str, FileFacts | None] = {p: None for p in set(batch.replaced_paths)}
                changes.update(parsed.facts)
                res.graph_edges = replace_files(self.sessions, batch.name, batch.commit, changes)
            res.seconds_graph += time.perf_counter() - tg
        res.record = self._save_record(batch, vectors, run)
        if batch.after_commit is not None:
            batch.after_commit()
        if self.sessions is not None:
            # The "last indexed commit" a push diffs from (and the Confluence cursor):
            # after `coderag index`, a push re-indexes only what changed since this commit.
            record_success(self.sessions, batch.name, batch.kind, commit=batch.commit, mode=batch.state_mode,
                           indexed_at=res.record.indexed_at, cursor=batch.state_cursor,
                           reconciled=batch.state_reconciled)
        # Superseded chunks go (a crash here: the next run's begin_run does it).
        res.chunks_deleted = self.store.cleanup_run(run)
        stored = self.store.source_record(batch.name)  # the clean-up cleared ``replaced``
        if stored is not None:
            res.record = SourceRecord.from_properties(stored)
        res.seconds_write = time.perf_counter() - t2
        res.seconds_total = time.perf_counter() - t0
        return res

    def _save_record(self, batch: SourceBatch, vectors: list, run) -> SourceRecord:
        """Commit ``run`` with the source record of ``batch``. ``files`` and ``chunks`` are
        counted in the index as the committed run shows it (they include files an
        incremental run did not touch); ``skipped`` is this run's for a full run, the
        previous record's otherwise."""
        prev = self.store.source_record(batch.name)
        skipped = (dict(batch.skips.counts) if batch.replace == REPLACE_ALL
                   else dict(prev.get("skipped") or {}) if prev is not None else {})
        record = SourceRecord(
            name=batch.name, kind=batch.kind, root=batch.root, commit=batch.commit, indexed_at=utcnow(),
            model=self.embedder.model_name,
            dimensions=len(vectors[0]) if vectors else int(getattr(self.embedder, "dimensions", 0) or 0),
            url_template=batch.url_template, skipped=skipped)
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
        # Issue 17 hook: runbook drift and "who" for the whole commit (never raises).
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
            "seconds_total", "model")

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
