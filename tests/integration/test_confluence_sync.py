"""Confluence connector against a local fake Confluence REST server (real HTTP through
atlassian-python-api), real Weaviate and SQLite."""
from __future__ import annotations

import time

import pytest

from helpers.fake_confluence import FakeConfluence
from helpers.freshness import CountingEmbedder

CODE_PAGE = '''<p>How we deploy.</p>
<h2>Rollout steps</h2>
<ac:structured-macro ac:name="code" ac:schema-version="1"><ac:parameter ac:name="language">bash</ac:parameter><ac:plain-text-body><![CDATA[kubectl rollout restart deploy/api && echo "<done>"]]></ac:plain-text-body></ac:structured-macro>
<ac:structured-macro ac:name="warning"><ac:rich-text-body><p>Never on Fridays.</p></ac:rich-text-body></ac:structured-macro>
<h3>Hosts</h3>
<table><tbody><tr><th>Env</th><th>Host</th></tr><tr><td>prod</td><td>api-1.internal</td></tr></tbody></table>'''


def test_storage_to_markdown_code_panels_tables():
    from indexer.confluence.convert import page_markdown

    md = page_markdown("Deploy guide", CODE_PAGE)
    assert "# Deploy guide" in md and "## Rollout steps" in md and "### Hosts" in md
    assert '```bash\nkubectl rollout restart deploy/api && echo "<done>"\n```' in md
    assert "> **Warning:**" in md and "> Never on Fridays." in md
    assert "| Env | Host |" in md and "| prod | api-1.internal |" in md


@pytest.fixture
def conf(settings_env, store, local_embedder, monkeypatch):
    from common.db import open_database
    from common.settings import Settings, load
    from indexer.freshness.runtime import FreshnessRuntime

    fake = FakeConfluence(prefix="/wiki").start()
    monkeypatch.setenv("CODERAG_CONFLUENCE_URL", fake.url)
    monkeypatch.setenv("CODERAG_CONFLUENCE_EMAIL", "bot@example.invalid")
    monkeypatch.setenv("CODERAG_CONFLUENCE_API_TOKEN", "api-token")
    monkeypatch.setenv("CODERAG_CONFLUENCE_SPACES", "OPS")
    settings = Settings.from_env()
    emb = CountingEmbedder(local_embedder)
    rt = FreshnessRuntime.build(load().freshness, settings, sessions=open_database(settings),
                                embedder=emb, store=store)
    rt.fake, rt.emb = fake, emb
    try:
        yield rt
    finally:
        rt.workers.stop()
        fake.stop()


def _paths(rt, space="OPS") -> set[str]:
    from weaviate.classes.query import Filter

    res = rt.ctx.store._cols.chunks.query.fetch_objects(filters=Filter.by_property("repo").equal(space), limit=1000)
    return {o.properties["path"] for o in res.objects}


def test_pagination_incremental_skip_and_deletion(conf):
    from bot.retrieval.retriever import Retriever

    fake = conf.fake
    fake.put_page("100", "OPS", "Deploy guide", CODE_PAGE, version=3)
    for i in range(1, 60):  # > 50 per page of search results: two result pages
        fake.put_page(str(1000 + i), "OPS", f"Note {i}", f"<h2>Topic {i}</h2><p>Body number {i}.</p>")
    fake.put_page("999", "OTHER", "Elsewhere", "<p>other space</p>")
    res = conf.sync_confluence("OPS")
    assert res.mode == "reconcile" and res.listed == 60 and res.indexed == 60
    assert sum("/rest/api/content/search" in r for r in fake.requests) == 2  # followed _links.next
    assert fake.auth.startswith("Basic ")  # Cloud: email + API token
    assert "confluence/OPS/100-deploy-guide.md" in _paths(conf)
    hits = Retriever(conf.ctx.store, conf.emb).search("kubectl rollout restart", top_k=3, repos=["OPS"]).hits
    assert hits[0].chunk.path == "confluence/OPS/100-deploy-guide.md" and hits[0].chunk.kind == "section"
    assert "```bash" in hits[0].chunk.content and hits[0].chunk.commit == "v3"
    src = next(s for s in conf.ctx.store.sources.all() if s.name == "OPS")
    assert src.kind == "confluence" and src.indexed_at is not None and src.files == 60

    # Incremental: only a changed version is fetched; same versions are skipped.
    fake.requests.clear()
    conf.emb.documents = 0
    fake.put_page("1001", "OPS", "Note 1", "<h2>Topic 1</h2><p>Body number 1, revised.</p>", version=2)
    res = conf.sync_confluence("OPS")
    assert res.mode == "incremental" and res.indexed == 1 and res.unchanged == res.listed - 1
    # --json: the same keys as ever; chunk and embedding counts come from the pipeline run
    out = res.to_dict()
    assert list(out) == ["source", "mode", "listed", "indexed", "unchanged", "deleted", "chunks_written",
                         "embedded", "errors", "seconds"]
    assert (out["source"], out["chunks_written"], out["embedded"]) == ("OPS", res.run.chunks_written, 1)
    assert out["chunks_written"] >= 1 and out["errors"] == []
    assert [r for r in fake.requests if r.startswith("/wiki/rest/api/content/1")] == \
        [r for r in fake.requests if "/content/1001" in r]
    assert conf.emb.documents == 1  # the revised section only (the H1 preamble is unchanged)
    # Versions unchanged: nothing fetched at all.
    fake.requests.clear()
    res = conf.sync_confluence("OPS")
    assert res.indexed == 0 and not any("/content/1" in r and "search" not in r for r in fake.requests)

    # Deleted and archived pages disappear on reconciliation.
    del fake.pages["1002"]
    fake.pages["1003"]["status"] = "archived"
    res = conf.sync_confluence("OPS", reconcile=True)
    assert res.deleted == 2
    paths = _paths(conf)
    assert not any("/1002-" in p or "/1003-" in p for p in paths) and len(paths) == 58


def test_rate_limit_429_honours_retry_after(conf):
    conf.fake.put_page("7", "OPS", "Runbook", "<h2>Restart</h2><p>Restart the api.</p>")
    conf.fake.fail_429 = 2
    conf.fake.retry_after = 1
    t0 = time.perf_counter()
    res = conf.sync_confluence("OPS")
    assert res.indexed == 1
    assert time.perf_counter() - t0 >= 2.0  # waited Retry-After twice
    assert len(conf.fake.requests) >= 4


def test_data_center_pat_and_error_recorded(conf, monkeypatch):
    from common.settings import load
    from indexer.store.sync_state import get_state

    monkeypatch.delenv("CODERAG_CONFLUENCE_EMAIL")
    monkeypatch.delenv("CODERAG_CONFLUENCE_API_TOKEN")
    monkeypatch.setenv("CODERAG_CONFLUENCE_PAT", "pat-123")
    conf.config = load().freshness
    conf.fake.put_page("8", "OPS", "Page", "<p>x</p>")
    conf.sync_confluence("OPS")
    assert conf.fake.auth == "Bearer pat-123"
    conf.fake.fail_429 = 100  # exhaust the retries
    conf.fake.retry_after = 0
    with pytest.raises(Exception):
        conf.sync_confluence("OPS")
    assert get_state(conf.ctx.sessions, "OPS").last_error
