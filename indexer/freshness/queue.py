"""Index jobs on procrastinate, the PostgreSQL task queue: any number of ``coderag worker``
processes on any number of machines share the indexing of every repository.

Where the deployment runs PostgreSQL (``CODERAG_DATABASE_URL=postgresql+psycopg://…``) and
``CODERAG_INDEX_QUEUE=procrastinate``, webhooks, the scheduler's safety and TTL jobs and
``coderag sync`` only *enqueue* (:class:`QueuedRepoWorkers`, the same interface as the
in-process :class:`~.worker.RepoWorkers`); ``coderag worker`` (:func:`run_worker`) runs the
jobs. The embedded default (SQLite) never imports this module.

What the library does for us, named so it is not rebuilt here:

* **one run per repository at a time**: every job of a repository carries the
  procrastinate *lock* ``repo:<name>``; jobs sharing a lock run one after another, on any
  worker;
* **a push while a run is queued adds nothing**: the *queueing lock* ``repo:<name>``
  refuses a second waiting job (``AlreadyEnqueued``); the waiting job syncs to the branch
  head when it starts, so it covers every push made before then. A push during a run is
  queued (one more run follows), so no push is lost. A full request (``coderag sync
  --full``) makes the waiting run full (:func:`queue_repo`) instead of being refused;
* **transient errors are retried** (:data:`RETRY`: Weaviate or the embedding API briefly
  down, a git fetch that failed, the repository's SQL index lock held by a ``coderag index`` run), with exponential
  backoff; any other error fails the job at once, and its text (secrets masked) is kept as
  the repository's last error (``coderag status``), retried with ``coderag sync retry``;
* **a worker killed mid-job**: workers send heartbeats; :func:`retry_stalled_jobs` (a
  periodic task every worker schedules, run once per tick) puts the jobs of a worker silent
  for :data:`STALLED_AFTER_S` back in the queue, for another worker (or, when a run of
  the same source is already waiting, ends the stalled one: the waiting run does its work).
  The periodic tasks have a queue of their own, :data:`UPKEEP_QUEUE`, which every worker
  process runs in a slot of its own (:func:`run_worker`): never behind an index job, so a
  killed worker's repository is free again within a tick of the stalled threshold, however
  long the other indexes take;
* **the database restarted**: procrastinate stops a worker whose listener or heartbeat
  loses its connection; :func:`run_worker` then tries the database with backoff and starts
  its workers again once it answers (procrastinate's listener reconnects by itself only
  while the database answers).

What is ours: **a run that keeps going through a database outage longer than the stalled
threshold (it touches no database meanwhile, e.g. while embedding) runs once.** A run that
needs the database during the outage fails (a transient error) and, its end unwritable, is
queued again by the stalled check after the restart and runs from the start: the retry
policy, not a duplicate of a live run. The worker's heartbeats lapse during such an outage while its job
runs on (the process is alive), so procrastinate's stalled-job check alone would queue the
job again and a second worker would repeat the run. Each run of an index job therefore
keeps a row of its own in ``coderag_job_runs`` (:class:`_JobRun`): the job's id, a fresh
*run token*, a heartbeat of the run itself (``beat_at``, written by a thread of the run
every heartbeat, independent of procrastinate's worker loop, and resumed as soon as the
database answers again), the stalled threshold of its worker (``alive_s``) and, once it
ends, its outcome. All times are the database's ``now()``, so the rule holds across
machines whatever their clocks:

* a run is *alive* while it has not ended and its beat is younger than its ``alive_s``;
* :func:`retry_stalled_jobs` never queues again a job whose run is alive, and finishes as
  succeeded a job whose run succeeded but whose worker could not record it;
* a copy queued in the instant before the run's first beat after an outage starts, finds
  the run alive and waits for it, then finds it succeeded and ends as a no-op (or, the run
  failed or died, does the work itself); the claim of a run is a compare-and-swap on the
  token, so two copies never both run;
* a run's late end never finishes the job under another worker that took it meanwhile
  (:class:`_GuardedJobManager`), and a job's end that cannot be recorded (the database is
  down) is one log line, not an unretrieved asyncio task exception;
* the counts (``coderag status``, ``/metrics``, ``/readyz``) count a job whose run is alive
  as running, whatever procrastinate's row says.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import procrastinate
from procrastinate import RetryStrategy
from procrastinate.retry import RetryDecision
from procrastinate.exceptions import AlreadyEnqueued
from procrastinate.manager import JobManager

from sqlalchemy.exc import OperationalError as SQLOperationalError

from common.errors import EmbeddingUnavailable, WeaviateUnavailable
from common.redact import redact_text

from common.settings import FreshnessSettings
from ..sources.mirror import MirrorError
from ..sources.repository import sync_repo
from ..store import sync_state as state
from ..store.repo_lock import RepoIndexBusy

log = logging.getLogger(__name__)
#: What a running worker says of itself (a stop signal, a lost database): at INFO and above
#: whatever the root level, as procrastinate's worker logger (:func:`run_worker`).
worker_log = logging.getLogger(f"{__name__}.worker")

#: The procrastinate queue of index jobs.
QUEUE = "coderag-index"
#: The queue of the periodic upkeep tasks (:func:`retry_stalled_jobs`): each worker process
#: runs it with a concurrency slot of its own, so it never waits behind an index job.
UPKEEP_QUEUE = "coderag-upkeep"
#: Seconds without a worker heartbeat after which that worker's jobs are re-queued.
STALLED_AFTER_S = 60.0
#: Seconds between a worker's heartbeats (well under :data:`STALLED_AFTER_S`).
HEARTBEAT_S = 10.0
#: Hours a finished job (succeeded, failed, aborted, cancelled) and its events are kept
#: before :func:`prune_finished_jobs` deletes them (``coderag worker --keep-finished-hours``).
KEEP_FINISHED_HOURS = 168


#: Seconds before the first retry of a transiently failed job; each later retry waits twice
#: the one before (``CODERAG_QUEUE_RETRY_SECONDS``, given to :func:`run_worker`).
RETRY_FIRST_WAIT_S = 2.0


class _TransientRetry(RetryStrategy):
    """procrastinate's :class:`~procrastinate.RetryStrategy` (which errors, how many
    attempts), except that an error marked ``permanent`` (a branch missing from its
    repository) fails at once, and that the waits come from this worker's setting: the
    first retry after ``CODERAG_QUEUE_RETRY_SECONDS``, each later one after twice the one
    before."""

    def get_retry_decision(self, *, exception, job):
        if getattr(exception, "permanent", False):
            return None
        decision = super().get_retry_decision(exception=exception, job=job)
        if decision is None:
            return None
        return RetryDecision(retry_in={"seconds": _retry_first_wait * 2 ** (job.attempts or 0)})


#: Transient failures: retried 5 times, waiting 2, 4, 8, 16, 32 seconds by default
#: (:data:`RETRY_FIRST_WAIT_S`). ``MirrorError``: a git clone or fetch that failed (the
#: Git host or the network briefly down), except a missing branch, which no retry brings back.
#: SQLAlchemy's ``OperationalError``: the database went away under the run (restarted).
RETRY = _TransientRetry(max_attempts=5,
                        retry_exceptions={WeaviateUnavailable, EmbeddingUnavailable, RepoIndexBusy, MirrorError,
                                          ConnectionError, TimeoutError, SQLOperationalError})

_runtime = None  # the worker process's FreshnessRuntime (set by run_worker)
_stalled_after = STALLED_AFTER_S
_heartbeat = HEARTBEAT_S
_keep_finished_hours = KEEP_FINISHED_HOURS
_retry_first_wait = RETRY_FIRST_WAIT_S


def lock_of(repo: str) -> str:
    """The procrastinate lock and queueing lock of repository ``repo``'s jobs."""
    return f"repo:{repo}"


