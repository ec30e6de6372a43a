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

Writes are crash-safe: new chunks are written under a fresh ``run_id`` first, then the
touched paths' older chunks are deleted, then the graph rows are swapped in one SQL
transaction, and only then is the new SHA recorded; a crash re-runs the same diff.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from ..knowledge import on_repo_indexed
from ..models import GRAPH_FILES, KIND_GIT, REPLACE_PATHS, Skips, SourceBatch
from ..pipeline import IndexingPipeline, PipelineResult, RunCounters, index_commit
from ..sources import git
from ..sources.config import RepoConfig
from ..store import sync_state as state
from ..store.repo_lock import repo_index_lock
from .mirror import ZERO_SHA, Mirror

log = logging.getLogger(__name__)



@dataclass
class SyncResult(RunCounters):
    """What one run did (``coderag sync repo --json``, keys :attr:`KEYS`). ``mode``:
    ``incremental``, ``full`` or ``noop`` (head already indexed; no ``run``); ``reason``
    says why a full run was needed; ``files_changed``/``files_deleted``: of the diff (a
    full run: every file). Chunk, vector, graph and skip counts are those of ``run``, the
    :class:`~indexer.pipeline.PipelineResult`. Times in seconds."""

    repo: str
    mode: str
    commit: str
    base: str = ""
    reason: str = ""
    files_changed: int = 0
    files_deleted: int = 0
    seconds: float = 0.0
    run: PipelineResult | None = None

    KEYS = ("repo", "mode", "commit", "base", "reason", "files_changed", "files_deleted", "chunks_written",
            "chunks_deleted", "embedded", "reused_vectors", "graph_edges", "skipped", "seconds")

    @property
    def skipped(self) -> Counter:
        """Files of the run not indexed, by reason."""
        return Counter(self.skips.counts)


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


def sync_repo(ctx: IndexingPipeline, repo: RepoConfig, *, force_full: bool = False) -> SyncResult:
    """Bring ``repo`` in the index to the head of its branch (see the module docstring).

    Runs under the repo's index lock (:mod:`.repo_lock`), waiting while another process
    or thread indexes the same repo. Raises ``MirrorError`` (clone/fetch/branch),
    ``ModelMismatch``, ``WeaviateUnavailable``, ``RepoIndexBusy``; the caller records
    the error (:func:`run_and_record`).
    """
    with repo_index_lock(ctx.sessions, repo.name):
        return _sync_locked(ctx, repo, force_full)


def _sync_locked(ctx: IndexingPipeline, repo: RepoConfig, force_full: bool) -> SyncResult:
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
    result.seconds = time.perf_counter() - t0
    log.info("%s: %s %s..%s in %.2fs (%d changed, %d deleted, %d embedded)", repo.name, mode, base[:7],
             head[:7], result.seconds, result.files_changed, result.files_deleted, result.embedded)
    return result


def _full(ctx: IndexingPipeline, repo: RepoConfig, root: Path, head: str) -> SyncResult:
    files = git.list_files(root, head)
    res = index_commit(ctx, root, head, repo.name, url_template=repo.url_template, files=files)
    return _result(repo, "full", head, res, files_changed=len(files))


def _incremental(ctx: IndexingPipeline, repo: RepoConfig, mirror: Mirror, base: str, head: str) -> SyncResult:
    changes = mirror.diff(base, head)
    touched = {c.path for c in changes if c.status != "D"}
    gone = {c.path for c in changes if c.status == "D"} | {c.old_path for c in changes if c.status == "R"}
    gone -= touched
    files = [f for f in git.list_files(mirror.path, head) if f.path in touched]
    skips = Skips()
    documents, count = git.commit_documents(mirror.path, head, files, ctx.settings.max_file_bytes, skips)
    # Files of the diff that are skipped (now too large, binary, ...) leave the index too.
    batch = SourceBatch(name=repo.name, kind=KIND_GIT, root=str(mirror.path), commit=head, documents=documents,
                        replace=REPLACE_PATHS, graph=GRAPH_FILES, replaced_paths=touched | gone,
                        url_template=repo.url_template, skips=skips, document_count=count,
                        state_mode="incremental")
    res = ctx.run(batch)
    # Knowledge hook (runbook drift, "who knows this"; never raises): re-check changed docs, add the new commits' authorship.
    on_repo_indexed(ctx.sessions, ctx.settings, repo.name, mirror.path, head, changed_paths=touched,
                    deleted_paths=gone)
    return _result(repo, "incremental", head, res, files_changed=len(touched), files_deleted=len(gone))


def _result(repo: RepoConfig, mode: str, head: str, res: PipelineResult, **counts) -> SyncResult:
    return SyncResult(repo.name, mode, head, run=res, **counts)


def run_and_record(ctx: IndexingPipeline, repo: RepoConfig, **kwargs) -> SyncResult | None:
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
