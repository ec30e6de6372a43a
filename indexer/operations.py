"""The write side's use cases, as the CLI and ``coderag serve`` call them: index a local
repository, sync a configured repo or Confluence space now, remove one source, reset
the whole index, and the status of every source.

Each is handed the settings the caller read at start-up (never reading the environment
itself), opens what it needs from them (the SQL database, Weaviate, the embedder)
and closes it again; errors are :class:`~common.errors.CoderagError` subclasses with a
one-line message (``EmptyIndex`` for an unknown name, as every command gives it).
"""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from common.db import open_database
from common.errors import BadInput, EmptyIndex
from common.settings import FreshnessSettings, Settings
from common.sources import RepoConfig

from .models import vectors_percent

if TYPE_CHECKING:  # the pipeline and the Weaviate client load when a command uses them
    from .sources.repository import IndexSummary
    from .stages import Progress
    from .store.weaviate_store import ChunkStore


@contextmanager
def open_store(settings: Settings) -> Iterator[ChunkStore]:
    """:meth:`ChunkStore.open` as a context manager (closed on exit)."""
    from .store.weaviate_store import ChunkStore

    store = ChunkStore.open(settings)
    try:
        yield store
    finally:
        store.close()


def index_path(path: str | Path, *, name: str | None = None, force: bool = False,
               progress: Progress | None = None, settings: Settings,
               repos: Sequence[RepoConfig] = ()) -> IndexSummary:
    """``coderag index``: the HEAD commit of the Git work tree at ``path`` as repo ``name``
    (default: the folder name). A name already indexed from another folder is refused
    (``BadInput``) unless ``force``. Raises ``NotAGitRepository``, ``ModelMismatch``,
    ``WeaviateUnavailable``, ``DatabaseError``. ``settings``: the storage group the caller
    read at start-up (as in every operation here). ``repos``: the ``CODERAG_REPOS``
    entries; the one named like the repo gives its named refs (``refs``), indexed from
    the work tree's tags and branches (:mod:`indexer.sources.refs`)."""
    from .knowledge import subscribers
    from .sources import git
    from .sources.repository import index_repository

    sessions = open_database(settings)
    with open_store(settings) as store:
        root = git.repo_root(path)
        repo = name or root.name
        for s in store.sources.all():
            if s.name == repo and s.root and s.root != str(root) and not force:
                raise BadInput(f"a repo named {repo!r} is already indexed from {s.root}; pick another "
                               f"--name, or pass --force to replace it")
        entry = next((r for r in repos if r.name == repo), None)
        return index_repository(path, name=name, settings=settings, store=store, progress=progress,
                                sessions=sessions, subscribers=subscribers(), refs=entry)


def index_repository(path: str | Path, *, subscribers: list | None = None, **kwargs) -> IndexSummary:
    """:func:`indexer.sources.repository.index_repository` (same arguments), with runbook
    drift and "who knows this" subscribed by default when it builds its pipeline with a
    database (``sessions``), as ``coderag index`` does; ``subscribers=[]`` for none."""
    from .knowledge import subscribers as knowledge_subscribers
    from .sources.repository import index_repository as run

    if subscribers is None and kwargs.get("sessions") is not None and kwargs.get("pipeline") is None:
        subscribers = knowledge_subscribers()
    return run(path, subscribers=subscribers, **kwargs)


def remove_source(name: str, *, confirm: Callable[[str], bool] | None = None,
                  settings: Settings) -> bool:
    """``coderag remove``: delete one repo or space's chunks, source record, call graph and
    sync state (so a later sync starts from scratch); a repository's named refs (its ref
    sources ``name@ref``) go with it, and ``name@ref`` removes that ref alone.
    ``confirm(name)`` is asked once the name is known to exist; returns False when it says
    no. Raises ``EmptyIndex`` for a name that is neither indexed nor has sync state (the
    error of every command given an unknown repo), and whatever ``confirm`` raises."""
    from .graph.sql_store import delete_repo_graph
    from .store.sync_state import all_states, forget_sources

    sessions = open_database(settings)
    with open_store(settings) as store:
        records = store.sources.all()
        known = {s.name for s in records}
        if name not in known and name not in all_states(sessions):
            raise EmptyIndex(f"no indexed repo named {name} (indexed: {', '.join(sorted(known)) or 'none'})")
        if confirm is not None and not confirm(name):
            return False
        names = [r.name for r in records if r.base == name] + [name]  # its refs first: they read it
        for n in names:
            store.sources.delete(n)  # readers stop seeing it before its chunks go
            store.data.delete_repo(n)
    from .knowledge import on_source_removed  # drift refs and authorship rows

    for n in names:
        delete_repo_graph(sessions, n)
        forget_sources(sessions, [n])
        on_source_removed(sessions, n)
    return True


