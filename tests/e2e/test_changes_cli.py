"""``coderag changes`` as a user runs it: JSON with exactly the commits and functions of the
window, plain text citing path:line@sha, and one-line errors with their exit codes."""
from __future__ import annotations

import json
import os
import time

import pytest

from helpers.cli import assert_error, run_cli, run_many
from helpers.history_repo import build_history_repo
from common.errors import ExitCode


@pytest.fixture
def indexed_shop(tmp_path, store, local_embedder, settings_env):
    from common.db import open_database
    from common.settings import Settings
    from indexer import index_repository

    repo = build_history_repo(tmp_path, int(time.time()))
    settings = Settings.from_env()
    index_repository(repo.root, name="shop", settings=settings, store=store, embedder=local_embedder,
                     sessions=open_database(settings))
    return repo, settings_env


def test_changes_cli_json_text_and_errors(indexed_shop):
    repo, env = indexed_shop
    as_json, text, symbol = run_many(env, ["changes", "billing/", "--json"], ["changes", "billing/invoice.py"],
                                     ["changes", "Invoice.tax", "--since", "4w", "--json"])
    assert as_json.returncode == 0, as_json.stderr
    out = json.loads(as_json.stdout)
    assert out["kind"] == "path"
    assert [c["sha"] for c in out["commits"]] == [repo.shas["cleanup"], repo.shas["refunds"]]
    assert [sorted(f["symbol"] for f in c["functions"]) for c in out["commits"]] == [
        ["Invoice.tax", "send_invoice"], ["Invoice.total", "refund"]]
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("2 commit(s) touched shop/billing/invoice.py since ")
    assert f"added refund (billing/invoice.py:19@{repo.shas['refunds'][:7]})" in text.stdout
    assert symbol.returncode == 0, symbol.stderr
    assert [c["sha"] for c in json.loads(symbol.stdout)["commits"]] == [repo.shas["cleanup"], repo.shas["tax_round"]]

    bad_since, no_path, no_symbol, no_repo = run_many(
        env, ["changes", "billing/", "--since", "lastweek"], ["changes", "billing/nothing.py"],
        ["changes", "Invoice.no_such_method"], ["changes", "billing/", "--repo", "nosuch"])
    assert_error(bad_since, ExitCode.USAGE, "--since: 'lastweek' is no time window; use 30m, 24h, 7d, 2w")
    assert_error(no_path, ExitCode.USAGE, "no indexed file or folder billing/nothing.py")
    assert_error(no_symbol, ExitCode.UNKNOWN_SYMBOL, "no indexed symbol Invoice.no_such_method")
    assert_error(no_repo, ExitCode.EMPTY_INDEX, "no indexed repo named nosuch")


def test_changes_needs_an_argument():
    proc = run_cli(dict(os.environ), "changes")
    assert proc.returncode == ExitCode.USAGE and "Traceback" not in proc.stderr


def test_minutes_and_the_one_date_are_the_same_for_changes_and_stats(indexed_shop):
    repo, env = indexed_shop
    minutes, day, stats_bad, helped = run_many(env, ["changes", "billing/", "--since", "30m"],
                                               ["changes", "billing/", "--since", "1500m", "--json"],
                                               ["stats", "--since", "lastweek"], ["changes", "--help"])
    assert minutes.returncode == 0, minutes.stderr
    assert minutes.stdout.startswith("No commits touched shop/billing/ since ") and "(commit dates)" in minutes.stdout
    assert day.returncode == 0, day.stderr
    assert [c["sha"] for c in json.loads(day.stdout)["commits"]] == [repo.shas["cleanup"]]  # a day old: in 25 hours, not in 30 minutes
    assert_error(stats_bad, ExitCode.USAGE, "--since: 'lastweek' is no time window; use 30m, 24h, 7d, 2w")
    assert "commit date" in " ".join(helped.stdout.split())
