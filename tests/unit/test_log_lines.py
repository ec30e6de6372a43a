"""`coderag worker` logs one line per record, with an ISO 8601 time and the level
(common.logs.OneLineFormatter): a traceback or a multi-line message stays on its line."""
from __future__ import annotations

import logging
import re

from common.logs import OneLineFormatter

LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 ERROR coderag\.test: ")


def _record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    info = (type(exc), exc, exc.__traceback__) if exc else None
    return logging.LogRecord("coderag.test", logging.ERROR, __file__, 1, msg, None, info)


def _raised() -> BaseException:
    try:
        raise RuntimeError("git clone https://bob:hunter2secret@git.example/x.git failed\nfatal: more")
    except RuntimeError as exc:
        return exc


def test_a_record_with_a_traceback_is_one_timestamped_line():
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.INFO)
    try:
        text = OneLineFormatter().format(_record("job failed\nsecond line", _raised()))
    finally:
        root.setLevel(before)
    assert "\n" not in text and LINE.match(text), text
    assert text.endswith("job failed\\nsecond line [RuntimeError: git clone https://bob:***@git.example/x.git "
                         "failed]"), text
    assert "Traceback" not in text and "hunter2secret" not in text


def test_at_debug_the_traceback_is_kept_on_the_same_line():
    root = logging.getLogger()
    before = root.level
    root.setLevel(logging.DEBUG)
    try:
        text = OneLineFormatter().format(_record("job failed", _raised()))
    finally:
        root.setLevel(before)
    assert "\n" not in text and "Traceback (most recent call last):\\n" in text, text
    assert "hunter2secret" not in text
