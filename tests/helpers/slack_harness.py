"""Drive the real coderag Bolt app over real HTTP: uvicorn on 127.0.0.1:0 in a thread,
a :class:`FakeSlack` Web API, signed Events API / slash-command / interactivity posts,
and stub answer services (subclasses of our own ``AnswerService``; no Weaviate)."""
from __future__ import annotations

import itertools
import json
import threading
import time
from datetime import datetime, timedelta, timezone
from urllib.parse import urlencode

import httpx

from bot.answer.extractive import Citation
from bot.answer.service import Answer, AnswerService
from bot.querylog.recorder import QueryLog
from bot.slack.app import build_app
from common.settings import ChatSettings, SlackSettings, load
from helpers.http_server import BackgroundServer, build_http_app

from .fake_slack import BOT_USER_ID, TEAM_ID, FakeSlack, sign

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
GITHUB = "https://github.com/acme/shop/blob/{commit}/{path}#L{start}-L{end}"


def citation(path="src/tax.py", start=10, end=24, symbol="calculatePriceWithTax", repo="shop",
             commit=COMMIT, age=timedelta(hours=2)) -> Citation:
    return Citation(repo=repo, path=path, start_line=start, end_line=end, commit=commit, symbol=symbol,
                    indexed_at=datetime.now(timezone.utc) - age)


class StubService(AnswerService):
    """Our answer service with retrieval replaced: fixed answer, optional delay/failure.
    Honours :class:`bot.chat.turn.AnswerPort` (the same signatures as ``AnswerService``).
    Records every ``ask`` call: ``asked`` (question, history), ``scopes`` (``allowed``)."""

    def __init__(self, *, delay: float = 0.0, fail: BaseException | None = None, text: str | None = None,
                 citations: list[Citation] | None = None, sources: list[dict] | None = None):
        self.delay, self.fail = delay, fail
        self.text = text
        self.citations = [citation()] if citations is None else citations
        self.sources = sources or []
        self.asked: list[tuple[str, list]] = []
        self.scopes: list = []
        self.lock = threading.Lock()
        self.settings = load()  # like AnswerService: what `drift`/`who` replies read (bot.knowledge.chat_reply)

    def ask(self, question, *, repos=None, history=(), persona=None, allowed=None, ref=None):
        with self.lock:
            self.asked.append((question, list(history)))
            self.scopes.append(allowed)
        if self.delay:
            time.sleep(self.delay)
        if self.fail is not None:
            raise self.fail
        text = self.text if self.text is not None else f"Answer to: {question}\n[1] tax & <totals>"
        return Answer(question=question, text=text, citations=list(self.citations), hits=[],
                      no_coverage=False, model="stub", latency_ms={})

    def status(self, allowed=None):
        return [s for s in self.sources if allowed is None or s["name"] in allowed]


class WithImpact(StubService):
    """A stub offering ``impact`` (the call-graph report)."""

    def __init__(self, report=None, error: BaseException | None = None, **kw):
        super().__init__(**kw)
        self.report, self.error = report, error

    def impact(self, symbol, *, repo=None, depth=3, allowed=None, ref=None):
        if self.error:
            raise self.error
        return dict(self.report, symbol=symbol)


