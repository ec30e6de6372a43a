"""``coderag serve``: one HTTP server (Starlette + uvicorn) for every front end and hook.

Each front end contributes routes through a *route provider* — a function of the
:class:`ServerContext` returning Starlette routes — listed in :data:`ROUTE_PROVIDERS`:
Slack's ``/slack/events``, Teams' ``/api/messages``, the health endpoints and webhooks.
A provider returns ``[]`` when its front end is not configured. ``/metrics`` is not
among them: it has its own listener (:func:`bot.health.start_metrics_listener`). The
objects in the context are built once, per role, by :mod:`bot.wiring`; providers only read them.
"""
from __future__ import annotations

import logging
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

if TYPE_CHECKING:  # annotations only: importing the front ends here would tie them to this module
    from slack_bolt import App
    from sqlalchemy.orm import sessionmaker

    from common.settings import AppSettings, Settings
    from indexer import FreshnessRuntime
    from indexer.read import ChunkReader

    from .answer.service import AnswerService
    from .teams.routes import TeamsFrontEnd

log = logging.getLogger(__name__)


@dataclass
class ServerContext:
    """What route providers may use (``None`` = not running in this process).

    service: the shared answer service (bot and all roles); sessions: SQL session
    factory; settings: storage settings; store: the index (readiness checks; default the
    service's); slack_app: the Bolt ``App`` when Slack is configured; socket_mode: Slack
    connects out over Socket Mode (no ``/slack/events`` route); teams: the Teams front
    end; freshness: the freshness runtime (webhooks; indexer and all roles); role:
    ``CODERAG_ROLE``; app_settings: every group (``None``: no MCP transport).
    """

    #: Every setting, read once at start-up (the MCP transport's tokens and its answers).
    app_settings: "AppSettings | None" = None
    service: "AnswerService | None" = None
    sessions: "sessionmaker | None" = None
    settings: "Settings | None" = None
    store: "ChunkReader | None" = None
    slack_app: "App | None" = None
    socket_mode: bool = False
    teams: "TeamsFrontEnd | None" = None
    freshness: "FreshnessRuntime | None" = None
    role: str = "all"
    mcp: bool = False
    #: Async context managers the ASGI app's lifespan enters (e.g. the MCP session manager).
    lifespans: list = field(default_factory=list)
    #: The ``/admin`` site when it is served (:func:`admin_routes`).
    admin: object = None


RouteProvider = Callable[[ServerContext], list[BaseRoute]]

ROLES = ("all", "bot", "indexer")


# ``CODERAG_ROLE`` (:class:`common.settings.ProcessSettings`): what one ``coderag serve``
# process runs (default ``all``):
# * ``bot`` — Slack (and other chat front ends) plus ``/healthz``, ``/readyz`` (and the
#   separate ``/metrics`` listener); no scheduler, so it can run as many replicas as needed.
# * ``indexer`` — webhooks and the single re-index scheduler plus the health routes; no
#   Slack (no Slack tokens needed). Exactly ONE replica may run (one scheduler).
# * ``all`` — everything in one process (a single-machine install).


def health_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``GET /healthz``: the process is up (no dependency checks)."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse({"ok": True, "slack": "socket" if ctx.socket_mode else
                             ("http" if ctx.slack_app is not None else "off")})

    return [Route("/healthz", healthz, methods=["GET"])]


def slack_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST /slack/events`` for HTTP mode (events, slash commands, interactivity)."""
    if ctx.slack_app is None or ctx.socket_mode:
        return []
    from .slack.server import slack_event_routes

    return slack_event_routes(ctx.slack_app, max_body_bytes=_body_cap(ctx))


def _body_cap(ctx: ServerContext) -> int:
    """The request body cap of the chat and agent routes (bytes)."""
    from .slack.server import DEFAULT_MAX_BODY_BYTES

    return getattr(ctx.settings, "slack_max_body_bytes", None) or DEFAULT_MAX_BODY_BYTES


def teams_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST /api/messages`` (Microsoft Teams, :mod:`bot.teams`) when Teams is configured."""
    if ctx.teams is None:
        return []
    from .teams.routes import message_routes

    return message_routes(ctx.teams)


