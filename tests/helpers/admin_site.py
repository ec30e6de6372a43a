"""``coderag serve``'s HTTP app with ``/admin`` for tests: the real Bolt app (Slack
events signed and posted over real HTTP), the run-time configuration seeded from an
environment, a fake Slack (Web API and "Sign in with Slack"), a real SQLite or
PostgreSQL database, uvicorn on a free loopback port."""
from __future__ import annotations

import json
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx

from bot.querylog.recorder import QueryLog
from bot.runconfig.drafts import ReviewDesk
from bot.runconfig.policy import RuntimePolicy
from bot.runconfig.store import RunConfig, Seed
from bot.server import ServerContext, build_asgi
from common.db import open_database
from common.settings import load
from helpers.fake_slack import sign
from helpers.fake_slack_oidc import CLIENT_ID, CLIENT_SECRET, FakeSlackOIDC
from helpers.http_server import BackgroundServer
from helpers.slack_harness import SECRET, StubService

ADMIN_TOKEN = "admin-token-0123456789abcdef0123"
ADMIN_USER = "UADMIN001"


def app_settings(env: dict[str, str]):
    """Every settings group read from ``env`` (as ``coderag`` reads them at start-up)."""
    return load(env)


@dataclass
class AdminStack:
    """The running app: ``base`` URL, its ``sessions``, the ``fake`` Slack, the stub
    answer ``service`` and the settings ``app``."""

    base: str
    sessions: Any
    fake: FakeSlackOIDC
    service: Any
    app: Any
    ctx: ServerContext
    #: Teams' fake connector (the activities' serviceUrl) when the stack serves Teams too
    connector: Any = None

    def client(self) -> httpx.Client:
        """A fresh HTTP client (its own cookie jar) on the app."""
        return httpx.Client(base_url=self.base, timeout=30, follow_redirects=False)

    def sign_in(self, client: httpx.Client, token: str = ADMIN_TOKEN) -> httpx.Response:
        """Sign ``client`` in with the token form (reading the CSRF token first)."""
        page = client.get("/admin/login")
        return client.post("/admin/login", data={"token": token, "csrf_token": csrf_of(page.text)})

    def sign_in_slack(self, client: httpx.Client) -> httpx.Response:
        """Sign ``client`` in with Slack as :attr:`fake.user`, following the redirects
        through the fake's authorize page; returns the callback's response."""
        start = client.get("/admin/login/slack")
        assert start.status_code == 303, start.text
        at_slack = httpx.get(start.headers["location"], follow_redirects=False)
        assert at_slack.status_code == 302
        return client.get(at_slack.headers["location"].removeprefix(self.base))

    def slack_event(self, event: dict, event_id: str) -> httpx.Response:
        """Sign and post one Events API delivery to ``/slack/events``."""
        body = json.dumps({"token": "legacy", "team_id": "T0000001", "api_app_id": "A0001",
                           "type": "event_callback", "event_id": event_id, "event_time": 1800000000,
                           "authorizations": [{"team_id": "T0000001", "user_id": "UBOT0001", "is_bot": True}],
                           "event": event})
        headers = {"Content-Type": "application/json", **sign(SECRET, body)}
        return httpx.post(f"{self.base}/slack/events", content=body.encode(), headers=headers, timeout=30)

    def wait_logged(self, message_ts: str, timeout: float = 30.0) -> int:
        """The query-log id of the question at ``message_ts``, once its record is written
        (a front end records an answer right after posting it)."""
        from sqlalchemy import select

        from bot.querylog.models import Query

        def found():
            with self.sessions() as s:
                return s.scalar(select(Query.id).where(Query.message_ts == message_ts))

        return self.fake.wait_for(found, timeout=timeout)

    def teams_message(self, text: str, activity_id: str, *, kind: str = "channel") -> httpx.Response:
        """Post one Teams message mentioning the bot (in :data:`helpers.teams_harness.TEAM_CHANNEL`
        for ``kind`` ``channel``, else a group chat) to ``/api/messages``, as Teams sends it
        (anonymous mode)."""
        from helpers.teams_harness import BOT_ID, BOT_NAME, TEAM_CHANNEL, TENANT, USER

        if kind == "channel":
            conv = {"id": f"{TEAM_CHANNEL};messageid={activity_id}", "conversationType": "channel",
                    "isGroup": True, "tenantId": TENANT}
            data = {"teamsChannelId": TEAM_CHANNEL, "channel": {"id": TEAM_CHANNEL}, "team": {"id": TEAM_CHANNEL},
                    "tenant": {"id": TENANT}}
        else:
            conv = {"id": "19:groupchat-0123456789abcdef@thread.v2", "conversationType": "groupChat",
                    "isGroup": True, "tenantId": TENANT}
            data = {"tenant": {"id": TENANT}}
        act = {"type": "message", "id": activity_id, "timestamp": "2026-01-01T10:00:00.000Z",
               "serviceUrl": self.connector.url, "channelId": "msteams", "from": dict(USER), "conversation": conv,
               "recipient": {"id": BOT_ID, "name": BOT_NAME}, "channelData": data, "locale": "en-US",
               "textFormat": "plain", "text": f"<at>{BOT_NAME}</at> {text}",
               "entities": [{"type": "mention", "text": f"<at>{BOT_NAME}</at>",
                             "mentioned": {"id": BOT_ID, "name": BOT_NAME}}]}
        return httpx.post(f"{self.base}/api/messages", json=act, timeout=30)

    def interaction(self, payload: dict) -> httpx.Response:
        """Sign and post one interactivity payload (a button click, a modal submission)."""
        from urllib.parse import urlencode

        body = urlencode({"payload": json.dumps(payload)})
        headers = {"Content-Type": "application/x-www-form-urlencoded", **sign(SECRET, body)}
        return httpx.post(f"{self.base}/slack/events", content=body.encode(), headers=headers, timeout=30)

    def vote_down(self, value: str, *, channel: str, message_ts: str, reason: str, text: str,
                  user: str = "U0000009") -> None:
        """A 👎 click on an answer's button (``value`` as the button carries it), then
        the "What went wrong?" form sent with ``reason`` and ``text``, as Slack sends them."""
        from bot.slack import blocks as bk

        base = {"team": {"id": "T0000001", "domain": "acme"}, "api_app_id": "A0001", "token": "legacy",
                "user": {"id": user, "username": "dev", "team_id": "T0000001"}, "trigger_id": "1.2.3"}
        click = dict(base, type="block_actions",
                     container={"type": "message", "message_ts": message_ts, "channel_id": channel},
                     channel={"id": channel, "name": "general"},
                     message={"type": "message", "ts": message_ts, "text": "answer"},
                     response_url=self.fake.response_url("vote"),
                     actions=[{"action_id": bk.FEEDBACK_DOWN, "block_id": bk.FEEDBACK_BLOCK_ID, "value": value,
                               "type": "button", "action_ts": "1800000000.1"}])
        assert self.interaction(click).status_code == 200
        key = json.loads(value)
        view = {"id": "V0001", "type": "modal", "callback_id": bk.FEEDBACK_MODAL, "hash": "h",
                "private_metadata": json.dumps({"channel": key.get("channel") or channel,
                                                "ts": key.get("ts") or message_ts, "q": key.get("q", "")}),
                "state": {"values": {"reason": {"choice": {"type": "radio_buttons",
                                                           "selected_option": {"value": reason}}},
                                     "details": {"text": {"type": "plain_text_input", "value": text}}}}}
        assert self.interaction(dict(base, type="view_submission", view=view)).status_code == 200


