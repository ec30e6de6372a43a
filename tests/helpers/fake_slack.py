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
import time
from dataclasses import dataclass
from urllib.parse import parse_qs

from .fake_http import FakeHTTPServer, Reply, Request

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


class FakeSlack(FakeHTTPServer):
    protocol_version = "HTTP/1.1"  # slack_sdk keeps its connections alive

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[Call] = []
        # (channel, thread_ts) -> messages returned by conversations.replies (oldest first)
        self.threads: dict = {}
        # method -> list of (status, headers) answered before answering normally
        self.fail_next: dict = {}
        self._ts = itertools.count(1)

    @property
    def base_url(self) -> str:
        return self.root

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.base_url}/response/{name}"

    def recorded(self) -> list:
        return [c.method for c in self.calls]

    # ----------------------------------------------------------------- queries
    def of(self, method: str) -> list[Call]:
        with self.lock:
            return [c for c in self.calls if c.method == method]

    def posts(self, channel: str | None = None) -> list[Call]:
        return [c for c in self.of("chat.postMessage") if channel is None or c.body.get("channel") == channel]

    def responses(self, name: str | None = None) -> list[Call]:
        return [c for c in self.of("response_url") if name is None or c.path.endswith(f"/{name}")]

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

    def respond(self, request: Request) -> Reply:
        body = _decode(request.raw, request.headers.get("Content-Type", ""), request.query)
        if request.path.startswith("/response/"):
            method = "response_url"
        elif request.path.startswith("/api/"):
            method = request.path[len("/api/"):]
        else:
            return Reply(404, {"ok": False, "error": "unknown_path"})
        with self.lock:
            self.calls.append(Call(method, request.path, dict(request.headers), body, time.monotonic()))
            failures = self.fail_next.get(method) or []
            failure = failures.pop(0) if failures else None
        if failure:
            status, headers = failure
            return Reply(status, {"ok": False, "error": "ratelimited" if status == 429 else "fatal_error"}, headers)
        if method == "response_url":
            return Reply(200, "ok")
        return Reply(200, self.handle(method, body))


def _decode(raw: bytes, content_type: str, query: dict) -> dict:
    body: dict = dict(query)
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


def sign(secret: str, body: str, timestamp: int | None = None) -> dict:
    """Slack request-signing headers: ``v0=`` HMAC-SHA256 of ``v0:{ts}:{body}``, computed by
    slack_sdk's ``SignatureVerifier`` (and checked against a hand-rolled HMAC)."""
    from slack_sdk.signature import SignatureVerifier

    ts = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    manual = "v0=" + hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    assert signature == manual
    return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": signature}
