"""Fixes from the attack on the running bot (hardening), outside chat: credentials in URLs,
webhook payload shapes, ``search --batch`` types, ``/metrics`` off the public port,
privacy defaults (hashed user ids, retention), and the "also noticed" list."""
from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from common.settings import load
from helpers.gitrepo import make_git_repo

PASSWORD = "hunter2-Pa55w0rd"
SECRET_URL = f"https://deploy:{PASSWORD}@127.0.0.1:9/acme/x.git"
ROOT = Path(__file__).resolve().parents[2]


def run_cli(env: dict, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)


def _env(tmp_path, **extra) -> dict:
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODERAG_", "WEAVIATE_", "SLACK_"))}
    env.update(PYTHONPATH=str(ROOT), CODERAG_HOME=str(tmp_path / "home"), **extra)
    return env


# --------------------------------------------------------------------------- 2: credentials in URLs

def test_mirror_errors_never_show_the_password(tmp_path):
    from indexer.sources.mirror import Mirror, MirrorError

    with pytest.raises(MirrorError) as failed:
        Mirror(tmp_path, "x", SECRET_URL).fetch()  # nothing listens on port 9
    assert PASSWORD not in str(failed.value) and "127.0.0.1:9" in str(failed.value)
    src = make_git_repo(tmp_path / "src", {"a.py": "x = 1\n"})
    Mirror(tmp_path, "y", str(src)).fetch()
    with pytest.raises(MirrorError) as missing:
        Mirror(tmp_path, "y", f"https://deploy:{PASSWORD}@git.example/y.git").head("no-such-branch")
    assert PASSWORD not in str(missing.value) and "no-such-branch" in str(missing.value)


def test_redaction_at_the_error_boundary(tmp_path):
    """Whatever an exception says, the stored error and the log lines are redacted."""
    from common.db import open_database
    from indexer.store.sync_state import get_state, record_error
    from common.redact import install_log_redaction, redact_text

    assert PASSWORD not in redact_text(f"git failed: {SECRET_URL} and http://a:{PASSWORD}@h:1/p")
    assert redact_text("see https://example.com/a and git@host:x.git") == "see https://example.com/a and git@host:x.git"
    sessions = open_database(__import__("common.settings", fromlist=["Settings"]).Settings.from_env(home=tmp_path))
    record_error(sessions, "x", "git", f"MirrorError: clone {SECRET_URL} failed")
    assert PASSWORD not in get_state(sessions, "x").last_error
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("coderag.test.redact")
    logger.addHandler(handler)
    install_log_redaction(handler)
    try:
        try:
            raise RuntimeError(f"cannot fetch {SECRET_URL}")
        except RuntimeError:
            logger.exception("sync of %s failed", SECRET_URL)
    finally:
        logger.removeHandler(handler)
    text = stream.getvalue()
    assert "Traceback" in text and "cannot fetch" in text and PASSWORD not in text


def test_weaviate_url_password_is_not_printed(tmp_path):
    env = _env(tmp_path, WEAVIATE_URL=f"http://admin:{PASSWORD}@127.0.0.1:9", WEAVIATE_GRPC_PORT="10")
    for args in (["status"], ["status", "--json"], ["search", "anything"]):
        r = run_cli(env, *args)
        assert r.returncode != 0
        assert PASSWORD not in r.stdout + r.stderr, r.stderr
        assert "coderag: error:" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# --------------------------------------------------------------------------- 8: webhook payload shapes

@pytest.mark.parametrize("payload", [{"ref": ["x"], "repository": "public"},
                                     {"ref": "refs/heads/main", "repository": ["a"]},
                                     {"ref": {"a": 1}, "repository": {"name": "api"}},
                                     {"ref": "refs/heads/main", "repository": {"name": 7}}])
