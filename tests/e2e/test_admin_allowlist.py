"""The allow-list set on the admin page is the one the bot enforces, end to end:
``coderag serve`` as a process (real Weaviate, MiniLM, SQLite), two repositories
indexed for real, the environment seeding a channel that may read both; the channel is
changed on the page (its forms, CSRF token and all) to read only one, and the next
signed Slack question from that channel retrieves from that one only."""
from __future__ import annotations

import json
import os
import time

import httpx
import pytest
from sqlalchemy import select

from common.settings import Settings
from helpers.admin_site import ADMIN_TOKEN, csrf_of
from helpers.fake_slack import BOT_USER_ID, FakeSlack, sign
from helpers.gitrepo import make_git_repo
from helpers.serve_process import serve_process
from helpers.shop_repo import FILES as SHOP
from helpers.slack_harness import SECRET

pytestmark = pytest.mark.weaviate

BILLING = {"billing/refunds.py": '''"""Refunds."""


def compute_refund_amount(order_total, returned_items):
    """The refund for returned items: their price, minus the restocking fee."""
    fee = 0.05 * sum(i.price for i in returned_items)
    return sum(i.price for i in returned_items) - fee
'''}
QUESTION = "how is the refund amount for returned items computed?"


def _ask(base: str, fake, ts: str, event_id: str) -> None:
    body = json.dumps({"type": "event_callback", "team_id": "T0000001", "event_id": event_id,
                       "event": {"type": "app_mention", "user": "U1", "channel": "C0000001", "ts": ts,
                                 "text": f"<@{BOT_USER_ID}> {QUESTION}"}})
    r = httpx.post(f"{base}/slack/events", content=body, headers={"Content-Type": "application/json",
                                                                  **sign(SECRET, body)})
    assert r.status_code == 200
    fake.wait_for(lambda: [p for p in fake.posts("C0000001") if p.body.get("thread_ts") == ts
                           and p.body.get("blocks")], timeout=120)


def _retrieved(ts: str) -> set[str]:
    """The sources of every chunk retrieved for the question asked at ``ts`` (the query log)."""
    from bot.querylog.models import Query, QueryChunk
    from common.db import open_database

    sessions = open_database(Settings.from_env())
    deadline = time.monotonic() + 30
    while True:  # the answer is logged right after it is posted
        with sessions() as s:
            qid = s.scalar(select(Query.id).where(Query.message_ts == ts))
            if qid is not None:
                return set(s.scalars(select(QueryChunk.repo).where(QueryChunk.query_id == qid)))
        assert time.monotonic() < deadline, "the question was not logged"
        time.sleep(0.1)


def test_the_page_allow_list_is_what_the_next_slack_question_reads(settings_env, tmp_path, local_embedder, monkeypatch):
    from indexer import index_repository, open_store

    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'coderag.db'}")
    settings = Settings.from_env()
    with open_store(settings) as store:
        store.schema.reset()
        for name, files in (("shop", SHOP), ("billing", BILLING)):
            index_repository(make_git_repo(tmp_path, files, name=name), settings=settings, store=store,
                             embedder=local_embedder)
    with FakeSlack() as fake:
        env = dict(os.environ, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=fake.api_url,
                   CODERAG_ADMIN_TOKEN=ADMIN_TOKEN,
                   CODERAG_CHANNEL_SOURCES=json.dumps({"C0000001": ["shop", "billing"], "*": []}))
        with serve_process(env, timeout=120) as (_proc, base), \
                httpx.Client(base_url=base, timeout=30) as page:
            _ask(base, fake, "1800000000.000001", "EvALLOW01")
            assert "billing" in _retrieved("1800000000.000001")  # seeded from the environment: both

            csrf = csrf_of(page.get("/admin/login").text)
            assert page.post("/admin/login", data={"token": ADMIN_TOKEN, "csrf_token": csrf}).status_code == 303
            channels = page.get("/admin/channels")
            assert "shop, billing" in channels.text or "billing, shop" in channels.text
            r = page.post("/admin/channels/set", data={"csrf_token": csrf_of(channels.text), "channel": "C0000001",
                                                       "list": "own", "sources": ["shop"], "reply_mode": "mention"})
            assert r.status_code == 303

            _ask(base, fake, "1800000000.000002", "EvALLOW02")
            assert _retrieved("1800000000.000002") <= {"shop"}
