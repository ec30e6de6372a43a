"""The Git source: a repository indexed in full at a commit, or from its mirror by the
diff a push made, always as :class:`~indexer.models.SourceBatch` es run through the one
:class:`~indexer.pipeline.IndexingPipeline`.

Full index (:func:`index_repository` for ``coderag index`` on a local clone;
:func:`index_commit`, also for ``coderag sync repo --full`` and a push whose base is
unknown): every file of the commit (:func:`commit_batch`), replacing everything.

Push (:func:`sync_repo`): fetch the mirror (:mod:`.mirror`), read the last indexed SHA
from SQL (never from a webhook payload), ``git diff --name-status -M`` it against the
branch head, and hand only the changed files to the pipeline, naming the paths whose
older chunks and call-graph rows go (a rename is a delete of the old path plus an add of
the new one; a deleted file leaves search and ``impact``). A chunk's vector is looked up
by content hash among those already indexed, so only chunks whose text changed are
embedded. A full run (logged with its reason) replaces the diff when the base SHA is
unknown, all zeros, missing from the mirror, or not an ancestor of the new head
(force-push).

Writes are crash-safe (:mod:`indexer.store.versions`): a crash re-runs the same diff.
Runbook drift and "who knows this" follow each run as the pipeline's subscribers
(:mod:`indexer.knowledge`), fed the documents this run decoded.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from common.settings import Settings
from common.sources import RepoConfig

from ..chunking.models import Chunk
from ..embeddings import Embedder, make_embedder
from ..graph import FileFacts
from ..models import GRAPH_FILES, GRAPH_REPO, KIND_GIT, REPLACE_ALL, REPLACE_PATHS, SKIP_SYMLINK, Skips, SourceBatch
from ..pipeline import IndexingPipeline
from ..results import PipelineResult, RunCounters
from ..stages import Progress, no_progress, parse_documents
from ..store import sync_state as state
from ..store.repo_lock import repo_index_lock
from ..store.weaviate_store import ChunkStore
from . import git
from .mirror import ZERO_SHA, Mirror
from .refs import RefResult, merge_ref_results, ref_records, refresh_refs, widen_refs

log = logging.getLogger(__name__)


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
        skips.add(SKIP_SYMLINK, link)
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
    return pipeline.run(batch, progress)


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
    refs: list = field(default_factory=list)  # RefResult of each named ref kept (:mod:`.refs`)

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
    bar = progress or (lambda description, total: no_progress)
    parsed = parse_documents(batch.documents, batch.skips, advance=bar("Chunking files", batch.document_count or 0))
    summary = IndexSummary(repo=batch.name, root=str(root), commit=commit, files_seen=len(files) + len(links),
                           dirty_paths=git.dirty_paths(root), run=PipelineResult.parsed(batch.name, parsed, batch.skips))
    return ParsedRepo(root=root, commit=commit, chunks=parsed.chunks, summary=summary,
                      facts=[f for f in parsed.facts.values() if f is not None])


def index_repository(path: str | Path, *, name: str | None = None, settings: Settings,
                     store: ChunkStore, embedder: Embedder | None = None,
                     progress: Progress | None = None, sessions=None,
                     pipeline: IndexingPipeline | None = None, subscribers: list | None = None,
                     refs: RepoConfig | None = None) -> IndexSummary:
    """Index one local repository at its HEAD commit (``coderag index``) through
    :func:`index_commit`; returns the :class:`IndexSummary`.

    ``sessions``: the SQL session factory for the call graph and the sync state (skipped
    when ``None``). ``pipeline``: an existing pipeline to run through (else one is built
    from the other arguments, told ``subscribers``). ``refs``: the repo's entry of
    ``CODERAG_REPOS`` when it has one: its named refs (``refs``, ``max_refs``) are kept
    from the local repository's tags and branches around the run (:mod:`.refs`; ``None``:
    no entry, so the repo's ref sources, if any, are removed). Raises
    ``NotAGitRepository``, ``ModelMismatch`` and ``WeaviateUnavailable``.
    """
    root = git.repo_root(path)  # fail fast on a bad path, before loading the embedding model
    commit = git.head_commit(root)
    pipeline = pipeline or IndexingPipeline(settings=settings, store=store, sessions=sessions,
                                            embedder=embedder or make_embedder(settings),
                                            subscribers=list(subscribers or ()))
    repo = name or root.name
    # One run per repo at a time (see indexer.store.repo_lock): an overlapping run
    # would delete this run's chunks as "stale".
    guard = (repo_index_lock(pipeline.sessions, repo, ttl_s=pipeline.settings.index_lock_ttl)
             if pipeline.sessions is not None else nullcontext())
    with guard:
        links: list[str] = []
        files = git.list_files(root, commit, symlinks=links)
        keep_refs = _keeps_refs(pipeline, repo, refs)
        if keep_refs:
            widened = widen_refs(pipeline, repo, root, commit)
        res = index_commit(pipeline, root, commit, repo, progress=progress, files=files, symlinks=links)
        ref_results = merge_ref_results(widened, _refresh(pipeline, repo, root, refs)) if keep_refs else []
    return IndexSummary(repo=repo, root=str(root), commit=commit, files_seen=len(files) + len(links),
                        dirty_paths=git.dirty_paths(root), model=pipeline.embedder.model_name, run=res,
                        refs=ref_results)


def _keeps_refs(pipeline: IndexingPipeline, repo: str, config: RepoConfig | None) -> bool:
    """Whether a run of ``repo`` has named refs to keep: its entry names some, or ref
    sources of it are indexed (to be kept right, or removed once no entry names them).
    Without either, a run does exactly what it did before refs existed."""
    if config is not None and config.refs:
        return True
    return bool(ref_records(pipeline, repo))


def _refresh(pipeline: IndexingPipeline, repo: str, root: Path, config: RepoConfig | None) -> list[RefResult]:
    """Step 2 of keeping ``repo``'s refs (:func:`.refs.refresh_refs`) with its entry's
    patterns (none without an entry: its ref sources are removed)."""
    if config is None or not config.refs:
        return refresh_refs(pipeline, repo, root, (), 1)
    return refresh_refs(pipeline, repo, root, config.refs, config.max_refs, url_template=config.url_template)


# -- pushes: the mirror and the diff ---------------------------------------------------

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
    refs: list = field(default_factory=list)  # RefResult of each named ref kept (:mod:`.refs`)

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
    with repo_index_lock(ctx.sessions, repo.name, ttl_s=ctx.settings.index_lock_ttl):
        return _sync_locked(ctx, repo, force_full)


def _sync_locked(ctx: IndexingPipeline, repo: RepoConfig, force_full: bool) -> SyncResult:
    t0 = time.perf_counter()
    mirror = Mirror(ctx.settings.home, repo.name, repo.url)
    mirror.fetch()
    head = mirror.head(repo.branch)
    mirror.point_head(repo.branch)
    row = state.get_state(ctx.sessions, repo.name)
    base = row.commit if row else ""
    keep_refs = _keeps_refs(ctx, repo.name, repo)
    if base == head and not force_full:
        # the head is indexed; its named refs may still have moved (a tag push) or be due
        refs = _refresh(ctx, repo.name, mirror.path, repo) if keep_refs else []
        return SyncResult(repo.name, "noop", head, base=base, seconds=time.perf_counter() - t0, refs=refs)
    ctx.store.sources.check_model(ctx.embedder.model_name)
    mode, reason = ("full", "requested") if force_full else plan(mirror, base, head)
    widened = []
    if keep_refs:  # before the base moves: each ref takes the paths the move will change
        widened = widen_refs(ctx, repo.name, mirror.path, head)
    if mode == "full":
        log.warning("%s: full re-index at %s: %s", repo.name, head[:12], reason)
        result = _full(ctx, repo, mirror.path, head)
    else:
        result = _incremental(ctx, repo, mirror, base, head)
    if keep_refs:  # one result per ref over both steps: what changed (never noop after a widening)
        result.refs = merge_ref_results(widened, _refresh(ctx, repo.name, mirror.path, repo))
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
                        deleted_paths=gone, url_template=repo.url_template, skips=skips, document_count=count,
                        state_mode="incremental")
    res = ctx.run(batch)
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