def test_signed_webhook_of_the_wrong_shape_is_a_400(payload):
    from common.settings import FreshnessSettings
    from common.sources import RepoConfig
    from indexer.freshness.webhooks import github_signature, webhook_routes_for

    queued: list[str] = []
    config = FreshnessSettings.from_env({}, repos=(RepoConfig("api", "/srv/git/api.git", "main"),), github_secret="k",
                                        gitlab_token="t")
    client = TestClient(Starlette(routes=webhook_routes_for(config, lambda n, why: queued.append(n))),
                        raise_server_exceptions=False)
    body = json.dumps(payload).encode()
    r = client.post("/webhooks/github", content=body, headers={"X-GitHub-Event": "push",
                                                               "X-Hub-Signature-256": github_signature("k", body)})
    expected = 200 if payload["repository"] == {"name": 7} else 400  # an unknown repo is ignored, not an error
    assert r.status_code == expected, r.text
    gl = dict(payload, project=payload.pop("repository"))
    r = client.post("/webhooks/gitlab", json=gl, headers={"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": "t"})
    assert r.status_code == expected, r.text
    assert queued == []


# --------------------------------------------------------------------------- 9: search --batch types

@pytest.mark.parametrize("line", ['{"id": "q1", "question": "where?", "repo": 5}',
                                  '{"id": "q1", "question": "where?", "repo": ["a"]}',
                                  '{"id": {"x": 1}, "question": "where?"}'])
def test_batch_with_wrong_types_is_a_one_line_error(tmp_path, line):
    f = tmp_path / "q.jsonl"
    f.write_text(line + "\n")
    r = run_cli(_env(tmp_path), "search", "--batch", str(f), "--json")
    assert r.returncode != 0
    assert r.stderr.startswith("coderag: error:") and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert f"{f}:1" in r.stderr


# --------------------------------------------------------------------------- 10: /metrics