def index_repo(context, repo: str, full: bool = False) -> None:
    """Bring ``repo`` to the head of its branch (:func:`indexer.sources.repository.sync_repo`);
    on failure record the error (redacted) as the repository's last error, then re-raise
    so procrastinate retries or fails the job. ``context``: procrastinate's job context (the
    job's id: an earlier run of the same job that already succeeded makes this one a no-op,
    :func:`_run_once`)."""
    rt = _require_runtime()

    def work() -> None:
        try:
            sync_repo(rt.ctx, rt.config.repo(repo), force_full=full)
        except Exception as exc:
            state.record_error(rt.ctx.sessions, repo, "git", redact_text(f"{type(exc).__name__}: {exc}"))
            raise

    _run_once(context, repo, work)


def sync_space(context, key: str, reconcile: bool | None = None) -> None:
    """One Confluence sync of space ``key`` (the TTL job), on a worker, once per job
    (:func:`_run_once`)."""
    rt = _require_runtime()
    _run_once(context, key, lambda: rt.sync_confluence(key, reconcile=reconcile, here=True))


#: The runs of index jobs (see the module's docstring): one row per job, the latest run's.
_RUNS_DDL = ("CREATE TABLE IF NOT EXISTS coderag_job_runs (job_id bigint PRIMARY KEY, token uuid NOT NULL, "
             "source text, worker text, alive_s double precision NOT NULL, "
             "started_at timestamptz NOT NULL DEFAULT now(), "
             "beat_at timestamptz NOT NULL DEFAULT now(), ended_at timestamptz, outcome text)")
#: SQL condition: run ``r`` is alive (not ended, beat younger than its worker's stalled threshold).
_ALIVE = "(r.ended_at IS NULL AND r.beat_at > now() - r.alive_s * interval '1 second')"


class _JobRun:
    """One run of index job ``job_id`` in ``coderag_job_runs`` (module docstring): claimed
    with a fresh token (:meth:`claim`), kept alive by a thread of its own every
    ``beat_s`` seconds, ended with its outcome (:meth:`end`). One connection of the run's
    own (connect and statement timeouts of 5 s, opened again after a failure), so a beat is
    written as soon as the database answers, whatever state procrastinate's worker is in. Database
    errors of :meth:`claim` are raised as ``ConnectionError`` (a transient error: the job
    is retried, :data:`RETRY`)."""

    def __init__(self, conninfo: str, job_id: int, worker: str, *, beat_s: float, alive_s: float,
                 source: str | None = None):
        import threading
        import uuid

        self.conninfo, self.job_id, self.worker, self.source = conninfo, job_id, worker, source
        self.beat_s, self.alive_s = beat_s, alive_s
        self.token = str(uuid.uuid4())
        self._conn = None  # one connection per run (claim, beats, end), never shared between runs
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._beats: threading.Thread | None = None

    def _execute(self, sql: str, **params) -> list[tuple]:
        """Run ``sql`` on the run's connection (opened on first use, opened again after a
        failure: the database may have restarted); raises the driver's error."""
        import psycopg

        from common.db import libpq_limits

        with self._lock:
            try:
                if self._conn is None or self._conn.closed:
                    self._conn = psycopg.connect(self.conninfo, autocommit=True, **libpq_limits(5, 5))
                cur = self._conn.execute(sql, params)
                return cur.fetchall() if cur.description else []
            except psycopg.Error:
                self._close()
                raise

    def _close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 - a dead connection: nothing to close cleanly
                pass
            self._conn = None

    def claim(self) -> bool:
        """Make this the job's run: ``True`` to do the work, ``False`` when an earlier run
        of the job already succeeded (nothing to do). While an earlier run is alive, waits
        for it to end (or die)."""
        import time

        import psycopg

        waited = False
        try:
            while True:
                rows = self._execute(f"SELECT r.token::text, r.outcome, {_ALIVE} FROM coderag_job_runs r "
                                     "WHERE r.job_id = %(job)s", job=self.job_id)
                seen, outcome, alive = rows[0] if rows else (None, None, False)
                if outcome == "succeeded":
                    with self._lock:
                        self._close()
                    return False
                if alive:
                    if not waited:
                        log.info("job %s: an earlier run of this job is still running (its worker lost the "
                                 "database for a while); waiting for its end", self.job_id)
                        waited = True
                    time.sleep(self.beat_s)
                    continue
                claimed = self._execute(
                    "INSERT INTO coderag_job_runs AS r (job_id, token, source, worker, alive_s) "
                    "VALUES (%(job)s, %(token)s, %(source)s, %(worker)s, %(alive)s) ON CONFLICT (job_id) DO UPDATE "
                    "SET token = EXCLUDED.token, source = EXCLUDED.source, worker = EXCLUDED.worker, "
                    "alive_s = EXCLUDED.alive_s, "
                    "started_at = now(), beat_at = now(), ended_at = NULL, outcome = NULL "
                    "WHERE r.token::text IS NOT DISTINCT FROM %(seen)s RETURNING r.job_id",
                    job=self.job_id, token=self.token, source=self.source, worker=self.worker, alive=self.alive_s,
                    seen=seen)
                if claimed:
                    break  # else another copy claimed it meanwhile: look again
        except psycopg.Error as exc:
            raise ConnectionError(f"the index queue's database: {_one_line(exc)}") from None
        except BaseException:
            with self._lock:
                self._close()
            raise
        import threading

        self._beats = threading.Thread(target=self._beat, name=f"coderag-run-{self.job_id}", daemon=True)
        self._beats.start()
        return True

    def _beat(self) -> None:
        while not self._done.wait(self.beat_s):
            try:
                self._execute("UPDATE coderag_job_runs SET beat_at = now() WHERE job_id = %(job)s "
                              "AND token = %(token)s", job=self.job_id, token=self.token)
            except Exception as exc:  # noqa: BLE001 - the database is away: the next beat tries again
                log.debug("job %s: run heartbeat not written: %s", self.job_id, _one_line(exc))

    def end(self, outcome: str) -> None:
        """Record the run's ``outcome`` (``succeeded`` or ``failed``) and stop its beats;
        tried every ``beat_s`` seconds while the run would still count as alive (the
        database may be away), then given up in one log line (the job is then run again)."""
        import time

        self._done.set()
        deadline = time.monotonic() + self.alive_s
        while True:
            try:
                self._execute("UPDATE coderag_job_runs SET ended_at = now(), outcome = %(outcome)s "
                              "WHERE job_id = %(job)s AND token = %(token)s", job=self.job_id, token=self.token,
                              outcome=outcome)
                with self._lock:
                    self._close()
                return
            except Exception as exc:  # noqa: BLE001 - the database is away
                if time.monotonic() + self.beat_s > deadline:
                    log.warning("job %s: the end of its run (%s) could not be recorded: %s", self.job_id, outcome,
                                _one_line(exc))
                    with self._lock:
                        self._close()
                    return
                time.sleep(self.beat_s)


