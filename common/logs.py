"""Log records as one line each, with an ISO 8601 timestamp and the level: what a
long-running process (``coderag worker``) writes for a log collector, where a record
spread over several lines (a traceback) reads as several records and a line without a
time cannot be placed."""
from __future__ import annotations

import logging
import sys
from datetime import datetime, timezone

from .redact import redact_text


class OneLineFormatter(logging.Formatter):
    """``2025-01-02T03:04:05.678+00:00 WARNING logger.name: message``: the time in UTC to
    the millisecond, the level, the logger, the message. Always one line: line breaks in
    the message are written ``\\n``; an exception is its type and first line
    (``[ValueError: bad]``), its traceback added (line breaks written ``\\n``) only when the
    root logger is at DEBUG."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line (see the class)."""
        when = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        text = record.getMessage()
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            first = (redact_text(str(exc)).strip().splitlines() or [""])[0][:300]
            text += f" [{type(exc).__name__}{': ' + first if first else ''}]"
            if logging.getLogger().isEnabledFor(logging.DEBUG):
                text += " " + redact_text(record.exc_text or self.formatException(record.exc_info))
        elif record.exc_text:  # a traceback without the exception (a record passed on as text)
            if logging.getLogger().isEnabledFor(logging.DEBUG):
                text += " " + record.exc_text
        if record.stack_info and logging.getLogger().isEnabledFor(logging.DEBUG):
            text += " " + record.stack_info
        text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "\\n")
        return f"{when} {record.levelname} {record.name}: {text}"


def use_one_line_logs() -> None:
    """Give every handler of the root logger the :class:`OneLineFormatter`, and send
    Python's warnings (a library's ``ResourceWarning``, printed on two lines of stderr)
    through logging as records of ``py.warnings``, so they are one line too; the notices
    of slow steps (:mod:`common.notices`) and ``interrupted`` become records as well."""
    global _one_line
    from .notices import set_sink

    for handler in logging.getLogger().handlers:
        handler.setFormatter(OneLineFormatter())
    logging.captureWarnings(True)
    set_sink(None)  # "preparing the embedding model…": an INFO record, not a bare stderr line
    _one_line = True


_one_line = False


def one_line_logs_in_use() -> bool:
    """Whether :func:`use_one_line_logs` ran (a long-running worker or indexer): its
    process says everything as one timestamped log line."""
    return _one_line


def say_interrupted() -> None:
    """``coderag: interrupted`` on stderr, or a WARNING record where logs are one line."""
    if _one_line:
        logging.getLogger("coderag").warning("interrupted")
    else:
        print("coderag: interrupted", file=sys.stderr)
