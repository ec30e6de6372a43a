"""Streaming indexing: parse, embed and write in overlapping stages with bounded queues.

A repository is never held whole: files are read and chunked by a producer thread into
batches of ``batch`` chunks, the calling thread embeds one batch at a time (ONNX Runtime
and torch release the GIL, so parsing and writing run meanwhile), and a writer thread
sends embedded batches to the store. Each hand-over is a ``queue.Queue(maxsize=depth)``,
so at most ``2 * depth + 3`` batches of chunks are alive at once (one being parsed, one
being embedded, one being written, ``depth`` waiting in each queue): with the defaults
(256 chunks, depth 2) ~1,800 chunks, whatever the repository's size. What does grow with
the repository: the call-graph facts of every file (needed to resolve the repo-wide
graph; a few hundred bytes per definition and call) and the counters of the summary.

Hook (how :func:`indexer.pipeline.index_repository` uses it, and how a merged single
pipeline can): ``ParseStream(...)`` replaces the list-building loop of
``parse_repository`` (which now just drains it); ``stream_chunks(stream, embed=...,
reuse=..., write=...)`` replaces the embed-then-write loops. The caller keeps what comes
after a complete write (``delete_stale``, the graph from ``stream.facts``, the source
record), so a crash still leaves the previous version searchable.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Sequence

from .chunking import chunk_file
from .chunking.models import Chunk
from .config import Settings
from .graph import FileFacts, extract_file
from .sources import filters, git

log = logging.getLogger(__name__)

# Chunks per batch handed between stages (also the embedder call size).
STREAM_BATCH = 256
# Batches waiting between two stages; 2 keeps every stage busy without piling up memory.
STREAM_DEPTH = 2
_DONE = object()


class ParseStream:
    """The HEAD commit's indexable files as a stream of per-file chunk lists.

    Construct it to list and filter the files (``files_seen``, path-based skips are
    counted at once); iterate it once to read, decode, chunk and extract call-graph facts
    file by file (``summary`` and ``facts`` fill in as it goes; the timings are final when
    the iteration ends). ``summary`` is an :class:`indexer.pipeline.IndexSummary`.
    Raises :class:`~indexer.errors.NotAGitRepository` from the constructor.
    """

    def __init__(self, path: str | Path, name: str | None, settings: Settings, summary_cls,
                 progress: Callable | None = None):
        self.t0 = time.perf_counter()
        self.root = git.repo_root(path)
        self.commit = git.head_commit(self.root)
        self.summary = summary_cls(repo=name or self.root.name, root=str(self.root), commit=self.commit)
        self.summary.dirty_paths = git.dirty_paths(self.root)
        files = git.list_files(self.root, self.commit)
        self.summary.files_seen = len(files)
        self.to_read = []
        for f in files:
            reason = filters.skip_reason_for_path(f.path, f.size_bytes, settings.max_file_bytes)
            if reason:
                self._skip(reason, f.path)
            else:
                self.to_read.append(f)
        self.facts: list[FileFacts] = []
        self._progress = progress

    def _skip(self, reason: str, path: str) -> None:
        self.summary.skipped[reason] += 1
        self.summary.skipped_examples.setdefault(reason, path)

    def __iter__(self) -> Iterator[list[Chunk]]:
        summary = self.summary
        graph_s = 0.0
        advance = self._progress("Chunking files", len(self.to_read)) if self._progress else (lambda n=1: None)
        for f, data in git.read_blobs(self.root, self.to_read):
            text, reason = filters.decode_source(data)
            file_chunks: list[Chunk] = []
            if reason:
                self._skip(reason, f.path)
            else:
                try:
                    file_chunks = chunk_file(f.path, text)
                except Exception as exc:  # a chunker bug must not stop the run
                    log.warning("could not chunk %s: %s", f.path, exc)
                    self._skip(filters.SKIP_UNREADABLE, f.path)
                if file_chunks:
                    summary.files_indexed += 1
                    summary.chunks += len(file_chunks)
                    if any(c.extra.get("syntax_errors") for c in file_chunks):
                        summary.parse_warnings += 1
                tg = time.perf_counter()
                try:
                    file_facts = extract_file(f.path, text)
                except Exception as exc:  # graph extraction must not stop the run either
                    log.warning("could not extract the call graph of %s: %s", f.path, exc)
                    file_facts = None
                if file_facts is not None:
                    self.facts.append(file_facts)
                    summary.graph_definitions += len(file_facts.definitions)
                graph_s += time.perf_counter() - tg
            advance(1)
            if file_chunks:
                yield file_chunks
        summary.seconds_graph = graph_s
        summary.seconds_parse = time.perf_counter() - self.t0 - graph_s


@dataclass
class StreamStats:
    """What :func:`stream_chunks` did: chunks written, embedded (given a new vector),
    reused (vector found by content hash; keyword-only chunks are neither), and the
    seconds each stage was busy (they overlap, so they add up to more than the wall time),
    plus the most chunks alive at once (the memory bound, checked by the tests)."""

    written: int = 0
    embedded: int = 0
    reused: int = 0
    seconds_parse: float = 0.0
    seconds_embed: float = 0.0
    seconds_write: float = 0.0
    max_chunks_in_flight: int = 0
    dimensions: int = 0
    _alive: int = field(default=0, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def _add(self, n: int) -> None:
        with self._lock:
            self._alive += n
            self.max_chunks_in_flight = max(self.max_chunks_in_flight, self._alive)


def stream_chunks(files: Iterator[list[Chunk]] | ParseStream, *,
                  embed: Callable[[list[Chunk]], Sequence[list[float] | None]],
                  write: Callable[[list[tuple[Chunk, list[float] | None]]], int],
                  reuse: Callable[[list[Chunk]], dict[str, list[float]]] | None = None,
                  batch: int = STREAM_BATCH, depth: int = STREAM_DEPTH,
                  on_batch: Callable[[int], None] | None = None) -> StreamStats:
    """Run parse -> embed -> write over ``files`` (per-file chunk lists) in three
    overlapping stages; returns :class:`StreamStats`.

    ``embed(chunks)``: one vector (or ``None``: keyword-only) per chunk, e.g.
    :func:`indexer.pipeline.embed_chunks` bound to an embedder. ``reuse(chunks)``:
    ``content_hash -> vector`` already indexed (those chunks are not embedded again).
    ``write(pairs)``: store ``(chunk, vector)`` pairs, returning how many were written.
    ``on_batch(n)``: called after each written batch (progress bars).

    The first exception of any stage stops the others and is re-raised here, after both
    threads have ended (nothing is left running).
    """
    stats = StreamStats()
    parsed: queue.Queue = queue.Queue(maxsize=depth)
    embedded: queue.Queue = queue.Queue(maxsize=depth)
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
        t = time.perf_counter()
        try:
            pending: list[Chunk] = []
            for file_chunks in files:
                pending.extend(file_chunks)
                stats._add(len(file_chunks))
                while len(pending) >= batch:
                    stats.seconds_parse += time.perf_counter() - t
                    if not put(parsed, pending[:batch]):
                        return
                    t = time.perf_counter()
                    pending = pending[batch:]
                if stop.is_set():
                    return
            stats.seconds_parse += time.perf_counter() - t
            if pending and not put(parsed, pending):
                return
        except BaseException as exc:  # noqa: BLE001 (re-raised in the caller)
            errors.append(exc)
            stop.set()
        finally:
            put(parsed, _DONE)

    def writer() -> None:
        try:
            while True:
                item = get(embedded)
                if item is _DONE or stop.is_set():
                    return
                t = time.perf_counter()
                stats.written += write(item)
                stats.seconds_write += time.perf_counter() - t
                stats._add(-len(item))
                if on_batch:
                    on_batch(len(item))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=producer, name="coderag-parse", daemon=True),
               threading.Thread(target=writer, name="coderag-write", daemon=True)]
    for th in threads:
        th.start()
    try:
        while True:
            chunks = get(parsed)
            if chunks is _DONE:
                break
            t = time.perf_counter()
            cached = reuse(chunks) if reuse else {}
            vectors: list[list[float] | None] = [cached.get(c.content_hash) for c in chunks]
            todo = [i for i, v in enumerate(vectors) if v is None]
            if todo:
                for i, vec in zip(todo, embed([chunks[i] for i in todo])):
                    vectors[i] = vec
            stats.embedded += sum(1 for i in todo if vectors[i] is not None)
            stats.reused += len(chunks) - len(todo)
            if not stats.dimensions:
                stats.dimensions = next((len(v) for v in vectors if v), 0)
            stats.seconds_embed += time.perf_counter() - t
            if not put(embedded, list(zip(chunks, vectors))):
                break
    except BaseException as exc:  # noqa: BLE001
        errors.append(exc)
        stop.set()
    finally:
        if not stop.is_set():
            put(embedded, _DONE)
        else:
            stop.set()
        for th in threads:
            th.join()
    if errors:
        raise errors[0]
    return stats
