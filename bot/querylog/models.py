"""Query-log tables on :class:`common.db.Base` (migration ``0003_querylog``).

* ``queries`` — one row per answered question (Slack, CLI, Teams): who/where, the
  question and answer text (nulled by retention, see :mod:`.retention`), the model,
  guardrail flags, latency per stage in milliseconds, tokens and cost in USD.
* ``query_chunks`` — the chunks retrieval returned for a query, best first (``rank`` 1..n),
  with whether the answer cited each.
* ``feedback`` — 👍 (+1) / 👎 (-1) votes. ``query_id`` links a vote to its query; it is
  NULL for votes recorded before the query log existed (migration ``0002_slack``), and
  until the record exists for a click that raced ahead of it (linked then by ``query_ref``).
  The click key (``channel``, ``message_ts``) stays: one vote per (message, user).

The Slack event-dedupe record (``slack_events``) lives in :mod:`bot.slack.models`.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import (Boolean, CheckConstraint, DateTime, Float, ForeignKey, Index, Integer, SmallInteger,
                        String, Text, UniqueConstraint)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from common.db import Base

SOURCES = ("slack", "cli", "teams", "mcp")


class Query(Base):
    """One question and its answer.

    ``ref``: random 32-hex public id, put in the feedback buttons before the row exists.
    ``message_ts``: Slack ts of the question message (``thread_ts`` is its thread).
    ``user``: the asker's id, or its HMAC-SHA256 hex when ``CODERAG_HASH_USER_IDS=1``.
    ``*_ms``: stage latencies in milliseconds (``post`` = delivering the answer: Slack
    ``chat.postMessage``/``respond`` calls, or printing for the CLI); NULL = not measured.
    ``cost_usd``: from the token counts and :mod:`.pricing`; NULL when the model's price is unknown.
    """

    __tablename__ = "queries"
    __table_args__ = (
        CheckConstraint("source IN ('slack', 'cli', 'teams', 'mcp')", name="ck_queries_source"),
        UniqueConstraint("ref", name="uq_queries_ref"),
        # created_at first: serves every time-window query (stats, retention, export); the
        # other columns make it covering for ``coderag stats``' scans (no table-row reads)
        Index("ix_queries_stats", "created_at", "source", "channel", "no_coverage", "stale", "retrieve_ms",
              "expand_ms", "generate_ms", "post_ms", "input_tokens", "output_tokens", "cache_read_tokens",
              "cache_write_tokens", "cost_usd"),
        Index("ix_queries_source_channel", "source", "channel"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ref: Mapped[str] = mapped_column(String(32), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    source: Mapped[str] = mapped_column(String(16), nullable=False)
    workspace: Mapped[str | None] = mapped_column(String(40))
    channel: Mapped[str | None] = mapped_column(String(40))
    thread_ts: Mapped[str | None] = mapped_column(String(40))
    message_ts: Mapped[str | None] = mapped_column(String(40))
    user: Mapped[str | None] = mapped_column(String(64))
    question: Mapped[str | None] = mapped_column(Text)
    answer: Mapped[str | None] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String(100), nullable=False)
    no_coverage: Mapped[bool] = mapped_column(Boolean, nullable=False)
    stale: Mapped[bool] = mapped_column(Boolean, nullable=False)
    retrieve_ms: Mapped[float | None] = mapped_column(Float)
    expand_ms: Mapped[float | None] = mapped_column(Float)
    generate_ms: Mapped[float | None] = mapped_column(Float)
    post_ms: Mapped[float | None] = mapped_column(Float)
    input_tokens: Mapped[int | None] = mapped_column(Integer)
    output_tokens: Mapped[int | None] = mapped_column(Integer)
    cache_read_tokens: Mapped[int | None] = mapped_column(Integer)
    cache_write_tokens: Mapped[int | None] = mapped_column(Integer)
    cost_usd: Mapped[float | None] = mapped_column(Float)
    redacted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))

    chunks: Mapped[list["QueryChunk"]] = relationship(back_populates="query", cascade="all, delete-orphan",
                                                      order_by="QueryChunk.rank")


class QueryChunk(Base):
    """A retrieved chunk of a query: ``rank`` 1 = best; lines 1-based inclusive; ``cited``
    = the answer's sources include it."""

    __tablename__ = "query_chunks"
    __table_args__ = (UniqueConstraint("query_id", "rank", name="uq_query_chunks_query_rank"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int] = mapped_column(ForeignKey("queries.id", name="fk_query_chunks_query_id",
                                                     ondelete="CASCADE"), nullable=False)
    rank: Mapped[int] = mapped_column(Integer, nullable=False)
    repo: Mapped[str] = mapped_column(String(200), nullable=False)
    path: Mapped[str] = mapped_column(String(1000), nullable=False)
    start_line: Mapped[int] = mapped_column(Integer, nullable=False)
    end_line: Mapped[int] = mapped_column(Integer, nullable=False)
    commit: Mapped[str] = mapped_column(String(64), nullable=False)
    score: Mapped[float] = mapped_column(Float, nullable=False)
    cited: Mapped[bool] = mapped_column(Boolean, nullable=False)

    query: Mapped[Query] = relationship(back_populates="chunks")


class Feedback(Base):
    """A 👍 (+1) / 👎 (-1) vote. Keyed by the click (``channel`` and ``message_ts``: the
    question's ts, or the answer message's ts for slash commands); one row per (key, user),
    a later click changes the vote. ``user`` is hashed like :attr:`Query.user`.
    ``query_ref``: the button's :attr:`Query.ref`, kept so that a click arriving before
    the answer's record is committed is linked when the record is written."""

    __tablename__ = "feedback"
    __table_args__ = (
        UniqueConstraint("channel", "message_ts", "user", name="uq_feedback_query_user"),
        CheckConstraint("vote IN (-1, 1)", name="ck_feedback_vote"),
        Index("ix_feedback_query", "channel", "message_ts"),
        Index("ix_feedback_query_id", "query_id"),
        Index("ix_feedback_query_ref", "query_ref"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    query_id: Mapped[int | None] = mapped_column(ForeignKey("queries.id", name="fk_feedback_query_id",
                                                            ondelete="SET NULL"))
    query_ref: Mapped[str | None] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(40), nullable=False)
    message_ts: Mapped[str] = mapped_column(String(40), nullable=False)
    user: Mapped[str] = mapped_column(String(64), nullable=False)
    vote: Mapped[int] = mapped_column(SmallInteger, nullable=False)
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class AppSecret(Base):
    """A secret coderag generated for itself and must keep stable across restarts and
    replicas (migration ``0005_privacy``): today only ``user_hash_salt``, the HMAC key of
    user ids when ``CODERAG_USER_HASH_SALT`` is not configured (:mod:`.privacy`). The first
    process to start inserts it; the primary key makes every other one read that value."""

    __tablename__ = "app_secrets"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
