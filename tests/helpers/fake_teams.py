"""A fake Bot Framework connector service (the ``serviceUrl`` of test activities):
``http.server`` in a thread recording every POST to ``/v3/conversations/{id}/activities``
and ``/v3/conversations/{id}/activities/{activityId}``."""
from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit


@dataclass
class Call:
    """One recorded request: ``conversation`` (URL-decoded), ``reply_to`` (the
    ``{activityId}`` path segment, None for send-to-conversation), the JSON ``body``."""

    path: str
    conversation: str
    reply_to: str | None
    body: dict
    headers: dict


class FakeConnector:
    def __init__(self):
        self.calls: list[Call] = []
        self.lock = threading.Lock()
        ids = itertools.count(1000)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path = urlsplit(self.path).path
                parts = path.strip("/").split("/")
                if len(parts) < 4 or parts[:2] != ["v3", "conversations"] or parts[3] != "activities":
                    self.send_response(404)
                    self.end_headers()
                    return
                call = Call(path=path, conversation=unquote(parts[2]),
                            reply_to=unquote(parts[4]) if len(parts) > 4 else None,
                            body=json.loads(raw or b"{}"), headers=dict(self.headers))
                with fake.lock:
                    fake.calls.append(call)
                out = json.dumps({"id": f"reply-{next(ids)}"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> "FakeConnector":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/"

    def messages(self) -> list[Call]:
        """Recorded message activities (typing indicators left out)."""
        with self.lock:
            return [c for c in self.calls if c.body.get("type") == "message"]

    def wait_for(self, predicate, timeout: float = 15.0):
        """Poll until ``predicate()`` is truthy; returns its value (AssertionError on timeout)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.02)
        raise AssertionError(f"timed out; recorded: {[c.body for c in self.calls]}")
