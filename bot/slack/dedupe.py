"""Event deduplication in the SQL database (``common.db``). Feedback votes are recorded
by :class:`bot.querylog.recorder.QueryLog`.

Slack redelivers an event (with ``X-Slack-Retry-Num``) when it did not see a 200 within
3 s. Every delivery's ``event_id`` is inserted on receipt, in one transaction whose
unique constraint decides: the first insert wins, any later one is a duplicate.

A second line that does not depend on the database: the ids seen in the last
:data:`MEMORY_TTL` are kept in memory too, so when the database cannot write (a full
disk, a read-only or locked file) an event and its retries still give one answer per
replica, and a replayed slash command still runs once.
"""
from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlalchemy.orm import sessionmaker

from .models import SlackEvent

log = logging.getLogger(__name__)

KEEP_EVENTS = timedelta(days=2)  # Slack retries within minutes; keep ids a while longer
PRUNE_EVERY = 1000
MEMORY_TTL = 3600.0  # seconds an id stays in the in-memory line (retries come within minutes)
MEMORY_MAX = 100_000  # ids at most (oldest dropped first)


class EventLog:
    """``slack_events``: has this event id been received before?"""

    def __init__(self, sessions: sessionmaker):
        self.sessions = sessions
        self._inserts = 0
        self._lock = threading.Lock()
        self._seen: OrderedDict[str, float] = OrderedDict()  # id -> monotonic time first seen

    def _first_in_memory(self, event_id: str) -> bool:
        """The in-memory line: True the first time ``event_id`` is seen within the TTL."""
        now = time.monotonic()
        with self._lock:
            while self._seen and (len(self._seen) >= MEMORY_MAX or
                                  now - next(iter(self._seen.values())) > MEMORY_TTL):
                self._seen.popitem(last=False)
            if event_id in self._seen:
                return False
            self._seen[event_id] = now
            return True

    def first_delivery(self, event_id: str) -> bool:
        """Record ``event_id``; True the first time, False for a duplicate delivery (seen by
        this process within the TTL, or recorded in the database by any replica). When the
        database cannot record it, the in-memory answer stands (one warning line)."""
        if not self._first_in_memory(event_id):
            return False
        now = datetime.now(timezone.utc)
        try:
            with self.sessions() as session:
                try:
                    with session.begin():
                        session.add(SlackEvent(event_id=event_id, received_at=now))
                except IntegrityError:
                    return False
        except SQLAlchemyError as exc:
            log.warning("could not record event %s in the database (%s); deduplicating it in memory",
                        event_id, str(exc).splitlines()[0][:200])
            return True
        with self._lock:
            self._inserts += 1
            prune = self._inserts % PRUNE_EVERY == 0
        if prune:
            self.prune(now - KEEP_EVENTS)
        return True

    def prune(self, before: datetime) -> int:
        """Delete event ids received before ``before``; returns how many."""
        with self.sessions() as session, session.begin():
            return session.execute(delete(SlackEvent).where(SlackEvent.received_at < before)).rowcount or 0