class Harness:
    """Bolt app (real HTTP) + fake Slack Web API. Use as a context manager."""

    def __init__(self, service: AnswerService, *, onboarding=(), repo_urls=None, sessions=None,
                 socket_mode: bool = False, policy=None):
        self.fake = FakeSlack().start()
        self.service = service
        self.settings = SlackSettings.from_env({}, bot_token="xoxb-test-token", signing_secret=SECRET,
                                               app_token="xapp-1-test" if socket_mode else "",
                                               api_url=self.fake.api_url, onboarding_channels=frozenset(onboarding))
        self.chat = ChatSettings.from_env({}, repo_urls={"shop": GITHUB} if repo_urls is None else repo_urls)
        if sessions is None:
            from common.db import open_database

            sessions = open_database()
        self.sessions = sessions
        self.app = build_app(service, self.settings, chat=self.chat, sessions=sessions,
                             querylog=QueryLog(sessions, settings=load().querylog), policy=policy)
        self.server = None if socket_mode else BackgroundServer(build_http_app(self.app)).start()
        self.http = httpx.Client(timeout=30)
        self._ids = itertools.count(1)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.http.close()
        if self.server:
            self.server.stop()
        self.fake.stop()

    @property
    def url(self) -> str:
        return f"{self.server.url}/slack/events"

    def new_ts(self) -> str:
        """A message ts, ordered with the fake's own (bot messages get later ts values)."""
        return self.fake.next_ts()

    # ----------------------------------------------------------------- requests
    def post_raw(self, body: str, content_type: str, *, headers=None, signed=True, timestamp=None,
                 secret=SECRET) -> tuple[httpx.Response, float]:
        """POST ``body`` to /slack/events; returns the response and its latency (s)."""
        h = {"Content-Type": content_type}
        if signed:
            h.update(sign(secret, body, timestamp))
        h.update(headers or {})
        t0 = time.perf_counter()
        resp = self.http.post(self.url, content=body.encode(), headers=h)
        return resp, time.perf_counter() - t0

    def envelope(self, event: dict, event_id: str | None = None) -> dict:
        return {"token": "legacy", "team_id": TEAM_ID, "api_app_id": "A0001", "type": "event_callback",
                "event_id": event_id or f"Ev{next(self._ids):08d}", "event_time": int(time.time()),
                "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
                "event": event}

    def send_event(self, event: dict, *, event_id: str | None = None, retry: int | None = None, **kw):
        """Sign and post one Events API delivery (``retry`` sets X-Slack-Retry-Num)."""
        headers = {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"} if retry else None
        return self.post_raw(json.dumps(self.envelope(event, event_id)), "application/json", headers=headers, **kw)

    def mention(self, text="where is tax computed?", *, channel="C0000001", ts=None, thread_ts=None,
                user="U0000001", **kw):
        ts = ts or self.new_ts()
        event = {"type": "app_mention", "user": user, "text": f"<@{BOT_USER_ID}> {text}", "ts": ts,
                 "channel": channel, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        return ts, self.send_event(event, **kw)

    def message(self, text, *, channel="C0000001", channel_type="channel", ts=None, thread_ts=None,
                user="U0000001", extra=None, **kw):
        ts = ts or self.new_ts()
        event = {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
                 "channel_type": channel_type, "event_ts": ts}
        if thread_ts:
            event["thread_ts"] = thread_ts
        event.update(extra or {})
        return ts, self.send_event(event, **kw)

    def command(self, text: str, *, name="cmd", channel="C0000001", user="U0000001", trigger_id=None, **kw):
        """A signed ``/coderag`` slash command whose response_url points at the fake
        (``trigger_id``: unique per call by default, as Slack makes it per invocation)."""
        form = {"token": "legacy", "team_id": TEAM_ID, "team_domain": "acme", "channel_id": channel,
                "channel_name": "general", "user_id": user, "user_name": "dev", "command": "/coderag",
                "text": text, "api_app_id": "A0001", "response_url": self.fake.response_url(name),
                "trigger_id": trigger_id or f"13345224609.{next(self._ids)}.8088930838d88f008e0"}
        return self.post_raw(urlencode(form), "application/x-www-form-urlencoded", **kw)

    def click(self, action_id: str, value: str, *, channel="C0000001", message_ts="1800000000.000001",
              user="U0000009", name="act", **kw):
        """A signed block_actions payload (a button click) with a fake response_url."""
        payload = {"type": "block_actions", "team": {"id": TEAM_ID, "domain": "acme"},
                   "user": {"id": user, "username": "dev", "team_id": TEAM_ID},
                   "api_app_id": "A0001", "token": "legacy", "trigger_id": "1.2.3",
                   "container": {"type": "message", "message_ts": message_ts, "channel_id": channel,
                                 "is_ephemeral": False},
                   "channel": {"id": channel, "name": "general"},
                   "message": {"type": "message", "ts": message_ts, "user": BOT_USER_ID, "text": "answer"},
                   "response_url": self.fake.response_url(name),
                   "actions": [{"action_id": action_id, "block_id": "coderag_feedback", "value": value,
                                "type": "button", "action_ts": str(time.time())}]}
        return self.post_raw(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded", **kw)
