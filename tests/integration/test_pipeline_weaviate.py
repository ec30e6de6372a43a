"""index_repository end to end: a real Git repo -> real MiniLM -> real weaviate-server."""
import hashlib
from datetime import datetime, timedelta, timezone

import pytest
from weaviate.classes.query import Filter

from bot.retrieval.retriever import Retriever
from helpers import sample_repo
from helpers.embedders import HashEmbedder
from helpers.gitrepo import commit_files, head_sha, make_git_repo
from common.errors import EmptyIndex, ModelMismatch
from common.settings import Settings
from indexer import index_repository
from indexer.embeddings.local import LOCAL_MODEL_NAME

pytestmark = pytest.mark.weaviate

MAX_BYTES = 100_000  # the sample's big/huge.py is 2 MiB


@pytest.fixture
def settings(settings_env, monkeypatch):
    monkeypatch.setenv("CODERAG_MAX_FILE_BYTES", str(MAX_BYTES))
    return Settings.from_env()


@pytest.fixture
def sample(tmp_path):
    return make_git_repo(tmp_path, sample_repo.FILES, name="shop")


def all_chunks(store, repo=None) -> list[dict]:
    flt = Filter.by_property("repo").equal(repo) if repo else None
    res = store._cols.chunks.query.fetch_objects(filters=flt, limit=1000)
    return [dict(o.properties, uuid=str(o.uuid)) for o in res.objects]


def by_symbol(chunks, symbol):
    found = [c for c in chunks if c["symbol"] == symbol]
    assert len(found) == 1, [c["symbol"] for c in chunks]
    return found[0]


def test_index_summary_counts_and_source_record(sample, settings, store, local_embedder):
    summary = index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    sha = head_sha(sample)
    assert summary.repo == "shop"
    assert summary.commit == sha
    assert summary.files_seen == 11
    # Indexed: tax.py, health.go, user.ts, runbook.md and the broken (partly parsed) .py.
    assert summary.files_indexed == 5
    assert dict(summary.skipped) == {"binary": 2, "vendored": 1, "too_large": 1, "generated": 2}
    assert summary.skipped_examples["too_large"] == "big/huge.py"
    assert summary.skipped_examples["vendored"] == "vendor/lib/vendored.go"
    assert summary.chunks == 14
    assert summary.embedded == 14 and summary.reused_vectors == 0 and summary.deleted_stale == 0
    assert summary.model == LOCAL_MODEL_NAME
    assert summary.dirty_paths == []
    assert store.query.count() == 14 and store.query.count("shop") == 14

    (src,) = store.sources.all()
    assert src.name == "shop" and src.commit == sha and src.kind == "git"
    assert src.model == LOCAL_MODEL_NAME and src.dimensions == 384
    assert src.files == 5 and src.chunks == 14
    assert src.skipped == {"binary": 2, "vendored": 1, "too_large": 1, "generated": 2}


def test_chunks_carry_metadata(sample, settings, store, local_embedder):
    before = datetime.now(timezone.utc)
    index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    sha = head_sha(sample)
    chunks = all_chunks(store)
    assert len(chunks) == 14
    paths = {c["path"] for c in chunks}
    assert paths == {"pricing/tax.py", "server/health.go", "web/user.ts", "docs/runbook.md",
                     "broken/bad_syntax.py"}
    assert {c["language"] for c in chunks} == {"python", "go", "typescript", "markdown"}
    assert {c["repo"] for c in chunks} == {"shop"}
    assert {c["commit"] for c in chunks} == {sha}
    assert len({c["run_id"] for c in chunks}) == 1
    for c in chunks:
        assert before - timedelta(seconds=5) <= c["indexed_at"] <= datetime.now(timezone.utc)
        assert len(c["content_hash"]) == 64
        assert 1 <= c["start_line"] <= c["end_line"]

    tax = by_symbol(chunks, "calculatePriceWithTax")
    assert (tax["path"], tax["language"], tax["kind"], tax["start_line"], tax["end_line"]) == \
        ("pricing/tax.py", "python", "function", 5, 7)
    lines = sample_repo.PY.splitlines()[4:7]
    assert tax["content"] == "\n".join(lines)
    assert tax["content_hash"] == hashlib.sha256(("\n" + tax["content"]).encode()).hexdigest()
    assert tax["name_lower"] == "calculatepricewithtax"
    assert tax["symbol_terms"] == "calculate price with tax"
    assert tax["path_terms"] == "pricing tax py"
    assert tax["identifiers"].startswith("calculate price with tax")
    assert tax["role"] == "code"

    go = by_symbol(chunks, "HealthHandler")
    assert (go["language"], go["kind"], go["start_line"], go["end_line"]) == ("go", "function", 5, 9)
    md = by_symbol(chunks, "Operations runbook > Restarting the payment worker")
    assert (md["language"], md["kind"], md["start_line"], md["end_line"]) == ("markdown", "section", 5, 7)
    assert md["role"] == "docs"


