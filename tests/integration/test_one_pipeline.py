"""One indexing pipeline: the write sequence exists once. A full index (``coderag index``), an
incremental push (``sync_repo``) and a Confluence sync all run through ONE
:class:`indexer.pipeline.IndexingPipeline` object, and leave source records with the
same typed fields. Real Git, real Weaviate, real SQLite, a fake Confluence over HTTP."""
from __future__ import annotations

import json
from dataclasses import fields

import pytest

from helpers.fake_confluence import FakeConfluence
from helpers.gitrepo import commit_files, head_sha, make_git_repo

PRICING = 'def compute_total(items):\n    """Sum of the item prices."""\n    return sum(i["price"] for i in items)\n'
CART = "from shop.pricing import compute_total\n\n\ndef checkout(cart):\n    return compute_total(cart)\n"


@pytest.fixture
def world(settings_env, store, local_embedder, tmp_path, monkeypatch):
    from common.db import open_database
    from common.settings import Settings
    from indexer.pipeline import IndexingPipeline

    fake = FakeConfluence(prefix="/wiki").start()
    upstream = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING, "shop/cart.py": CART},
                             name="shop")
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(upstream), "branch": "main",
                                                     "url_template": "https://git.example/{path}#L{start}"}]))
    monkeypatch.setenv("CODERAG_CONFLUENCE_URL", fake.url)
    monkeypatch.setenv("CODERAG_CONFLUENCE_PAT", "pat")
    monkeypatch.setenv("CODERAG_CONFLUENCE_SPACES", "OPS")
    settings = Settings.from_env()

    class RecordingPipeline(IndexingPipeline):
        """The real pipeline, remembering every batch and result it handled."""

        def run(self, batch, progress=None):
            result = super().run(batch, progress)
            self.runs.append((batch, result))
            return result

    pipeline = RecordingPipeline(settings=settings, store=store, sessions=open_database(settings),
                                 embedder=local_embedder)
    pipeline.runs = []
    try:
        yield pipeline, upstream, fake
    finally:
        fake.stop()


def test_full_index_push_and_confluence_share_one_pipeline(world):
    from indexer import index_repository
    from indexer.sources.repository import sync_repo
    from indexer.freshness.runtime import FreshnessRuntime
    from indexer.models import REPLACE_ALL, REPLACE_PATHS, SourceRecord
    from common.settings import load

    pipeline, upstream, fake = world
    config = load().freshness
    runtime = FreshnessRuntime(config, pipeline)
    try:
        # 1. `coderag index` of the local clone.
        summary = index_repository(upstream, name="shop", settings=pipeline.settings, store=pipeline.store,
                                   pipeline=pipeline)
        assert summary.files_indexed == 2 and summary.embedded > 0
        # 2. A push: one file changed, re-indexed incrementally from the recorded commit.
        commit_files(upstream, {"shop/cart.py": CART + "\n\ndef empty(cart):\n    return not cart\n"})
        pushed = sync_repo(pipeline, config.repo("shop"))
        assert pushed.mode == "incremental" and pushed.files_changed == 1
        # 3. A Confluence space.
        fake.put_page("100", "OPS", "Deploy guide", "<h2>Rollout</h2><p>kubectl rollout restart</p>", version=3)
        synced = runtime.sync_confluence("OPS")
        assert synced.indexed == 1
    finally:
        runtime.workers.stop()

    # The same object ran all three, with the replace policy of each.
    assert [(b.name, b.kind, b.replace, b.state_mode) for b, _ in pipeline.runs] == [
        ("shop", "git", REPLACE_ALL, "full"), ("shop", "git", REPLACE_PATHS, "incremental"),
        ("OPS", "confluence", REPLACE_PATHS, "reconcile")]
    records = [r.record for _, r in pipeline.runs]
    names = [f.name for f in fields(SourceRecord)]
    stored = {s.name: s for s in pipeline.store.sources.all()}
    for rec in records:
        assert isinstance(rec, SourceRecord)
        # Every field is filled the same way whatever the source: counted from the index,
        # the configured model and its vector length, a UTC time.
        assert rec.model == pipeline.embedder.model_name and rec.dimensions == pipeline.embedder.dimensions
        assert rec.files >= 1 and rec.indexed_at is not None and rec.indexed_at.tzinfo is not None
        assert isinstance(rec.skipped, dict)
    full, push, page = records
    # What is read back is exactly what the last run of each source wrote.
    def same(a, b):
        return ({n: getattr(a, n) for n in names if n != "indexed_at"} == {n: getattr(b, n) for n in names
                                                                            if n != "indexed_at"}
                and abs((a.indexed_at - b.indexed_at).total_seconds()) < 0.001)

    assert same(stored["shop"], push) and same(stored["OPS"], page)
    assert push.chunks == pipeline.store.query.count("shop") and page.chunks == pipeline.store.query.count("OPS")
    assert (full.commit, push.commit, page.commit) == (summary.commit, head_sha(upstream), "")
    assert full.files == push.files == 2 and page.files == 1
    assert push.chunks == full.chunks + 1 and push.skipped == full.skipped
    # `coderag index` records the folder it read; a push the mirror; both the same source name.
    assert full.root == str(upstream) and push.root != full.root
    assert push.url_template == "https://git.example/{path}#L{start}" and page.kind == "confluence"


