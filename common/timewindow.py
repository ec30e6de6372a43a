"""The start of a time window as a user writes it (``--since`` of ``coderag changes``,
``coderag stats`` and ``coderag querylog``): one parser, so every command takes the same
forms and says the same thing about anything else."""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone

from .errors import BadInput

#: The forms :func:`parse_since` takes, as help texts and errors name them.
SINCE_FORMS = "30m, 24h, 7d, 2w (minutes, hours, days, weeks ago) or an ISO date (2026-11-30) or date-time"
_RELATIVE = re.compile(r"(\d{1,6})\s*([mhdw])", re.IGNORECASE)
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None, *, option: str = "--since") -> datetime:
    """``30m``/``24h``/``7d``/``2w`` before ``now`` (default: the current time, UTC), or an
    ISO date (midnight UTC) or date-time (UTC when it has no zone), as an aware UTC
    datetime. Anything else raises :class:`BadInput` in one line naming ``option`` and
    the accepted forms."""
    t = (text or "").strip()
    now = now or datetime.now(timezone.utc)
    m = _RELATIVE.fullmatch(t)
    if m:
        try:
            return now - timedelta(**{_UNITS[m.group(2).lower()]: int(m.group(1))})
        except (OverflowError, ValueError):
            raise BadInput(f"{option}: {text!r} reaches back before year 1") from None
    try:
        if len(t) == 10:
            return datetime.combine(date.fromisoformat(t), time(), tzinfo=timezone.utc)
        d = datetime.fromisoformat(t) if t else None
    except ValueError:
        d = None
    if d is None:
        raise BadInput(f"{option}: {text!r} is no time window; use {SINCE_FORMS}")
    return d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d.astimezone(timezone.utc)
