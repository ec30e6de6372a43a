"""What an operator reads: ``coderag serve`` logs one line per HTTP request, never a
traceback, at the default log level; and the redaction filter keeps records usable by
every formatter."""
from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time

import httpx
import pytest
from helpers.fake_slack import FakeSlack, sign
from helpers.serve_process import serve_process

from indexer.store.weaviate_server import free_ports

SECRET = "serve-log-signing-secret-0123456789"


@pytest.mark.weaviate
def test_serve_logs_one_line_per_request_and_no_traceback(settings_env, tmp_path):
    log_path, out_path = tmp_path / "serve.err", tmp_path / "serve.out"
    ok_health = 0
    with FakeSlack() as fake, open(log_path, "w") as log, open(out_path, "w") as stdout:
        env = dict(os.environ, SLACK_BOT_TOKEN="xoxb-serve-log-test-token", SLACK_SIGNING_SECRET=SECRET,
                   SLACK_API_URL=fake.api_url)
        env.pop("SLACK_APP_TOKEN", None)
        with serve_process(env, stdout=stdout, stderr=log, output=log_path.read_text) as (_proc, base):
            ok_health += 1  # serve_process waited for one 200 from /healthz
            for _ in range(3):
                assert httpx.get(f"{base}/healthz", timeout=5).status_code == 200
                ok_health += 1
            body = json.dumps({"type": "url_verification", "challenge": "c" * 20, "token": "t"})
            signed = httpx.post(f"{base}/slack/events", content=body,
                                headers={"Content-Type": "application/json", **sign(SECRET, body)})
            forged = httpx.post(f"{base}/slack/events", content=body,
                                headers={"Content-Type": "application/json", **sign("wrong", body)})
            assert signed.status_code == 200 and forged.status_code == 401
            time.sleep(0.5)  # let the access log flush
    out = log_path.read_text()  # the real stderr
    assert "Logging error" not in out and "Traceback" not in out, out[-3000:]
    assert "will be unused" not in out, out[-3000:]  # no warning on every start
    assert "HTTP/1.1" not in out_path.read_text()  # the access log is on stderr, not stdout
    health_lines = [line for line in out.splitlines() if re.search(r'"GET /healthz HTTP/1\.1" 200', line)]
    assert len(health_lines) == ok_health, out[-3000:]
    assert len([line for line in out.splitlines() if '"POST /slack/events HTTP/1.1" 200' in line]) == 1, out
    assert len([line for line in out.splitlines() if '"POST /slack/events HTTP/1.1" 401' in line]) == 1, out
    assert "xoxb-serve-log-test-token" not in out and SECRET not in out


def test_redaction_keeps_the_args_a_formatter_unpacks(monkeypatch):
    """uvicorn's access formatter unpacks five args: the filter must leave them (redacted)."""
    from common.redact import RedactingFilter

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-secret-value-123456")
    record = logging.LogRecord("uvicorn.access", logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
                               ("127.0.0.1:5000", "GET", "/healthz?t=xoxb-secret-value-123456", "1.1", 200), None)
    assert RedactingFilter().filter(record)
    client, method, path, version, status = record.args
    assert (client, method, version, status) == ("127.0.0.1:5000", "GET", "1.1", 200)
    assert "xoxb-secret-value-123456" not in path and path.startswith("/healthz")

    class Boom(Exception):
        pass

    flat = logging.LogRecord("x", logging.WARNING, __file__, 1, "failed: %s", (Boom("xoxb-secret-value-123456"),), None)
    RedactingFilter().filter(flat)
    assert "xoxb-secret-value-123456" not in flat.getMessage() and flat.getMessage().startswith("failed: ")


@pytest.mark.weaviate
def test_serve_with_slack_unreachable_or_refusing_is_one_line(settings_env, tmp_path):
    """A refused token or an unreachable Slack at start: one line naming the cause, exit 15."""
    fake = FakeSlack().start()
    fake.auth_error = "invalid_auth"
    (port,) = free_ports(1)
    try:
        for api_url, says in ((f"http://127.0.0.1:{free_ports(1)[0]}/api/", "cannot reach Slack at"),
                              (fake.api_url, "Slack refused SLACK_BOT_TOKEN at start")):
            env = dict(os.environ, SLACK_BOT_TOKEN="xoxb-serve-log-test-token", SLACK_SIGNING_SECRET=SECRET,
                       SLACK_API_URL=api_url)
            env.pop("SLACK_APP_TOKEN", None)
            proc = subprocess.run([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                                  capture_output=True, text=True, timeout=180)
            assert proc.returncode == 15, proc.stderr[-3000:]
            assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
            lines = [line for line in proc.stderr.splitlines() if line.startswith("coderag: error:")]
            assert len(lines) == 1 and says in lines[0], proc.stderr[-3000:]
            assert "xoxb-serve-log-test-token" not in proc.stderr
    finally:
        fake.stop()
