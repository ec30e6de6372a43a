"""SQL tables of the freshness subsystem (migration ``0004_freshness``).

* ``index_state``: one row per source (git repo or Confluence space): the last indexed
  commit SHA (never taken from a webhook payload), when, and the last error.
* ``confluence_pages``: one row per indexed Confluence page (id, version, URL...), to
  skip unchanged versions and to find deleted pages on reconciliation.
* ``scheduler_locks``: the single-scheduler lock (owner + heartbeat).

APScheduler's own ``apscheduler_jobs`` table is created by its ``SQLAlchemyJobStore``.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base


class IndexState(Base):
    """Freshness bookkeeping of one source. ``kind`` is ``git`` or ``confluence``;
    ``commit`` is the indexed 40-hex SHA (git) or ``""``; ``cursor`` is the start time of
    the last successful Confluence run (the next incremental CQL starts there minus the
    overlap window); ``last_error`` is ``None`` after a successful run."""

    __tablename__ = "index_state"

    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20), nullable=False)
    commit: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    indexed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    cursor: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_reconciled_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_attempt_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    last_mode: Mapped[str] = mapped_column(String(20), nullable=False, default="")


class ConfluencePage(Base):
    """One indexed Confluence page: ``source`` is the space key (or configured CQL
    source name), ``path`` the chunk path it was indexed under."""

    __tablename__ = "confluence_pages"

    source: Mapped[str] = mapped_column(String(200), primary_key=True)
    page_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    title: Mapped[str] = mapped_column(String(500), nullable=False)
    path: Mapped[str] = mapped_column(String(1000), nullable=False)
    url: Mapped[str] = mapped_column(String(2000), nullable=False, default="")
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    last_modified: Mapped[str] = mapped_column(String(64), nullable=False, default="")
    space: Mapped[str] = mapped_column(String(200), nullable=False, default="")
    indexed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class SchedulerLock(Base):
    """Held by the one running scheduler: ``owner`` (host:pid:uuid) refreshes
    ``heartbeat_at``; a lock whose heartbeat is older than its TTL may be taken over."""

    __tablename__ = "scheduler_locks"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    owner: Mapped[str] = mapped_column(String(200), nullable=False)
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