def _run_once(context, source: str, work) -> None:
    """Run ``work()`` as the run of ``context.job`` (:class:`_JobRun`); a no-op, said in
    one log line, when an earlier run of the same job already succeeded."""
    run = _JobRun(context.app.coderag_conninfo, context.job.id, context.worker_name or "worker",
                  beat_s=_heartbeat, alive_s=_stalled_after, source=source)
    if not run.claim():
        log.info("%s: job %s was already done by an earlier run of it (queued again while that run's worker "
                 "could not reach the database); nothing to do", source, context.job.id)
        return
    ok = False
    try:
        work()
        ok = True
    finally:
        run.end("succeeded" if ok else "failed")


async def retry_stalled_jobs(context, timestamp: int) -> int:
    """Put back in the queue the jobs of workers silent for the stalled threshold (a
    killed worker's job goes to another worker). Runs every 10 s, once per tick across
    all workers. Returns how many jobs were re-queued."""
    from procrastinate.exceptions import UniqueViolation
    from procrastinate.jobs import Status
    from procrastinate.utils import utcnow

    manager = context.app.job_manager
    for job in await manager.get_stalled_jobs(queue=UPKEEP_QUEUE, seconds_since_heartbeat=_stalled_after):
        # an upkeep task of a killed worker: the next tick runs it again
        await manager.finish_job_by_id_async(job.id, status=Status.ABORTED, delete_job=True)
    stalled = list(await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=_stalled_after))
    runs = {r["job_id"]: r for r in await context.app.connector.execute_query_all_async(
        f"SELECT r.job_id, {_ALIVE} AS alive, r.outcome FROM coderag_job_runs r WHERE r.job_id = ANY(%(ids)s)",
        ids=[j.id for j in stalled])} if stalled else {}
    settled = []
    for job in stalled:
        run = runs.get(job.id) or {}
        if run.get("alive"):  # its worker lost the database, its run did not: never run it twice
            settled.append(job)
        elif run.get("outcome") == "succeeded":  # the run ended well; its worker could not say so
            await manager.finish_job_by_id_async(job.id, status=Status.SUCCEEDED, delete_job=False)
            log.warning("job %s (%s): its run succeeded, but its worker died or lost the database before "
                        "it could say so; finished", job.id, job.task_kwargs)
            settled.append(job)
    stalled = [j for j in stalled if j not in settled]
    for job in stalled:
        try:
            await manager.retry_job_by_id_async(job.id, retry_at=utcnow())
            log.warning("job %s (%s) stalled on a silent worker; queued again", job.id, job.task_kwargs)
        except UniqueViolation:
            # a run of the same source already waits (the queueing lock): it syncs to the
            # head when it starts, so it does this job's work; this one ends as aborted
            # (left "doing", it would hold the source's lock and block that run forever)
            await manager.finish_job_by_id_async(job.id, status=Status.ABORTED, delete_job=False)
            if job.task_kwargs.get("full") and job.queueing_lock:  # the waiting run does its full work
                await context.app.connector.execute_query_all_async(_MAKE_FULL_SQL, lock=job.queueing_lock)
            log.warning("job %s (%s) stalled on a silent worker; the run already waiting replaces it", job.id,
                        job.task_kwargs)
    return len(stalled)


async def prune_finished_jobs(context, timestamp: int) -> None:
    """Delete the jobs of both queues that finished (succeeded, failed, aborted, cancelled)
    more than the retention ago (``--keep-finished-hours``, default
    :data:`KEEP_FINISHED_HOURS`), with their events, so the tables do not grow for ever.
    A failed source keeps its last error in ``coderag status`` (the sync state); the
    scheduler's safety re-fetch queues it again long before. Runs hourly on
    :data:`UPKEEP_QUEUE` (procrastinate's ``JobManager.delete_old_jobs``)."""
    for queue in (QUEUE, UPKEEP_QUEUE):
        await context.app.job_manager.delete_old_jobs(nb_hours=int(_keep_finished_hours), queue=queue,
                                                      include_failed=True, include_cancelled=True,
                                                      include_aborted=True)
    # the runs of jobs that are gone (a successful job is deleted at once), after the same retention
    await context.app.connector.execute_query_async(
        "DELETE FROM coderag_job_runs r WHERE r.ended_at < now() - %(hours)s * interval '1 hour' "
        "AND NOT EXISTS (SELECT 1 FROM procrastinate_jobs j WHERE j.id = r.job_id)", hours=int(_keep_finished_hours))


def _require_runtime():
    if _runtime is None:
        raise RuntimeError("index jobs run in `coderag worker` (no freshness runtime in this process)")
    return _runtime


def conninfo(database_url: str) -> str:
    """The libpq connection string of a SQLAlchemy PostgreSQL URL
    (``postgresql+psycopg://u:p@h:5432/db`` -> ``postgresql://u:p@h:5432/db``); raises
    ``ValueError`` for any other database."""
    scheme, sep, rest = database_url.partition("://")
    if not sep or not scheme.split("+")[0] in ("postgresql", "postgres"):
        raise ValueError("the index queue needs PostgreSQL (CODERAG_DATABASE_URL=postgresql+psycopg://...)")
    return f"postgresql://{rest}"


