"""Drift and ``who`` kept with the index: ``coderag index`` (real Weaviate, real MiniLM)
runs the issue-17 hook, then ``drift``, ``status``, ``who`` and ``ask`` read the result."""
from __future__ import annotations

import json
import time

import pytest

from helpers.knowledge_repo import build_knowledge_repo
from test_cli import run_cli

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
    assert json.loads(res.stdout)[0]["drift"] == {"ok": 7, "stale": 5, "unknown": 1}
    # the symbol comes from the call graph the index stored
    res = run_cli(settings_env, "who", "RefundService.run", "--json")
    data = json.loads(res.stdout)
    assert data["kind"] == "symbol" and data["path"] == "src/payments/service.py", data
    assert [e["who"] for e in data["experts"]][:2] == ["@alice", "Alice Author"]
    res = run_cli(settings_env, "ask", "restart the API max-conn flag runbook", "--no-log")
    assert res.returncode == 0, res.stderr
    assert "[1] docs/runbook.md:3-" in res.stdout, res.stdout  # the runbook section is cited first
    assert "[1] this step names `--max-conn`, which the code dropped in " + k.shas["flag"][:7] in res.stdout
    assert "Owners: " in res.stdout
