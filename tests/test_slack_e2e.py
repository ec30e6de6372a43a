"""End to end: the real AnswerService over a real weaviate-server and MiniLM, a tiny Git
repo indexed for real, the Slack app over real HTTP; and ``coderag serve`` as a process."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from bot.answer.service import AnswerService
from helpers.fake_slack import BOT_USER_ID, FakeSlack, sign
from helpers.gitrepo import head_sha, make_git_repo
from helpers.slack_harness import SECRET, Harness
from common.settings import Settings
from indexer import index_repository

pytestmark = pytest.mark.weaviate

FILES = {
    "pricing/tax.py": '''"""Pricing helpers."""


def calculate_price_with_tax(price, rate):
    """Price plus sales tax, rounded to cents."""
    return round(price * (1 + rate), 2)


def apply_discount(price, percent):
    """Reduce a price by a percentage."""
    return price * (1 - percent / 100)
''',
    "server/health.go": '''package server

import "net/http"

// HealthHandler answers the load balancer's health probe.
func HealthHandler(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}
''',
}
TEMPLATE = "https://github.com/acme/shop/blob/{commit}/{path}#L{start}-L{end}"
QUESTION = "where is the price with sales tax calculated?"


@pytest.fixture
def indexed(tmp_path, settings_env, store, local_embedder, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'slack.db'}")
    repo = make_git_repo(tmp_path, FILES, name="shop")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder)
    return head_sha(repo)


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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_coderag_serve_process_answers_a_signed_mention(indexed, settings_env, tmp_path):
    sha = indexed
    fake = FakeSlack().start()
    port = _free_port()
    env = dict(os.environ, SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=fake.api_url,
               CODERAG_REPO_URLS=json.dumps({"shop": TEMPLATE}))
    env.pop("SLACK_APP_TOKEN", None)
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stdout.read()
            try:
                if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "coderag serve did not come up"
            time.sleep(0.2)
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
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        fake.stop()
