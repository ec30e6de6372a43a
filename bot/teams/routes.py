"""``POST /api/messages`` — the Teams messaging endpoint in ``coderag serve``.

Per request: authenticate (:func:`bot.teams.auth.authenticate`: 401 unless a valid
Bot Framework / Entra JWT for our client id, or anonymous mode) → parse and validate the
Activity JSON (400 for invalid JSON, a body that is not an Activity, or one without
``type``, ``conversation.id`` or ``serviceUrl``; nothing is stored then) → the SDK's
``CloudAdapter.process`` runs :class:`bot.teams.app.TeamsBot` (202 for messages, the
invoke response for invokes).

Teams is served when ``CODERAG_TEAMS_CLIENT_ID`` (or the SDK's
``CONNECTIONS__SERVICE_CONNECTION__SETTINGS__CLIENTID``) is set, or — anonymous, for local
testing only — ``CODERAG_TEAMS=1``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from microsoft_agents.activity import Activity
from microsoft_agents.hosting.core import AgentAuthConfiguration, MessageFactory, OutboundHostValidator, TurnContext
from microsoft_agents.hosting.fastapi import CloudAdapter
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bot.chat.render import apology_message
from bot.chat.turn import AnswerPort
from bot.querylog.recorder import QueryLog
from bot.runconfig.drafts import ReviewDesk
from bot.tenancy import ChannelPolicy
from common.settings import ChatSettings, TeamsSettings

from .app import TeamsBot
from .auth import ANONYMOUS_WARNING, TeamsAuth, Unauthorized, authenticate

log = logging.getLogger(__name__)

MESSAGES_PATH = "/api/messages"


def teams_enabled(teams: TeamsSettings) -> bool:
    """True when Teams should be served: the ``teams`` group read at start-up has a
    client id, or ``CODERAG_TEAMS=1``."""
    return teams.enabled or not TeamsAuth.from_settings(teams).anonymous


@dataclass
class TeamsFrontEnd:
    """Everything ``/api/messages`` needs: the agent, the SDK adapter and auth settings."""

    bot: TeamsBot
    adapter: CloudAdapter
    auth: TeamsAuth
    auth_config: AgentAuthConfiguration


def build_teams(service: AnswerPort, settings: TeamsSettings, *, chat: ChatSettings, auth: TeamsAuth,
                querylog: QueryLog | None, policy: ChannelPolicy | None = None,
                review: ReviewDesk | None = None) -> TeamsFrontEnd:
    """Wire the Teams front end from what the composition root read at start-up.

    ``settings`` and ``chat``: the Teams and chat groups; ``auth``:
    :meth:`TeamsAuth.from_settings` (anonymous without a client id: a warning is
    logged); ``querylog``: where answers and votes are recorded (``None``: nowhere);
    ``policy``: the channel allow-list (default: no policy; the run-time policy also has
    reply modes); ``review``: the drafts of "draft for review" channels (default: none,
    every answer is posted). Outgoing service URLs are
    restricted to Microsoft's hosts (``OutboundHostValidator``) when auth is on;
    ``settings.service_hosts`` adds hosts.
    """
    config = auth.configuration()
    validator = OutboundHostValidator(list(settings.service_hosts), enabled=not auth.anonymous)
    adapter = CloudAdapter(connection_manager=auth.connections(config), host_validator=validator)
    bot = TeamsBot(service, settings, querylog, chat=chat, policy=policy, review=review)
    bot.adapter, bot.auth = adapter, auth

    async def on_turn_error(context: TurnContext, error: Exception) -> None:
        log.exception("Teams turn failed", exc_info=error)
        try:
            await context.send_activity(MessageFactory.text(f"⚠️ {apology_message()}"))
        except Exception as exc:
            log.warning("could not send the apology: %s", exc)

    adapter.on_turn_error = on_turn_error
    if auth.anonymous:
        log.warning(ANONYMOUS_WARNING)
    return TeamsFrontEnd(bot=bot, adapter=adapter, auth=auth, auth_config=config)


def _bad_request(message: str) -> Response:
    return JSONResponse({"error": message}, status_code=400)


def message_routes(front: TeamsFrontEnd) -> list[Route]:
    """``POST /api/messages`` for ``front``."""

    async def messages(request: Request) -> Response:
        try:
            request.state.claims_identity = await authenticate(request.headers.get("authorization"),
                                                               front.auth_config)
        except Unauthorized as exc:
            return JSONResponse({"error": str(exc)}, status_code=401)
        try:
            body = await request.json()
        except Exception:
            return _bad_request("invalid JSON or unsupported Content-Type")
        if not isinstance(body, dict):
            return _bad_request("the body must be an Activity object")
        try:
            activity = Activity.model_validate(body)
        except (ValidationError, ValueError, TypeError) as exc:
            log.info("malformed Teams activity: %s", str(exc).splitlines()[0])
            return _bad_request("malformed Activity")
        if not activity.type or not activity.conversation or not activity.conversation.id:
            return _bad_request("Activity must have type and conversation.id")
        if not activity.service_url:
            return _bad_request("Activity must have serviceUrl")
        return await front.adapter.process(request, front.bot)

    return [Route(MESSAGES_PATH, messages, methods=["POST"])]