def reset_index(settings: Settings) -> None:
    """``coderag reset``: drop every chunk, vector and source record, every call graph and
    all sync state (the query log and feedback are kept)."""
    from .graph.sql_store import delete_repo_graph, indexed_repos
    from .store.sync_state import forget_sources

    with open_store(settings) as store:
        store.schema.reset()
    sessions = open_database(settings)
    for repo in indexed_repos(sessions):
        delete_repo_graph(sessions, repo)
    from .knowledge import on_index_reset  # drift refs and authorship rows

    on_index_reset(sessions)
    forget_sources(sessions)


def index_status(settings: Settings) -> list[dict]:
    """``coderag status``: one dict per source (the :class:`~indexer.models.SourceRecord`
    fields plus ``last_error``, ``last_attempt_at``, ``next_run`` and, for Confluence,
    ``version``; a named ref (kind ``git-ref``) has ``base``, ``ref`` and ``differs`` (the
    number of paths that differ from its base); and ``drift``: ``{"ok", "stale", "unknown"}`` counts of the code references
    found in the source's docs, zeros when there are none),
    sorted by name; see :func:`indexer.freshness.status.freshness_status`."""
    from .drift.counts import drift_counts
    from .freshness.status import freshness_status

    from .store.records import read_sources

    sources = read_sources(settings)  # REST: no Weaviate client to load for a status
    sessions = open_database(settings)
    try:
        sources = freshness_status(sessions, sources)
        drift = drift_counts(sessions)  # stale runbook references per source
    finally:
        sessions.kw["bind"].dispose()  # closed here, not left open to the garbage collector
    for s in sources:
        # Every source has the key: zeros for one whose docs name no code (or that has no
        # docs, or whose drift is not computed yet), so `status --json` has one shape.
        s["drift"] = dict(drift.get(s["name"]) or {"ok": 0, "stale": 0, "unknown": 0})
        s["vectors_percent"] = vectors_percent(s)  # None: complete; else a first index still embedding
        if s.get("base"):  # a named ref: how many paths it takes from itself, not the list
            s["differs"] = len(s.get("differs") or [])
    return sources


def sync_repo_now(name: str, *, config: FreshnessSettings, settings: Settings, full: bool = False):
    """``coderag sync repo``: fetch the repo ``name`` of ``config`` (its mirror) and re-index
    what changed since the last indexed commit (everything with ``full``); the failure,
    if any, is recorded as the repo's last error and re-raised. Returns the
    :class:`~indexer.sources.repository.SyncResult`; with the index queue
    (``CODERAG_INDEX_QUEUE=procrastinate``) the run is queued for ``coderag worker`` and a
    :class:`~indexer.freshness.queue.Queued` is returned."""
    from .sources.repository import sync_repo
    from .freshness.runtime import FreshnessRuntime
    from .store.sync_state import record_error

    if config.index_queue == "procrastinate":  # a worker runs it
        require_queue_extra(config)
        from .freshness.queue import queue_repo

        config.repo(name)
        with _queue(settings) as app:
            return queue_repo(app, name, full=full)  # a --full never lost behind a waiting run
    runtime = FreshnessRuntime.build(config, settings)
    try:
        repo = runtime.config.repo(name)
        try:
            return sync_repo(runtime.ctx, repo, force_full=full)
        except Exception as exc:  # noqa: BLE001 - recorded, then re-raised
            record_error(runtime.ctx.sessions, name, "git", str(exc))
            raise
    finally:
        runtime.stop()


