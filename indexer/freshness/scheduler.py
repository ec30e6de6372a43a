"""The scheduler: APScheduler 3.x ``BackgroundScheduler`` with its jobs in SQL.

Jobs (stable ids, ``replace_existing=True``, ``coalesce=True``, ``max_instances=1``):

* ``repo:<name>`` every ``CODERAG_REPO_SAFETY_MINUTES`` (60): queue a re-fetch of the
  repo, catching pushes whose webhook was missed;
* ``confluence:<key>`` every ``ttl_hours`` of the space (``CODERAG_CONFLUENCE_TTL_HOURS``,
  default 24; per space in ``CODERAG_CONFLUENCE_SPACES``, e.g. 168 for 7 days): sync the
  space, first run at ``indexed_at + ttl`` (now if never indexed);
* ``sources:recheck`` every :data:`SOURCES_RECHECK_S`: a source configured since (on the
  admin page: the runtime's configuration reads the database) gets its job, soon after,
  and a removed one loses it; the jobs already there keep their next run;
* whatever :meth:`FreshnessScheduler.on_start` callbacks add (e.g. query-log retention).

**Only one scheduler may run per database.** ``coderag serve`` starts it; a second
``serve`` against the same job store is refused: :class:`SchedulerLock` is a row in
``scheduler_locks`` whose owner refreshes a heartbeat every ``ttl/3`` seconds (default
TTL 60 s). Taking the row is a compare-and-swap ``UPDATE ... WHERE owner = <old> AND
heartbeat_at = <old>`` (or an ``INSERT`` that fails on the primary key), which is
atomic on SQLite and PostgreSQL alike; a lock whose heartbeat is older than its TTL (a
crashed process) is taken over. A scheduler that loses its lock shuts itself down.
Run more ``serve`` replicas with ``CODERAG_SCHEDULER=off`` (webhooks still work there).
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import Callable

from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import inspect, text
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from ..store.sql_lock import SchedulerAlreadyRunning, SchedulerLock  # noqa: F401 (re-exported)
from ..store.sync_state import aware, get_state, utcnow

log = logging.getLogger(__name__)

JOBS_TABLE = "apscheduler_jobs"
JOB_DEFAULTS = {"coalesce": True, "max_instances": 1, "misfire_grace_time": 3600}
#: Seconds between two looks at the configured sources (``sources:recheck``).
SOURCES_RECHECK_S = 60.0

class FreshnessScheduler:
    """A locked ``BackgroundScheduler`` on the coderag database (``sessions``' engine)."""

    def __init__(self, sessions: sessionmaker, *, lock_ttl: float = 60.0):
        self.sessions = sessions
        self.engine = sessions.kw["bind"]
        self.lock = SchedulerLock(sessions, ttl=lock_ttl)
        self.scheduler = BackgroundScheduler(
            jobstores={"default": SQLAlchemyJobStore(engine=self.engine, tablename=JOBS_TABLE)},
            job_defaults=dict(JOB_DEFAULTS), timezone="UTC")
        self._setup: list[Callable[["FreshnessScheduler"], None]] = []
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def add_job(self, job_id: str, func: Callable, *, seconds: float, args: tuple = (),
                first_run: datetime | None = None) -> None:
        """Add or replace an interval job. ``func``: a module-level function (the job store
        keeps its import reference, so it runs in whichever process holds the lock), with
        picklable ``args``; ``seconds``: the period; ``first_run``: when it first fires
        (default: one period from now). Raises ``TypeError`` for anything but a function
        importable by its module and name (a lambda, a method, a string)."""
        if not callable(func) or "<" in getattr(func, "__qualname__", "<"):
            raise TypeError(f"a scheduled job must be a module-level function, not {func!r}")
        kwargs = {"next_run_time": first_run} if first_run is not None else {}
        self.scheduler.add_job(func, "interval", seconds=max(1.0, seconds), args=list(args), id=job_id,
                               name=job_id, replace_existing=True, **kwargs)

    def on_start(self, setup: Callable[["FreshnessScheduler"], None]) -> None:
        """Run ``setup(self)`` right after the scheduler starts (to add jobs)."""
        self._setup.append(setup)

    def start(self) -> None:
        """Take the lock (``SchedulerAlreadyRunning`` otherwise), start, add the jobs."""
        self.lock.acquire()
        try:
            self.scheduler.start()
            for setup in self._setup:
                setup(self)
        except Exception:
            self.lock.release()
            raise
        self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="coderag-scheduler-lock")
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lock.ttl / 3):
            try:
                if not self.lock.heartbeat():
                    log.error("scheduler lock lost to another process; stopping this scheduler")
                    self.scheduler.shutdown(wait=False)
                    return
            except Exception:  # noqa: BLE001 - a database blip must not kill the thread
                log.exception("scheduler heartbeat failed")

    def shutdown(self) -> None:
        """Stop firing jobs and release the lock (jobs stay stored for the next start)."""
        self._stop.set()
        if self.scheduler.running:
            self.scheduler.shutdown(wait=False)
        try:
            self.lock.release()
        except SQLAlchemyError as e:  # the database is down: the lock's TTL frees it instead
            log.warning("scheduler: could not release its lock (the database does not answer: %s); "
                        "it expires after %g s", type(e).__name__, self.lock.ttl)

    def job_ids(self) -> list[str]:
        return [j.id for j in self.scheduler.get_jobs()]

    def recheck(self, runtime) -> None:
        """Bring the source jobs in line with the sources ``runtime`` configures now
        (``sources:recheck``): jobs for sources added since, none for removed ones."""
        before = set(self.job_ids())
        _freshness_jobs(self, runtime, keep_existing=True)
        for added in sorted(set(self.job_ids()) - before):
            log.info("scheduler: %s added (a source configured since it started)", added)

    @classmethod
    def for_runtime(cls, runtime, *, lock_ttl: float = 60.0,
                    recheck_seconds: float = SOURCES_RECHECK_S) -> "FreshnessScheduler":
        """A scheduler with the repo safety jobs and Confluence TTL jobs of ``runtime``,
        brought in line with its configured sources every ``recheck_seconds``."""
        from .jobs import recheck_sources

        sched = cls(runtime.ctx.sessions, lock_ttl=lock_ttl)
        sched.on_start(lambda s: _freshness_jobs(s, runtime))
        sched.on_start(lambda s: s.add_job("sources:recheck", recheck_sources, seconds=recheck_seconds))
        return sched