_APPS: dict[str, procrastinate.App] = {}


def make_app(database_url: str) -> procrastinate.App:
    """The procrastinate app of this process on ``database_url`` (PostgreSQL), with the index
    jobs (:func:`index_repo`, :func:`sync_space`, the periodic :func:`retry_stalled_jobs`)
    registered; not opened. One per URL and process."""
    if database_url not in _APPS:
        app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo(database_url)))
        app.job_manager = _GuardedJobManager(app.connector)
        app.coderag_conninfo = conninfo(database_url)  # for ensure_schema's own connection
        app.task(name="coderag:index_repo", queue=QUEUE, retry=RETRY, pass_context=True)(index_repo)
        app.task(name="coderag:sync_space", queue=QUEUE, retry=RETRY, pass_context=True)(sync_space)
        app.periodic(cron="* * * * * */10", periodic_id="stalled")(
            app.task(name="coderag:retry_stalled_jobs", queue=UPKEEP_QUEUE, pass_context=True)(retry_stalled_jobs))
        app.periodic(cron="7 * * * *", periodic_id="retention")(
            app.task(name="coderag:prune_finished_jobs", queue=UPKEEP_QUEUE, pass_context=True)(prune_finished_jobs))
        _APPS[database_url] = app
    return _APPS[database_url]


class _GuardedJobManager(JobManager):
    """procrastinate's job manager, except that a worker ends only a job it still holds:
    a run that outlived an outage of the database ends after its job may have been queued
    again and taken by another worker (procrastinate's ``finish_job`` ends a job in any
    worker's hands, and that worker's own end then fails). An end that cannot be
    recorded (the database is away, or the job was ended meanwhile) is one log line, not an
    exception left in an asyncio task ("Task exception was never retrieved"): the
    stalled-job check settles the job from its run's outcome (:func:`retry_stalled_jobs`)."""

    async def _held_elsewhere(self, job) -> bool:
        rows = await self.connector.execute_query_all_async(
            "SELECT status::text AS status, worker_id FROM procrastinate_jobs WHERE id = %(id)s", id=job.id)
        # (no worker at all: this worker's row was pruned as stalled during the outage; ours to end)
        return (bool(rows) and rows[0]["status"] == "doing" and rows[0]["worker_id"] is not None
                and rows[0]["worker_id"] != job.worker_id)

    async def _guarded(self, what: str, job, end) -> None:
        from procrastinate.exceptions import ConnectorException

        try:
            if job.worker_id is not None and await self._held_elsewhere(job):
                worker_log.warning("job %s: another worker took it while this one could not reach the database; "
                                   "its run here ended, and that worker finds it done", job.id)
                return
            await end()
        except (ConnectorException, OSError) as exc:
            worker_log.warning("job %s: its end (%s) could not be recorded: %s; the stalled-job check settles it",
                               job.id, what, _one_line(exc.__cause__ or exc))

    async def finish_job(self, job, status, delete_job: bool) -> None:
        """End ``job`` with ``status``, if this worker still holds it (see the class)."""
        await self._guarded(str(getattr(status, "value", status)), job,
                            lambda: super(_GuardedJobManager, self).finish_job(job, status=status,
                                                                               delete_job=delete_job))

    async def retry_job(self, job, retry_at=None, priority=None, queue=None, lock=None) -> None:
        """Queue ``job`` again for a retry, if this worker still holds it (see the class;
        the stalled-job check re-queues by id, unguarded)."""
        await self._guarded("retry", job, lambda: super(_GuardedJobManager, self).retry_job(
            job, retry_at=retry_at, priority=priority, queue=queue, lock=lock))


def check_reachable(database_url: str, timeout_s: int = 5) -> None:
    """Raise ``DatabaseError`` (one line, password masked) unless the queue's PostgreSQL
    answers within ``timeout_s`` seconds; opening the app would otherwise wait 30 s and
    end in a pool traceback."""
    import psycopg

    from common.db import DatabaseError
    from common.redact import redact_url

    try:
        psycopg.connect(conninfo(database_url), connect_timeout=timeout_s).close()
    except psycopg.Error as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise DatabaseError(f"cannot reach the index queue's database {redact_url(database_url)}: "
                            f"{redact_text(first)}") from None


def _sql(app: procrastinate.App):
    """The synchronous connector of an app opened with ``app.open()`` (for plain queries)."""
    return app.connector.get_sync_connector()


def ensure_schema(app: procrastinate.App) -> bool:
    """Create procrastinate's tables once (an open ``app``); returns ``True`` when it did.
    Safe when several processes start together: a PostgreSQL advisory lock, taken and
    released on one dedicated connection (a pooled one could release it on another
    connection and leave it held by an idle one, blocking every later start)."""
    import psycopg

    with psycopg.connect(app.coderag_conninfo, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(727274)")
        try:
            present = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]
            if not present:
                app.schema_manager.apply_schema()
            conn.execute(_RUNS_DDL)  # the runs of index jobs (module docstring), also in older queues
            return not present
        finally:
            conn.execute("SELECT pg_advisory_unlock(727274)")


def enqueue_repo(app: procrastinate.App, repo: str, *, full: bool = False) -> int | None:
    """Queue a run of ``repo`` on an open ``app``; returns the job id, or ``None`` when a
    run of ``repo`` is already waiting (it will cover this request). A full request
    (``full``) is never lost behind a waiting incremental run: that run is made full and
    its id returned (:func:`queue_repo`)."""
    return queue_repo(app, repo, full=full).job


#: Make the waiting run of a repository (its queueing lock) a full one; returns its id and
#: whether it was full already.
_MAKE_FULL_SQL = ("UPDATE procrastinate_jobs j SET args = j.args || jsonb_build_object('full', true) "
                  "FROM (SELECT id, coalesce((args->>'full')::boolean, false) AS was_full FROM procrastinate_jobs "
                  "WHERE queueing_lock = %(lock)s AND status = 'todo' AND task_name = 'coderag:index_repo' "
                  "FOR UPDATE) w WHERE j.id = w.id RETURNING j.id, w.was_full")


