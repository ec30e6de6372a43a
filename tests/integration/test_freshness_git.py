"""Webhook -> mirror -> incremental re-index, end to end: real Git repos committed to by
the tests, signed posts over real HTTP (uvicorn in a thread), real Weaviate, real SQL."""
from __future__ import annotations

import json
import time

import pytest

from helpers.freshness import CART, PRICING, SECRET, post_github, push_payload, wait_idle
from helpers.gitrepo import commit_files, git, head_sha, make_git_repo

REFUNDS = '''from shop.pricing import compute_total


def issue_refund_for_order(order):
    """Refund an order in full."""
    return -compute_total(order["items"])
'''


def _search_paths(f, question: str) -> list[str]:
    from bot.retrieval.retriever import Retriever

    res = Retriever(f.store, f.emb, sessions=f.sessions).search(question, top_k=5, repos=["shop"])
    return [h.chunk.path for h in res.hits if h.chunk.symbol.endswith("issue_refund_for_order")]


def _callers(f, symbol: str) -> set[str]:
    from bot.impact import impact_report

    return {c["path"] for c in impact_report(f.sessions, symbol, repo="shop")["callers"]}


def _graph_equals_full_resolution(f) -> None:
    """The incrementally maintained edges equal a from-scratch resolution of the stored facts."""
    from dataclasses import astuple

    from indexer.graph.resolve import resolve
    from indexer.graph.sql_store import load_edges, load_facts

    with f.sessions() as s:
        stored = sorted(astuple(e) for e in load_edges(s, "shop"))
        full = sorted(astuple(e) for e in resolve(load_facts(s, "shop")))
    assert stored == full


def _state_commit(f) -> str | None:
    from indexer.store.sync_state import get_state

    row = get_state(f.sessions, "shop")
    return row.commit if row else None


def test_add_modify_rename_delete_each_visible_at_once(fresh):
    from bot.impact import UnknownSymbol

    first = fresh.push()
    assert first.mode == "full" and "no indexed commit" in first.reason
    assert _state_commit(fresh) == head_sha(fresh.upstream)
    assert _callers(fresh, "compute_total") == {"shop/cart.py"}

    # add
    commit_files(fresh.upstream, {"shop/refunds.py": REFUNDS}, "add refunds")
    fresh.emb.documents = 0
    res = fresh.push()
    assert res.mode == "incremental" and res.files_changed == 1
    # the function is new; its import header equals cart.py's and comes from the cache
    assert fresh.emb.documents == res.embedded == 1 and res.reused_vectors == 1
    assert _search_paths(fresh, "issue refund for order") == ["shop/refunds.py"]
    assert _callers(fresh, "compute_total") == {"shop/cart.py", "shop/refunds.py"}
    assert _state_commit(fresh) == head_sha(fresh.upstream)
    _graph_equals_full_resolution(fresh)

    # modify one line: exactly one chunk is re-embedded
    fresh.emb.documents = 0
    commit_files(fresh.upstream, {"shop/pricing.py": PRICING.replace("(100 - percent) / 100",
                                                                     "max(0, 100 - percent) / 100")}, "clamp")
    res = fresh.push()
    assert res.mode == "incremental"
    assert fresh.emb.documents == 1 and res.reused_vectors >= 1
    from bot.retrieval.retriever import Retriever

    hits = Retriever(fresh.store, fresh.emb).search("apply_discount", top_k=3, repos=["shop"]).hits
    assert "max(0, 100 - percent)" in next(h.chunk.content for h in hits if h.chunk.symbol == "apply_discount")
    _graph_equals_full_resolution(fresh)

    # rename: delete + add, nothing re-embedded (same content)
    fresh.emb.documents = 0
    git(fresh.upstream, "mv", "shop/refunds.py", "shop/returns.py")
    git(fresh.upstream, "commit", "-q", "-m", "rename")
    res = fresh.push()
    assert res.mode == "incremental" and res.files_deleted == 1
    assert fresh.emb.documents == 0
    assert _search_paths(fresh, "issue refund for order") == ["shop/returns.py"]
    assert _callers(fresh, "compute_total") == {"shop/cart.py", "shop/returns.py"}
    _graph_equals_full_resolution(fresh)

    # delete: gone from search and impact
    commit_files(fresh.upstream, {}, "delete", delete=("shop/returns.py",))
    res = fresh.push()
    assert res.mode == "incremental" and res.files_deleted == 1
    assert _search_paths(fresh, "issue refund for order") == []
    assert _callers(fresh, "compute_total") == {"shop/cart.py"}
    with pytest.raises(UnknownSymbol):
        _callers(fresh, "issue_refund_for_order")
    _graph_equals_full_resolution(fresh)
    src = next(s for s in fresh.store.sources.all() if s.name == "shop")
    assert src.commit == head_sha(fresh.upstream) and src.kind == "git"


