"""The weekly drift digest: the scheduler job and its posts (real slack_sdk against a local
Slack stand-in, a real HTTP POST to a local incoming-webhook server)."""
from __future__ import annotations

import html
import time

import pytest

from helpers.fake_http import FakeHTTPServer, Reply
from helpers.fake_slack import FakeSlack
from helpers.knowledge_repo import build_knowledge_repo
from common.db import open_database
from common.settings import Settings
from indexer import on_repo_indexed


@pytest.fixture
def indexed(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODERAG_DATABASE_URL", raising=False)
    settings = Settings.from_env()
    sessions = open_database(settings)
    k = build_knowledge_repo(tmp_path, int(time.time()))
    on_repo_indexed(sessions, settings, "payments", k.root, k.shas["small"])
    return sessions, k


def test_digest_posts_to_slack_and_to_a_webhook(indexed, monkeypatch):
    from bot.knowledge import post_digest

    sessions, k = indexed
    got: list[dict] = []

    class Hook(FakeHTTPServer):
        """An incoming-webhook receiver: records each JSON body."""

        def respond(self, request):
            got.append(request.json())
            return Reply(200)

    hook = Hook().start()
    slack = FakeSlack().start()
    try:
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
        monkeypatch.setenv("SLACK_API_URL", slack.api_url)
        monkeypatch.setenv("CODERAG_DRIFT_DIGEST_CHANNEL", "COPS")
        monkeypatch.setenv("CODERAG_DRIFT_DIGEST_WEBHOOK", f"{hook.root}/hook")
        post_digest()
        posts = slack.posts("COPS")
        assert len(posts) == 1
        text = posts[0].body["text"]
        assert text.startswith("Weekly runbook drift digest")
        assert f"`--max-conn` — dropped in {k.shas['flag'][:7]}" in text and "5 stale" in text
        # the same digest, made inert for each target (Slack entities, Teams zero-width breaks)
        assert got and got[0]["text"].replace("\u200b", "") == html.unescape(text)
    finally:
        slack.stop()
        hook.stop()


def test_digest_job_is_scheduled_only_when_configured(indexed, monkeypatch):
    from bot.knowledge import digest_job_provider
    from indexer.freshness.scheduler import FreshnessScheduler

    sessions, _ = indexed
    monkeypatch.setenv("CODERAG_DRIFT_DIGEST_CHANNEL", "COPS")
    sched = FreshnessScheduler(sessions)
    sched.on_start(digest_job_provider(Settings.from_env()))
    sched.start()
    try:
        job = sched.scheduler.get_job("drift:digest")
        assert job is not None and job.trigger.interval.total_seconds() == 7 * 86400
    finally:
        sched.shutdown()
    monkeypatch.delenv("CODERAG_DRIFT_DIGEST_CHANNEL")
    sched = FreshnessScheduler(sessions)
    sched.on_start(digest_job_provider(Settings.from_env()))
    sched.start()
    try:
        assert "drift:digest" not in sched.job_ids()  # removed once no longer configured
    finally:
        sched.shutdown()