def queue_repo(app: procrastinate.App, repo: str, *, full: bool = False) -> "Queued":
    """Queue a run of ``repo`` on an open ``app`` and say what became of the request.

    The queueing lock lets one run of a repository wait: while one waits, an incremental
    request adds nothing (the waiting run syncs to the branch head when it starts:
    ``Queued.job`` is ``None``, ``waiting``), and a full request turns the waiting run into
    a full one (``upgraded``; ``job`` is its id), so ``coderag sync --full`` is never
    swallowed. A run already running does not stop a full request: it is queued after it."""
    task = app.tasks["coderag:index_repo"].configure(lock=lock_of(repo), queueing_lock=lock_of(repo))
    for _ in range(5):  # a waiting run may start between the two steps: then queue again
        try:
            return Queued(repo, task.defer(repo=repo, full=full), full=full)
        except AlreadyEnqueued:
            if not full:
                return Queued(repo, None, waiting=True)
        rows = _sql(app).execute_query_all(_MAKE_FULL_SQL, lock=lock_of(repo))
        row = rows[0] if rows else None
        if row:
            log.info("%s: the run waiting as job %s is now a full re-index", repo, row["id"])
            return Queued(repo, row["id"], full=True, waiting=True, upgraded=not row["was_full"])
    raise RuntimeError(f"could not queue a full run of {repo}: its waiting run kept changing")


def enqueue_space(app: procrastinate.App, key: str, *, reconcile: bool | None = None) -> int | None:
    """Queue a sync of Confluence space ``key``; ``None`` when one is already waiting."""
    try:
        return app.tasks["coderag:sync_space"].configure(lock=lock_of(f"confluence:{key}"),
                                                         queueing_lock=lock_of(f"confluence:{key}")).defer(
            key=key, reconcile=reconcile)
    except AlreadyEnqueued:
        return None


@dataclass
class Queued:
    """What ``coderag sync`` did with the index queue: ``job`` is the id of the job that
    will do the work, or ``None`` when an incremental request is covered by a run of
    ``source`` already waiting. ``full``: that job re-indexes every file; ``waiting``: the
    request went to a run that was already waiting; ``upgraded``: that run was incremental
    and this (full) request made it full (:func:`queue_repo`)."""

    source: str
    job: int | None
    full: bool = False
    waiting: bool = False
    upgraded: bool = False

    def to_dict(self) -> dict:
        """The JSON of ``coderag sync --json`` with the index queue."""
        return {"source": self.source, "mode": "queued", "job": self.job, "full": self.full,
                "waiting": self.waiting, "upgraded": self.upgraded}


@dataclass
class QueueCounts:
    """Jobs of the index queue by status, in total and per repository (or space)."""

    todo: int = 0
    doing: int = 0
    failed: int = 0
    by_source: dict | None = None

    def to_dict(self) -> dict:
        return {"todo": self.todo, "doing": self.doing, "failed": self.failed, "by_source": self.by_source or {}}


#: The source a job indexes (a repository or a Confluence space).
_SOURCE = "coalesce(j.args->>'repo', j.args->>'key')"
#: A failed job counts (and is retried) until a later job of its source supersedes it: one
#: that succeeded (its row, or, the row deleted on success, its run's outcome in
#: ``coderag_job_runs``), failed in its turn (that failure counts instead) or was retried
#: (``coderag sync retry``, or a transient error's retry: its events say so). A later run
#: merely queued or running (the scheduler's
#: hourly safety re-fetch) does not: the failure stays visible until a run succeeds.
_LATEST_OF_SOURCE = (f"NOT EXISTS (SELECT 1 FROM procrastinate_jobs k WHERE k.queue_name = j.queue_name "
                     f"AND k.task_name = j.task_name AND coalesce(k.args->>'repo', k.args->>'key') = {_SOURCE} "
                     f"AND k.id > j.id AND (k.status IN ('succeeded', 'failed') OR EXISTS (SELECT 1 FROM "
                     f"procrastinate_events e WHERE e.job_id = k.id "
                     f"AND e.type IN ('retried', 'deferred_for_retry'))))")
#: ... and no later run of its source succeeded (its job deleted on success).
_NO_LATER_SUCCESS = (f"NOT EXISTS (SELECT 1 FROM coderag_job_runs s WHERE s.source = {_SOURCE} "
                     f"AND s.job_id > j.id AND s.outcome = 'succeeded')")
_INDEX_TASKS = "j.task_name IN ('coderag:index_repo', 'coderag:sync_space')"
_COUNTS_SQL = ("SELECT j.args->>'repo' AS repo, j.args->>'key' AS space, {status} AS status, count(*) AS n "
               f"FROM procrastinate_jobs j WHERE j.queue_name = %(queue)s AND {_INDEX_TASKS} "
               f"AND (j.status IN ('todo', 'doing') OR (j.status = 'failed' AND {_LATEST_OF_SOURCE}{{later}})) "
               "GROUP BY 1, 2, 3")
#: A job whose run is alive counts as running, whatever its row says (queued again while
#: its worker could not reach the database: see the module's docstring).
_STATUS_WITH_RUNS = (f"CASE WHEN j.status = 'todo' AND EXISTS (SELECT 1 FROM coderag_job_runs r WHERE "
                     f"r.job_id = j.id AND {_ALIVE}) THEN 'doing' ELSE j.status::text END")


def queue_counts(target: procrastinate.App | str, timeout_s: float = 5) -> QueueCounts:
    """Queue depth (``todo``), running (``doing``: also a queued job whose run is alive,
    :class:`_JobRun`) and failed index jobs (the periodic tasks are not counted), also per
    repository or space (``{"<name>": {"todo": n,
    "doing": n, "failed": n}}``). ``target``: an app of :func:`make_app` (open or not) or
    a database URL. Read over one plain psycopg connection of its own, so it works in
    any process whatever the state of the app (a ``coderag worker`` runs its app
    asynchronously: reopening it to count failed, and its ``/metrics`` answered 500);
    zeros before the queue's tables exist. ``timeout_s`` bounds the connection (at least
    2 s, libpq's minimum) and each statement (PostgreSQL's ``statement_timeout``)."""
    import psycopg
    from psycopg.rows import dict_row

    from common.db import libpq_limits

    info = target.coderag_conninfo if isinstance(target, procrastinate.App) else conninfo(target)
    out = QueueCounts(by_source={})
    with psycopg.connect(info, autocommit=True, row_factory=dict_row, **libpq_limits(timeout_s, timeout_s)) as conn:
        present = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL AS jobs, "
                               "to_regclass('coderag_job_runs') IS NOT NULL AS runs").fetchone()
        if not present["jobs"]:
            return out
        status, later = (_STATUS_WITH_RUNS, f" AND {_NO_LATER_SUCCESS}") if present["runs"] else ("j.status::text", "")
        rows = conn.execute(_COUNTS_SQL.format(status=status, later=later), {"queue": QUEUE}).fetchall()
    for r in rows:
        setattr(out, r["status"], getattr(out, r["status"]) + r["n"])
        name = r["repo"] or r["space"]
        if name:
            out.by_source.setdefault(name, {"todo": 0, "doing": 0, "failed": 0})[r["status"]] += r["n"]
    return out


