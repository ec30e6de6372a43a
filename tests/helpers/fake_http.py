"""The one fake-HTTP-server base of the test doubles for Slack, Anthropic, Voyage,
Confluence and the Teams connector: a ``ThreadingHTTPServer`` on 127.0.0.1:0 in a daemon
thread, each request parsed once into a :class:`Request` and answered by the subclass's
:meth:`FakeHTTPServer.respond`, which returns a :class:`Reply`.

The real SDKs (slack_sdk, anthropic, voyageai, requests, the Agents SDK) talk to these over
real HTTP; only what coderag calls is modelled by each subclass.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    """One request as received: ``method`` (``GET``/``POST``), ``target`` (path and query as
    sent), ``path`` (without the query), ``query`` (first value of each parameter),
    ``headers`` (the handler's case-insensitive header object) and the ``raw`` body."""

    method: str
    target: str
    path: str
    query: dict
    headers: object
    raw: bytes

    def json(self) -> dict:
        """The body as JSON (``{}`` when empty)."""
        return json.loads(self.raw or b"{}")


@dataclass
class Reply:
    """An answer: ``status``, ``payload`` (a dict or list is sent as JSON, a str as plain
    text, ``None`` as an empty body) and extra ``headers``."""

    status: int = 200
    payload: object = None
    headers: dict = field(default_factory=dict)


class FakeHTTPServer:
    """Base of the fakes: :meth:`start` / :meth:`stop` (alias :meth:`close`), :attr:`port`,
    :attr:`root` (``http://127.0.0.1:<port>``), :meth:`wait_for`; ``lock`` guards what the
    subclass records. Subclasses implement :meth:`respond`."""

    #: HTTP/1.1 keeps connections alive (slack_sdk reuses them); plain fakes use 1.0.
    protocol_version = "HTTP/1.0"

    def __init__(self) -> None:
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = fake.protocol_version

            def log_message(self, *args):  # keep test output clean
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                url = urlsplit(self.path)
                request = Request(self.command, self.path, url.path,
                                  {k: v[0] for k, v in parse_qs(url.query).items()}, self.headers, raw)
                fake._send(self, fake.respond(request))

            do_GET = do_POST = _serve

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True, name=type(self).__name__)

    def respond(self, request: Request) -> Reply:
        """The answer to ``request`` (subclasses)."""
        raise NotImplementedError

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        payload = reply.payload
        if payload is None:
            raw, kind = b"", None
        elif isinstance(payload, str):
            raw, kind = payload.encode(), "text/plain"
        else:
            raw, kind = json.dumps(payload).encode(), "application/json"
        handler.send_response(reply.status)
        if kind:
            handler.send_header("Content-Type", kind)
        handler.send_header("Content-Length", str(len(raw)))
        for k, v in reply.headers.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(raw)

    def start(self):
        """Serve in the background; returns ``self``."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()

    close = stop

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self.server.server_address[1]

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``, no trailing slash."""
        return f"http://127.0.0.1:{self.port}"

    def wait_for(self, predicate, timeout: float = 10.0, interval: float = 0.02):
        """Poll until ``predicate()`` is truthy; returns its value. Raises ``AssertionError``
        naming :meth:`recorded` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out; recorded so far: {self.recorded()}")
            time.sleep(interval)

    def recorded(self) -> list:
        """What the fake recorded, for a timeout message (subclasses)."""
        return []
