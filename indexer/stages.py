"""The streaming stages of an indexing run: parse documents into chunks and call-graph
facts, and run three overlapping stages (produce -> transform -> consume) through bounded
queues, so a repository is never held whole.

:class:`~indexer.pipeline.IndexingPipeline` runs them; :func:`parse_documents` is the parse
stage alone, in lists (for tools and benches).
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

from .chunking import chunk_file
from .chunking.models import Chunk
from .graph import FileFacts, extract_file
from .models import SKIP_UNREADABLE, Document, Skips

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


def no_progress(n: int = 1) -> None:
    return None


@dataclass
class ParseState:
    """What the parse stage learns besides the chunks: the call-graph facts per path
    (``None``: no call graph for that document), every document's path, counters and
    timings (final once the documents are exhausted), and the documents ``keep`` asked for
    (``kept``, by path: what the pipeline's subscribers read)."""

    facts: dict[str, FileFacts | None] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    files_indexed: int = 0
    chunk_count: int = 0
    parse_warnings: int = 0
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0
    kept: dict[str, Document] = field(default_factory=dict)


def iter_documents(documents: Iterable[Document], skips: Skips, state: ParseState, *, graph: bool = True,
                   advance: Callable[[int], None] = no_progress,
                   keep: Callable[[str], bool] | None = None,
                   chunked: Callable[[str], bool] | None = None) -> Iterator[tuple[list[Chunk], str]]:
    """Chunk each document (:func:`indexer.chunking.chunk_file`, by path extension) and,
    with ``graph``, extract its call-graph facts into ``state.facts``; yields ``(chunks,
    document version)`` per document with chunks, one document at a time. Never stops
    for one bad document: a chunker failure is counted in ``skips`` as ``unreadable``.
    ``advance(n)`` is called once per document and per file the source skipped while
    reading (decode failures). ``keep(path)``: whether to keep the document in
    ``state.kept`` (``None``: keep none). ``chunked(path)``: whether to chunk the document
    (``None``: all); one that is not is read for its call-graph facts only (a ref source's
    unchanged files, :mod:`indexer.sources.refs`)."""
    t0 = time.perf_counter()
    graph_s = 0.0
    seen_skips = sum(skips.counts.values())
    try:
        for doc in documents:
            state.paths.add(doc.path)
            state.facts[doc.path] = None
            if keep is not None and keep(doc.path):
                state.kept[doc.path] = doc
            try:
                chunks = chunk_file(doc.path, doc.text) if chunked is None or chunked(doc.path) else []
            except Exception as exc:  # noqa: BLE001 - a chunker bug must not stop the run
                log.warning("could not chunk %s: %s", doc.path, exc)
                skips.add(SKIP_UNREADABLE, doc.path)
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
class ParsedDocuments(ParseState):
    """The parse stage's state plus the chunks themselves, in lists: ``versions[i]`` is the
    document version of ``chunks[i]``."""

    chunks: list[Chunk] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)


def parse_documents(documents: Iterable[Document], skips: Skips, *, graph: bool = True,
                    advance: Callable[[int], None] = no_progress) -> ParsedDocuments:
    """All of :func:`iter_documents` in lists (holds every chunk: for tools and benches
    such as ``parse_repository``, never for the indexing run itself)."""
    out = ParsedDocuments()
    for chunks, version in iter_documents(documents, skips, out, graph=graph, advance=advance):
        out.chunks.extend(chunks)
        out.versions.extend([version] * len(chunks))
    return out


# -- bounded stages -----------------------------------------------------------------------

_DONE = object()


class InFlight:
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
