"""The start of a time window as a user writes it (``--since`` of ``coderag changes``,
``coderag stats`` and ``coderag querylog``): one parser, so every command takes the same
forms and says the same thing about anything else."""
from __future__ import annotations

import re
from datetime import date, datetime, time, timedelta, timezone

from .errors import BadInput

#: The forms :func:`parse_since` takes, as help texts and errors name them.
SINCE_FORMS = ("30m, 24h, 7d, 2w (minutes, hours, days, weeks ago), today, yesterday, this/last week|month "
               "(UTC calendar) or an ISO date (2026-11-30) or date-time")
_RELATIVE = re.compile(r"(\d+)\s*([mhdw])", re.IGNORECASE)
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime | None = None, *, option: str = "--since") -> datetime:
    """``30m``/``24h``/``7d``/``2w`` before ``now`` (default: the current time, UTC), a
    calendar word as :func:`question_since` reads it (``today``, ``yesterday``, ``this
    week``, ``last month``…), or an ISO date (midnight UTC) or date-time (UTC when it has
    no zone), as an aware UTC datetime. Anything else raises :class:`BadInput` in one line naming ``option`` and
    the accepted forms."""
    t = (text or "").strip()
    now = now or datetime.now(timezone.utc)
    m = _RELATIVE.fullmatch(t)
    if m:
        try:
            if len(m.group(1)) > 9:
                raise OverflowError
            return now - timedelta(**{_UNITS[m.group(2).lower()]: int(m.group(1))})
        except (OverflowError, ValueError):
            raise BadInput(f"{option}: {text!r} reaches back before year 1") from None
    try:
        if len(t) == 10:
            return datetime.combine(date.fromisoformat(t), time(), tzinfo=timezone.utc)
        d = datetime.fromisoformat(t) if t else None
    except ValueError:
        d = None
    if d is None and _CALENDAR.fullmatch(t):  # "yesterday", "last week": the calendar window
        return question_since(t, now)  # type: ignore[return-value]
    if d is None:
        raise BadInput(f"{option}: {text!r} is no time window; use {SINCE_FORMS}")
    return d.replace(tzinfo=timezone.utc) if d.tzinfo is None else d.astimezone(timezone.utc)


_N = r"(\d{1,4}|a|an|one|two|three|four|five|six|seven|eight|nine|ten)"
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}
#: "in the last 3 days", "over the past two weeks", "last 24 hours": relative to now.
_LAST_N = re.compile(r"\b(?:last|past)\s+" + _N + r"\s+(hour|day|week|month|year)s?\b", re.IGNORECASE)
#: "since 2026-11-30": that date (midnight UTC).
_SINCE_DATE = re.compile(r"\bsince\s+(\d{4}-\d{2}-\d{2})\b", re.IGNORECASE)
#: Calendar words: "today", "yesterday", "this/last week|month|year", "past week|month|year".
_CALENDAR = re.compile(r"\b(today|yesterday|(this|last|past|previous)\s+(week|month|year))\b", re.IGNORECASE)


def _month_start(day: date, back: int = 0) -> date:
    m = day.year * 12 + day.month - 1 - back
    return date(m // 12, m % 12 + 1, 1)


def question_since(question: str, now: datetime | None = None) -> datetime | None:
    """The start of the window a question names, in UTC calendar terms, or ``None``:

    - "today": midnight UTC today; "yesterday": midnight UTC yesterday (the window runs
      to now);
    - "this week" / "this month" / "this year": the start of the current ISO week
      (Monday), month or year; "last/previous week|month|year": the start of the one
      before ("since last month" on 4 December: 1 November);
    - "past week|month|year": 7, 30 or 365 days before now;
    - "last/past N hours|days|weeks|months|years": that long before now (a month is 30
      days, a year 365);
    - "since 2026-11-30": that date, midnight UTC.

    The first form found in the question wins in that order: an explicit date, a count,
    a calendar word."""
    text = question or ""
    now = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
    today = now.date()
    m = _SINCE_DATE.search(text)
    if m:
        try:
            return datetime.combine(date.fromisoformat(m.group(1)), time(), tzinfo=timezone.utc)
        except ValueError:
            pass
    m = _LAST_N.search(text)
    if m:
        n = _WORD_NUMBERS.get(m.group(1).lower()) or int(m.group(1))
        unit = m.group(2).lower()
        days = {"month": 30, "year": 365}.get(unit)
        delta = timedelta(days=n * days) if days else timedelta(**{unit + "s": n})
        try:
            return now - delta
        except OverflowError:
            return None
    m = _CALENDAR.search(text)
    if not m:
        return None
    word = m.group(1).lower()
    which, unit = (m.group(2) or "").lower(), (m.group(3) or "").lower()
    if word == "today":
        start = today
    elif word == "yesterday":
        start = today - timedelta(days=1)
    elif which == "past":
        return now - timedelta(days={"week": 7, "month": 30, "year": 365}[unit])
    else:
        back = 0 if which == "this" else 1
        if unit == "week":
            start = today - timedelta(days=today.weekday() + 7 * back)
        elif unit == "month":
            start = _month_start(today, back)
        else:
            start = date(today.year - back, 1, 1)
    return datetime.combine(start, time(), tzinfo=timezone.utc)