def test_identifier_parts_make_camel_case_names_keyword_searchable(sample, settings, store, local_embedder):
    index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    # `computeShippingEstimate` is only called inside Cart.total: its words exist only in
    # the split-identifier property, never as tokens of the raw content.
    via_identifiers = store._cols.chunks.query.bm25(query="shipping estimate", query_properties=["identifiers"], limit=5)
    assert [o.properties["symbol"] for o in via_identifiers.objects] == ["Cart"]
    via_content = store._cols.chunks.query.bm25(query="shipping estimate", query_properties=["content"], limit=5)
    assert via_content.objects == []
    # And through the retriever, keyword-only and default hybrid.
    retriever = Retriever(store, local_embedder)
    res = retriever.search("where is the shipping estimate computed?", top_k=3, alpha=0.0)
    assert res.hits[0].chunk.symbol == "Cart"
    res = retriever.search("calculate price with tax", top_k=3)
    assert res.hits[0].chunk.symbol == "calculatePriceWithTax"
    assert res.hits[0].chunk.commit == head_sha(sample)


def test_reindex_reembeds_only_changed_chunks_and_deletes_stale(sample, settings, store, local_embedder):
    first = index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    old = {c["symbol"]: c for c in all_chunks(store)}

    # Same commit again: nothing to embed; the run replaces the previous run's 14 objects
    # (each run writes its own objects, see indexer.store.versions).
    again = index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    assert (again.embedded, again.reused_vectors, again.deleted_stale) == (0, 14, 14)

    new_py = sample_repo.PY.replace("return price * (1 - percent / 100)",
                                    "return max(0.0, price * (1 - percent / 100))")
    go_without_backoff = sample_repo.GO.split("// RetryBackoff")[0].rstrip() + "\n"
    sha2 = commit_files(sample, {"pricing/tax.py": new_py, "server/health.go": go_without_backoff},
                        "change apply_discount, drop RetryBackoff")
    second = index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    assert second.commit == sha2
    assert second.chunks == first.chunks - 1
    assert second.embedded == 1                    # only apply_discount changed
    assert second.reused_vectors == second.chunks - 1
    assert second.deleted_stale == 14              # the previous run, old apply_discount + RetryBackoff included

    chunks = all_chunks(store)
    assert len(chunks) == 13 == store.query.count("shop")
    assert {c["commit"] for c in chunks} == {sha2}
    assert "RetryBackoff" not in {c["symbol"] for c in chunks}
    assert store.query.by_symbol("shop", ["RetryBackoff"]) == []
    disc = by_symbol(chunks, "apply_discount")
    assert "max(0.0" in disc["content"] and disc["content_hash"] != old["apply_discount"]["content_hash"]
    # Unchanged chunks are new objects of the new run (ids include the run's generation)
    # with the same content hash and vector, stamped with the new commit.
    health = by_symbol(chunks, "HealthHandler")
    assert health["uuid"] != old["HealthHandler"]["uuid"]
    assert health["content_hash"] == old["HealthHandler"]["content_hash"]
    hits = Retriever(store, local_embedder).search("RetryBackoff wait before attempt", top_k=10).hits
    assert all(h.chunk.symbol != "RetryBackoff" for h in hits)
    (src,) = store.sources.all()
    assert src.commit == sha2 and src.chunks == 13