def test_metrics_are_not_on_the_public_app_and_the_metrics_listener_takes_a_token():
    from bot.health import metrics_app
    from bot.server import ServerContext, build_asgi

    public = TestClient(build_asgi(ServerContext(service=None)))
    assert public.get("/healthz").status_code == 200
    assert public.get("/metrics").status_code == 404
    open_ = TestClient(metrics_app(token=None))
    r = open_.get("/metrics")
    assert r.status_code == 200 and "coderag_queries_total" in r.text
    guarded = TestClient(metrics_app(token="s3cret-metrics-token"))
    assert guarded.get("/metrics").status_code == 401
    assert guarded.get("/metrics", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert guarded.get("/metrics", headers={"Authorization": "Bearer s3cret-metrics-token"}).status_code == 200


def test_metrics_settings_default_to_loopback():
    from common.settings import Settings

    s = Settings.from_env()
    assert s.metrics_host == "127.0.0.1" and s.metrics_port == 9464 and s.metrics_token is None


def test_helm_chart_documents_and_keeps_metrics_off_the_public_service():
    import yaml

    values = yaml.safe_load((ROOT / "deploy/helm/coderag/values.yaml").read_text())
    assert "metrics" in values and values["metrics"]["port"] != values["service"]["port"]
    svc = (ROOT / "deploy/helm/coderag/templates/service.yaml").read_text()
    assert "metrics.port" not in svc  # the public Service does not expose the metrics port
    templates = "".join(p.read_text() for p in (ROOT / "deploy/helm/coderag/templates").iterdir())
    assert "CODERAG_METRICS_PORT" in templates and ".Values.metrics.port" in templates
    bot = (ROOT / "deploy/helm/coderag/templates/bot-deployment.yaml").read_text()
    assert 'prometheus.io/port: "3000"' not in bot  # scraped on the metrics port, not the public one
    assert "CODERAG_METRICS_PORT" in (ROOT / "docs/operating/query-log.md").read_text()


# --------------------------------------------------------------------------- 11: privacy defaults

def test_user_ids_are_hashed_by_default_with_a_salt_kept_in_the_database(tmp_path, monkeypatch):
    from sqlalchemy import select

    from bot.querylog.models import Query
    from bot.querylog.privacy import UserHasher
    from bot.querylog.recorder import QueryLog, QueryRecord
    from common.settings import Settings
    from common.db import open_database

    for v in ("CODERAG_HASH_USER_IDS", "CODERAG_USER_HASH_SALT"):
        monkeypatch.delenv(v, raising=False)
    sessions = open_database(Settings.from_env(home=tmp_path))
    log = QueryLog(sessions, settings=load().querylog)
    log.record(QueryRecord(question="q", answer="a", source="slack", model="m", user="U0RAW0001"))
    with sessions() as s:
        stored = s.scalars(select(Query.user)).one()
    assert stored != "U0RAW0001" and len(stored) == 64
    # the same salt after a restart (read back from the database), so ids stay stable
    again = UserHasher.from_settings(load().querylog, sessions)
    assert again.enabled and again("U0RAW0001") == stored
    monkeypatch.setenv("CODERAG_HASH_USER_IDS", "0")
    assert UserHasher.from_settings(load().querylog, sessions)("U0RAW0001") == "U0RAW0001"


def test_retention_is_on_by_default(monkeypatch):
    from bot.querylog.retention import DEFAULT_RETENTION_DAYS

    retention_days = lambda: load().querylog.retention_days  # noqa: E731
    monkeypatch.delenv("CODERAG_RETENTION_DAYS", raising=False)
    assert retention_days() == DEFAULT_RETENTION_DAYS == 90
    monkeypatch.setenv("CODERAG_RETENTION_DAYS", "off")
    assert retention_days() is None
    monkeypatch.setenv("CODERAG_RETENTION_DAYS", "30")
    assert retention_days() == 30


def test_deploy_templates_turn_hashing_and_retention_on():
    import yaml

    values = yaml.safe_load((ROOT / "deploy/helm/coderag/values.yaml").read_text())
    assert values["config"]["CODERAG_HASH_USER_IDS"] == "1"
    assert int(values["config"]["CODERAG_RETENTION_DAYS"]) >= 1
    env = (ROOT / "deploy/.env.example").read_text()
    assert "CODERAG_HASH_USER_IDS=1" in env and "CODERAG_RETENTION_DAYS=90" in env


# --------------------------------------------------------------------------- also noticed

def test_function_after_a_syntax_error_is_recovered_as_a_definition():
    from indexer.chunking.code import chunk_code

    tail = "def valid_after_error(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n"
    for broken in ("x = [1, 2\n", "class A:\n    def m(self):\n        x = (1,\n\n"):
        text = broken + tail
        chunks = chunk_code("m.py", "python", text)
        found = [c for c in chunks if c.symbol == "valid_after_error" and c.kind == "function"]
        assert found, [(c.kind, c.symbol) for c in chunks]
        first = broken.count("\n") + 1
        assert (found[0].start_line, found[0].end_line) == (first, first + 2)
        assert "return a + b" in found[0].text


def test_skipped_symlinks_are_counted(tmp_path):
    import os

    from helpers.gitrepo import git

    repo = make_git_repo(tmp_path / "r", {"a.py": "x = 1\n"})
    os.symlink("a.py", repo / "link.py")
    git(repo, "add", "link.py")
    git(repo, "commit", "-qm", "link")
    from common.settings import Settings
    from indexer.sources.repository import parse_repository

    parsed = parse_repository(repo, None, Settings.from_env(home=tmp_path / "home"))
    assert "link.py" not in {c.path for c in parsed.chunks}
    assert parsed.summary.skipped.get("symlink") == 1, parsed.summary.skipped
    assert parsed.summary.files_seen == 2


@pytest.mark.weaviate
def test_weaviate_killed_before_any_write_is_a_one_line_index_error(tmp_path, weaviate_binary, monkeypatch, capsys):
    """A real server, SIGKILLed after `coderag index` connected and before it writes."""
    import os
    import signal

    import bot.cli as cli
    import indexer.sources.repository as repository
    from helpers.embedders import HashEmbedder
    from indexer.store.weaviate_server import start_server

    proc, info = start_server(weaviate_binary, tmp_path / "data", tmp_path / "w.log", detach=False)
    try:
        for k in [k for k in os.environ if k.startswith(("CODERAG_", "WEAVIATE_"))]:
            monkeypatch.delenv(k)
        monkeypatch.setenv("WEAVIATE_URL", f"http://127.0.0.1:{info.http_port}")
        monkeypatch.setenv("WEAVIATE_GRPC_PORT", str(info.grpc_port))
        monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
        repo = make_git_repo(tmp_path / "r", {"a.py": "def f():\n    return 1\n"})
        real = repository.index_repository  # what `coderag index` runs (indexer.index_path)

        def kill_then_index(*a, **kw):
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=30)
            return real(*a, **dict(kw, embedder=HashEmbedder()))

        monkeypatch.setattr(repository, "index_repository", kill_then_index)
        monkeypatch.setattr(sys, "argv", ["coderag", "index", str(repo), "--json"])
        with pytest.raises(SystemExit) as exited:
            cli.main()
        assert exited.value.code == 3
        errors = capsys.readouterr().err.strip().splitlines()
        assert len(errors) == 1 and errors[0].startswith("coderag: error: Weaviate failed:"), errors
        assert "UNAVAILABLE" in errors[0] and "debug_error_string" not in errors[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_metrics_listener_serves_on_its_port_and_gives_way_when_it_is_taken(tmp_path):
    import socket

    import httpx

    from bot.health import start_metrics_listener
    from common.settings import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings.from_env(home=tmp_path, metrics_port=port, metrics_token="tok-tok-tok-tok")
    server = start_metrics_listener(settings)
    try:
        assert server is not None
        assert httpx.get(f"http://127.0.0.1:{port}/metrics").status_code == 401
        assert httpx.get(f"http://127.0.0.1:{port}/metrics",
                         headers={"Authorization": "Bearer tok-tok-tok-tok"}).status_code == 200
        assert httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 404  # nothing else there
        assert start_metrics_listener(settings) is None  # the port is taken: no second listener, no crash
    finally:
        server.stop()
    assert start_metrics_listener(Settings.from_env(home=tmp_path, metrics_port=0)) is None


def test_a_credential_in_a_url_query_string_is_masked():
    """Review finding: only ``user:password@`` was masked; ``?token=`` went out whole."""
    from common.redact import redact_text, redact_url

    planted = "PLANTED0query0token0x9"
    assert planted not in redact_url(f"http://127.0.0.1:1/?token={planted}")
    msg = redact_text(f"cannot reach Weaviate (http://h:1/v1?page=2&api_key={planted}&x=1): refused")
    assert planted not in msg and "page=2" in msg and "x=1" in msg
    assert redact_url("http://host/search?page=2") == "http://host/search?page=2"


def test_cli_error_of_our_own_keeps_its_lines_and_is_redacted(monkeypatch, capsys):
    """An ambiguous `impact` name lists the candidates after its first line; the CLI must
    not cut them (only Weaviate's multi-line dumps are cut to one line)."""
    import bot.cli as cli
    from bot.impact import AmbiguousSymbol

    planted = "PLANTED0pw0in0message"
    monkeypatch.setenv("CODERAG_HOME", "/nonexistent-coderag-home")

    def ambiguous(*_a, **_kw):
        raise AmbiguousSymbol(f"'main' matches 2 definitions; name one of them (e.g. path:line):\n"
                              f"  a.py:1 main\n  b.py:3 main (https://u:{planted}@h/x)", [])

    import bot.impact
    import common.db

    monkeypatch.setattr(bot.impact, "impact_report", ambiguous)
    monkeypatch.setattr(common.db, "open_database", lambda *_a, **_kw: None)
    monkeypatch.setattr(sys, "argv", ["coderag", "impact", "main", "--json"])
    with pytest.raises(SystemExit) as exited:
        cli.main()
    err = capsys.readouterr().err
    assert exited.value.code == 8
    assert "a.py:1 main" in err and "b.py:3 main" in err and planted not in err


def test_a_password_holding_a_raw_at_sign_is_masked_whole():
    """The userinfo of a URL runs to the last '@' of its authority."""
    from common.redact import redact_text, redact_url

    assert redact_url("https://user:p@ss-s3cr3t-AT@127.0.0.1:9/x.git") == "https://user:***@127.0.0.1:9/x.git"
    assert "s3cr3t" not in redact_text("clone of https://user:p@ss-s3cr3t-AT@host/x.git failed (mail ops@example.com)")
    assert redact_url("ssh://git@github.com/x.git") == "ssh://git@github.com/x.git"
    assert redact_url("https://host/a@b") == "https://host/a@b"  # an '@' in the path is no credential
