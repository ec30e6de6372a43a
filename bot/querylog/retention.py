"""Retention (on by default: :data:`DEFAULT_RETENTION_DAYS`, 90): after
``CODERAG_RETENTION_DAYS`` days the question and answer text of a
query (and the free-text comment of its votes) is deleted; the rows stay, so volumes,
latencies, tokens, cost, no-coverage flags, chunks and votes keep counting in ``stats``.

``coderag db prune`` runs :func:`prune` once. ``coderag serve`` runs it daily through the
freshness scheduler (:func:`retention_job_provider`, a job in the persistent job store);
:func:`schedule_retention` adds it to any other APScheduler scheduler.
"""
from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

from sqlalchemy import or_, select, update
from sqlalchemy.orm import sessionmaker

from common.settings import QueryLogSettings

from .models import Feedback, Query

log = logging.getLogger(__name__)
JOB_ID = "coderag-querylog-retention"


# The default (:class:`common.settings.QueryLogSettings`, which explains the choice).
DEFAULT_RETENTION_DAYS: int = QueryLogSettings.model_fields["retention_days"].default


def prune(sessions: sessionmaker, days: int, *, now: datetime | None = None) -> dict:
    """Blank the text of queries created more than ``days`` days before ``now`` (UTC).

    Sets ``question``, ``answer`` to NULL and ``redacted_at`` to ``now`` on those
    queries, and NULLs the ``comment`` of votes on them (and of unlinked votes older than
    the cutoff). One transaction. Returns ``{"cutoff": iso, "queries": n, "comments": m}``
    (rows changed). Raises ``ValueError`` when ``days < 1``.
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")
    now = now or datetime.now(timezone.utc)
    cutoff = now - timedelta(days=days)
    with sessions() as session, session.begin():
        old = select(Query.id).where(Query.created_at < cutoff)
        n_q = session.execute(
            update(Query).where(Query.created_at < cutoff,
                                or_(Query.question.is_not(None), Query.answer.is_not(None)))
            .values(question=None, answer=None, redacted_at=now)
            .execution_options(synchronize_session=False)).rowcount or 0
        n_c = session.execute(
            update(Feedback).where(Feedback.comment.is_not(None),
                                   or_(Feedback.query_id.in_(old),
                                       (Feedback.query_id.is_(None)) & (Feedback.created_at < cutoff)))
            .values(comment=None).execution_options(synchronize_session=False)).rowcount or 0
    log.info("retention: blanked %d queries and %d comments older than %s", n_q, n_c, cutoff.isoformat())
    return {"cutoff": cutoff.isoformat(), "queries": n_q, "comments": n_c}


def schedule_retention(scheduler, sessions: sessionmaker, days: int, *, hour: int = 3, minute: int = 17):
    """Add a daily :func:`prune` job to ``scheduler`` (any APScheduler 3.x scheduler,
    started or not) at ``hour:minute`` in the scheduler's time zone; returns the ``Job``.

    The job id is :data:`JOB_ID` (re-adding replaces it); misfires within an hour still
    run, missed runs coalesce into one. Errors inside the job are logged, never raised.
    Raises ``ValueError`` when ``days < 1``.
    """
    if days < 1:
        raise ValueError(f"days must be >= 1, got {days}")

    def job() -> None:
        try:
            prune(sessions, days)
        except Exception:
            log.exception("query-log retention failed")

    return scheduler.add_job(job, "cron", hour=hour, minute=minute, id=JOB_ID, name="query-log retention",
                             replace_existing=True, coalesce=True, max_instances=1, misfire_grace_time=3600)


RETENTION_PERIOD_S = 24 * 3600
FIRST_RUN_DELAY_S = 60  # after a (re)start: pruning is idempotent, and a bot restarted
# more often than daily would otherwise never reach its 24 h mark


def run_retention(days: int) -> None:
    """Job body for the persistent job store (referenced as
    ``"bot.querylog.retention:run_retention"``, so it pickles): :func:`prune` on the
    database of the process's freshness runtime, else the configured one. Errors are
    logged, never raised (the next run retries)."""
    try:
        from indexer import current_runtime as current

        rt = current()
        if rt is not None:
            sessions = rt.ctx.sessions
        else:
            from common.db import open_database
            from common.settings import installed

            sessions = open_database(installed().core, migrate=False)
        prune(sessions, days)
    except Exception:
        log.exception("query-log retention failed")


def retention_job_provider(days: int | None):
    """A :meth:`indexer.freshness.scheduler.FreshnessScheduler.on_start` callback: adds (or
    replaces) the daily retention job, first run :data:`FIRST_RUN_DELAY_S` after start;
    with ``days=None`` (retention off) it removes a job left by an earlier configuration."""

    def provider(sched) -> None:
        if days is None:
            if sched.scheduler.get_job(JOB_ID) is not None:
                sched.scheduler.remove_job(JOB_ID)
            return
        sched.add_job(JOB_ID, run_retention, seconds=RETENTION_PERIOD_S, args=(days,),
                      first_run=datetime.now(timezone.utc) + timedelta(seconds=FIRST_RUN_DELAY_S))

    return provider