#: Seconds a ``/metrics`` scrape waits for the queue's counts (connection and query).
SCRAPE_TIMEOUT_S = 2.0


class QueueUnavailable(Exception):
    """The index queue's counts could not be read in time (:class:`ScrapeCounts`)."""


class ScrapeCounts:
    """The index queue's counts (:func:`queue_counts`, as a dict) for ``/metrics`` and
    ``/readyz``: never blocks a scrape for long when PostgreSQL hangs. The read runs in a
    thread of its own with short connect and statement timeouts (``timeout_s``); a server
    that does not answer at all (a frozen host) is given up after the same time, and
    :class:`QueueUnavailable` is raised (the metrics then say the queue is unavailable),
    the read left to end in its thread, never two in flight. One read serves every gauge of
    a scrape: its outcome is kept ``max_age_s`` seconds. ``target``: as for
    :func:`queue_counts`."""

    def __init__(self, target: procrastinate.App | str, *, timeout_s: float = SCRAPE_TIMEOUT_S,
                 max_age_s: float = 1.0):
        import threading

        self.target, self.timeout_s, self.max_age_s = target, timeout_s, max_age_s
        self._lock = threading.Lock()
        self._kept: tuple[float, dict] | None = None  # (when, {"value"} or {"error"})
        self._in_flight: tuple | None = None  # (done event, outcome box) of the read under way

    def __call__(self) -> dict:
        """``{"todo", "doing", "failed", "by_source"}``; raises :class:`QueueUnavailable`
        or the read's own error."""
        import threading
        import time

        with self._lock:
            if self._kept is not None and time.monotonic() - self._kept[0] < self.max_age_s:
                outcome = self._kept[1]
            else:
                if self._in_flight is None:
                    done, box = threading.Event(), {}

                    def read() -> None:
                        try:
                            box["value"] = queue_counts(self.target, timeout_s=self.timeout_s).to_dict()
                        except Exception as exc:  # noqa: BLE001 - handed to the caller
                            box["error"] = exc
                        finally:
                            done.set()

                    threading.Thread(target=read, name="coderag-queue-counts", daemon=True).start()
                    self._in_flight = (done, box)
                done, box = self._in_flight
                if done.wait(self.timeout_s + 0.5):
                    self._in_flight, outcome = None, box
                else:
                    outcome = {"error": QueueUnavailable(f"the index queue's database did not answer within "
                                                         f"{self.timeout_s:g} s")}
                self._kept = (time.monotonic(), outcome)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]


def retry_failed(app: procrastinate.App, source: str | None = None) -> int:
    """Queue again the failed index jobs (of ``source`` only, when given); returns how many.

    Only a source's latest failure is retried (an older one is superseded by the later
    run, and one waiting run per source is all the queueing lock allows); one whose source
    has a run waiting already is left (that run does its work). A retried job starts
    afresh: the normal retry policy (:data:`RETRY`, its attempts counted from zero) applies
    to it again, as to a new job (procrastinate's own retry counts on from the exhausted
    attempts, leaving it a single try)."""
    import psycopg

    rows = _sql(app).execute_query_all(
        f"SELECT j.id FROM procrastinate_jobs j WHERE j.queue_name = %(queue)s AND {_INDEX_TASKS} "
        f"AND j.status = 'failed' AND {_LATEST_OF_SOURCE} "
        f"AND (%(source)s::text IS NULL OR {_SOURCE} = %(source)s)",
        queue=QUEUE, source=source)
    retried = 0
    with psycopg.connect(app.coderag_conninfo, connect_timeout=5) as conn:
        for r in rows:
            try:
                with conn.transaction():  # one step: no worker takes it with the old attempts
                    conn.execute("SELECT procrastinate_retry_job_v2(%(id)s, now(), NULL, NULL, NULL)", {"id": r["id"]})
                    conn.execute("UPDATE procrastinate_jobs SET attempts = 0 WHERE id = %(id)s", {"id": r["id"]})
                retried += 1
            except psycopg.errors.UniqueViolation:  # a run of the source was queued meanwhile
                continue
    return retried


class QueuedRepoWorkers:
    """The enqueue side, with the interface of :class:`~.worker.RepoWorkers` (``request``,
    ``pending``, ``stats``, ``stop``): a process that receives webhooks or runs the
    scheduler only defers jobs; ``coderag worker`` processes run them."""

    def __init__(self, app: procrastinate.App, config: FreshnessSettings):
        self.app, self.config = app, config
        self._counts = ScrapeCounts(app)  # bounded: a scrape or /readyz never hangs on PostgreSQL

    def request(self, name: str, reason: str = "") -> None:
        """Queue a run of repo ``name`` (``BadInput`` if it is not configured)."""
        self.config.repo(name)
        job = enqueue_repo(self.app, name)
        log.info("%s: re-index %s (%s)", name, f"queued as job {job}" if job else "already queued",
                 reason or "request")

    def pending(self) -> int:
        """Index jobs waiting in the queue (all workers); :class:`QueueUnavailable` when the
        database does not answer within :data:`SCRAPE_TIMEOUT_S`."""
        return self._counts()["todo"]

    def counts(self) -> dict:
        """Index jobs by status, in total and per source (:func:`queue_counts`, as a dict),
        read as :meth:`pending` is."""
        return self._counts()

    def stats(self, name: str) -> dict:
        """``{"todo", "doing", "failed"}`` jobs of repo ``name``."""
        return (self._counts()["by_source"] or {}).get(name, {"todo": 0, "doing": 0, "failed": 0})

    def stop(self, timeout: float = 30.0) -> None:
        """Nothing runs here: the jobs stay queued for the workers."""


class _JobFailureLines(logging.Filter):
    """On procrastinate's ``procrastinate.worker`` logger: a failed job is one line, its
    error's first line with secrets masked, at WARNING when it will be retried and ERROR
    when it failed for good, instead of procrastinate's 30-line traceback (the traceback
    is logged by this module at DEBUG). The logger is lowered to INFO so retries reach
    the filter (procrastinate logs them at INFO); its other records still pass only at
    the root logger's level."""

    ACTIONS = {"job_error": logging.ERROR, "job_error_retry": logging.WARNING}

    def filter(self, record: logging.LogRecord) -> bool:
        level = self.ACTIONS.get(getattr(record, "action", None))
        if level is None:
            return record.levelno >= logging.getLogger().getEffectiveLevel()
        exc = record.exc_info[1] if record.exc_info else None
        text = record.getMessage()
        if exc is not None:
            if log.isEnabledFor(logging.DEBUG):
                log.debug("traceback of: %s", text, exc_info=record.exc_info)
            # up to 1000 characters: a failed git fetch says why over several of git's lines (MirrorError)
            first = (str(exc).strip().splitlines() or [""])[0][:1000]
            text += f": {type(exc).__name__}" + (f": {first}" if first else "")
        record.msg, record.args = redact_text(text), None
        record.exc_info, record.exc_text = None, None
        record.levelno, record.levelname = level, logging.getLevelName(level)
        return True


