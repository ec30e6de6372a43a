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

from slack_bolt import App
from slack_bolt.adapter.starlette.handler import SlackRequestHandler, to_bolt_request, to_starlette_response
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
