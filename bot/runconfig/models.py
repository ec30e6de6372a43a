"""Tables of the run-time configuration (on :class:`common.db.Base`, migrations ``0010_admin``
and ``0011_teams_channels``).

* ``config_sources`` — one row per repository or Confluence space kept fresh;
  ``origin`` is ``env`` (seeded from the environment) or ``admin`` (added on the page);
  a removed source keeps its row with ``deleted_at`` set, so the environment never seeds
  it back.
* ``channel_policies`` — one row per chat channel (``*`` = every channel not listed):
  ``sources`` is the JSON list of source names it may read (NULL: no allow-list of its
  own) and ``reply_mode`` one of :data:`REPLY_MODES`.
* ``config_values`` — named run-time values (``review_channel``).
* ``config_changes`` — the change log: who, when, what (append-only).
* ``review_drafts`` — answers waiting for a reviewer in ``review`` channels, and the
  decision taken on each.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, Float, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from common.db import Base

#: ``mention``: answer only when mentioned (and in threads it is in, and DMs);
#: ``questions``: also every top-level message that reads as a question;
#: ``review``: answer mentions, but as a draft a reviewer approves, edits or declines.
REPLY_MODES = ("mention", "questions", "review")
SOURCE_KINDS = ("git", "confluence")
DRAFT_STATUSES = ("pending", "approved", "edited", "declined")
DEFAULT_CHANNEL = "*"


class ConfigSource(Base):
    """A repository (``kind`` ``git``: ``url``, ``branch``, ``url_template``, ``aliases``
    as a JSON list) or a Confluence space (``kind`` ``confluence``: ``name`` is the
    space key, ``ttl_hours`` and ``cql`` optional)."""

    __tablename__ = "config_sources"
    __table_args__ = (UniqueConstraint("name", name="uq_config_sources_name"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), nullable=False)
    kind: Mapped[str] = mapped_column(String(16), nullable=False)
    url: Mapped[str] = mapped_column(String(1000), nullable=False, default="")
    branch: Mapped[str] = mapped_column(String(200), nullable=False, default="main")
    url_template: Mapped[str] = mapped_column(String(1000), nullable=False, default="")
    aliases: Mapped[str] = mapped_column(Text, nullable=False, default="[]")
    ttl_hours: Mapped[float | None] = mapped_column(Float)
    cql: Mapped[str | None] = mapped_column(Text)
    origin: Mapped[str] = mapped_column(String(16), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ChannelPolicyRow(Base):
    """One channel's policy: ``sources`` (JSON list, NULL = none of its own) and
    ``reply_mode``; ``deleted_at`` set when the operator removed it."""

    __tablename__ = "channel_policies"

    channel: Mapped[str] = mapped_column(String(255), primary_key=True)  # a Teams channel id is longer than 40
    sources: Mapped[str | None] = mapped_column(Text)
    reply_mode: Mapped[str] = mapped_column(String(16), nullable=False, default="mention")
    origin: Mapped[str] = mapped_column(String(16), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))


class ConfigValue(Base):
    """A named run-time value (``review_channel``: where drafts are announced)."""

    __tablename__ = "config_values"

    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)
    origin: Mapped[str] = mapped_column(String(16), nullable=False)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)


class ConfigChange(Base):
    """One change: ``actor`` (``environment``, the admin's token name, ``admin`` for the
    shared token, or the Slack user who signed in),
    ``action`` (``source.add``, ``channel.set``, ``draft.approve``, ...), ``target``
    (the source, channel or draft) and ``detail`` (JSON: before and after)."""

    __tablename__ = "config_changes"
    __table_args__ = (Index("ix_config_changes_at", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    actor: Mapped[str] = mapped_column(String(200), nullable=False)
    action: Mapped[str] = mapped_column(String(40), nullable=False)
    target: Mapped[str] = mapped_column(String(200), nullable=False)
    detail: Mapped[str] = mapped_column(Text, nullable=False, default="{}")


class ReviewDraft(Base):
    """An answer drafted in a ``review`` channel. ``ref`` is its query-log reference;
    ``surface`` the front end (``slack``, ``teams``); ``channel`` the channel the policy
    names (Slack or Teams id); ``messages`` the rendered replies as JSON (Slack:
    ``[[fallback text, blocks], ...]``; Teams: ``[activity, ...]``), posted as they are on
    approval; ``final_text`` the reviewer's edit; ``posted_ts`` the id of the reply in
    the asker's thread."""

    __tablename__ = "review_drafts"
    __table_args__ = (Index("ix_review_drafts_status", "status", "created_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    ref: Mapped[str] = mapped_column(String(32), nullable=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), nullable=False)
    status: Mapped[str] = mapped_column(String(16), nullable=False)
    surface: Mapped[str] = mapped_column(String(16), nullable=False)
    channel: Mapped[str] = mapped_column(String(255), nullable=False)
    thread_ts: Mapped[str] = mapped_column(String(40), nullable=False)
    message_ts: Mapped[str | None] = mapped_column(String(40))
    question: Mapped[str] = mapped_column(Text, nullable=False)
    answer: Mapped[str] = mapped_column(Text, nullable=False)
    messages: Mapped[str] = mapped_column(Text, nullable=False)
    reviewer: Mapped[str | None] = mapped_column(String(200))
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True))
    final_text: Mapped[str | None] = mapped_column(Text)
    posted_ts: Mapped[str | None] = mapped_column(String(40))
    #: Where an approved answer goes when the channel and thread are not enough (JSON; Teams:
    #: the question's conversation reference, without the asker); ``None`` for Slack.
    target: Mapped[str | None] = mapped_column(Text)