def csrf_of(html: str) -> str:
    """The CSRF token in a page's first form."""
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, "no CSRF token on the page"
    return m.group(1)


def base_env(home: Path, db_url: str | None = None, **extra: str) -> dict[str, str]:
    """The environment of the stack: token and Slack sign-in, Slack in HTTP mode."""
    env = {"CODERAG_HOME": str(home), "CODERAG_ADMIN_TOKEN": ADMIN_TOKEN, "SLACK_CLIENT_ID": CLIENT_ID,
           "SLACK_CLIENT_SECRET": CLIENT_SECRET, "CODERAG_ADMIN_USERS": ADMIN_USER,
           "SLACK_BOT_TOKEN": "xoxb-test-token", "SLACK_SIGNING_SECRET": SECRET}
    if db_url:
        env["CODERAG_DATABASE_URL"] = db_url
    env.update(extra)
    return env


@contextmanager
def admin_stack(env: dict[str, str], *, service: Any = None, sync=None, teams: bool = False) -> Iterator[AdminStack]:
    """Start the stack on ``env`` (``SLACK_API_URL`` is set to the fake's); ``service``
    answers questions (default a :class:`StubService`); ``sync`` replaces the re-sync use
    case (a callable ``(deps, name, kind) -> summary``); ``teams``: serve Teams too
    (anonymous, its replies to a fake connector), wired as ``coderag serve`` wires it."""
    from bot.slack.app import build_app

    fake = FakeSlackOIDC().start()
    server = connector = None
    try:
        env = dict(env, SLACK_API_URL=fake.api_url)
        app = app_settings(env)
        sessions = open_database(app.core)
        RunConfig(sessions).seed(Seed.from_settings(app, review_channel=app.admin.review_channel))
        service = service if service is not None else StubService()
        querylog = QueryLog(sessions, settings=app.querylog)
        bolt = build_app(service, app.slack, chat=app.chat, sessions=sessions, querylog=querylog,
                         policy=RuntimePolicy(sessions),
                         review=ReviewDesk(sessions, public_url=app.admin.public_url))
        front = None
        if teams:
            from bot.teams.auth import TeamsAuth
            from bot.teams.routes import build_teams
            from helpers.fake_teams import FakeConnector

            connector = FakeConnector().start()
            front = build_teams(service, app.teams, chat=app.chat, auth=TeamsAuth(), querylog=querylog,
                                policy=RuntimePolicy(sessions),
                                review=ReviewDesk(sessions, public_url=app.admin.public_url,
                                                  post=lambda to, text: bolt.client.chat_postMessage(channel=to,
                                                                                                     text=text)))
        ctx = ServerContext(app_settings=app, service=service, sessions=sessions, settings=app.core, slack_app=bolt,
                            teams=front)
        asgi = build_asgi(ctx)
        if sync is not None:
            ctx.admin.deps.sync = sync
        server = BackgroundServer(asgi).start()
        yield AdminStack(base=server.url, sessions=sessions, fake=fake, service=service, app=app, ctx=ctx,
                         connector=connector)
    finally:
        if server is not None:
            server.stop()
        if connector is not None:
            connector.stop()
        fake.stop()

