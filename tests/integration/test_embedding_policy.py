"""The embedding policy: which roles get a vector and from how many inputs; chunks left
without a vector are still written and found by keyword search."""
from __future__ import annotations

import pytest

from helpers.embedders import HashEmbedder
from helpers.gitrepo import make_git_repo
from common.settings import Settings
from indexer import index_repository
from indexer.chunking.models import Chunk
from indexer.documents import EMBED_WINDOW_LINES, embedding_text, embedding_texts
from indexer.embedding_policy import ALL_WINDOWS, DEFAULT_POLICY, EmbeddingPolicy
from indexer.documents import embed_chunks


def _chunk(path: str, lines: int) -> Chunk:
    text = "\n".join(f"    step_{i} = {i}" for i in range(lines))
    return Chunk(path=path, language="python", kind="function", symbol="run_all",
                 start_line=1, end_line=lines, text=text)


LONG = EMBED_WINDOW_LINES * 5  # head + 4 sub-windows under ALL_WINDOWS


def test_all_windows_is_the_previous_behaviour():
    c = _chunk("pkg/mod.py", LONG)
    texts = embedding_texts(c, ALL_WINDOWS)
    assert len(texts) == 5 and texts[0] == embedding_text(c)
    assert all(t.startswith("run all - pkg/mod.py\n") for t in texts[1:])


@pytest.mark.parametrize("policy, path, expected", [
    (EmbeddingPolicy("cap 1", max_windows=1), "pkg/mod.py", 2),
    (EmbeddingPolicy("cap 0", max_windows=0), "pkg/mod.py", 1),
    (EmbeddingPolicy("head", default="head"), "pkg/mod.py", 1),
    (EmbeddingPolicy("tests head", modes={"test": "head"}), "tests/test_mod.py", 1),
    (EmbeddingPolicy("tests head", modes={"test": "head"}), "pkg/mod.py", 5),
    (EmbeddingPolicy("tests none", modes={"test": "none"}), "tests/test_mod.py", 0),
    (EmbeddingPolicy("tests none", modes={"test": "none"}), "docs/guide.py", 5),
])
def test_policy_modes_per_role(policy, path, expected):
    texts = embedding_texts(_chunk(path, LONG), policy)
    assert len(texts) == expected
    if texts:
        assert texts[0] == embedding_text(_chunk(path, LONG))


def test_embed_chunks_gives_none_for_keyword_only_chunks():
    policy = EmbeddingPolicy("tests none", modes={"test": "none"})
    chunks = [_chunk("tests/test_mod.py", 10), _chunk("pkg/mod.py", LONG), _chunk("pkg/b.py", 3)]
    vecs = embed_chunks(HashEmbedder(), chunks, policy)
    assert vecs[0] is None
    assert len(vecs[1]) == 384 and abs(sum(x * x for x in vecs[1]) - 1.0) < 1e-6
    # The long chunk's vector is the normalised mean of its 5 inputs, not its head alone.
    assert vecs[1] != HashEmbedder().embed_query(embedding_text(chunks[1]))


def test_default_policy_is_the_measured_one_lean():
    # chosen on both full dev sets with the int8 runtime (docs/benchmarks.md): tests
    # keyword-only, docs by their head, code (and examples) with every sub-window
    from indexer.embedding_policy import LEAN

    assert DEFAULT_POLICY is LEAN
    assert embedding_texts(_chunk("tests/test_mod.py", LONG)) == []  # tests: keyword and name only
    assert len(embedding_texts(_chunk("docs/guide.rst", LONG))) == 1  # docs: the head
    assert len(embedding_texts(_chunk("pkg/mod.py", LONG))) == 5  # code: head + all sub-windows
    assert len(embedding_texts(_chunk("examples/demo.py", LONG))) == 5


def test_default_policy_is_a_policy():
    assert isinstance(DEFAULT_POLICY, EmbeddingPolicy)
    for role in ("code", "test", "docs", "changelog", "example"):
        assert DEFAULT_POLICY.mode(role) in ("full", "head", "none")


