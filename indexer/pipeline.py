"""``coderag index``: a Git repository at HEAD -> chunks -> vectors -> Weaviate.

Order of work, each stage behind its own progress bar: list the commit's files, skip
what should not be indexed, chunk the rest with tree-sitter, embed the chunks whose
content hash is not already in the index, write them, then delete the repo's chunks
from earlier runs. A crash at any point leaves the previous version searchable.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .chunking.models import Chunk
from .config import Settings
from .documents import chunk_properties, embedding_texts
from .embeddings import Embedder, make_embedder
from .graph import FileFacts
from .freshness.repo_lock import repo_index_lock
from .freshness.state import record_success
from .graph.sql_store import save_repo_graph
from .sources import git
from .streaming import ParseStream, stream_chunks
from .store.weaviate_store import ChunkStore, new_run_id, utcnow

log = logging.getLogger(__name__)

EMBED_BATCH = 256


@dataclass
class IndexSummary:
    """What one ``index`` run did. Times are wall-clock seconds."""

    repo: str
    root: str
    commit: str
    files_seen: int = 0
    files_indexed: int = 0
    chunks: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    deleted_stale: int = 0
    skipped: Counter = field(default_factory=Counter)
    skipped_examples: dict = field(default_factory=dict)
    parse_warnings: int = 0
    dirty_paths: list = field(default_factory=list)
    seconds_parse: float = 0.0
    seconds_graph: float = 0.0
    graph_definitions: int = 0
    graph_edges: int = 0
    seconds_embed: float = 0.0
    seconds_write: float = 0.0
    seconds_total: float = 0.0
    model: str = ""

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = dict(self.skipped)
        return d


@dataclass
class ParsedRepo:
    """Chunks of one commit and the bookkeeping of how they were obtained."""

    root: Path
    commit: str
    chunks: list[Chunk]
    summary: IndexSummary
    facts: list[FileFacts] = field(default_factory=list)


def parse_repository(path: str | Path, name: str | None, settings: Settings,
                     progress: Callable | None = None) -> ParsedRepo:
    """List, filter, read and chunk every file of the repository's HEAD commit (all its
    chunks in memory; ``index_repository`` streams them instead, see :mod:`.streaming`).

    Never stops for one bad file: binary, vendored, generated, too large and
    unreadable files are counted in ``summary.skipped`` by reason.
    Raises :class:`~indexer.errors.NotAGitRepository`.
    """
    stream = ParseStream(path, name, settings, IndexSummary, progress)
    chunks = [c for file_chunks in stream for c in file_chunks]
    return ParsedRepo(root=stream.root, commit=stream.commit, chunks=chunks, summary=stream.summary,
                      facts=stream.facts)


def embed_chunks(embedder: Embedder, chunks: list[Chunk], policy=None) -> list[list[float] | None]:
    """One vector per chunk: the L2-normalised mean of the vectors of its
    :func:`~indexer.documents.embedding_texts` under ``policy`` (default
    :data:`~indexer.embedding_policy.DEFAULT_POLICY`; a single text for most chunks), or
    ``None`` for a chunk the policy leaves keyword-only (written without a vector)."""
    texts: list[str] = []
    owners: list[int] = []
    for n, chunk in enumerate(chunks):
        for t in embedding_texts(chunk, policy):
            texts.append(t)
            owners.append(n)
    sums: list[list[float] | None] = [None] * len(chunks)
    for owner, vec in zip(owners, embedder.embed_documents(texts)):
        acc = sums[owner]
        sums[owner] = list(vec) if acc is None else [a + b for a, b in zip(acc, vec)]
    out: list[list[float] | None] = []
    for acc in sums:
        if acc is None:
            out.append(None)
            continue
        norm = sum(x * x for x in acc) ** 0.5 or 1.0
        out.append([x / norm for x in acc])
    return out


def index_repository(path: str | Path, *, name: str | None = None, settings: Settings,
                     store: ChunkStore, embedder: Embedder | None = None,
                     progress: Callable | None = None, sessions=None) -> IndexSummary:
    """Index one repository into ``store`` (chunks) and ``sessions`` (the SQL call graph,
    skipped when ``None``); returns the :class:`IndexSummary`.

    ``progress(description, total)`` returns an ``advance(n)`` callable (the CLI passes
    rich progress bars; ``None`` for silence). Raises ``NotAGitRepository``,
    ``ModelMismatch`` (index built with another model) and ``WeaviateUnavailable``.
    """
    t0 = time.perf_counter()
    git.repo_root(path)  # fail fast on a bad path, before loading the embedding model
    embedder = embedder or make_embedder(settings)
    store.check_model(embedder.model_name)
    stream = ParseStream(path, name, settings, IndexSummary, progress)
    summary = stream.summary
    summary.model = embedder.model_name
    # One run per repo at a time (see indexer.freshness.repo_lock): an overlapping run
    # would delete this run's chunks as "stale".
    guard = repo_index_lock(sessions, summary.repo) if sessions is not None else nullcontext()
    with guard:
        run_id, indexed_at = new_run_id(), utcnow()
        advance = progress("Embedding and writing chunks", None) if progress else None

        def write(pairs) -> int:
            return store.write_chunks(
                (chunk_properties(c, repo=summary.repo, commit=stream.commit, indexed_at=indexed_at,
                                  run_id=run_id), v) for c, v in pairs)

        # Parse, embed and write overlap, with bounded queues (indexer.streaming): memory
        # does not grow with the repository's chunk count.
        stats = stream_chunks(stream, embed=lambda chunks: embed_chunks(embedder, chunks), write=write,
                              reuse=lambda chunks: store.vectors_for_hashes(c.content_hash for c in chunks),
                              batch=EMBED_BATCH, on_batch=advance)
        summary.embedded, summary.reused_vectors = stats.embedded, stats.reused
        summary.seconds_embed = stats.seconds_embed
        # Busy time of the parse stage (the stream's own clock includes waiting on the queue).
        summary.seconds_parse = max(stats.seconds_parse - summary.seconds_graph, 0.0)
        t2 = time.perf_counter()
        summary.deleted_stale = store.delete_stale(summary.repo, run_id)
        if sessions is not None:
            tg = time.perf_counter()
            summary.graph_edges = save_repo_graph(sessions, summary.repo, stream.commit, stream.facts)
            summary.seconds_graph += time.perf_counter() - tg
        store.save_source({
            "name": summary.repo, "kind": "git", "root": summary.root, "commit": stream.commit,
            "indexed_at": indexed_at, "model": embedder.model_name, "dimensions": stats.dimensions or embedder.dimensions,
            "files": summary.files_indexed, "chunks": summary.chunks, "url_template": "",
            "skipped": dict(summary.skipped),
        })
        if sessions is not None:
            # The same "last indexed commit" a push webhook diffs from: after `coderag index`,
            # `coderag sync` / a push re-indexes only what changed since this commit.
            record_success(sessions, summary.repo, "git", commit=stream.commit, mode="full", indexed_at=indexed_at)
        summary.seconds_write = stats.seconds_write + time.perf_counter() - t2
        summary.seconds_total = time.perf_counter() - t0
        return summary
