"""Sources added on the admin page reach the processes already running, with no restart:
a real ``coderag serve`` in the indexer role started with repositories only in the
database (none in the environment), a repository added to the database while it runs
and synced by its push webhook; and a ``coderag worker`` started before a repository was
added on the page, running the page's "Re-sync now" of it (PostgreSQL index queue).

Real SQLite/PostgreSQL, the session's real Weaviate, real Git repositories; webhooks and
the page over real HTTP."""
from __future__ import annotations

import subprocess
import sys
import time

from helpers.admin_site import admin_stack, base_env, csrf_of
from helpers.freshness import SECRET, post_github, push_payload
from helpers.gitrepo import head_sha, make_git_repo
from helpers.processes import stop_process
from helpers.sample_repo import PY
from helpers.serve_process import serve_process


def _wait_indexed(sessions, name: str, commit: str, timeout: float = 300, why=lambda: "") -> None:
    """Until the sync state of ``name`` says ``commit`` was indexed."""
    from indexer.store.sync_state import get_state

    deadline = time.monotonic() + timeout
    while True:
        st = get_state(sessions, name)
        if st is not None and st.commit == commit and st.indexed_at is not None:
            return
        assert "is not configured" not in str(st and st.last_error), f"{st.last_error}; {why()}"
        assert time.monotonic() < deadline, f"{name} not indexed at {commit[:7]} (state: " \
            f"{st and (st.commit, st.last_error)}); {why()}"
        time.sleep(0.5)


def test_an_indexer_with_only_database_sources_starts_and_syncs_a_repository_added_while_it_runs(
        settings_env, store, tmp_path):
    from bot.runconfig.store import RunConfig, SourceEntry
    from common.db import open_database
    from common.settings import load

    shop = make_git_repo(tmp_path, {"pricing/tax.py": PY}, name="shop")
    docs = make_git_repo(tmp_path, {"README.md": "# Docs\n\nHow refunds work.\n"}, name="docs")
    env = dict(settings_env, CODERAG_ROLE="indexer", CODERAG_GITHUB_WEBHOOK_SECRET=SECRET)
    env.pop("CODERAG_REPOS", None)  # no repository in the environment: only the database's
    sessions = open_database(load(env).core)
    config = RunConfig(sessions)
    config.add_source(SourceEntry(name="shop", url=str(shop)), actor="ada")  # as the admin page does

    log = open(tmp_path / "serve.log", "w+")
    with serve_process(env, stdout=log, output=lambda: (tmp_path / "serve.log").read_text()) as (_proc, base):
        said = lambda: (tmp_path / "serve.log").read_text()[-3000:]  # noqa: E731
        r = post_github(base, SECRET, push_payload("shop"))
        assert r.status_code == 202 and r.json() == {"queued": "shop"}, r.text
        _wait_indexed(sessions, "shop", head_sha(shop), why=said)

        # added on the page while the indexer runs: its next push is synced, no restart
        assert post_github(base, SECRET, push_payload("docs")).json() == {"ignored": "repository not configured"}
        config.add_source(SourceEntry(name="docs", url=str(docs)), actor="ada")
        r = post_github(base, SECRET, push_payload("docs"))
        assert r.status_code == 202 and r.json() == {"queued": "docs"}, r.text
        _wait_indexed(sessions, "docs", head_sha(docs), why=said)

        # and one removed on the page is not synced any more
        config.remove_source("docs", actor="ada")
        assert post_github(base, SECRET, push_payload("docs")).json() == {"ignored": "repository not configured"}


def test_an_indexer_with_no_source_anywhere_says_so(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "CODERAG_", "WEAVIATE_"))}
    env.update(CODERAG_HOME=str(tmp_path), CODERAG_ROLE="indexer")
    p = subprocess.run([sys.executable, "-m", "bot.cli", "serve"], capture_output=True, text=True, env=env,
                       timeout=300)
    assert p.returncode == 2, p.stderr[-2000:]
    assert "nothing to serve in the indexer role" in p.stderr and "admin page" in p.stderr
    assert "Traceback" not in p.stderr


def test_resync_now_of_a_repository_added_on_the_page_runs_on_a_worker_started_before(
        settings_env, store, postgres_server_url, tmp_path):
    from helpers.fake_voyage import start_fake_voyage
    from helpers.postgres import fresh_database

    repo = make_git_repo(tmp_path, {"pricing/tax.py": PY}, name="shop")
    fake = start_fake_voyage()
    worker = None
    try:
        with fresh_database(postgres_server_url) as url:
            env = base_env(tmp_path / "home", url, **{k: v for k, v in settings_env.items()
                                                      if k.startswith(("WEAVIATE", "PATH", "HOME", "HF_",
                                                                       "TRANSFORMERS", "TOKENIZERS"))})
            env.update(CODERAG_HOME=settings_env["CODERAG_HOME"], CODERAG_INDEX_QUEUE="procrastinate",
                       VOYAGE_API_KEY="pa-test", VOYAGE_BASE_URL=fake.base_url, CODERAG_EMBEDDING_RUNTIME="auto")
            with admin_stack(env) as stack, stack.client() as c:
                log = open(tmp_path / "worker.log", "w+")
                worker = subprocess.Popen([sys.executable, "-m", "bot.cli", "worker", "--name", "w1"],
                                          env={**settings_env, **env, "SLACK_API_URL": stack.fake.api_url},
                                          stdout=log, stderr=subprocess.STDOUT)
                said = lambda: (tmp_path / "worker.log").read_text()[-3000:]  # noqa: E731
                _wait_for_worker(url, worker, said)

                stack.sign_in(c)
                csrf = csrf_of(c.get("/admin/sources").text)
                assert c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "git", "name": "shop",
                                                          "url": str(repo)}).status_code == 303
                assert c.post("/admin/sources/shop/sync", data={"csrf_token": csrf}).status_code == 303
                _wait_indexed(stack.sessions, "shop", head_sha(repo), why=said)
                row = c.get("/admin/sources").text.split('id="source-shop"')[1].split("</tr>")[0]
                assert head_sha(repo)[:7] in row and "not indexed yet" not in row
                assert "is not configured" not in said()
    finally:
        if worker is not None:
            stop_process(worker, timeout=60)
        fake.close()


def _wait_for_worker(url: str, proc, said, timeout: float = 180) -> None:
    """Until the worker ``proc`` is registered in the queue's database."""
    from sqlalchemy import create_engine, text

    engine = create_engine(url)
    deadline = time.monotonic() + timeout
    try:
        while True:
            assert proc.poll() is None, said()
            with engine.connect() as conn:
                if conn.execute(text("SELECT 1 FROM pg_tables WHERE tablename = 'procrastinate_workers'")).first() \
                        and conn.execute(text("SELECT 1 FROM procrastinate_workers")).first():
                    return
            assert time.monotonic() < deadline, f"the worker did not start: {said()}"
            time.sleep(0.3)
    finally:
        engine.dispose()