def test_force_push_and_unknown_base_fall_back_to_full(fresh):
    from indexer.store.sync_state import record_success

    fresh.push()
    commit_files(fresh.upstream, {"shop/refunds.py": REFUNDS}, "add refunds")
    fresh.push()
    # Rewrite the last commit (force-push): the indexed SHA is no longer an ancestor.
    (fresh.upstream / "shop/refunds.py").write_text(REFUNDS.replace("issue_refund_for_order", "void_order_refund"))
    git(fresh.upstream, "add", "-A")
    git(fresh.upstream, "commit", "-q", "--amend", "-m", "rewritten")
    fresh.emb.documents = 0
    res = fresh.push()
    assert res.mode == "full" and "force-push" in res.reason
    assert _search_paths(fresh, "issue refund for order") == []
    assert _callers(fresh, "compute_total") == {"shop/cart.py", "shop/refunds.py"}
    assert fresh.emb.documents == 1  # only the renamed function; the rest came from the cache
    # An unknown base SHA (e.g. a gc'ed commit) also falls back, with the reason logged.
    record_success(fresh.sessions, "shop", "git", commit="ab" * 20)
    res = fresh.push()
    assert res.mode == "full" and "gone" in res.reason
    assert _state_commit(fresh) == head_sha(fresh.upstream)


def test_forged_or_missing_signature_changes_nothing(fresh):
    fresh.push()
    before = (_state_commit(fresh), fresh.runtime.workers.stats("shop")["runs"])
    commit_files(fresh.upstream, {"shop/refunds.py": REFUNDS}, "add refunds")
    payload = push_payload("shop")
    assert post_github(fresh.url, "wrong-secret", payload).status_code == 401
    assert post_github(fresh.url, None, payload).status_code == 401
    assert post_github(fresh.url, SECRET, payload, signature="sha256=" + "0" * 64).status_code == 401
    assert post_github(fresh.url, SECRET, payload, signature="garbage").status_code == 401
    time.sleep(1.0)
    assert (_state_commit(fresh), fresh.runtime.workers.stats("shop")["runs"]) == before
    assert _search_paths(fresh, "issue refund for order") == []
    # ping answers; other branches and unknown repos are ignored
    assert post_github(fresh.url, SECRET, {"zen": "hi"}, event="ping").json() == {"pong": True}
    assert "ignored" in post_github(fresh.url, SECRET, push_payload("shop", branch="dev")).json()
    assert "ignored" in post_github(fresh.url, SECRET, push_payload("other")).json()


def test_pushes_during_a_run_are_coalesced_and_none_is_lost(fresh):
    fresh.push()
    runs0 = fresh.runtime.workers.stats("shop")["runs"]
    gate = fresh.emb.block()
    commit_files(fresh.upstream, {"shop/a.py": "def alpha_feature_one():\n    return 1\n"}, "a")
    fresh.push(wait=False)
    assert fresh.emb.entered.wait(60), "the first run never reached the embedder"
    commit_files(fresh.upstream, {"shop/b.py": "def beta_feature_two():\n    return 2\n"}, "b")
    fresh.push(wait=False)
    commit_files(fresh.upstream, {"shop/c.py": "def gamma_feature_three():\n    return 3\n"}, "c")
    fresh.push(wait=False)
    fresh.emb.release()
    gate.set()
    assert wait_idle(fresh.runtime.workers, "shop", 120)
    stats = fresh.runtime.workers.stats("shop")
    assert stats["runs"] - runs0 == 2  # the blocked run + one coalesced run for both pushes
    assert _state_commit(fresh) == head_sha(fresh.upstream)
    symbols = {c.symbol for c in fresh.store.query.by_symbol(
        "shop", ["alpha_feature_one", "beta_feature_two", "gamma_feature_three"])}
    assert symbols == {"alpha_feature_one", "beta_feature_two", "gamma_feature_three"}


