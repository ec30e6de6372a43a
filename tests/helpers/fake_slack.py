"""A local stand-in for Slack's Web API (``{base}/api/<method>``) and for response URLs
(``{base}/response/<id>``), on 127.0.0.1:0, recording every call.

The real ``slack_sdk`` WebClient talks to it through ``base_url``; Bolt's ``respond``
posts to the ``response_url`` given in the payload, which tests point here.
Only what the coderag bot uses is modelled: ``auth.test``, ``chat.postMessage``,
``chat.update``, ``reactions.add/remove`` and ``conversations.replies`` (thread contents
come from :attr:`FakeSlack.threads` plus whatever the bot posted in that thread).
"""
from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

BOT_USER_ID = "UBOT0001"
BOT_ID = "BBOT0001"
TEAM_ID = "T0000001"


@dataclass
class Call:
    """One recorded request: ``method`` is the Web API method or ``response_url``."""

    method: str
    path: str
    headers: dict
    body: dict
    at: float


@dataclass
class FakeSlack:
    server: ThreadingHTTPServer | None = None
    calls: list[Call] = field(default_factory=list)
    # (channel, thread_ts) -> messages returned by conversations.replies (oldest first)
    threads: dict = field(default_factory=dict)
    # method -> list of (status, headers) answered before answering normally
    fail_next: dict = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _ts: itertools.count = field(default_factory=lambda: itertools.count(1))

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> "FakeSlack":
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True, name="fake-slack").start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.base_url}/response/{name}"

    # ----------------------------------------------------------------- queries
    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def posts(self, channel: str | None = None) -> list[Call]:
        return [c for c in self.of("chat.postMessage") if channel is None or c.body.get("channel") == channel]

    def responses(self, name: str | None = None) -> list[Call]:
        return [c for c in self.of("response_url") if name is None or c.path.endswith(f"/{name}")]

    def wait_for(self, predicate, timeout: float = 10.0, interval: float = 0.02):
        """Poll until ``predicate()`` is truthy; returns its value or raises AssertionError."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; calls so far: {[c.method for c in self.calls]}")
            time.sleep(interval)

    def next_ts(self) -> str:
        return f"1800000000.{next(self._ts):06d}"

    # ----------------------------------------------------------------- API
    def handle(self, method: str, body: dict) -> dict:
        if method == "auth.test":
            if getattr(self, "auth_error", None):  # a refused token: Slack answers ok=false
                return {"ok": False, "error": self.auth_error}
            return {"ok": True, "url": "https://acme.slack.com/", "team": "Acme", "user": "coderag",
                    "team_id": TEAM_ID, "user_id": BOT_USER_ID, "bot_id": BOT_ID,
                    "is_enterprise_install": False}
        if method == "chat.postMessage":
            ts = self.next_ts()
            msg = {"type": "message", "user": BOT_USER_ID, "bot_id": BOT_ID, "ts": ts,
                   "text": body.get("text", ""), "blocks": body.get("blocks")}
            thread = body.get("thread_ts")
            if thread:
                msg["thread_ts"] = thread
                with self.lock:
                    self.threads.setdefault((body.get("channel"), thread), []).append(msg)
            return {"ok": True, "channel": body.get("channel"), "ts": ts, "message": msg}
        if method == "chat.update":
            return {"ok": True, "channel": body.get("channel"), "ts": body.get("ts"), "text": body.get("text", "")}
        if method == "conversations.replies":
            with self.lock:
                msgs = list(self.threads.get((body.get("channel"), body.get("ts")), []))
            if not msgs:
                return {"ok": False, "error": "thread_not_found"}
            return {"ok": True, "messages": msgs, "has_more": False}
        return {"ok": True}


def _decode(raw: bytes, content_type: str, query: str) -> dict:
    body: dict = {k: v[0] for k, v in parse_qs(query).items()}
    if not raw:
        return body
    text = raw.decode("utf-8")
    if "json" in content_type:
        body.update(json.loads(text))
    else:
        body.update({k: v[0] for k, v in parse_qs(text).items()})
    for key in ("blocks", "attachments"):
        if isinstance(body.get(key), str):
            body[key] = json.loads(body[key])
    return body


def _handler(fake: FakeSlack):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _reply(self, code: int, payload, headers: dict | None = None) -> None:
            raw = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain" if isinstance(payload, str) else "application/json")
            self.send_header("Content-Length", str(len(raw)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def _serve(self) -> None:
            url = urlparse(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = _decode(raw, self.headers.get("Content-Type", ""), url.query)
            if url.path.startswith("/response/"):
                method = "response_url"
            elif url.path.startswith("/api/"):
                method = url.path[len("/api/"):]
            else:
                self._reply(404, {"ok": False, "error": "unknown_path"})
                return
            with fake.lock:
                fake.calls.append(Call(method, url.path, dict(self.headers), body, time.monotonic()))
                failures = fake.fail_next.get(method) or []
                failure = failures.pop(0) if failures else None
            if failure:
                status, headers = failure
                self._reply(status, {"ok": False, "error": "ratelimited" if status == 429 else "fatal_error"}, headers)
                return
            if method == "response_url":
                self._reply(200, "ok")
                return
            self._reply(200, fake.handle(method, body))

        do_POST = _serve
        do_GET = _serve

    return Handler


def sign(secret: str, body: str, timestamp: int | None = None) -> dict:
    """Slack request-signing headers: ``v0=`` HMAC-SHA256 of ``v0:{ts}:{body}``, computed by
    slack_sdk's ``SignatureVerifier`` (and checked against a hand-rolled HMAC)."""
    from slack_sdk.signature import SignatureVerifier

    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    manual = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    assert signature == manual
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}
