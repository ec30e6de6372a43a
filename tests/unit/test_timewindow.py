"""The windows a user names: ``--since`` forms and the calendar words of a question."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from common.errors import BadInput, ExitCode
from common.timewindow import parse_since, question_since

#: A Friday afternoon, UTC (2026-12-04 is a Friday; its ISO week began Monday 2026-11-30).
NOW = datetime(2026, 12, 4, 17, 30, tzinfo=timezone.utc)


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


@pytest.mark.parametrize("question, start", [
    ("what changed today?", _utc(2026, 12, 4)),
    ("what changed in billing since yesterday?", _utc(2026, 12, 3)),
    ("who touched the retry logic this week?", _utc(2026, 11, 30)),
    ("what changed in billing since last week?", _utc(2026, 11, 23)),
    ("what changed in billing since last month?", _utc(2026, 11, 1)),
    ("what changed this month", _utc(2026, 12, 1)),
    ("what changed over the previous month", _utc(2026, 11, 1)),
    ("what changed this year", _utc(2026, 1, 1)),
    ("changes in the past week", _utc(2026, 11, 27, 17, 30)),
    ("changes in the past month", _utc(2026, 11, 4, 17, 30)),
    ("what changed in the last 3 days", _utc(2026, 12, 1, 17, 30)),
    ("who changed it over the past two weeks", _utc(2026, 11, 20, 17, 30)),
    ("what changed in the last 24 hours", _utc(2026, 12, 3, 17, 30)),
    ("what changed since 2026-11-15 in auth", _utc(2026, 11, 15)),
])
def test_a_question_names_its_window_in_utc_calendar_terms(question, start):
    assert question_since(question, NOW) == start


def test_january_last_month_is_the_previous_december():
    assert question_since("since last month", _utc(2027, 1, 10, 9)) == _utc(2026, 12, 1)
    assert question_since("since last week", _utc(2027, 1, 3, 9)) == _utc(2026, 12, 21)  # a Sunday


@pytest.mark.parametrize("question", ["what changed in billing?", "how does the weekly report work?",
                                      "retry 3 times", "what is the monthly quota"])
def test_a_question_without_a_window_names_none(question):
    assert question_since(question, NOW) is None


@pytest.mark.parametrize("text", ["1000000d", "99999999999w"])
def test_a_window_reaching_before_year_one_says_so(text):
    with pytest.raises(BadInput, match="reaches back before year 1") as exc:
        parse_since(text, NOW)
    assert exc.value.exit_code == ExitCode.USAGE


def test_relative_calendar_and_iso_forms():
    assert parse_since("2w", NOW) == _utc(2026, 11, 20, 17, 30)
    assert parse_since("yesterday", NOW) == _utc(2026, 12, 3)
    assert parse_since("last month", NOW) == _utc(2026, 11, 1)
    with pytest.raises(BadInput, match="is no time window"):
        parse_since("changed last month", NOW)  # a whole calendar phrase only
    assert parse_since("2026-11-30", NOW) == _utc(2026, 11, 30)
    with pytest.raises(BadInput, match="is no time window"):
        parse_since("someday", NOW)