def sync_all_now(*, config: FreshnessSettings, settings: Settings, full: bool = False,
                 each: Callable[[str, object], None] | None = None) -> list:
    """``coderag sync --all``: every repository of ``config``, in its order. With the index
    queue each is queued (:func:`~indexer.freshness.queue.queue_repo`: a
    :class:`~indexer.freshness.queue.Queued` each, one connection for all); on the embedded
    default each is run here in turn (a :class:`~indexer.sources.repository.SyncResult`
    each), a failure recorded as the repository's last error and kept in the list as the
    exception, the others still run. ``each(name, result_or_exception)`` is called as each
    ends. Returns the list; ``BadInput`` when no repository is configured."""
    from .freshness.runtime import FreshnessRuntime
    from .sources.repository import sync_repo
    from .store.sync_state import record_error

    names = [r.name for r in config.repos]
    if not names:
        raise BadInput("no repository is configured (CODERAG_REPOS, or the admin page's sources)")
    results: list = []

    def done(name: str, result) -> None:
        results.append(result)
        if each is not None:
            each(name, result)

    if config.index_queue == "procrastinate":
        require_queue_extra(config)
        from .freshness.queue import queue_repo

        with _queue(settings) as app:
            for name in names:
                done(name, queue_repo(app, name, full=full))
        return results
    runtime = FreshnessRuntime.build(config, settings)
    try:
        for name in names:
            try:
                result = sync_repo(runtime.ctx, runtime.config.repo(name), force_full=full)
            except Exception as exc:  # noqa: BLE001 - recorded and reported; the next repository still runs
                record_error(runtime.ctx.sessions, name, "git", str(exc))
                result = exc
            done(name, result)
    finally:
        runtime.stop()
    return results


def sync_confluence_now(space: str, *, config: FreshnessSettings, settings: Settings, reconcile: bool = False):
    """``coderag sync confluence``: changed pages of ``space`` (configured in ``config``) since the
    last run (with ``reconcile``, list them all and drop deleted ones). Returns the
    :class:`~indexer.confluence.sync.SpaceSyncResult` (with the index queue: a
    :class:`~indexer.freshness.queue.Queued`)."""
    from .freshness.runtime import FreshnessRuntime

    if config.index_queue == "procrastinate":
        require_queue_extra(config)
        from .freshness.queue import Queued, enqueue_space

        if config.confluence is None:
            raise BadInput("Confluence is not configured (CODERAG_CONFLUENCE_URL)")
        key = config.confluence.space(space).key
        with _queue(settings) as app:
            return Queued(key, enqueue_space(app, key, reconcile=True if reconcile else None))
    runtime = FreshnessRuntime.build(config, settings)
    try:
        return runtime.sync_confluence(space, reconcile=True if reconcile else None)
    finally:
        runtime.stop()


@contextmanager
def _queue(settings: Settings):
    """The index queue's procrastinate app on ``settings.database_url``, open, tables made."""
    from .freshness.queue import check_reachable, ensure_schema, make_app

    try:
        check_reachable(settings.database_url or "")
    except ValueError as exc:  # not PostgreSQL
        raise BadInput(str(exc)) from None
    app = make_app(settings.database_url or "")
    with app.open():
        ensure_schema(app)
        yield app


def queue_status(config: FreshnessSettings, settings: Settings) -> dict | None:
    """Index-queue jobs by status, total and per source: ``{"todo", "doing", "failed",
    "by_source": {name: {"todo", "doing", "failed"}}}``; ``None`` without the queue."""
    if config.index_queue != "procrastinate":
        return None
    require_queue_extra(config)
    from .freshness.queue import check_reachable, queue_counts

    try:
        # one plain connection, never the process's procrastinate app: in `coderag worker`
        # that app is open (asynchronously) running jobs, and reopening it failed each scrape
        return queue_counts(settings.database_url or "").to_dict()
    except ValueError as exc:  # not PostgreSQL
        raise BadInput(str(exc)) from None
    except Exception:  # noqa: BLE001 - unreachable: say so in one line (DatabaseError), else re-raise
        check_reachable(settings.database_url or "")
        raise