RUNBOOK = "# Pricing\n\nTotals come from `shop.pricing.compute_total`.\n"


def test_drift_and_who_are_subscribers_fed_the_documents_the_run_decoded(world, monkeypatch):
    from indexer.read import drift_report
    from indexer.drift import service as drift_service
    from indexer.freshness.runtime import FreshnessRuntime
    from indexer.knowledge import subscribers
    from common.settings import load
    from indexer.sources.repository import index_repository, sync_repo

    pipeline, upstream, fake = world
    commit_files(upstream, {"docs/pricing.md": RUNBOOK})
    events = []

    class Recorder:
        name = "recorder"

        def wants(self, kind, path):
            return False

        def __call__(self, pipe, event):
            events.append(event)

    class Broken(Recorder):
        name = "broken"

        def __call__(self, pipe, event):
            raise RuntimeError("subscriber bug")

    pipeline.subscribers = [Broken(), *subscribers(), Recorder()]
    read_from_git = []
    real_read = drift_service.git.read_blobs

    def read_blobs(root, files):
        read_from_git.extend(f.path for f in files)
        return real_read(root, files)

    monkeypatch.setattr(drift_service.git, "read_blobs", read_blobs)
    config = load().freshness
    runtime = FreshnessRuntime(config, pipeline)
    try:
        index_repository(upstream, name="shop", settings=pipeline.settings, store=pipeline.store, pipeline=pipeline)
        # the runbook goes stale: the function it names is renamed in a push
        commit_files(upstream, {"shop/pricing.py": PRICING.replace("compute_total", "order_total"),
                                "shop/cart.py": CART.replace("compute_total", "order_total")})
        sync_repo(pipeline, config.repo("shop"))
        fake.put_page("100", "OPS", "Deploy guide", "<p>Run <code>shop.pricing.compute_total</code></p>", version=3)
        runtime.sync_confluence("OPS")
    finally:
        runtime.workers.stop()

    full, push, page = events  # a failing subscriber did not stop the run nor the others
    assert full.changed_paths is None and full.deleted_paths == frozenset()
    assert "docs/pricing.md" in full.documents and full.documents["docs/pricing.md"].text == RUNBOOK
    assert push.changed_paths == {"shop/pricing.py", "shop/cart.py"} and push.documents == {}
    assert [(d.title, d.url != "") for d in page.documents.values()] == [("Deploy guide", True)]
    # the runbook was read from Git once, by the source; drift got it from the run
    assert read_from_git.count("docs/pricing.md") == 1, read_from_git
    stale = {(r["doc"], r["ref"]) for r in drift_report(pipeline.sessions)["stale"]}
    assert ("docs/pricing.md", "shop.pricing.compute_total") in stale, stale
