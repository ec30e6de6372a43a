"""The channel policy the chat front ends look up for every question, read from the
database (:mod:`.store`) at that moment: a change made on the admin page holds for the
next question, on every replica, with no restart.

Same rules as :class:`bot.tenancy.ChannelPolicy` (the environment's allow-list, which
seeds the database):

* no channel has an allow-list → no policy: every channel reads every source (``None``);
* a channel with its own list → exactly that; otherwise the ``*`` row's list; no ``*``
  list → nothing (the bot answers "no coverage");
* the reply mode: the channel's own, else ``*``'s, else ``mention``.
"""
from __future__ import annotations

import json
import logging

from sqlalchemy import select
from sqlalchemy.orm import sessionmaker

from .models import DEFAULT_CHANNEL, ChannelPolicyRow

log = logging.getLogger(__name__)


class RuntimePolicy:
    """``allowed(channel)`` and ``reply_mode(channel)`` read from ``channel_policies``
    (duck-compatible with :class:`bot.tenancy.ChannelPolicy`)."""

    def __init__(self, sessions: sessionmaker):
        self.sessions = sessions

    def _rows(self, channel: str | None) -> tuple[dict[str, ChannelPolicyRow], bool]:
        keys = [DEFAULT_CHANNEL] + ([channel] if channel else [])
        with self.sessions() as s:
            rows = {r.channel: r for r in s.scalars(select(ChannelPolicyRow).where(
                ChannelPolicyRow.channel.in_(keys), ChannelPolicyRow.deleted_at.is_(None)))}
            enabled = s.scalar(select(ChannelPolicyRow.channel).where(
                ChannelPolicyRow.sources.is_not(None), ChannelPolicyRow.deleted_at.is_(None)).limit(1)) is not None
        return rows, enabled

    @property
    def enabled(self) -> bool:
        """True when some channel has an allow-list."""
        return self._rows(None)[1]

    def allowed(self, channel: str | None) -> frozenset[str] | None:
        """Sources ``channel`` may read: ``None`` = all (no policy), else a set (maybe empty)."""
        rows, enabled = self._rows(channel)
        if not enabled:
            return None
        for key in (channel, DEFAULT_CHANNEL):
            row = rows.get(key) if key else None
            if row is not None and row.sources is not None:
                try:
                    return frozenset(str(x) for x in json.loads(row.sources))
                except (TypeError, ValueError):
                    log.warning("channel policy of %s is unreadable; it reads nothing", key)
                    return frozenset()
        return frozenset()

    def reply_mode(self, channel: str | None) -> str:
        """``mention``, ``questions`` or ``review`` for ``channel``."""
        rows, _enabled = self._rows(channel)
        for key in (channel, DEFAULT_CHANNEL):
            row = rows.get(key) if key else None
            if row is not None:
                return row.reply_mode
        return "mention"
