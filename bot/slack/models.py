"""SQL table of the Slack front end: the event-dedupe record ``slack_events`` (on
``common.db.Base``, migration ``0002_slack``). Votes are in :mod:`bot.querylog.models`."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base


class SlackEvent(Base):
    """One Events API delivery, recorded on receipt: a second row with the same
    ``event_id`` (a retry, ``X-Slack-Retry-Num``) is a duplicate and is not answered."""

    __tablename__ = "slack_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    event_id: Mapped[str] = mapped_column(String(100), nullable=False, unique=True)
    received_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False, index=True)


# The feedback table moved to the query log (one definition, migration 0003_querylog).
from bot.querylog.models import Feedback  # noqa: E402,F401  (compatibility re-export)
