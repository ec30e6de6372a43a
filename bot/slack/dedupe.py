"""Event deduplication in the SQL database (``common.db``). Feedback votes are recorded
by :class:`bot.querylog.recorder.QueryLog`.

Slack redelivers an event (with ``X-Slack-Retry-Num``) when it did not see a 200 within
3 s. Every delivery's ``event_id`` is inserted on receipt, in one transaction whose
unique constraint decides: the first insert wins, any later one is a duplicate.
"""
from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta, timezone

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from .models import SlackEvent

log = logging.getLogger(__name__)

KEEP_EVENTS = timedelta(days=2)  # Slack retries within minutes; keep ids a while longer
PRUNE_EVERY = 1000


class EventLog:
    """``slack_events``: has this event id been received before?"""

    def __init__(self, sessions: sessionmaker):
        self.sessions = sessions
        self._inserts = 0
        self._lock = threading.Lock()

    def first_delivery(self, event_id: str) -> bool:
        """Record ``event_id``; True the first time, False for a duplicate delivery."""
        now = datetime.now(timezone.utc)
        with self.sessions() as session:
            try:
                with session.begin():
                    session.add(SlackEvent(event_id=event_id, received_at=now))
            except IntegrityError:
                return False
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