@pytest.mark.weaviate
def test_chunks_without_vector_are_written_and_keyword_searchable(tmp_path, settings_env, store, monkeypatch):
    from bot.retrieval.retriever import Retriever
    import indexer.embedding_policy as ep

    monkeypatch.setattr(ep, "DEFAULT_POLICY", EmbeddingPolicy("tests none", modes={"test": "none"}))
    repo = make_git_repo(tmp_path, {
        "shop/pricing.py": "def total_price(items):\n    return sum(i.price for i in items)\n",
        "tests/test_pricing.py": "def test_total_price_of_zebra_basket():\n    assert total_price([]) == 0\n",
    }, name="shop")
    summary = index_repository(repo, settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    assert summary.chunks == 2
    res = store._cols.chunks.query.fetch_objects(limit=10, include_vector=True)
    vec_by_path = {o.properties["path"]: bool(o.vector) for o in res.objects}
    assert vec_by_path == {"shop/pricing.py": True, "tests/test_pricing.py": False}
    assert store.sources.all()[0].dimensions == 384
    retriever = Retriever(store, HashEmbedder())
    hits = retriever.search("zebra basket test", top_k=5, alpha=0.0).hits
    assert hits and hits[0].chunk.path == "tests/test_pricing.py" and hits[0].cosine == 0.0
    hybrid = retriever.search("zebra basket test", top_k=5).hits  # alpha per question
    assert "tests/test_pricing.py" in [h.chunk.path for h in hybrid]
    # Vector-only search never returns the chunk that has no vector, and does not fail.
    vec_only = retriever.search("zebra basket test", top_k=5, alpha=1.0).hits
    assert all(h.chunk.path != "tests/test_pricing.py" for h in vec_only)
    # A keyword-only chunk is a recorded state: the run verified, doctor finds nothing wrong.
    from indexer import check_index

    health = {h.name: h for h in check_index(store)}["shop"]
    assert health.ok, health.problems
    assert (health.keyword_only, health.missing_vectors, health.vectors_pending) == (1, 0, 0)
    assert store.sources.get("shop").keyword_only == 1


def test_named_presets_and_the_setting_that_picks_one(tmp_path, monkeypatch):
    from common.errors import BadInput
    from indexer.embedding_policy import LEAN, PRESETS, TESTS_KEYWORD_ONLY, named
    from indexer.pipeline import IndexingPipeline

    assert named(None) is DEFAULT_POLICY and named("default") is DEFAULT_POLICY
    assert named("tests-keyword-only") is TESTS_KEYWORD_ONLY and PRESETS["lean"] is LEAN
    with pytest.raises(ValueError, match="unknown embedding policy 'tiny'"):
        named("tiny")
    # lean: tests keyword-only, docs by their head, code keeps every sub-window
    assert len(embedding_texts(_chunk("tests/test_mod.py", LONG), LEAN)) == 0
    assert len(embedding_texts(_chunk("docs/guide.md", LONG), LEAN)) == 1
    assert len(embedding_texts(_chunk("pkg/mod.py", LONG), LEAN)) == 5
    monkeypatch.setenv("CODERAG_EMBEDDING_POLICY", "tests-keyword-only")  # not the default
    settings = Settings.from_env(home=tmp_path)
    pipe = IndexingPipeline(settings=settings, store=None, sessions=None, embedder=HashEmbedder())
    assert pipe.embedding_policy is TESTS_KEYWORD_ONLY and TESTS_KEYWORD_ONLY is not DEFAULT_POLICY
    monkeypatch.setenv("CODERAG_EMBEDDING_POLICY", "default")
    assert IndexingPipeline(settings=Settings.from_env(home=tmp_path), store=None, sessions=None,
                            embedder=HashEmbedder()).embedding_policy is DEFAULT_POLICY
    assert IndexingPipeline(settings=settings, store=None, sessions=None, embedder=HashEmbedder(),
                            policy=ALL_WINDOWS).embedding_policy is ALL_WINDOWS
    monkeypatch.setenv("CODERAG_EMBEDDING_POLICY", "everything")
    with pytest.raises(BadInput, match="CODERAG_EMBEDDING_POLICY"):
        Settings.from_env(home=tmp_path)


@pytest.mark.weaviate
def test_switching_to_a_policy_without_test_vectors_drops_them_at_the_next_full_run(tmp_path, settings_env,
                                                                                  store, monkeypatch):
    # an index built before the policy (every chunk embedded), then re-indexed under the
    # default: the unchanged test chunk must not keep its old vector, or the index and its
    # record (keyword_only) disagree
    import indexer.embedding_policy as ep
    from indexer import check_index

    files = {"shop/pricing.py": "def total_price(items):\n    return sum(i.price for i in items)\n",
             "tests/test_pricing.py": "def test_total_price():\n    assert total_price([]) == 0\n"}
    repo = make_git_repo(tmp_path, files, name="shop")
    monkeypatch.setattr(ep, "DEFAULT_POLICY", ALL_WINDOWS)
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    monkeypatch.setattr(ep, "DEFAULT_POLICY", ep.LEAN)
    (repo / "shop" / "pricing.py").write_text(files["shop/pricing.py"] + "\n\ndef tax():\n    return 0\n")
    import subprocess
    subprocess.run(["git", "-C", str(repo), "commit", "-qam", "tax"], check=True)
    summary = index_repository(repo, settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    assert summary.keyword_only == 1
    visible = store.query.visible_filter(["shop"])
    res = store._cols.chunks.query.fetch_objects(limit=20, include_vector=True, filters=visible)
    vec_by_path = {}
    for o in res.objects:
        vec_by_path.setdefault(o.properties["path"], set()).add(bool(o.vector))
    assert vec_by_path == {"shop/pricing.py": {True}, "tests/test_pricing.py": {False}}
    health = {h.name: h for h in check_index(store)}["shop"]
    assert health.ok and (health.keyword_only, health.missing_vectors) == (1, 0), health.problems


def test_repair_gives_a_vector_to_any_chunk_it_is_asked_to_whatever_the_policy():
    # doctor --repair re-embeds chunks that should have a vector (an old index's test
    # chunk that lost its vector): the default policy's "none" for tests must not apply
    from indexer.store.versions import _embed_stored

    props = {"path": "tests/test_pricing.py", "symbol": "test_total_price", "kind": "function",
             "language": "python", "start_line": 1, "end_line": 2,
             "content": "def test_total_price():\n    assert total_price([]) == 0"}
    assert DEFAULT_POLICY.mode("test") == "none"
    vec = _embed_stored(HashEmbedder(), props)
    assert vec is not None and len(vec) == 384


@pytest.mark.weaviate
def test_a_first_index_does_not_borrow_vectors_for_keyword_only_chunks(tmp_path, settings_env, store, monkeypatch):
    # vectors are reused by content hash across repos: a fork indexed after its origin
    # (its first index: the keyword-ready early phase) must not take the origin's vector
    # for a test chunk the policy leaves keyword-only
    import indexer.embedding_policy as ep

    files = {"shop/pricing.py": "def total_price(items):\n    return sum(i.price for i in items)\n",
             "tests/test_pricing.py": "def test_total_price():\n    assert total_price([]) == 0\n"}
    origin = make_git_repo(tmp_path / "a", files, name="shop")
    fork = make_git_repo(tmp_path / "b", files, name="fork")
    monkeypatch.setattr(ep, "DEFAULT_POLICY", ALL_WINDOWS)
    index_repository(origin, name="shop", settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    monkeypatch.setattr(ep, "DEFAULT_POLICY", ep.LEAN)
    summary = index_repository(fork, name="fork", settings=Settings.from_env(), store=store, embedder=HashEmbedder())
    assert summary.keyword_only == 1 and summary.reused_vectors >= 1  # the code chunk's vector is reused
    res = store._cols.chunks.query.fetch_objects(limit=20, include_vector=True, filters=store.query.visible_filter(["fork"]))
    assert {o.properties["path"]: bool(o.vector) for o in res.objects} == {"shop/pricing.py": True,
                                                                        "tests/test_pricing.py": False}