def test_uncommitted_edits_are_not_indexed(sample, settings, store, local_embedder):
    (sample / "pricing" / "tax.py").write_text("def only_in_work_tree():\n    pass\n")
    summary = index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    assert summary.dirty_paths == ["pricing/tax.py"]
    symbols = {c["symbol"] for c in all_chunks(store)}
    assert "calculatePriceWithTax" in symbols and "only_in_work_tree" not in symbols


def test_repo_filter_with_two_repos(tmp_path, settings, store, local_embedder):
    a = make_git_repo(tmp_path, {"billing.py": "def compute_invoice_total(lines):\n    return sum(lines)\n"}, name="a")
    b = make_git_repo(tmp_path, {"invoices.py": "def compute_invoice_total(rows):\n    return sum(rows) * 2\n"}, name="b")
    index_repository(a, name="alpha", settings=settings, store=store, embedder=local_embedder)
    index_repository(b, name="beta", settings=settings, store=store, embedder=local_embedder)
    assert [s.name for s in store.sources.all()] == ["alpha", "beta"]
    assert (store.query.count(), store.query.count("alpha"), store.query.count("beta")) == (2, 1, 1)

    retriever = Retriever(store, local_embedder)
    both = retriever.search("compute_invoice_total", top_k=5)
    assert sorted(h.chunk.repo for h in both.hits) == ["alpha", "beta"]
    only_b = retriever.search("compute_invoice_total", top_k=5, repos=["beta"])
    assert [(h.chunk.repo, h.chunk.path, h.chunk.commit) for h in only_b.hits] == [("beta", "invoices.py", head_sha(b))]
    with pytest.raises(EmptyIndex, match="no indexed repo named gamma"):
        retriever.search("compute_invoice_total", repos=["gamma"])


def test_search_on_empty_index_raises(settings, store, local_embedder):
    with pytest.raises(EmptyIndex, match="the index is empty"):
        Retriever(store, local_embedder).search("anything")


def test_model_mismatch_on_index_and_search(sample, settings, store, local_embedder):
    index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    fake = HashEmbedder()
    with pytest.raises(ModelMismatch) as exc:
        index_repository(sample, settings=settings, store=store, embedder=fake)
    assert "'all-MiniLM-L6-v2'" in str(exc.value) and "'fake-hash-model'" in str(exc.value)
    assert ModelMismatch.exit_code == 5
    with pytest.raises(ModelMismatch):
        Retriever(store, fake).search("calculate price")
    # The index is untouched.
    assert store.query.count() == 14
    assert store.sources.model() == LOCAL_MODEL_NAME


def test_fake_embedder_works_on_a_fresh_index(sample, settings, store):
    """The mismatch above is about the model, not the fake: on its own index it indexes fine."""
    summary = index_repository(sample, settings=settings, store=store, embedder=HashEmbedder())
    assert summary.model == "fake-hash-model" and summary.embedded == 14
    assert store.sources.model() == "fake-hash-model"


def test_reset_empties_the_index(sample, settings, store, local_embedder):
    index_repository(sample, settings=settings, store=store, embedder=local_embedder)
    store.schema.reset()
    assert store.query.count() == 0 and store.sources.all() == [] and store.sources.model() is None


def test_delete_repo(tmp_path, settings, store):
    a = make_git_repo(tmp_path, {"a.py": "def a_one():\n    return 1\n"}, name="a")
    b = make_git_repo(tmp_path, {"b.py": "def b_one():\n    return 1\n"}, name="b")
    index_repository(a, settings=settings, store=store, embedder=HashEmbedder())
    index_repository(b, settings=settings, store=store, embedder=HashEmbedder())
    store.data.delete_repo("a")
    assert [s.name for s in store.sources.all()] == ["b"]
    assert (store.query.count("a"), store.query.count("b")) == (0, 1)
