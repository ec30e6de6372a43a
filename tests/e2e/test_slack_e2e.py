"""End to end: the real AnswerService over a real weaviate-server and MiniLM, a tiny Git
repo indexed for real, the Slack app over real HTTP; and ``coderag serve`` as a process."""
from __future__ import annotations

import json
import os

import httpx
import pytest

from bot.answer.service import AnswerService
from helpers.fake_slack import BOT_USER_ID, FakeSlack, sign
from helpers.serve_process import serve_process
from helpers.shop_repo import QUESTION, TEMPLATE, index_shop
from helpers.slack_harness import SECRET, Harness

pytestmark = pytest.mark.weaviate


@pytest.fixture
def indexed(tmp_path, settings_env, store, local_embedder, monkeypatch):
    return index_shop(tmp_path, monkeypatch, store, local_embedder, db_name="slack.db")


def _answer_posts(fake):
    return [c for c in fake.posts() if c.body.get("blocks")]


def test_mention_answered_by_the_real_service(indexed, store, local_embedder):
    sha = indexed
    service = AnswerService(store, local_embedder)
    with Harness(service, repo_urls={"shop": TEMPLATE}) as h:
        ts, (resp, latency) = h.mention(QUESTION)
        assert resp.status_code == 200 and latency < 3.0
        post = h.fake.wait_for(lambda: _answer_posts(h.fake), timeout=60)[0]
        assert post.body["thread_ts"] == ts
        text = json.dumps(post.body["blocks"])
        assert f"https://github.com/acme/shop/blob/{sha}/pricing/tax.py#L" in text
        assert "|pricing/tax.py:L" in text and "indexed just now" in text
        assert "Sorry" not in post.body["text"]

        # status through the slash command, from the real store
        h.command("status", name="st")
        r = h.fake.wait_for(lambda: h.fake.responses("st"), timeout=30)[0]
        assert "*shop*" in json.dumps(r.body["blocks"]) and sha[:7] in json.dumps(r.body["blocks"])


def test_coderag_serve_process_answers_a_signed_mention(indexed, settings_env, tmp_path):
    sha = indexed
    with FakeSlack() as fake:
        env = dict(os.environ, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=fake.api_url,
                   CODERAG_REPO_URLS=json.dumps({"shop": TEMPLATE}))
        env.pop("SLACK_APP_TOKEN", None)
        with serve_process(env, timeout=90) as (_proc, base):
            body = json.dumps({"type": "event_callback", "team_id": "T0000001", "event_id": "EvSERVE01",
                               "event": {"type": "app_mention", "user": "U1", "channel": "C1", "ts": "1700000000.000100",
                                         "text": f"<@{BOT_USER_ID}> {QUESTION}"}})
            resp = httpx.post(f"{base}/slack/events", content=body,
                              headers={"Content-Type": "application/json", **sign(SECRET, body)})
            assert resp.status_code == 200
            forged = httpx.post(f"{base}/slack/events", content=body,
                                headers={"Content-Type": "application/json", **sign("wrong", body)})
            assert forged.status_code == 401
            post = fake.wait_for(lambda: _answer_posts(fake), timeout=90)[0]
            assert post.body["thread_ts"] == "1700000000.000100"
            assert f"/blob/{sha}/pricing/tax.py#L" in json.dumps(post.body["blocks"])
