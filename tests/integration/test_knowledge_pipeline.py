"""Drift and ``who`` kept with the index: ``coderag index`` (real Weaviate, real MiniLM)
runs the knowledge hook (drift, who), then ``drift``, ``status``, ``who`` and ``ask`` read the result."""
from __future__ import annotations

import json
import re
import time

import pytest

from helpers.knowledge_repo import build_knowledge_repo
from helpers.cli import run_cli

pytestmark = pytest.mark.weaviate


def test_index_then_drift_status_who_and_ask(settings_env, tmp_path):
    k = build_knowledge_repo(tmp_path, int(time.time()))
    res = run_cli(settings_env, "index", str(k.root), "--name", "payments", "--json")
    assert res.returncode == 0, res.stderr
    res = run_cli(settings_env, "drift", "--json")
    assert res.returncode == 0, res.stderr
    stale = {r["ref"]: r["removed_commit"] for r in json.loads(res.stdout)["stale"]}
    assert stale == {"--max-conn": k.shas["flag"], "PAYMENTS_RETRY_LIMIT": k.shas["env"],
                     "POST /v1/refunds": k.shas["endpoint"], "refund_legacy()": k.shas["function"],
                     "payments_refund_errors_total": k.shas["metric"]}
    res = run_cli(settings_env, "status")
    assert "5 stale doc reference(s) (coderag drift payments)" in res.stdout, res.stdout
    res = run_cli(settings_env, "status", "--json")
    # by name: the session's Weaviate may hold other tests' repos, which sort first
    status = {s["name"]: s for s in json.loads(res.stdout)["sources"]}
    assert status["payments"]["drift"] == {"ok": 7, "stale": 5, "unknown": 1}
    assert all("drift" in s for s in status.values()), status
    # the symbol comes from the call graph the index stored
    res = run_cli(settings_env, "who", "RefundService.run", "--json")
    data = json.loads(res.stdout)
    assert data["kind"] == "symbol" and data["path"] == "src/payments/service.py", data
    assert [e["who"] for e in data["experts"]][:2] == ["@alice", "Alice Author"]
    # a question: the experts of the code the search finds closest
    res = run_cli(settings_env, "who", "where is the refund latency measured", "--json")
    data = json.loads(res.stdout)
    assert data["kind"] == "question" and data["path"].startswith("src/payments/"), data
    assert data["experts"] and data["experts"][0]["who"] == "@alice"
    res = run_cli(settings_env, "ask", "restart the API max-conn flag runbook", "--no-log")
    assert res.returncode == 0, res.stderr
    assert re.search(r"^\[1\] \S+/docs/runbook\.md:3-", res.stdout, re.M), res.stdout  # the runbook section first
    assert "[1] this step names `--max-conn`, which the code dropped in " + k.shas["flag"][:7] in res.stdout
    assert "Owners: " in res.stdout


def test_status_gives_every_source_drift_counts(settings_env, store, local_embedder, tmp_path):
    """A source whose docs name no code (here: no docs at all) has zero counts in
    `status --json`, not a missing key."""
    from helpers.gitrepo import make_git_repo
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository, index_status

    settings = Settings.from_env()
    plain = make_git_repo(tmp_path, {"calc.py": "def add(a, b):\n    return a + b\n"}, name="plain")
    index_repository(plain, name="plain", settings=settings, store=store, embedder=local_embedder,
                     sessions=open_database(settings))
    (src,) = index_status(settings)
    assert src["name"] == "plain" and src["drift"] == {"ok": 0, "stale": 0, "unknown": 0}




def test_a_push_webhook_refreshes_drift_and_who(fresh):
    """The incremental re-index after a GitHub push runs the knowledge hook: a flag renamed
    by the push turns the runbook's reference stale, and the push's author shows in who."""
    from helpers.gitrepo import commit_files, head_sha
    from indexer.read import drift_report, who

    commit_files(fresh.upstream, {"shop/cli.py": 'FLAGS = ["--max-conn"]\n',
                                  "docs/runbook.md": "# Ops\n\n## Start\n\nRun `shop serve --max-conn 5`.\n"}, "cli")
    assert fresh.push().mode in ("full", "incremental")
    rep = drift_report(fresh.sessions, "shop")
    assert rep["counts"]["ok"] == 1 and rep["counts"]["stale"] == 0
    sha = commit_files(fresh.upstream, {"shop/cli.py": 'FLAGS = ["--max-connections"]\n'}, "rename the flag")
    assert fresh.push().mode == "incremental"
    rep = drift_report(fresh.sessions, "shop")
    assert [(r["ref"], r["removed_commit"], r["new_name"]) for r in rep["stale"]] == [
        ("--max-conn", head_sha(fresh.upstream), "--max-connections")]
    assert sha == head_sha(fresh.upstream)
    res = who(fresh.sessions, fresh.runtime.ctx.settings, "shop/cli.py")
    assert res.experts[0].email == "tests@example.invalid"