def queue_status_reader(config: FreshnessSettings, settings: Settings) -> Callable[[], dict] | None:
    """What ``/metrics`` reads the index queue with (``None`` without the queue): a callable
    returning :func:`queue_status`'s dict, bounded to a couple of seconds however
    PostgreSQL behaves (:class:`indexer.freshness.queue.ScrapeCounts`: it raises instead
    of blocking a scrape), one read shared by the gauges of a scrape."""
    if config.index_queue != "procrastinate":
        return None
    require_queue_extra(config)
    from .freshness.queue import ScrapeCounts, conninfo

    try:
        conninfo(settings.database_url or "")
    except ValueError as exc:  # not PostgreSQL
        raise BadInput(str(exc)) from None
    return ScrapeCounts(settings.database_url or "")


def retry_failed_jobs(config: FreshnessSettings, settings: Settings, source: str | None = None) -> int:
    """Queue again the failed index jobs (of ``source`` only, when given); returns how many.
    Raises ``BadInput`` without the index queue, and for a ``source`` that is neither a
    configured repo or space nor has jobs in the queue (a typo would else say "no failed job")."""
    if config.index_queue != "procrastinate":
        raise BadInput("there is no index queue: CODERAG_INDEX_QUEUE is not procrastinate")
    require_queue_extra(config)
    from .freshness.queue import queue_counts, retry_failed

    with _queue(settings) as app:
        if source is not None:
            known = [r.name for r in config.repos] + [s.key for s in (config.confluence.spaces if config.confluence
                                                                        else ())]
            if source not in known and source not in (queue_counts(app).by_source or {}):
                raise BadInput(f"no repo or space named {source!r} (configured: {', '.join(known) or 'none'})")
        return retry_failed(app, source)


def wait_for_queue_database(settings: Settings) -> int | None:
    """``coderag worker`` starting while its PostgreSQL is down: wait for it with the
    backoff of a worker that lost it, one log line per attempt
    (:func:`indexer.freshness.queue.wait_until_reachable`). Returns ``None`` once it
    answers, or the number of the signal (SIGINT, SIGTERM) that stopped the wait."""
    from .freshness.queue import wait_until_reachable

    try:
        return wait_until_reachable(settings.database_url or "")
    except ValueError as exc:  # not PostgreSQL
        raise BadInput(str(exc)) from None


def check_worker_timing(*, heartbeat: float, stalled_after: float) -> None:
    """Raise ``BadInput`` unless a worker's heartbeat interval is shorter than the silence
    after which its jobs count as stalled: else every worker looks dead between two of its
    own heartbeats and its live jobs are queued again, for a second run beside the first."""
    if not heartbeat > 0 or not stalled_after > 0:
        raise BadInput(f"--heartbeat ({heartbeat:g} s) and --stalled-after ({stalled_after:g} s) must be positive")
    if heartbeat >= stalled_after:
        raise BadInput(f"--heartbeat ({heartbeat:g} s) must be shorter than --stalled-after ({stalled_after:g} s): "
                       f"live jobs would be queued again as stalled (keep heartbeats at most a third of it)")


def require_queue_extra(config: FreshnessSettings) -> None:
    """With the index queue on (``CODERAG_INDEX_QUEUE=procrastinate``), raise ``BadInput``
    (one line naming the pip extra, exit 2) unless its packages are installed: every queue
    command calls this before it opens anything."""
    if config.index_queue == "procrastinate":
        from .freshness.queue_extra import require_queue_extra as require

        require()


def check_worker_setup(config: FreshnessSettings, settings: Settings) -> None:
    """Raise ``BadInput`` (one line, before any connection) unless ``coderag worker`` can
    run with these settings: the index queue on (``CODERAG_INDEX_QUEUE=procrastinate``), a
    PostgreSQL ``CODERAG_DATABASE_URL`` and a ``WEAVIATE_URL``: an embedded Weaviate is
    private to its process, so each worker would write an index of its own that nothing
    else reads."""
    if config.index_queue != "procrastinate":
        raise BadInput("coderag worker needs the index queue: set CODERAG_INDEX_QUEUE=procrastinate and a "
                       "PostgreSQL CODERAG_DATABASE_URL")
    require_queue_extra(config)
    from .freshness.queue import conninfo

    try:
        conninfo(settings.database_url or "")
    except ValueError as exc:  # not PostgreSQL
        raise BadInput(str(exc)) from None
    if not settings.weaviate_url:
        raise BadInput("coderag worker needs a shared Weaviate: set WEAVIATE_URL (without it each worker would "
                       "start an embedded Weaviate of its own and write an index nothing else reads)")