def quiet_job_failures() -> None:
    """Install :class:`_JobFailureLines` on procrastinate's worker logger (idempotent)."""
    plog = logging.getLogger("procrastinate.worker")
    if not any(isinstance(f, _JobFailureLines) for f in plog.filters):
        plog.addFilter(_JobFailureLines())
    if plog.getEffectiveLevel() > logging.INFO:
        plog.setLevel(logging.INFO)


class _PoolReconnectNoise(logging.Filter):
    """On ``psycopg.pool``: its "error connecting" warnings (several a second while the
    database is down) go to DEBUG only; the worker says once per attempt whether the
    database answers (:func:`_wait_for_database`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and str(record.msg).startswith("error connecting"):
            return logging.getLogger("psycopg.pool").isEnabledFor(logging.DEBUG)
        return True


def quiet_pool_reconnects() -> None:
    """Install :class:`_PoolReconnectNoise` on psycopg's pool logger (idempotent)."""
    plog = logging.getLogger("psycopg.pool")
    if not any(isinstance(f, _PoolReconnectNoise) for f in plog.filters):
        plog.addFilter(_PoolReconnectNoise())


def run_worker(runtime, database_url: str, *, concurrency: int = 1, name: str | None = None,
               stalled_after: float = STALLED_AFTER_S, heartbeat: float = HEARTBEAT_S, keep_jobs: bool = False,
               keep_finished_hours: int = KEEP_FINISHED_HOURS,
               retry_first_wait: float = RETRY_FIRST_WAIT_S) -> int | None:
    """``coderag worker``: run index jobs until SIGINT/SIGTERM (a job in progress finishes
    first) or :func:`stop_worker`. ``runtime``: this process's
    :class:`~.runtime.FreshnessRuntime` (its pipeline runs the jobs). ``concurrency``: index
    jobs at once in this process (each in a thread); ``stalled_after``/``heartbeat``:
    seconds (see :func:`retry_stalled_jobs`); ``retry_first_wait``: seconds before the first
    retry of a transiently failed job, doubled for each later one (:data:`RETRY`). Finished
    jobs are deleted once successful (``keep_jobs``: kept, with their events); every
    finished job is deleted ``keep_finished_hours`` after it ended
    (:func:`prune_finished_jobs`). Returns the
    number of the signal that stopped it (``None``: :func:`stop_worker`).

    Two procrastinate workers share the process, its event loop and its app: one on
    :data:`QUEUE` with ``concurrency`` slots, one on :data:`UPKEEP_QUEUE` with a slot of
    its own, so the stalled-job check runs every tick even while every index slot is busy
    with a long index.

    A worker that loses its database (PostgreSQL restarted or unreachable: procrastinate
    stops a worker whose listener or heartbeat fails) does not end: it tries the database
    again with backoff (:data:`RECONNECT_WAIT_S`, one log line per attempt) and runs jobs
    again once it answers. A job that was running then is put back in the queue by the
    stalled-job check."""
    if not 0 < heartbeat < stalled_after:  # operations.check_worker_timing says it to a user
        raise ValueError(f"heartbeat ({heartbeat:g} s) must be shorter than stalled_after ({stalled_after:g} s)")
    if not retry_first_wait > 0:
        raise ValueError(f"retry_first_wait ({retry_first_wait:g} s) must be positive")
    global _runtime, _stalled_after, _keep_finished_hours, _retry_first_wait, _heartbeat
    _runtime, _stalled_after, _keep_finished_hours = runtime, stalled_after, keep_finished_hours
    _heartbeat = heartbeat
    _retry_first_wait = retry_first_wait
    quiet_job_failures()
    quiet_pool_reconnects()
    if worker_log.getEffectiveLevel() > logging.INFO:  # what the worker does, as procrastinate's worker says it
        worker_log.setLevel(logging.INFO)
    check_reachable(database_url)
    app = make_app(database_url)
    with app.open():
        ensure_schema(app)
    return asyncio.run(_work(app, concurrency=concurrency, name=name or "worker", heartbeat=heartbeat,
                             stalled_after=stalled_after, delete_jobs="never" if keep_jobs else "successful"))


#: Seconds between two attempts to reach the queue's database after a worker lost it:
#: the first wait, doubled after each failed attempt up to the second.
RECONNECT_WAIT_S = (1.0, 30.0)


