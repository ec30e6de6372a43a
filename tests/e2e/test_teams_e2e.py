"""End to end: the real AnswerService over a real weaviate-server and MiniLM with a tiny
Git repo indexed for real, the Teams front end over real HTTP with a fake connector; and
``coderag serve`` as a process serving Teams alone (anonymous, warned about)."""
from __future__ import annotations

import json
import os

import httpx
import pytest
from sqlalchemy import select

from bot.answer.service import AnswerService
from bot.querylog.models import Feedback, Query
from helpers.fake_teams import FakeConnector
from helpers.teams_harness import Harness, card_of, card_texts, wait
from helpers.serve_process import serve_process
from helpers.shop_repo import QUESTION, TEMPLATE, index_shop

pytestmark = pytest.mark.weaviate


@pytest.fixture
def indexed(tmp_path, settings_env, store, local_embedder, monkeypatch):
    return index_shop(tmp_path, monkeypatch, store, local_embedder, db_name="teams.db")


def test_mention_answered_by_the_real_service(indexed, store, local_embedder):
    sha = indexed
    with Harness(AnswerService(store, local_embedder), repo_urls={"shop": TEMPLATE}) as h:
        act = h.activity(QUESTION)
        assert h.post(act).status_code == 202
        (msg,) = h.wait_messages(1, timeout=60)
        assert msg.reply_to == act["id"]
        texts = "\n".join(card_texts(card_of(msg)))
        assert f"](https://github.com/acme/shop/blob/{sha}/pricing/tax.py#L" in texts
        assert "[pricing/tax.py:L" in texts and "indexed just now" in texts and "Sorry" not in texts
        (q,) = wait(lambda: _rows(h, Query), timeout=10)
        assert q.source == "teams"
        with h.sessions() as s:
            paths = [c.path for c in s.get(Query, q.id).chunks]
        assert "pricing/tax.py" in paths
        up = card_of(msg)["actions"][0]["data"]
        h.post(h.activity(None, value=up, thread_root=act["id"]))
        h.wait_messages(2)
        (fb,) = _rows(h, Feedback)
        assert fb.vote == 1 and fb.query_id == q.id

        h.post(h.activity("status"))
        status = "\n".join(card_texts(card_of(h.wait_messages(3, timeout=30)[2])))
        assert "**shop**" in status and sha[:7] in status


def _rows(h, model):
    with h.sessions() as s:
        return list(s.scalars(select(model)))


def test_coderag_serve_process_serves_teams_alone(indexed, settings_env):
    sha = indexed
    with FakeConnector() as fake:
        env = dict(os.environ, CODERAG_TEAMS="1", CODERAG_REPO_URLS=json.dumps({"shop": TEMPLATE}))
        for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "CODERAG_TEAMS_CLIENT_ID"):
            env.pop(name, None)
        with serve_process(env, timeout=90) as (_proc, base):
            act = {"type": "message", "id": "1712345670001", "serviceUrl": fake.url, "channelId": "msteams",
                   "from": {"id": "29:user", "aadObjectId": "6a7b8c9d-0000-4000-8000-123456789abc"},
                   "recipient": {"id": "28:bot", "name": "coderag"},
                   "conversation": {"id": "a:1personal", "conversationType": "personal"}, "text": QUESTION}
            assert httpx.post(f"{base}/api/messages", json=act, timeout=30).status_code == 202
            assert httpx.post(f"{base}/api/messages", content=b"{", timeout=30).status_code == 400
            msg = fake.wait_for(lambda: fake.messages(), timeout=90)[0]
            assert msg.reply_to == "1712345670001"
            assert f"/blob/{sha}/pricing/tax.py#L" in json.dumps(msg.body["attachments"])
