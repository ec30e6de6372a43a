"""A heartbeat lock row in ``scheduler_locks``: the single-scheduler lock
(:mod:`indexer.freshness.scheduler`) and the per-repo index lock (:mod:`.repo_lock`).

Taking the row is a compare-and-swap ``UPDATE ... WHERE owner = <old> AND heartbeat_at =
<old>`` (or an ``INSERT`` that fails on the primary key), atomic on SQLite and
PostgreSQL alike; a lock whose heartbeat is older than its TTL (a crashed process) is
taken over.
"""
from __future__ import annotations

import logging
import os
import socket
import uuid

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from common.errors import CoderagError, ExitCode

from .sql_models import SchedulerLock as LockRow
from .sync_state import aware, utcnow

log = logging.getLogger(__name__)


class SchedulerAlreadyRunning(CoderagError):
    """Another process holds the scheduler lock of this database."""

    exit_code = ExitCode.SCHEDULER_RUNNING


class SchedulerLock:
    """A heartbeat lock row (see the module docstring). ``ttl``: seconds without a
    heartbeat after which the lock counts as abandoned."""

    def __init__(self, sessions: sessionmaker, name: str = "scheduler", ttl: float = 60.0):
        self.sessions, self.name, self.ttl = sessions, name, ttl
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def _what(self) -> str:
        """How messages name this lock: the scheduler lock, or a repository's index lock."""
        if self.name == "scheduler":
            return "the scheduler lock"
        return f"the index lock of {self.name[len('index:'):]!r}" if self.name.startswith("index:") \
            else f"the lock {self.name!r}"

    def acquire(self) -> None:
        """Take the lock or raise :class:`SchedulerAlreadyRunning`."""
        now = utcnow()
        with self.sessions() as s:
            row = s.execute(select(LockRow.owner, LockRow.heartbeat_at)
                            .where(LockRow.name == self.name)).first()
        if row is None:
            try:
                with self.sessions.begin() as s:
                    s.add(LockRow(name=self.name, owner=self.owner, heartbeat_at=now))
                return
            except IntegrityError:
                raise SchedulerAlreadyRunning(f"another process took {self._what()} just now") from None
        owner, beat = row
        age = (now - aware(beat)).total_seconds()
        if owner != self.owner and age < self.ttl:
            if self.name != "scheduler":
                raise SchedulerAlreadyRunning(f"{self._what()} is held by {owner} (heartbeat {age:.0f}s ago)")
            raise SchedulerAlreadyRunning(
                f"a scheduler is already running against this database ({owner}, heartbeat {age:.0f}s ago); "
                f"only one may run (set CODERAG_SCHEDULER=off on the other `coderag serve` processes)")
        with self.sessions.begin() as s:
            res = s.execute(update(LockRow).where(
                LockRow.name == self.name, LockRow.owner == owner,
                LockRow.heartbeat_at == beat).values(owner=self.owner, heartbeat_at=now))
        if res.rowcount != 1:
            raise SchedulerAlreadyRunning(f"another process took over {self._what()} just now (it was stale)")
        log.warning("took over %s from %s (no heartbeat for %.0fs)", self._what(), owner, age)

    def held(self) -> bool:
        """True when some owner (this one or another) holds the lock: its heartbeat is
        younger than the TTL."""
        with self.sessions() as s:
            beat = s.execute(select(LockRow.heartbeat_at).where(LockRow.name == self.name)).scalar()
        return beat is not None and (utcnow() - aware(beat)).total_seconds() < self.ttl

    def heartbeat(self) -> bool:
        """Refresh the heartbeat; False when the lock is no longer ours."""
        with self.sessions.begin() as s:
            res = s.execute(update(LockRow).where(
                LockRow.name == self.name, LockRow.owner == self.owner).values(heartbeat_at=utcnow()))
        return res.rowcount == 1

    def release(self) -> None:
        with self.sessions.begin() as s:
            s.execute(delete(LockRow).where(LockRow.name == self.name,
                                                  LockRow.owner == self.owner))