def test_cli_sync_repo_and_status(settings_env, store, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from bot.cli import app

    upstream = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING}, name="up")
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(upstream)},
                                                    {"name": "broken", "url": str(tmp_path / "missing")}]))
    runner = CliRunner()
    r = runner.invoke(app, ["sync", "repo", "shop", "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout.strip().splitlines()[-1])["mode"] == "full"
    commit_files(upstream, {"shop/cart.py": CART}, "cart")
    r = runner.invoke(app, ["sync", "repo", "shop", "--json"])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["mode"] == "incremental"
    assert list(out) == ["repo", "mode", "commit", "base", "reason", "files_changed", "files_deleted",
                         "chunks_written", "chunks_deleted", "embedded", "reused_vectors", "graph_edges", "skipped",
                         "seconds"]
    assert (out["files_changed"], out["files_deleted"], out["skipped"]) == (1, 0, {})
    assert out["chunks_written"] == out["embedded"] > 0 and out["graph_edges"] > 0
    r = runner.invoke(app, ["sync", "repo", "shop", "--json"])  # head already indexed: no run at all
    noop = json.loads(r.stdout.strip().splitlines()[-1])
    assert noop["mode"] == "noop" and list(noop) == list(out)
    assert (noop["chunks_written"], noop["embedded"], noop["graph_edges"], noop["skipped"]) == (0, 0, 0, {})
    r = runner.invoke(app, ["sync", "repo", "broken"])
    assert r.exit_code != 0
    r = runner.invoke(app, ["status", "--json"])
    rows = {s["name"]: s for s in json.loads(r.stdout)["sources"]}
    assert rows["shop"]["commit"] == head_sha(upstream) and rows["shop"]["last_error"] is None
    assert "clone" in rows["broken"]["last_error"]
    r = runner.invoke(app, ["status"])
    assert "shop: " + head_sha(upstream)[:7] in r.output and "last error" in r.output


def test_re_syncing_an_indexed_repo_is_not_a_name_clash(settings_env, store, tmp_path, monkeypatch):
    """`coderag index PATH --name shop`, then `shop` configured (CODERAG_REPOS) and synced:
    the sync takes over the repo it indexed (no "already indexed from" refusal), and a
    second sync is a no-op."""
    from typer.testing import CliRunner

    from bot.cli import app

    upstream = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING}, name="up")
    runner = CliRunner()
    r = runner.invoke(app, ["index", str(upstream), "--name", "shop", "--json"])
    assert r.exit_code == 0, r.output
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(upstream)}]))
    commit_files(upstream, {"shop/cart.py": CART}, "cart")
    r = runner.invoke(app, ["sync", "repo", "shop", "--json"])
    assert r.exit_code == 0, r.output
    result = json.loads(r.stdout.strip().splitlines()[-1])
    assert result["mode"] == "incremental" and result["commit"] == head_sha(upstream), result
    r = runner.invoke(app, ["sync", "repo", "shop", "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout.strip().splitlines()[-1])["mode"] == "noop", r.output


def test_serve_runs_with_only_webhooks_configured(settings_env, tmp_path):
    import socket
    import subprocess
    import sys

    import httpx

    upstream = make_git_repo(tmp_path, {"a.py": "def f():\n    return 1\n"}, name="up")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in settings_env.items() if not k.startswith("SLACK_")}
    env.update(CODERAG_REPOS=json.dumps([{"name": "up", "url": str(upstream)}]),
               CODERAG_GITHUB_WEBHOOK_SECRET=SECRET, CODERAG_RETENTION_DAYS="7")
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.time() < deadline, proc.stderr.read() if proc.poll() is not None else "timeout"
            time.sleep(0.3)
        r = post_github(f"http://127.0.0.1:{port}", SECRET, {"zen": "x"}, event="ping")
        assert r.status_code == 200 and r.json() == {"pong": True}
        assert post_github(f"http://127.0.0.1:{port}", "forged", push_payload("up")).status_code == 401
    finally:
        proc.terminate()  # SIGTERM, as docker/k8s/systemd stop it
        _out, stderr = proc.communicate(timeout=60)
    assert "scheduler on; query-log retention 7 days" in stderr, stderr
    # the lock was released on SIGTERM: a restarted serve may start its scheduler at once
    from sqlalchemy import select

    from common.db import open_database
    from common.settings import Settings
    from indexer.store.sql_models import SchedulerLock

    with open_database(Settings.from_env())() as s:
        assert s.execute(select(SchedulerLock.name)).scalars().all() == []


def test_push_after_cli_index_is_incremental(fresh):
    """`coderag index` records the same last-indexed commit the webhook diffs from: the
    next push re-indexes only the changed file, never the whole repo again."""
    from indexer import index_repository

    summary = index_repository(fresh.upstream, settings=fresh.runtime.ctx.settings, store=fresh.store,
                               embedder=fresh.emb, sessions=fresh.sessions, name="shop")
    assert summary.commit == head_sha(fresh.upstream) == _state_commit(fresh)
    commit_files(fresh.upstream, {"shop/refunds.py": REFUNDS}, "refunds")
    fresh.emb.documents = 0
    last = fresh.push()
    assert last.mode == "incremental"
    assert fresh.emb.documents == 1  # one new chunk; nothing else re-embedded
    assert _search_paths(fresh, "issue refund for order") == ["shop/refunds.py"]


def test_overlapping_runs_of_one_repo_lose_nothing(fresh):
    """Two full runs of the same repo at once (e.g. `coderag sync` while serve handles a
    push) are serialised by the repo's index lock: the second must not delete the chunks
    the first wrote, nor the other way round."""
    import threading

    from indexer.sources.repository import sync_repo

    fresh.push()
    expected = fresh.store.query.count("shop")
    assert expected > 0
    repo = fresh.runtime.config.repo("shop")
    errors: list[BaseException] = []
    store = fresh.runtime.ctx.store
    original = store.data.delete_stale

    def slow_delete_stale(*args, **kwargs):  # widen the window between write and cleanup
        time.sleep(1.0)
        return original(*args, **kwargs)

    store.data.delete_stale = slow_delete_stale

    def run():
        try:
            sync_repo(fresh.runtime.ctx, repo, force_full=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    del store.data.delete_stale
    assert errors == []
    assert fresh.store.query.count("shop") == expected
    assert _callers(fresh, "compute_total") == {"shop/cart.py"}


def test_repo_lock_waits_then_gives_up(fresh):
    from indexer.store.repo_lock import RepoIndexBusy, repo_index_lock

    waited: list[str] = []
    with repo_index_lock(fresh.sessions, "shop", ttl_s=60):
        with pytest.raises(RepoIndexBusy):
            with repo_index_lock(fresh.sessions, "shop", ttl_s=60, wait_s=1.5, on_wait=waited.append):
                pass
        with repo_index_lock(fresh.sessions, "other", ttl_s=60, wait_s=0):  # other repos are not blocked
            pass
    assert waited and "shop" in waited[0]
    with repo_index_lock(fresh.sessions, "shop", ttl_s=60, wait_s=0):  # released on exit
        pass


@pytest.mark.parametrize("command", [["remove", "shop", "--yes"], ["reset", "--yes"]])
def test_remove_and_reset_forget_the_indexed_commit(fresh, command):
    """After `coderag remove`/`reset` the next sync is a full one: it must not diff from
    (or stop at) a commit whose chunks are gone."""
    from typer.testing import CliRunner

    from bot.cli import app
    from indexer.sources.repository import sync_repo

    fresh.push()
    full = fresh.store.query.count("shop")
    r = CliRunner().invoke(app, command)
    assert r.exit_code == 0, r.output
    assert fresh.store.query.count("shop") == 0 and _state_commit(fresh) is None
    result = sync_repo(fresh.runtime.ctx, fresh.runtime.config.repo("shop"))  # same head as before
    assert result.mode == "full"
    assert fresh.store.query.count("shop") == full
    assert _callers(fresh, "compute_total") == {"shop/cart.py"}


def test_source_file_count_follows_incremental_runs(fresh):
    """`status` counts files that have chunks: a committed binary (skipped) does not
    count, a deleted file stops counting, and the full run's skip counts are kept."""
    def source():
        return next(s for s in fresh.store.sources.all() if s.name == "shop")

    commit_files(fresh.upstream, {"shop/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4}, "logo")
    assert fresh.push().mode == "full"
    assert source().files == 2 and source().skipped.get("binary") == 1  # pricing.py, cart.py
    commit_files(fresh.upstream, {"shop/refunds.py": REFUNDS, "shop/icon.png": b"\x00\x01" * 500}, "more")
    assert fresh.push().mode == "incremental"
    assert source().files == 3 and source().skipped.get("binary") == 1
    commit_files(fresh.upstream, {}, "drop cart", delete=("shop/cart.py",))
    fresh.push()
    assert source().files == 2
