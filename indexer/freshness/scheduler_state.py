"""Who runs the re-index scheduler, read from its lock row (for the admin page's health
view): the owner (``host:pid:id``), its last heartbeat, and whether that heartbeat is
recent enough for the lock to count as held."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from ..store.sql_models import SchedulerLock as LockRow
from ..store.sync_state import aware, utcnow

#: The scheduler's lock row (:class:`indexer.store.sql_lock.SchedulerLock`'s default name).
SCHEDULER_LOCK = "scheduler"


def scheduler_state(sessions: sessionmaker, *, ttl_s: float = 60.0) -> dict | None:
    """``{"owner", "heartbeat_at", "age_s", "alive"}`` of the scheduler lock, ``None`` when
    no scheduler ever ran on this database. ``alive``: the heartbeat is younger than
    ``ttl_s`` seconds (the lock's takeover age)."""
    with sessions() as s:
        row = s.execute(select(LockRow.owner, LockRow.heartbeat_at).where(LockRow.name == SCHEDULER_LOCK)).first()
    if row is None:
        return None
    beat: datetime = aware(row.heartbeat_at)
    age = max(0.0, (utcnow() - beat).total_seconds())
    return {"owner": row.owner, "heartbeat_at": beat, "age_s": age, "alive": age < ttl_s}