def _freshness_jobs(sched: FreshnessScheduler, runtime, *, keep_existing: bool = False) -> None:
    """The ``repo:`` and ``confluence:`` jobs of the sources ``runtime`` configures now
    (read once), and none of a source no longer configured. ``keep_existing``: a job
    already there is left as it is (its next run kept), only the missing ones are added."""
    from .jobs import refresh_repo, sync_space

    cfg = runtime.config
    repos, confluence = cfg.repos, cfg.confluence  # one read of a configuration read live
    have = set(sched.job_ids()) if keep_existing else set()
    wanted = set()
    now = utcnow()
    for repo in repos:
        job_id = f"repo:{repo.name}"
        wanted.add(job_id)
        if job_id not in have:
            sched.add_job(job_id, refresh_repo, seconds=cfg.safety_minutes * 60,
                          args=(repo.name,), first_run=now + timedelta(seconds=5))
    for space in (confluence.spaces if confluence else ()):
        job_id = f"confluence:{space.key}"
        wanted.add(job_id)
        if job_id in have:
            continue
        period = space.ttl_hours * 3600
        row = get_state(runtime.ctx.sessions, space.key)
        due = aware(row.indexed_at) + timedelta(seconds=period) if row and row.indexed_at else now
        sched.add_job(job_id, sync_space, seconds=period, args=(space.key,),
                      first_run=max(due, now))
    for job in sched.scheduler.get_jobs():  # sources removed from the configuration
        if job.id.startswith(("repo:", "confluence:")) and job.id not in wanted:
            job.remove()
            log.info("scheduler: %s removed (its source is no longer configured)", job.id)


def next_runs(engine) -> dict[str, datetime]:
    """``{job id: next run (UTC)}`` read straight from the job table (no scheduler needed)."""
    if not inspect(engine).has_table(JOBS_TABLE):
        return {}
    from datetime import timezone

    with engine.connect() as conn:
        rows = conn.execute(text(f"SELECT id, next_run_time FROM {JOBS_TABLE}")).all()
    return {r[0]: datetime.fromtimestamp(r[1], timezone.utc) for r in rows if r[1] is not None}
