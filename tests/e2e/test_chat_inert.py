"""Text from commits, CODEOWNERS and docs reaches chat inert: a ``who`` reply and the drift
digest built from a commit subject and a CODEOWNERS line holding ``<!everyone>`` and a
masked link show the characters and form no broadcast and no link; long command
arguments are refused without being echoed whole."""
from __future__ import annotations

import subprocess
from types import SimpleNamespace

import pytest

from helpers.fake_slack import FakeSlack
from common.db import open_database
from common.settings import Settings, load
from indexer import on_repo_indexed

EVIL = "<!everyone> <https://evil.example|click here>"


def _git(repo, *args, env=None):
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


@pytest.fixture
def hostile(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODERAG_DATABASE_URL", raising=False)
    repo = tmp_path / "svc"
    (repo / "docs").mkdir(parents=True)
    (repo / "app.py").write_text("def legacy_sync():\n    return 1\n\n\ndef run():\n    return 2\n")
    (repo / "docs" / "runbook.md").write_text("# Runbook\n\nIf the queue stalls, call `legacy_sync()` by hand.\n")
    (repo / "CODEOWNERS").write_text("/app.py @acme/<!everyone>\n")
    _git(repo, "init", "-q")
    ident = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    _git(repo, "add", "-A")
    _git(repo, *ident, "commit", "-qm", "first")
    (repo / "app.py").write_text("def run():\n    return 2\n")
    _git(repo, "add", "-A")
    _git(repo, *ident, "commit", "-qm", f"drop legacy_sync {EVIL}")
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    settings = Settings.from_env()
    sessions = open_database(settings)
    on_repo_indexed(sessions, settings, "svc", repo, sha)
    return sessions


def _assert_inert_for_slack(text: str) -> None:
    assert "<!everyone>" not in text and "<https://" not in text and "<!" not in text, text
    assert "&lt;!everyone&gt;" in text, text


def test_who_reply_is_inert(hostile):
    from bot.knowledge import chat_reply

    service = SimpleNamespace(sessions=hostile, retriever=None, settings=load())
    slack = chat_reply(service, "who", "app.py", mention="slack")
    assert "@acme/" in slack
    _assert_inert_for_slack(slack)
    teams = chat_reply(service, "who", "app.py", target="teams")
    assert "<!everyone>" not in teams and "<\u200b!everyone>" in teams


def test_drift_reply_and_digest_are_inert(hostile, monkeypatch):
    from bot.knowledge import chat_reply, post_digest

    drift = chat_reply(SimpleNamespace(sessions=hostile, retriever=None, settings=load()), "drift", "", mention="slack")
    assert "legacy_sync" in drift, drift
    _assert_inert_for_slack(drift)
    slack = FakeSlack().start()
    try:
        monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
        monkeypatch.setenv("SLACK_API_URL", slack.api_url)
        monkeypatch.setenv("CODERAG_DRIFT_DIGEST_CHANNEL", "COPS")
        post_digest()
        (post,) = slack.posts("COPS")
        assert "legacy_sync" in post.body["text"]
        _assert_inert_for_slack(post.body["text"])
    finally:
        slack.stop()


def test_long_command_arguments_are_refused_and_not_echoed():
    from bot.chat.commands import MAX_ARG_CHARS, parse

    for name in ("who", "impact", "drift"):
        cmd = parse(f"{name} " + "x" * (MAX_ARG_CHARS + 50))
        assert cmd.error and str(MAX_ARG_CHARS) in cmd.error and len(cmd.arg) < 60
    assert parse("who " + "x" * MAX_ARG_CHARS).error is None


def test_who_path_finds_the_allowed_repository_when_a_forbidden_one_sorts_first(tmp_path, monkeypatch):
    from bot.knowledge import chat_reply

    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODERAG_DATABASE_URL", raising=False)
    settings = Settings.from_env()
    sessions = open_database(settings)
    for name, owner in (("aaa-secret", "@secret-team"), ("zzz-public", "@public-team")):
        repo = tmp_path / name
        repo.mkdir()
        (repo / "app.py").write_text("def run():\n    return 1\n")
        (repo / "CODEOWNERS").write_text(f"/app.py {owner}\n")
        _git(repo, "init", "-q")
        _git(repo, "add", "-A")
        _git(repo, "-c", "user.name=Dev", "-c", "user.email=dev@example.com", "commit", "-qm", "first")
        sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True).stdout.strip()
        on_repo_indexed(sessions, settings, name, repo, sha)
    text = chat_reply(SimpleNamespace(sessions=sessions, retriever=None, settings=load()), "who", "app.py",
                      allowed={"zzz-public"}, mention="slack")
    assert "@public-team" in text and "secret" not in text, text