ROUTE_PROVIDERS: list[RouteProvider] = [health_routes, slack_routes, teams_routes]



def ops_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``GET /readyz`` (Weaviate and the SQL database reachable, else 503 naming the
    failed one); see :mod:`bot.health`."""
    from .health import ops_routes as _ops

    return _ops(ctx)


ROUTE_PROVIDERS.insert(ROUTE_PROVIDERS.index(health_routes) + 1, ops_routes)

def webhook_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST /webhooks/github`` and ``/webhooks/gitlab`` (see indexer.freshness.webhooks);
    ``[]`` unless the process runs a freshness runtime with repos and a webhook secret
    (never in the ``bot`` role)."""
    from indexer import webhook_routes as _webhooks

    if ctx.role == "bot" or ctx.freshness is None:
        return []
    return _webhooks(ctx.freshness)


ROUTE_PROVIDERS.append(webhook_routes)


def mcp_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST/GET/DELETE /mcp``: the MCP streamable HTTP transport (:mod:`bot.mcp_server`)
    behind bearer tokens (``CODERAG_MCP_TOKENS``) and the same body cap as the Slack
    route; ``[]`` unless tokens are configured and this process answers (not the
    ``indexer`` role)."""
    if not ctx.mcp or ctx.service is None or ctx.role == "indexer" or ctx.app_settings is None:
        return []
    from mcp.server.transport_security import TransportSecuritySettings

    from .mcp_server import Backend, McpAccess, McpAuth, build_server, http_principal

    server = build_server(Backend(ctx.app_settings, sessions=ctx.sessions, service=ctx.service), http_principal)
    # Bearer tokens guard every request, so the SDK's DNS-rebinding host check (meant for
    # unauthenticated local servers) would only reject a real deployment's host name.
    inner = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True,
        max_request_body_size=_body_cap(ctx),
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False))
    ctx.lifespans.append(server.session_manager.run)
    route = inner.routes[0]
    return [Route("/mcp", endpoint=McpAuth(route.endpoint, McpAccess.from_settings(ctx.app_settings.chat)), methods=route.methods)]


ROUTE_PROVIDERS.append(mcp_routes)


def build_asgi(ctx: ServerContext) -> Starlette:
    """The ASGI app with every provider's routes."""
    routes: list[BaseRoute] = []
    for provider in ROUTE_PROVIDERS:
        routes.extend(provider(ctx))
    if not ctx.lifespans:
        return Starlette(routes=routes)

    @asynccontextmanager
    async def lifespan(_app):
        async with AsyncExitStack() as stack:
            for enter in ctx.lifespans:
                await stack.enter_async_context(enter())
            yield

    return Starlette(routes=routes, lifespan=lifespan)


def admin_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``/admin``: the operators' web page (:mod:`bot.admin`), mounted when an admin
    sign-in is configured (``CODERAG_ADMIN_TOKEN``, or ``SLACK_CLIENT_ID`` and
    ``SLACK_CLIENT_SECRET`` with ``CODERAG_ADMIN_USERS``) in a process with a database
    that is not the ``indexer`` role; ``[]`` otherwise (then ``/admin`` is a 404)."""
    admin = getattr(ctx.app_settings, "admin", None)
    if admin is None or not admin.enabled or ctx.sessions is None or ctx.role == "indexer":
        return []
    from starlette.routing import Mount

    from .admin.app import AdminDeps, AdminSite

    store = ctx.store if ctx.store is not None else getattr(ctx.service, "store", None)
    client = getattr(ctx.slack_app, "client", None) if ctx.slack_app is not None else None
    site = AdminSite(AdminDeps(sessions=ctx.sessions, app=ctx.app_settings, admin=admin, store=store,
                               slack_client=client, freshness=ctx.freshness,
                               teams=ctx.teams.bot if ctx.teams is not None else None))
    ctx.admin = site
    return [Mount("/admin", app=site.asgi())]


ROUTE_PROVIDERS.append(admin_routes)
