"""``coderag serve``: one HTTP server (Starlette + uvicorn) for every front end and hook.

Each front end contributes routes through a *route provider* — a function of the
:class:`ServerContext` returning Starlette routes — listed in :data:`ROUTE_PROVIDERS`:
Slack's ``/slack/events``, Teams' ``/api/messages``, the health endpoints, webhooks and
metrics. A provider returns ``[]`` when its front end is not configured.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

log = logging.getLogger(__name__)


@dataclass
class ServerContext:
    """What route providers may use.

    service: the shared ``AnswerService``; sessions: SQL session factory; settings:
    ``indexer.Settings``; slack_app: the Bolt ``App`` when Slack is configured;
    socket_mode: Slack connects out over Socket Mode (no ``/slack/events`` route).
    teams: the Teams front end (``bot.teams.routes.TeamsFrontEnd``) when configured.
    extras: per-front-end objects (e.g. a webhook queue) for shutdown hooks.
    """

    service: Any
    sessions: Any = None
    settings: Any = None
    slack_app: Any = None
    socket_mode: bool = False
    teams: Any = None
    extras: dict = field(default_factory=dict)


RouteProvider = Callable[[ServerContext], list[BaseRoute]]

ROLES = ("all", "bot", "indexer")


def server_role(env: dict | None = None) -> str:
    """``CODERAG_ROLE``: what this ``coderag serve`` process runs (default ``all``).

    * ``bot`` — Slack (and other chat front ends) plus ``/healthz``, ``/readyz``, ``/metrics``;
      no scheduler, so it can run as many replicas as needed.
    * ``indexer`` — webhooks and the single re-index scheduler plus the health routes; no
      Slack (no Slack tokens needed). Exactly ONE replica may run (one scheduler).
    * ``all`` — everything in one process (a single-machine install).

    Raises ``BadInput`` for another value.
    """
    import os

    from common.errors import BadInput

    raw = ((os.environ if env is None else env).get("CODERAG_ROLE") or "all").strip().lower()
    if raw not in ROLES:
        raise BadInput(f"CODERAG_ROLE must be one of {', '.join(ROLES)}, got {raw!r}")
    return raw



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

    return slack_event_routes(ctx.slack_app)


def teams_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST /api/messages`` (Microsoft Teams, :mod:`bot.teams`) when Teams is configured."""
    if ctx.teams is None:
        return []
    from .teams.routes import message_routes

    return message_routes(ctx.teams)


ROUTE_PROVIDERS: list[RouteProvider] = [health_routes, slack_routes, teams_routes]



def ops_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``GET /readyz`` (Weaviate and the SQL database reachable, else 503 naming the
    failed one) and ``GET /metrics`` (Prometheus); see :mod:`bot.health`."""
    from .health import ops_routes as _ops

    return _ops(ctx)


ROUTE_PROVIDERS.insert(ROUTE_PROVIDERS.index(health_routes) + 1, ops_routes)

def webhook_routes(ctx: ServerContext) -> list[BaseRoute]:
    """``POST /webhooks/github`` and ``/webhooks/gitlab`` (see indexer.freshness.webhooks);
    ``[]`` unless CODERAG_REPOS and a webhook secret are configured, and in the ``bot`` role."""
    from indexer import webhook_routes as _webhooks

    if server_role() == "bot":
        return []

    return _webhooks(ctx)


ROUTE_PROVIDERS.append(webhook_routes)


def build_asgi(ctx: ServerContext) -> Starlette:
    """The ASGI app with every provider's routes."""
    routes: list[BaseRoute] = []
    for provider in ROUTE_PROVIDERS:
        routes.extend(provider(ctx))
    return Starlette(routes=routes)
