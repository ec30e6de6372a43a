"""Drive the real Teams front end over real HTTP: ``coderag serve``'s ASGI app (uvicorn in
a thread) with the Teams provider, a :class:`FakeConnector` as the activities' serviceUrl,
Activity JSON as Teams sends it, and a stub answer service (our own ``AnswerService``
subclass; no Weaviate)."""
from __future__ import annotations

import itertools
import threading
import time
import uuid

import httpx

from bot.answer.service import Answer, AnswerService
from bot.querylog.recorder import QueryLog
from bot.server import ServerContext, build_asgi
from helpers.http_server import BackgroundServer
from bot.teams.auth import TeamsAuth
from bot.teams.routes import build_teams
from common.settings import ChatSettings, TeamsSettings, load

from .fake_teams import FakeConnector
from .slack_harness import GITHUB, citation

BOT_ID = "28:0b1c2d3e-bot"
BOT_NAME = "coderag"
TENANT = "72f988bf-86f1-41af-91ab-2d7cd011db47"
TEAM_CHANNEL = "19:a1b2c3d4e5f60718293a4b5c6d7e8f90@thread.tacv2"
USER = {"id": "29:1XyZuser-teams-id-abcdefghijklmnopqrstuvwxyz0123456789", "name": "Ada Lovelace",
        "aadObjectId": "6a7b8c9d-0000-4000-8000-123456789abc"}


class StubService(AnswerService):
    """Our answer service with retrieval replaced: a fixed answer; records ``ask`` calls
    (question and keywords). Honours :class:`bot.chat.turn.AnswerPort` (the same
    signatures as ``AnswerService``)."""

    def __init__(self, *, text=None, citations=None, sources=None, report=None, fail=None):
        self.text, self.fail = text, fail
        self.citations = [citation()] if citations is None else citations
        self.sources = sources or []
        self.report = report
        self.asked: list[tuple[str, dict]] = []
        self.lock = threading.Lock()
        self.settings = load()  # like AnswerService: what `who`/`drift` replies read (bot.knowledge.chat_reply)

    def ask(self, question, *, repos=None, history=(), persona=None, allowed=None, ref=None):
        with self.lock:
            self.asked.append((question, {"history": list(history), "allowed": allowed}))
        if self.fail is not None:
            raise self.fail
        text = self.text if self.text is not None else f"Answer to: {question}\n[1] tax & <totals>"
        return Answer(question=question, text=text, citations=list(self.citations), hits=[],
                      no_coverage=False, model="stub", latency_ms={"retrieve": 1.0, "generate": 2.0})

    def status(self, allowed=None):
        return [s for s in self.sources if allowed is None or s["name"] in allowed]

    def impact(self, symbol, *, repo=None, depth=3, allowed=None, ref=None):
        return dict(self.report, symbol=symbol)


class Harness:
    """Teams front end on real HTTP + fake connector. Use as a context manager."""

    def __init__(self, service: AnswerService, *, auth: TeamsAuth | None = None, repo_urls=None,
                 sessions=None, policy=None):
        self.fake = FakeConnector().start()
        if sessions is None:
            from common.db import open_database

            sessions = open_database()
        self.sessions = sessions
        chat = ChatSettings.from_env({}, repo_urls={"shop": GITHUB} if repo_urls is None else repo_urls)
        self.front = build_teams(service, TeamsSettings.from_env({}), chat=chat, auth=auth or TeamsAuth(),
                                 querylog=QueryLog(sessions, settings=load().querylog), policy=policy)
        self.server = BackgroundServer(build_asgi(ServerContext(service=service, sessions=sessions,
                                                                teams=self.front))).start()
        self.http = httpx.Client(timeout=30)
        self._ids = itertools.count(1712345678000)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.http.close()
        self.server.stop()
        self.fake.stop()

    @property
    def url(self) -> str:
        return f"{self.server.url}/api/messages"

    def post(self, body, headers=None) -> httpx.Response:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        if isinstance(body, (dict, list)):
            return self.http.post(self.url, json=body, headers=h)
        return self.http.post(self.url, content=body, headers=h)

    # ----------------------------------------------------------------- activities
    def activity(self, text: str | None, *, kind="channel", mention=True, value=None, thread_root=None,
                 activity_id=None, type_="message", name=None) -> dict:
        """A message (or invoke) activity as Teams sends it. ``kind``: ``channel``,
        ``personal`` or ``groupChat``; ``thread_root``: the channel thread's root id
        (default: this message starts the thread)."""
        aid = activity_id or str(next(self._ids))
        if kind == "channel":
            conv = {"id": f"{TEAM_CHANNEL};messageid={thread_root or aid}", "conversationType": "channel",
                    "isGroup": True, "tenantId": TENANT}
            channel_data = {"teamsChannelId": TEAM_CHANNEL, "channel": {"id": TEAM_CHANNEL},
                            "team": {"id": TEAM_CHANNEL}, "tenant": {"id": TENANT}}
        elif kind == "groupChat":
            conv = {"id": "19:groupchat-0123456789abcdef@thread.v2", "conversationType": "groupChat",
                    "isGroup": True, "tenantId": TENANT}
            channel_data = {"tenant": {"id": TENANT}}
        else:
            conv = {"id": "a:1personal-conversation-" + "x" * 80, "conversationType": "personal",
                    "tenantId": TENANT}
            channel_data = {"tenant": {"id": TENANT}}
        act = {"type": type_, "id": aid, "timestamp": "2026-01-01T10:00:00.000Z", "localTimestamp":
               "2026-01-01T11:00:00.000+01:00", "serviceUrl": self.fake.url, "channelId": "msteams",
               "from": dict(USER), "conversation": conv, "recipient": {"id": BOT_ID, "name": BOT_NAME},
               "channelData": channel_data, "locale": "en-US"}
        if name:
            act["name"] = name
        if text is not None:
            act["textFormat"] = "plain"
            if mention:
                act["text"] = f"<at>{BOT_NAME}</at> {text}"
                act["entities"] = [{"type": "mention", "text": f"<at>{BOT_NAME}</at>",
                                    "mentioned": {"id": BOT_ID, "name": BOT_NAME}}]
            else:
                act["text"] = text
        if value is not None:
            act["value"] = value
        return act

    def wait_messages(self, n: int = 1, timeout: float = 15.0):
        """The first ``n`` recorded message activities (waits for them)."""
        return self.fake.wait_for(lambda: (m := self.fake.messages()) and len(m) >= n and m[:n], timeout)[:n]


def card_of(call) -> dict:
    """The Adaptive Card of a recorded reply."""
    atts = call.body.get("attachments") or []
    assert atts and atts[0]["contentType"] == "application/vnd.microsoft.card.adaptive", call.body
    return atts[0]["content"]


def card_texts(card: dict) -> list[str]:
    """All TextBlock texts of a card, in order (containers included)."""
    out = []

    def walk(items):
        for it in items:
            if it.get("type") == "TextBlock":
                out.append(it["text"])
            walk(it.get("items") or [])

    walk(card.get("body") or [])
    return out


def wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = predicate()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError("timed out")


new_id = lambda: uuid.uuid4().hex  # noqa: E731
