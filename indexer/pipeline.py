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

from .chunking import chunk_file
from .chunking.models import Chunk
from .config import Settings
from .documents import chunk_properties, embedding_texts
from .embeddings import Embedder, make_embedder
from .graph import FileFacts, extract_file
from .freshness.repo_lock import repo_index_lock
from .freshness.state import record_success
from .graph.sql_store import save_repo_graph
from .sources import filters, git
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
    """List, filter, read and chunk every file of the repository's HEAD commit.

    Never stops for one bad file: binary, vendored, generated, too large and
    unreadable files are counted in ``summary.skipped`` by reason.
    Raises :class:`~indexer.errors.NotAGitRepository`.
    """
    t0 = time.perf_counter()
    root = git.repo_root(path)
    commit = git.head_commit(root)
    repo = name or root.name
    summary = IndexSummary(repo=repo, root=str(root), commit=commit)
    summary.dirty_paths = git.dirty_paths(root)
    files = git.list_files(root, commit)
    summary.files_seen = len(files)
    to_read = []
    for f in files:
        reason = filters.skip_reason_for_path(f.path, f.size_bytes, settings.max_file_bytes)
        if reason:
            _skip(summary, reason, f.path)
        else:
            to_read.append(f)
    chunks: list[Chunk] = []
    facts: list[FileFacts] = []
    graph_s = 0.0
    advance = progress("Chunking files", len(to_read)) if progress else (lambda n=1: None)
    for f, data in git.read_blobs(root, to_read):
        text, reason = filters.decode_source(data)
        if reason:
            _skip(summary, reason, f.path)
        else:
            try:
                file_chunks = chunk_file(f.path, text)
            except Exception as exc:  # a chunker bug must not stop the run
                log.warning("could not chunk %s: %s", f.path, exc)
                _skip(summary, filters.SKIP_UNREADABLE, f.path)
                file_chunks = []
            if file_chunks:
                summary.files_indexed += 1
                chunks.extend(file_chunks)
                if any(c.extra.get("syntax_errors") for c in file_chunks):
                    summary.parse_warnings += 1
            tg = time.perf_counter()
            try:
                file_facts = extract_file(f.path, text)
            except Exception as exc:  # graph extraction must not stop the run either
                log.warning("could not extract the call graph of %s: %s", f.path, exc)
                file_facts = None
            if file_facts is not None:
                facts.append(file_facts)
            graph_s += time.perf_counter() - tg
        advance(1)
    summary.chunks = len(chunks)
    summary.seconds_graph = graph_s
    summary.seconds_parse = time.perf_counter() - t0 - graph_s
    summary.graph_definitions = sum(len(f.definitions) for f in facts)
    return ParsedRepo(root=root, commit=commit, chunks=chunks, summary=summary, facts=facts)


def _skip(summary: IndexSummary, reason: str, path: str) -> None:
    summary.skipped[reason] += 1
    summary.skipped_examples.setdefault(reason, path)


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
    parsed = parse_repository(path, name, settings, progress)
    summary = parsed.summary
    summary.model = embedder.model_name
    # One run per repo at a time (see indexer.freshness.repo_lock): an overlapping run
    # would delete this run's chunks as "stale".
    guard = repo_index_lock(sessions, summary.repo) if sessions is not None else nullcontext()
    with guard:
        run_id, indexed_at = new_run_id(), utcnow()

        t1 = time.perf_counter()
        cache = store.vectors_for_hashes(c.content_hash for c in parsed.chunks)
        vectors: list[list[float] | None] = [cache.get(c.content_hash) for c in parsed.chunks]
        todo = [i for i, v in enumerate(vectors) if v is None]
        summary.reused_vectors = len(parsed.chunks) - len(todo)
        advance = progress("Embedding chunks", len(todo)) if progress else (lambda n=1: None)
        for start in range(0, len(todo), EMBED_BATCH):
            idx = todo[start:start + EMBED_BATCH]
            for i, vec in zip(idx, embed_chunks(embedder, [parsed.chunks[i] for i in idx])):
                vectors[i] = vec
            advance(len(idx))
        summary.embedded = len(todo)
        summary.seconds_embed = time.perf_counter() - t1

        t2 = time.perf_counter()
        advance = progress("Writing to Weaviate", len(parsed.chunks)) if progress else (lambda n=1: None)

        def rows():
            for chunk, vec in zip(parsed.chunks, vectors):
                yield chunk_properties(chunk, repo=summary.repo, commit=parsed.commit,
                                       indexed_at=indexed_at, run_id=run_id), vec
                advance(1)

        store.write_chunks(rows())
        summary.deleted_stale = store.delete_stale(summary.repo, run_id)
        if sessions is not None:
            tg = time.perf_counter()
            summary.graph_edges = save_repo_graph(sessions, summary.repo, parsed.commit, parsed.facts)
            summary.seconds_graph += time.perf_counter() - tg
        store.save_source({
            "name": summary.repo, "kind": "git", "root": summary.root, "commit": parsed.commit,
            "indexed_at": indexed_at, "model": embedder.model_name, "dimensions": next((len(v) for v in vectors if v), embedder.dimensions),
            "files": summary.files_indexed, "chunks": summary.chunks, "url_template": "",
            "skipped": dict(summary.skipped),
        })
        if sessions is not None:
            # The same "last indexed commit" a push webhook diffs from: after `coderag index`,
            # `coderag sync` / a push re-indexes only what changed since this commit.
            record_success(sessions, summary.repo, "git", commit=parsed.commit, mode="full", indexed_at=indexed_at)
        summary.seconds_write = time.perf_counter() - t2
        summary.seconds_total = time.perf_counter() - t0
        return summary
