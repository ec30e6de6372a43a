"""Re-index one repository from its mirror: only the files a push changed, or everything.

:func:`sync_repo` is one run: fetch the mirror, read the last indexed SHA from SQL (never
from a webhook payload), ``git diff --name-status -M`` it against the branch head, and
for each changed file replace its chunks in Weaviate (by repo + path) and its rows in
the call graph (:func:`indexer.graph.sql_store.replace_files`). A rename is a delete of
the old path plus an add of the new one; a deleted file leaves search and ``impact``.

Embedding cache: a chunk's vector is looked up by content hash among the vectors
already indexed (:meth:`ChunkStore.vectors_for_hashes`; the index holds one model,
enforced by ``check_model``), so only chunks whose text changed are embedded: a
one-line change costs one embedding call for the one chunk that holds it.

Full re-index (logged with its reason) when the base SHA is unknown, all zeros, missing
from the mirror, or not an ancestor of the new head (force-push).

Writes are crash-safe (:mod:`indexer.store.versions`): new chunks are written as a new
run and verified (counts and vectors); the graph rows are swapped in one SQL transaction;
then the run is committed by the source record, which for an incremental run also hides
the older copies of the touched paths (the untouched files' chunks are carried, not
copied); then the superseded chunks are deleted and the new SHA is recorded. A crash re-runs the same
diff; readers see the old or the new version, never a mix.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from sqlalchemy.orm import sessionmaker

from ..chunking import chunk_file
from ..chunking.models import Chunk
from ..config import Settings
from ..documents import chunk_properties
from ..embeddings import Embedder
from ..graph import FileFacts, extract_file
from ..graph.sql_store import replace_files, save_repo_graph
from ..pipeline import EMBED_BATCH, embed_chunks
from ..sources import filters, git
from ..store.weaviate_store import ChunkStore, utcnow
from . import state
from .config import RepoConfig
from .mirror import ZERO_SHA, Mirror
from .repo_lock import repo_index_lock

log = logging.getLogger(__name__)



@dataclass
class IndexContext:
    """Shared by every run in a process: the stores, the embedder, and ``embed_lock``
    (embedder calls are serialised: local models are not thread-safe) and ``write_lock``
    (Weaviate batch writes of concurrent repo workers are serialised)."""

    settings: Settings
    store: ChunkStore
    sessions: sessionmaker
    embedder: Embedder
    embed_lock: threading.Lock = field(default_factory=threading.Lock)
    write_lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class SyncResult:
    """What one run did. ``mode``: ``incremental``, ``full`` or ``noop`` (head already
    indexed); ``reason`` says why a full run was needed. Times in seconds."""

    repo: str
    mode: str
    commit: str
    base: str = ""
    reason: str = ""
    files_changed: int = 0
    files_deleted: int = 0
    chunks_written: int = 0
    chunks_deleted: int = 0
    embedded: int = 0
    reused_vectors: int = 0
    graph_edges: int = 0
    skipped: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["skipped"] = dict(self.skipped)
        return d


@dataclass
class ParsedFiles:
    """Chunks and graph facts of some files of one commit (``facts[path]`` is ``None``
    for a file that is skipped or has no graph; such paths are still "touched")."""

    chunks: list[Chunk] = field(default_factory=list)
    facts: dict[str, FileFacts | None] = field(default_factory=dict)
    files_with_chunks: int = 0
    skipped: Counter = field(default_factory=Counter)


def parse_files(root: Path, commit: str, files: Sequence[git.RepoFile], settings: Settings) -> ParsedFiles:
    """Filter, read (``git cat-file``), chunk and extract facts of ``files`` at ``commit``.
    Never raises for one bad file (the same rules as ``coderag index``)."""
    out = ParsedFiles()
    to_read = []
    for f in files:
        reason = filters.skip_reason_for_path(f.path, f.size_bytes, settings.max_file_bytes)
        out.facts[f.path] = None
        if reason:
            out.skipped[reason] += 1
        else:
            to_read.append(f)
    for f, data in git.read_blobs(root, to_read):
        text, reason = filters.decode_source(data)
        if reason:
            out.skipped[reason] += 1
            continue
        try:
            chunks = chunk_file(f.path, text)
        except Exception as exc:  # noqa: BLE001 - one file must not stop the run
            log.warning("could not chunk %s: %s", f.path, exc)
            chunks = []
        if chunks:
            out.files_with_chunks += 1
            out.chunks.extend(chunks)
        try:
            out.facts[f.path] = extract_file(f.path, text)
        except Exception as exc:  # noqa: BLE001
            log.warning("could not extract the call graph of %s: %s", f.path, exc)
    return out


def vectors_with_cache(ctx: IndexContext, chunks: Sequence[Chunk]) -> tuple[list[list[float]], int]:
    """One vector per chunk: cached ones by content hash, the rest embedded (in batches
    of ``EMBED_BATCH``). Returns ``(vectors, number embedded)``."""
    cache = ctx.store.vectors_for_hashes(c.content_hash for c in chunks) if chunks else {}
    vectors = [cache.get(c.content_hash) for c in chunks]
    todo = [i for i, v in enumerate(vectors) if v is None]
    for start in range(0, len(todo), EMBED_BATCH):
        idx = todo[start:start + EMBED_BATCH]
        with ctx.embed_lock:
            fresh = embed_chunks(ctx.embedder, [chunks[i] for i in idx])
        for i, vec in zip(idx, fresh):
            vectors[i] = vec
    return vectors, len(todo)  # type: ignore[return-value]


def _write(ctx: IndexContext, repo: str, commit: str, chunks: Sequence[Chunk], vectors, run) -> int:
    indexed_at = utcnow()
    rows = ((chunk_properties(c, repo=repo, commit=commit, indexed_at=indexed_at, run_id=run.run_id), v)
            for c, v in zip(chunks, vectors))
    with ctx.write_lock:
        return ctx.store.write_chunks(rows, run=run)  # [crash-safety] into the run


def plan(mirror: Mirror, base: str, head: str) -> tuple[str, str]:
    """``("incremental", "")`` or ``("full", reason)`` for moving the index from ``base`` to ``head``."""
    if not base:
        return "full", "no indexed commit recorded"
    if base == ZERO_SHA:
        return "full", "base commit is all zeros"
    if not mirror.has_commit(base):
        return "full", f"indexed commit {base[:12]} is gone from the repository (force-push?)"
    if not mirror.is_ancestor(base, head):
        return "full", f"indexed commit {base[:12]} is not an ancestor of {head[:12]} (force-push)"
    return "incremental", ""


def sync_repo(ctx: IndexContext, repo: RepoConfig, *, force_full: bool = False) -> SyncResult:
    """Bring ``repo`` in the index to the head of its branch (see the module docstring).

    Runs under the repo's index lock (:mod:`.repo_lock`), waiting while another process
    or thread indexes the same repo. Raises ``MirrorError`` (clone/fetch/branch),
    ``ModelMismatch``, ``WeaviateUnavailable``, ``RepoIndexBusy``; the caller records
    the error (:func:`run_and_record`).
    """
    with repo_index_lock(ctx.sessions, repo.name):
        return _sync_locked(ctx, repo, force_full)


def _sync_locked(ctx: IndexContext, repo: RepoConfig, force_full: bool) -> SyncResult:
    t0 = time.perf_counter()
    mirror = Mirror(ctx.settings.home, repo.name, repo.url)
    mirror.fetch()
    head = mirror.head(repo.branch)
    mirror.point_head(repo.branch)
    row = state.get_state(ctx.sessions, repo.name)
    base = row.commit if row else ""
    if base == head and not force_full:
        return SyncResult(repo.name, "noop", head, base=base, seconds=time.perf_counter() - t0)
    ctx.store.check_model(ctx.embedder.model_name)
    mode, reason = ("full", "requested") if force_full else plan(mirror, base, head)
    if mode == "full":
        log.warning("%s: full re-index at %s: %s", repo.name, head[:12], reason)
        result = _full(ctx, repo, mirror.path, head)
    else:
        result = _incremental(ctx, repo, mirror, base, head)
    result.base, result.reason = base, reason
    state.record_success(ctx.sessions, repo.name, "git", commit=head, mode=mode)
    result.seconds = time.perf_counter() - t0
    log.info("%s: %s %s..%s in %.2fs (%d changed, %d deleted, %d embedded)", repo.name, mode, base[:7],
             head[:7], result.seconds, result.files_changed, result.files_deleted, result.embedded)
    return result


def _full(ctx: IndexContext, repo: RepoConfig, root: Path, head: str) -> SyncResult:
    files = git.list_files(root, head)
    parsed = parse_files(root, head, files, ctx.settings)
    vectors, embedded = vectors_with_cache(ctx, parsed.chunks)
    run = ctx.store.begin_run(repo.name, "full")  # [crash-safety] begin
    res = SyncResult(repo.name, "full", head, files_changed=len(files), embedded=embedded,
                     reused_vectors=len(parsed.chunks) - embedded, skipped=parsed.skipped)
    res.chunks_written = _write(ctx, repo.name, head, parsed.chunks, vectors, run)
    ctx.store.verify_run(run)  # [crash-safety] verify, graph, then commit = the switch
    res.graph_edges = save_repo_graph(ctx.sessions, repo.name, head,
                                      [f for f in parsed.facts.values() if f is not None])
    ctx.store.commit_run(run, _record(ctx, repo, root, head, files=parsed.files_with_chunks,
                                      dims=len(vectors[0]) if vectors else 0, skipped=dict(parsed.skipped)))
    res.chunks_deleted = ctx.store.cleanup_run(run)  # [crash-safety] cleanup
    return res


def _incremental(ctx: IndexContext, repo: RepoConfig, mirror: Mirror, base: str, head: str) -> SyncResult:
    changes = mirror.diff(base, head)
    touched = {c.path for c in changes if c.status != "D"}
    gone = {c.path for c in changes if c.status == "D"} | {c.old_path for c in changes if c.status == "R"}
    gone -= touched
    files = [f for f in git.list_files(mirror.path, head) if f.path in touched]
    parsed = parse_files(mirror.path, head, files, ctx.settings)
    vectors, embedded = vectors_with_cache(ctx, parsed.chunks)
    run = ctx.store.begin_run(repo.name, "incremental")  # [crash-safety] begin
    res = SyncResult(repo.name, "incremental", head, files_changed=len(touched), files_deleted=len(gone),
                     embedded=embedded, reused_vectors=len(parsed.chunks) - embedded, skipped=parsed.skipped)
    res.chunks_written = _write(ctx, repo.name, head, parsed.chunks, vectors, run)
    run.replace_paths(touched | gone)  # [crash-safety] the commit hides these paths' older copies
    ctx.store.verify_run(run)
    graph_changes: dict[str, FileFacts | None] = {p: None for p in touched | gone}
    graph_changes.update(parsed.facts)
    res.graph_edges = replace_files(ctx.sessions, repo.name, head, graph_changes)
    prev = ctx.store.source_record(repo.name)
    ctx.store.commit_run(run, _record(ctx, repo, mirror.path, head, files=None,  # None: counted at commit
                                      dims=len(vectors[0]) if vectors else int((prev or {}).get("dimensions") or 0),
                                      skipped=dict((prev or {}).get("skipped") or {})))
    res.chunks_deleted = ctx.store.cleanup_run(run)  # [crash-safety] cleanup
    return res


def _record(ctx: IndexContext, repo: RepoConfig, root: Path, commit: str, *, files: int | None, dims: int,
            skipped: dict | None = None) -> dict:
    """The source record :meth:`ChunkStore.commit_run` writes (it counts the chunks)."""
    return {
        "name": repo.name, "kind": "git", "root": str(root), "commit": commit, "indexed_at": utcnow(),
        "model": ctx.embedder.model_name, "dimensions": dims, "files": files,
        "url_template": repo.url_template, "skipped": skipped or {},
    }


def run_and_record(ctx: IndexContext, repo: RepoConfig, **kwargs) -> SyncResult | None:
    """:func:`sync_repo`, recording any exception as the repo's last error (returns ``None``)."""
    try:
        return sync_repo(ctx, repo, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the worker must survive any one failure
        log.exception("%s: re-index failed", repo.name)
        state.record_error(ctx.sessions, repo.name, "git", f"{type(exc).__name__}: {exc}")
        # Weaviate restarted elsewhere (e.g. the embedded server on a new port): reconnect
        # so the next push or safety run succeeds; it re-diffs from the last recorded commit.
        try:
            ctx.store.reconnect_if_down()
        except Exception as again:  # noqa: BLE001 - still down: the next run tries again
            log.warning("%s: Weaviate still unreachable: %s", repo.name, again)
        return None
