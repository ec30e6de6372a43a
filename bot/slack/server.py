"""Runners: the HTTP server (Starlette + uvicorn, Bolt's Starlette adapter) and Socket Mode.

HTTP mode serves ``POST /slack/events`` (events, slash commands and interactivity all
use this one Request URL) and ``GET /healthz``. Bolt's ``RequestVerification``
middleware checks every request's signature with ``SLACK_SIGNING_SECRET`` (slack_sdk's
``SignatureVerifier``) and rejects stale timestamps (older than 5 minutes) with 401.

The Starlette adapter calls the synchronous ``App.dispatch`` inside the event loop;
:class:`ThreadedSlackRequestHandler` runs it in the thread pool instead, so a slow
database write never stalls other requests' acks.
"""
from __future__ import annotations

import logging
import threading

from slack_bolt import App
from slack_bolt.adapter.starlette.handler import SlackRequestHandler, to_bolt_request, to_starlette_response
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .config import SlackSettings

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


class ThreadedSlackRequestHandler(SlackRequestHandler):
    """Bolt's Starlette handler, dispatching POSTs on a worker thread."""

    async def handle(self, req: Request, addition_context_properties=None) -> Response:
        """Turn the Starlette request into a Bolt request, dispatch, convert back."""
        if req.method != "POST":
            return await super().handle(req, addition_context_properties)
        body = await req.body()
        bolt_req = to_bolt_request(req, body, addition_context_properties)
        bolt_resp = await run_in_threadpool(self.app.dispatch, bolt_req)
        return to_starlette_response(bolt_resp)


def slack_event_routes(bolt_app: App) -> list[Route]:
    """``POST /slack/events`` dispatched to ``bolt_app`` on a worker thread."""
    handler = ThreadedSlackRequestHandler(bolt_app)

    async def events(request: Request) -> Response:
        return await handler.handle(request)

    return [Route(EVENTS_PATH, events, methods=["POST"])]


def build_http_app(bolt_app: App | None, *, socket_mode: bool = False) -> Starlette:
    """The whole ``coderag serve`` ASGI app around one Bolt app (``/slack/events``
    omitted when ``bolt_app`` is None or in Socket Mode, ``/healthz`` always)."""
    from ..server import ServerContext, build_asgi

    return build_asgi(ServerContext(service=None, slack_app=bolt_app, socket_mode=socket_mode))


def start_socket_mode(bolt_app: App, settings: SlackSettings):
    """Connect to Slack over Socket Mode (non-blocking); returns the handler (``close()`` it)."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(bolt_app, app_token=settings.app_token)
    handler.connect()
    return handler


def serve(asgi, bolt_app: App | None, settings: SlackSettings | None, *, host: str = "127.0.0.1",
          port: int = 3000, log_level: str = "info") -> None:
    """Run ``asgi`` with uvicorn until interrupted; with Slack in Socket Mode, also keep
    the outgoing Socket Mode connection open for that time."""
    import uvicorn

    handler = start_socket_mode(bolt_app, settings) if bolt_app is not None and settings and settings.socket_mode else None
    try:
        uvicorn.run(asgi, host=host, port=port, log_level=log_level)
    finally:
        if handler is not None:
            handler.close()


class BackgroundServer:
    """uvicorn in a daemon thread on ``host:port`` (port 0 = a free port); for tests and
    the load benchmark. ``url`` is known once :meth:`start` returns."""

    def __init__(self, asgi, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(asgi, host=host, port=port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="coderag-uvicorn")

    def start(self, timeout: float = 10.0) -> "BackgroundServer":
        """Start serving and wait until the socket is bound."""
        import time

        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        """``http://host:port`` of the bound socket."""
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        """Ask uvicorn to exit and join its thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