class _Stopping:
    """The stop asked of :func:`run_worker` (a signal, or :func:`stop_worker` from any
    thread): ``signum`` is the signal's number (``None`` for :func:`stop_worker`), and
    ``workers`` the procrastinate workers running now, stopped when it is asked."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.event = asyncio.Event()
        self.signum: int | None = None
        self.workers: list = []

    def request(self, signum: int | None = None) -> None:
        """Stop (on the event loop): every worker finishes the job in hand, then ends."""
        if not self.event.is_set():
            self.signum = signum
        self.event.set()
        for worker in list(self.workers):
            worker.stop()


_stopping: _Stopping | None = None  # the running run_worker's (for stop_worker)


def _on_stop_signals(stopping: _Stopping) -> list[int]:
    """SIGINT and SIGTERM ask ``stopping`` to stop, once: the handlers are then removed,
    so a second signal ends the process at once (as procrastinate's own handlers do).
    Only in the main thread (signals are delivered there); returns the signals handled."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return []
    sigs = [signal.SIGINT, signal.SIGTERM]

    def on_signal(signum: int) -> None:
        for s in sigs:
            stopping.loop.remove_signal_handler(s)
        worker_log.info("%s received: stopping after the job in hand (a second one stops at once)",
                 signal.Signals(signum).name)
        stopping.request(signum)

    for s in sigs:
        stopping.loop.add_signal_handler(s, on_signal, s)
    return sigs


async def _work(app: procrastinate.App, *, concurrency: int, name: str, heartbeat: float, stalled_after: float,
                delete_jobs: str) -> int | None:
    """The workers of :func:`run_worker`, run again after each loss of the database until
    a stop is asked; returns the signal that asked it (``None``: :func:`stop_worker`)."""
    global _stopping
    loop = asyncio.get_running_loop()
    stopping = _Stopping(loop)
    _stopping = stopping
    handled = _on_stop_signals(stopping)
    wait = RECONNECT_WAIT_S[0]
    try:
        while not stopping.event.is_set():
            started = loop.time()
            lost = await _run_workers(app, stopping, concurrency=concurrency, name=name, heartbeat=heartbeat,
                                      stalled_after=stalled_after, delete_jobs=delete_jobs)
            if stopping.event.is_set():
                break
            if loop.time() - started > RECONNECT_WAIT_S[1]:  # it ran a while: a new outage, start again
                wait = RECONNECT_WAIT_S[0]
            worker_log.error("index queue: the worker lost its database (%s); reconnecting",
                      _one_line(lost) if lost else "its listener or heartbeat failed")
            wait = await _wait_for_database(app.coderag_conninfo, stopping, wait)
    finally:
        _stopping = None
        for s in handled:
            loop.remove_signal_handler(s)
    return stopping.signum


async def _run_workers(app: procrastinate.App, stopping: _Stopping, *, concurrency: int, name: str,
                       heartbeat: float, stalled_after: float, delete_jobs: str) -> BaseException | None:
    """Run the index and the upkeep worker on a freshly opened app until both have ended:
    when one ends, the other is stopped too. Returns the error one of them (or opening the
    app) ended with, else ``None``."""
    from procrastinate.worker import Worker

    # a retry is not announced (no notification): a worker finds it when it next polls, so
    # poll as often as the first retry wait (within 0.5 to 5 s, procrastinate's default)
    poll = min(5.0, max(0.5, _retry_first_wait))
    common = dict(update_heartbeat_interval=heartbeat, stalled_worker_timeout=stalled_after,
                  fetch_job_polling_interval=poll, install_signal_handlers=False)  # _on_stop_signals stops both
    index = Worker(app, queues=[QUEUE], concurrency=concurrency, name=name, delete_jobs=delete_jobs, **common)
    upkeep = Worker(app, queues=[UPKEEP_QUEUE], concurrency=1, name=f"{name}-upkeep", delete_jobs="successful",
                    **common)
    try:
        async with app.open_async():
            runs = [asyncio.create_task(index.run(), name="coderag-index-worker"),
                    asyncio.create_task(upkeep.run(), name="coderag-upkeep-worker")]
            await asyncio.sleep(0)  # both started: a stop() from now on is not reset by run()
            stopping.workers[:] = [index, upkeep]
            if stopping.event.is_set():  # asked while they were starting
                stopping.request(stopping.signum)
            try:
                await asyncio.wait(runs, return_when=asyncio.FIRST_COMPLETED)
            finally:
                index.stop()
                upkeep.stop()
                ended = await asyncio.gather(*runs, return_exceptions=True)
    except Exception as exc:  # noqa: BLE001 - the database went away while opening or closing
        return exc
    finally:
        stopping.workers.clear()
    return next((e for e in ended if isinstance(e, BaseException)), None)


async def _wait_for_database(conninfo: str, stopping: _Stopping, wait: float) -> float:
    """Try the database every ``wait`` seconds (doubled after each failure, up to
    :data:`RECONNECT_WAIT_S`'s maximum), one log line per attempt, until it answers or a
    stop is asked; returns the next wait."""
    import psycopg

    attempt = 0
    while not stopping.event.is_set():
        try:  # a pause before each attempt: a worker that fails at once never spins
            await asyncio.wait_for(stopping.event.wait(), timeout=wait)
            break
        except asyncio.TimeoutError:
            pass
        attempt += 1
        try:
            conn = await psycopg.AsyncConnection.connect(conninfo, connect_timeout=5)
            await conn.close()
        except (psycopg.Error, OSError) as exc:
            wait = min(wait * 2, RECONNECT_WAIT_S[1])
            worker_log.warning("index queue: database still unreachable (attempt %d: %s); next attempt in %g s",
                        attempt, _one_line(exc), wait)
            continue
        worker_log.warning("index queue: database reachable again (attempt %d); the worker starts again", attempt)
        break
    return wait


def wait_until_reachable(database_url: str) -> int | None:
    """For a worker starting while its database is down (PostgreSQL not up yet, or
    restarting): try it at once, then with the backoff of a worker that lost it
    (:data:`RECONNECT_WAIT_S`, one log line per attempt), until it answers (returns
    ``None``) or SIGINT/SIGTERM comes (returns that signal's number; in the main thread
    only, else it waits on). Raises ``ValueError`` for a URL that is not PostgreSQL."""
    import signal
    import threading

    from common.db import DatabaseError

    conninfo(database_url)  # ValueError before any wait
    if worker_log.getEffectiveLevel() > logging.INFO:  # as run_worker: what the worker does, at INFO
        worker_log.setLevel(logging.INFO)
    stop = threading.Event()
    asked: list[int] = []
    handled = {}
    if threading.current_thread() is threading.main_thread():
        def on_signal(signum, _frame):
            asked.append(signum)
            worker_log.info("%s received while waiting for the database: stopping", signal.Signals(signum).name)
            stop.set()

        for sig in (signal.SIGINT, signal.SIGTERM):
            handled[sig] = signal.signal(sig, on_signal)
    wait, attempt = RECONNECT_WAIT_S[0], 0
    try:
        while not stop.is_set():
            attempt += 1
            try:
                check_reachable(database_url)
            except DatabaseError as exc:
                worker_log.warning("index queue: the database does not answer yet (attempt %d: %s); next attempt "
                                   "in %g s", attempt, exc, wait)
                if stop.wait(wait):
                    break
                wait = min(wait * 2, RECONNECT_WAIT_S[1])
                continue
            if attempt > 1:
                worker_log.warning("index queue: the database answers (attempt %d); the worker starts", attempt)
            return None
    finally:
        for sig, previous in handled.items():
            signal.signal(sig, previous)
    return asked[0] if asked else None


def _one_line(exc: BaseException) -> str:
    """``Type: first line`` of ``exc`` (secrets masked), for a log line."""
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    return redact_text(f"{type(exc).__name__}: {first}" if first else type(exc).__name__)


def stop_worker() -> None:
    """Ask :func:`run_worker` to stop (from any thread), as SIGTERM does."""
    stopping = _stopping
    if stopping is not None:
        try:
            stopping.loop.call_soon_threadsafe(stopping.request)
        except RuntimeError:  # its loop just closed: it has stopped
            pass
