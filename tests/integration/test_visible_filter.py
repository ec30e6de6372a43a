"""What a search may see: the visible filter (committed run of each source) is read once
per search from the source records, and never outlives the search, on a real
weaviate-server with a real SQLite call graph."""
from __future__ import annotations

import pytest

from bot.retrieval.retriever import Retriever
from common.db import open_database
from helpers.gitrepo import commit_files, head_sha, make_git_repo
from common.settings import Settings
from indexer import ChunkStore, index_repository

pytestmark = pytest.mark.weaviate

PRICING = '''"""Prices."""


def apply_discount(total, rate):
    """Take the seasonal discount off the total: SUMMER_SALE_RATE applies in June."""
    return round(total * (1 - rate), 2)


def compute_total(items):
    """Sum the line items, then apply_discount with the summer rate."""
    subtotal = sum(i["price"] * i["qty"] for i in items)
    return apply_discount(subtotal, 0.1)
'''
CART = '''from shop.pricing import compute_total


def checkout(cart):
    """Charge the cart at its computed total."""
    return compute_total(cart["items"])
'''
QUESTION = 'how does checkout "charge the cart" with compute_total'


def _count_record_reads(store, monkeypatch) -> list[int]:
    """Every read of the source records (``store.sources.all``) appends to the list."""
    reads: list[int] = []
    real = store.sources.all

    def all_records():
        reads.append(1)
        return real()

    monkeypatch.setattr(store.sources, "all", all_records)
    return reads


def test_one_search_reads_the_source_records_once(tmp_path, settings_env, store, local_embedder, monkeypatch):
    settings = Settings.from_env()
    sessions = open_database(settings)
    shop = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING, "shop/cart.py": CART},
                         name="shop")
    other = make_git_repo(tmp_path, {"misc/notes.py": 'def noop():\n    """Nothing."""\n    return None\n'},
                          name="other")
    for repo in (shop, other):
        index_repository(repo, settings=settings, store=store, embedder=local_embedder, sessions=sessions)
    retriever = Retriever(store, local_embedder, sessions=sessions)
    retriever.search(QUESTION, repos=["shop"])  # the first search also checks model and size (cached a while)

    reads = _count_record_reads(store, monkeypatch)
    expansions: list[str] = []
    fetch = store.query.by_symbol
    monkeypatch.setattr(store.query, "by_symbol", lambda repo, symbols, *a, **kw: expansions.append(repo)
                        or fetch(repo, symbols, *a, **kw))
    g = retriever.gather(QUESTION, repos=["shop"])
    # the known-repos check, the hybrid query and the phrase look-up all ran ...
    assert {c.origin for c in g.candidates} >= {"hybrid", "phrase_lookup"}
    result = retriever.finish(g, top_k=1)
    # ... and graph expansion looked up the callee of the top chunk, all on one read of the records
    assert expansions == ["shop"], [(h.chunk.symbol, h.reason) for h in result.hits]
    assert {h.chunk.repo for h in result.hits} == {"shop"}
    assert len(reads) == 1  # was one per query: known check + hybrid + phrase + expansion

    reads.clear()
    retriever.search(QUESTION)  # all repos: no known-repos check, still one read
    assert len(reads) == 1


def test_a_committed_run_is_seen_by_the_next_search_at_once(tmp_path, settings_env, store, local_embedder):
    """No stale visibility: a run committed through this store, or through another
    connection (another process), is what the very next search of the same retriever
    sees (well within the retriever's check cache), and the previous generation is gone."""
    settings = Settings.from_env()
    repo = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING}, name="shop")
    index_repository(repo, settings=settings, store=store, embedder=local_embedder)
    retriever = Retriever(store, local_embedder)

    def top(question):
        hits = retriever.search(question, top_k=5).hits
        assert hits, question
        return hits

    first = head_sha(repo)
    assert {h.chunk.commit for h in top("SUMMER_SALE_RATE seasonal discount")} == {first}
    gen1 = store.sources.get("shop").run_gen

    commit_files(repo, {"shop/pricing.py": PRICING.replace("SUMMER_SALE_RATE", "WINTER_SALE_RATE")
                        .replace("June", "January")}, "winter")
    index_repository(repo, settings=settings, store=store, embedder=local_embedder)  # same store
    second = head_sha(repo)
    hits = top("WINTER_SALE_RATE seasonal discount")
    assert {h.chunk.commit for h in hits} == {second} and "WINTER_SALE_RATE" in hits[0].chunk.content
    assert not any("SUMMER_SALE_RATE" in h.chunk.content for h in top("SUMMER_SALE_RATE seasonal discount"))

    commit_files(repo, {"shop/pricing.py": PRICING.replace("SUMMER_SALE_RATE", "SPRING_SALE_RATE")}, "spring")
    with ChunkStore.open(settings) as elsewhere:  # as `coderag index` in another process would
        index_repository(repo, settings=settings, store=elsewhere, embedder=local_embedder)
    third = head_sha(repo)
    hits = top("SPRING_SALE_RATE seasonal discount")
    assert {h.chunk.commit for h in hits} == {third} and "SPRING_SALE_RATE" in hits[0].chunk.content
    assert store.sources.get("shop").run_gen == gen1 + 2
