"""Runners: the HTTP server (Starlette + uvicorn, Bolt's Starlette adapter) and Socket Mode.

HTTP mode serves ``POST /slack/events`` (events, slash commands and interactivity all
use this one Request URL) and ``GET /healthz``. Bolt's ``RequestVerification``
middleware checks every request's signature with ``SLACK_SIGNING_SECRET`` (slack_sdk's
``SignatureVerifier``) and rejects stale timestamps (older than 5 minutes) with 401.

The Starlette adapter calls the synchronous ``App.dispatch`` inside the event loop;
:class:`ThreadedSlackRequestHandler` runs it in the thread pool instead, so a slow
database write never stalls other requests' acks.

Before Bolt sees a request, the handler (an unauthenticated client can send anything):

1. reads the body **bounded**: a ``Content-Length`` over the cap (``CODERAG_SLACK_MAX_BYTES``,
   default :data:`DEFAULT_MAX_BODY_BYTES`) gets 413 before any of it is read, and a
   chunked body is cut off with 413 as soon as it passes the cap;
2. checks the **signature** (``X-Slack-Signature`` over ``v0:{timestamp}:{body}``, the
   timestamp a whole number within 5 minutes): anything else gets 401 with one log line
   that never holds the body (Bolt's own check logs the whole body at INFO);
3. **parses** it: a signed body that is not the JSON or form Slack sends gets 400 with one
   log line, no traceback.
"""
from __future__ import annotations

import logging
import time

from slack_bolt import App
from slack_bolt.adapter.starlette.handler import SlackRequestHandler, to_bolt_request, to_starlette_response
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.requests import ClientDisconnect
from starlette.responses import Response
from starlette.routing import Route

from common.settings import SlackSettings

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
# Slack's own payloads are small (a message is at most 40,000 characters; events with
# blocks stay well under 100 KB); 1 MiB leaves room and stops floods early.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
SIGNATURE_MAX_AGE_S = 5 * 60  # Slack's documented replay window


def valid_signature(signing_secret: str, headers, body: bytes, now: float | None = None) -> bool:
    """True when ``X-Slack-Signature`` is Slack's HMAC-SHA256 of ``body`` with
    ``signing_secret`` and ``X-Slack-Request-Timestamp`` is a whole number of seconds no
    more than :data:`SIGNATURE_MAX_AGE_S` away from ``now``. Never raises (a malformed
    header is simply invalid)."""
    from slack_sdk.signature import SignatureVerifier

    ts, sig = headers.get("x-slack-request-timestamp") or "", headers.get("x-slack-signature") or ""
    if not signing_secret or not sig or not ts.isdigit():
        return False
    if abs((time.time() if now is None else now) - int(ts)) > SIGNATURE_MAX_AGE_S:
        return False
    try:
        return SignatureVerifier(signing_secret).is_valid(body=body.decode("utf-8"), timestamp=ts, signature=sig)
    except (UnicodeDecodeError, ValueError):
        return False


class ThreadedSlackRequestHandler(SlackRequestHandler):
    """Bolt's Starlette handler, dispatching POSTs on a worker thread, behind the body
    cap, signature check and parse check of the module docstring."""

    def __init__(self, app: App, *, signing_secret: str | None = None,
                 max_body_bytes: int = DEFAULT_MAX_BODY_BYTES):
        super().__init__(app)
        self.signing_secret = signing_secret if signing_secret is not None else (
            getattr(app, "_signing_secret", None) or "")
        self.max_body_bytes = max_body_bytes

    async def handle(self, req: Request, addition_context_properties=None) -> Response:
        """Read (bounded), verify, parse; then turn the request into a Bolt request,
        dispatch and convert back. 413 / 401 / 400 as described in the module docstring."""
        if req.method != "POST":
            return await super().handle(req, addition_context_properties)
        from common.http_body import BodyRefused, read_body_capped

        try:
            body = await read_body_capped(req, self.max_body_bytes)
        except BodyRefused as exc:
            log.warning("slack: %s from %s: refused with %d", exc, req.client, exc.status)
            return Response(str(exc), status_code=exc.status, headers={"Connection": "close"})
        except ClientDisconnect:
            return Response("client disconnected", status_code=400)
        if not valid_signature(self.signing_secret, req.headers, body):
            log.warning("slack: bad, stale or missing signature from %s (%d bytes): refused with 401",
                        req.client, len(body))
            return Response("invalid request", status_code=401)
        try:
            bolt_req = to_bolt_request(req, body, addition_context_properties)
        except Exception as exc:  # signed but not what Slack sends
            log.warning("slack: signed request from %s is malformed (%s): refused with 400",
                        req.client, type(exc).__name__)
            return Response("malformed request", status_code=400)
        bolt_resp = await run_in_threadpool(self.app.dispatch, bolt_req)
        return to_starlette_response(bolt_resp)


def slack_event_routes(bolt_app: App, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> list[Route]:
    """``POST /slack/events`` dispatched to ``bolt_app`` on a worker thread (bodies over
    ``max_body_bytes`` get 413)."""
    handler = ThreadedSlackRequestHandler(bolt_app, max_body_bytes=max_body_bytes)

    async def events(request: Request) -> Response:
        return await handler.handle(request)

    return [Route(EVENTS_PATH, events, methods=["POST"])]


def start_socket_mode(bolt_app: App, settings: SlackSettings):
    """Connect to Slack over Socket Mode (non-blocking); returns the handler (``close()`` it)."""
    from slack_bolt.adapter.socket_mode import SocketModeHandler

    handler = SocketModeHandler(bolt_app, app_token=settings.app_token)
    handler.connect()
    return handler


def _one_line_logs() -> bool:
    """Whether the root logger writes :class:`common.logs.OneLineFormatter` lines."""
    from common.logs import OneLineFormatter

    return any(isinstance(h.formatter, OneLineFormatter) for h in logging.getLogger().handlers)


def serve(asgi, bolt_app: App | None, settings: SlackSettings | None, *, host: str = "127.0.0.1",
          port: int = 3000, log_level: str = "info") -> None:
    """Run ``asgi`` with uvicorn until interrupted; with Slack in Socket Mode, also keep
    the outgoing Socket Mode connection open for that time."""
    import copy

    import uvicorn
    import uvicorn.config

    from common.redact import install_log_redaction

    handler = start_socket_mode(bolt_app, settings) if bolt_app is not None and settings and settings.socket_mode else None
    try:
        # every log line on stderr, the access log too (uvicorn's default sends it to stdout)
        log_config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
        log_config["handlers"]["access"]["stream"] = "ext://sys.stderr"
        if _one_line_logs():  # the process logs one line per record (the indexer role): uvicorn too
            log_config["formatters"] = {name: {"()": "common.logs.OneLineFormatter"}
                                        for name in log_config["formatters"]}
        config = uvicorn.Config(asgi, host=host, port=port, log_level=log_level,
                                log_config=log_config)  # configures uvicorn's logging
        install_log_redaction()  # ... so its handlers get the redacting filter after that
        uvicorn.Server(config).run()
    finally:
        if handler is not None:
            handler.close()
