"""`coderag worker` logs one line per record, with an ISO 8601 time and the level
(common.logs.OneLineFormatter): a traceback or a multi-line message stays on its line."""
from __future__ import annotations

import logging
import re

import pytest

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


def _format_at(level: int, record: logging.LogRecord) -> str:
    """The record as OneLineFormatter writes it while the root logger is at ``level``."""
    root = logging.getLogger()
    before = root.level
    root.setLevel(level)
    try:
        return OneLineFormatter().format(record)
    finally:
        root.setLevel(before)


@pytest.mark.parametrize(("level", "message", "tail", "traceback_kept"), [
    (logging.INFO, "job failed\nsecond line",
     "job failed\\nsecond line [RuntimeError: git clone https://bob:***@git.example/x.git failed]", False),
    (logging.DEBUG, "job failed", None, True),
], ids=["info-drops-the-traceback", "debug-keeps-it-on-the-line"])
def test_a_record_with_a_traceback_is_one_timestamped_line(level, message, tail, traceback_kept):
    text = _format_at(level, _record(message, _raised()))
    assert "\n" not in text and LINE.match(text), text
    assert ("Traceback (most recent call last):\\n" in text) is traceback_kept, text
    assert tail is None or text.endswith(tail), text
    assert "hunter2secret" not in text


def test_serve_in_the_indexer_role_logs_one_timestamped_line_per_record(settings_env, tmp_path):
    """`coderag serve` with CODERAG_ROLE=indexer logged uvicorn's and coderag's records
    without a time ("INFO:     Started server process"), a traceback over many lines: a
    log collector could neither place nor group them. One line each, as `coderag worker`."""
    import json
    import signal
    import subprocess
    import sys
    import time

    from helpers.fake_voyage import start_fake_voyage
    from helpers.processes import stop_process
    from indexer.store.weaviate_server import free_ports

    any_line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (DEBUG|INFO|WARNING|ERROR|CRITICAL) "
                          r"[\w.-]+: ")
    fake = start_fake_voyage()
    port = free_ports(1)[0]
    env = dict(settings_env, CODERAG_ROLE="indexer", CODERAG_LOG_LEVEL="INFO", CODERAG_METRICS_PORT="0",
               VOYAGE_API_KEY="pa-test", VOYAGE_BASE_URL=fake.base_url, CODERAG_EMBEDDING_RUNTIME="auto",
               CODERAG_REPOS=json.dumps([{"name": "gone", "url": str(tmp_path / "no-such-repo"), "branch": "main"}]))
    log_path = tmp_path / "serve.log"
    try:
        with open(log_path, "w") as log:
            proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                                    stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 300
            while "Application startup complete" not in log_path.read_text():
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()[-3000:]
                time.sleep(0.2)
        finally:
            stop_process(proc, sig=signal.SIGTERM, timeout=60)
    finally:
        fake.close()
    lines = [x for x in log_path.read_text().splitlines() if x.strip()]
    records = [x for x in lines if not x.startswith("coderag serve (indexer)")]  # the banner is no record
    assert len(records) >= 2 and all(any_line.match(x) for x in records), "\n".join(lines[-40:])
    assert any("uvicorn" in x and "Application startup complete" in x for x in records), records[-10:]


def test_a_one_line_log_process_says_slow_steps_and_interrupted_as_timestamped_records(monkeypatch, capsys):
    """`coderag worker` printed "coderag: preparing the embedding model (once per
    CODERAG_HOME, ~20 s)…" and "coderag: interrupted" bare, without a time: with one-line
    logs they are records of their own (an interactive command keeps the plain lines)."""
    import io

    from common import logs, notices

    monkeypatch.setattr(logs, "_one_line", False)
    monkeypatch.setattr(notices, "_sink", None)
    logs.say_interrupted()  # an interactive command: the plain line
    assert capsys.readouterr().err == "coderag: interrupted\n"
    notices.set_sink(lambda text: print(f"coderag: {text}"))  # as `coderag` sets it first
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", logging.INFO)
    root.addHandler(handler)
    try:
        logs.use_one_line_logs()
        notices.notice("preparing the embedding model (once per CODERAG_HOME, ~20 s)…")
        logs.say_interrupted()
    finally:
        root.removeHandler(handler)
        logging.captureWarnings(False)
    lines = stream.getvalue().splitlines()
    any_line = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00 (INFO|WARNING) [\w.-]+: ")
    assert len(lines) == 2 and all(any_line.match(x) for x in lines), lines
    assert "preparing the embedding model" in lines[0] and lines[1].endswith("coderag: interrupted"), lines
    assert "coderag:" not in capsys.readouterr().out