def run_index_worker(config: FreshnessSettings, settings: Settings, *, concurrency: int = 1, name: str | None = None,
                     stalled_after: float = 60.0, heartbeat: float = 10.0, keep_jobs: bool = False,
                     keep_finished_hours: int = 168) -> int | None:
    """``coderag worker``: run index jobs from the queue until SIGINT/SIGTERM (see
    :func:`indexer.freshness.queue.run_worker`); returns the number of the signal that
    stopped it. Raises ``BadInput`` when the settings cannot run a worker
    (:func:`check_worker_setup`)."""
    check_worker_timing(heartbeat=heartbeat, stalled_after=stalled_after)
    check_worker_setup(config, settings)
    from .freshness.queue import check_reachable, run_worker
    from .freshness.runtime import FreshnessRuntime

    check_reachable(settings.database_url or "")  # before Weaviate and the model load
    # this process runs the jobs: its runtime indexes in-process (it queues nothing itself)
    runtime = FreshnessRuntime.build(config.model_copy(update={"index_queue": "threads"}), settings)
    try:
        return run_worker(runtime, settings.database_url or "", concurrency=concurrency, name=name,
                          stalled_after=stalled_after, heartbeat=heartbeat, keep_jobs=keep_jobs,
                          keep_finished_hours=keep_finished_hours, retry_first_wait=config.queue_retry_seconds)
    finally:
        runtime.stop()


def reindex_recorded(name: str, *, settings: Settings, store, sessions, embedder_factory) -> str | None:
    """Rebuild source ``name`` at the commit its record names, from its recorded checkout
    (``doctor --repair``: damage is repaired by restoring what is missing, never by
    shrinking the record). Call it holding the source's index lock. Returns ``None`` on
    success, else why it could not (no checkout, the commit is gone, not a Git source)."""
    import subprocess

    from .knowledge import subscribers
    from .pipeline import IndexingPipeline
    from .sources import git
    from .sources.repository import index_commit

    rec = store.sources.get(name)
    if rec is None:
        return "no source record"
    if rec.base:
        return _reindex_ref(rec, settings=settings, store=store, sessions=sessions,
                            embedder_factory=embedder_factory)
    root, commit = str(rec.root or ""), str(rec.commit or "")
    if (rec.kind or "git") != "git" or not root or not commit:
        return "not a Git source with a recorded checkout and commit"
    if not Path(root).is_dir() or subprocess.run(["git", "-C", root, "cat-file", "-e", f"{commit}^{{commit}}"],
                                                 capture_output=True).returncode != 0:
        return f"commit {commit[:7]} is not in {root} any more"
    pipeline = IndexingPipeline(settings=settings, store=store, sessions=sessions, embedder=embedder_factory(),
                                subscribers=subscribers())
    links: list[str] = []
    files = git.list_files(Path(root), commit, symlinks=links)
    index_commit(pipeline, Path(root), commit, name, files=files, symlinks=links,
                 url_template=str(rec.url_template or ""))
    return None


def _reindex_ref(rec, *, settings: Settings, store, sessions, embedder_factory) -> str | None:
    """:func:`reindex_recorded` of a ref source: a full run at its recorded commit against
    its base's committed commit (call it holding the base repository's index lock)."""
    import subprocess

    from .knowledge import subscribers
    from .pipeline import IndexingPipeline
    from .sources.refs import RefTarget, index_ref

    base = store.sources.get(rec.base)
    root, commit = str(rec.root or ""), str(rec.commit or "")
    if base is None or not base.commit:
        return f"its base {rec.base} is not indexed"
    if not root or not Path(root).is_dir() or subprocess.run(
            ["git", "-C", root, "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True).returncode != 0:
        return f"commit {commit[:7]} is not in {root or 'its checkout'} any more"
    pipeline = IndexingPipeline(settings=settings, store=store, sessions=sessions, embedder=embedder_factory(),
                                subscribers=subscribers())
    index_ref(pipeline, root, base, RefTarget(rec.ref, commit), against=[base.commit],
              url_template=str(rec.url_template or ""), force_full=True)
    return None
