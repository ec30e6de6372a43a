"""End to end: the real AnswerService over a real weaviate-server and MiniLM with a tiny
Git repo indexed for real, the Teams front end over real HTTP with a fake connector; and
``coderag serve`` as a process serving Teams alone (anonymous, warned about)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from bot.answer.service import AnswerService
from bot.querylog.models import Feedback, Query
from helpers.fake_teams import FakeConnector
from helpers.teams_harness import Harness, card_of, card_texts, wait
from test_slack_e2e import FILES, QUESTION, TEMPLATE, _free_port  # noqa: F401  (same tiny repo)
from helpers.gitrepo import head_sha, make_git_repo
from common.settings import Settings
from indexer import index_repository

pytestmark = pytest.mark.weaviate


@pytest.fixture
def indexed(tmp_path, settings_env, store, local_embedder, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'teams.db'}")
    repo = make_git_repo(tmp_path, FILES, name="shop")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder)
    return head_sha(repo)


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
    fake = FakeConnector().start()
    port = _free_port()
    env = dict(os.environ, CODERAG_TEAMS="1", CODERAG_REPO_URLS=json.dumps({"shop": TEMPLATE}))
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "CODERAG_TEAMS_CLIENT_ID"):
        env.pop(name, None)
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
        act = {"type": "message", "id": "1712345670001", "serviceUrl": fake.url, "channelId": "msteams",
               "from": {"id": "29:user", "aadObjectId": "6a7b8c9d-0000-4000-8000-123456789abc"},
               "recipient": {"id": "28:bot", "name": "coderag"},
               "conversation": {"id": "a:1personal", "conversationType": "personal"}, "text": QUESTION}
        assert httpx.post(f"{base}/api/messages", json=act, timeout=30).status_code == 202
        assert httpx.post(f"{base}/api/messages", content=b"{", timeout=30).status_code == 400
        msg = fake.wait_for(lambda: fake.messages(), timeout=90)[0]
        assert msg.reply_to == "1712345670001"
        assert f"/blob/{sha}/pricing/tax.py#L" in json.dumps(msg.body["attachments"])
    finally:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        fake.stop()
    assert "ANONYMOUS" in out and "/api/messages" in out
