"""VoyageEmbedder through the real voyageai client, against a local fake of Voyage's API."""
import time

import pytest

from common.errors import EmbeddingUnavailable

from helpers.fake_voyage import DIMS
from common.settings import Settings
from indexer import make_embedder
from indexer.embeddings.voyage import MAX_TEXTS_PER_BATCH, VoyageEmbedder, batches


@pytest.fixture
def fake(fake_voyage):
    return fake_voyage


def test_documents_use_input_type_document(fake):
    emb = VoyageEmbedder("test-key", base_url=fake.base_url)
    vecs = emb.embed_documents(["def a(): pass", "class B: ..."])
    assert vecs == [[13.0, 0.0, 1.0] + [0.0] * (DIMS - 3), [12.0, 1.0, 1.0] + [0.0] * (DIMS - 3)]
    assert emb.dimensions == DIMS
    (req,) = fake.embed_requests
    assert req.body["input"] == ["def a(): pass", "class B: ..."]
    assert req.body["model"] == "voyage-code-3"
    assert req.body["input_type"] == "document"
    assert req.body["truncation"] is True
    assert req.headers["Authorization"] == "Bearer test-key"


def test_query_uses_input_type_query(fake):
    vec = VoyageEmbedder("test-key", base_url=fake.base_url).embed_query("where is retry?")
    assert vec == [15.0, 0.0, 1.0] + [0.0] * (DIMS - 3)
    (req,) = fake.embed_requests
    assert req.body["input_type"] == "query"
    assert req.body["input"] == ["where is retry?"]


def test_base64_answers_are_decoded(fake):
    fake.honour_base64 = True
    vecs = VoyageEmbedder("k", base_url=fake.base_url).embed_documents(["abc"])
    assert fake.embed_requests[0].body["encoding_format"] == "base64"
    assert vecs == [[3.0, 0.0, 1.0] + [0.0] * (DIMS - 3)]


def test_more_than_128_texts_are_split_into_requests_in_order(fake):
    texts = [f"text number {i}" for i in range(300)]
    vecs = VoyageEmbedder("k", base_url=fake.base_url).embed_documents(texts)
    sizes = [len(r.body["input"]) for r in fake.embed_requests]
    assert sizes == [MAX_TEXTS_PER_BATCH, MAX_TEXTS_PER_BATCH, 300 - 2 * MAX_TEXTS_PER_BATCH]
    assert [r.body["input"] for r in fake.embed_requests] == [texts[:128], texts[128:256], texts[256:]]
    assert [v[1] for v in vecs] == [float(i) for i in range(300)]


def test_token_budget_splits_large_texts(fake):
    big = "x" * 160_000          # ~53k estimated tokens each; two exceed the 100k budget
    vecs = VoyageEmbedder("k", base_url=fake.base_url).embed_documents([big, big, "small"])
    assert [len(r.body["input"]) for r in fake.embed_requests] == [1, 2]
    assert len(vecs) == 3


def test_batches_helper():
    assert list(batches([])) == []
    assert [len(b) for b in batches(["a"] * 5, max_texts=2)] == [2, 2, 1]
    assert [len(b) for b in batches(["abcdef"] * 4, max_texts=100, max_tokens=6)] == [2, 2]


def test_empty_input_makes_no_request(fake):
    assert VoyageEmbedder("k", base_url=fake.base_url).embed_documents([]) == []
    assert fake.requests == []


def test_429_is_retried_by_the_client(fake):
    fake.fail_with = [429]
    t0 = time.monotonic()
    vecs = VoyageEmbedder("k", base_url=fake.base_url).embed_documents(["retry me"])
    elapsed = time.monotonic() - t0
    assert len(fake.embed_requests) == 2
    assert vecs == [[8.0, 0.0, 1.0] + [0.0] * (DIMS - 3)]
    # voyageai waits with exponential jitter starting at 1 s (initial=1, max=16).
    assert elapsed < 5.0


def test_persistent_429_gives_up_after_max_retries(fake):
    fake.fail_with = [429] * 10
    with pytest.raises(EmbeddingUnavailable, match="RateLimitError"):
        VoyageEmbedder("k", max_retries=2, base_url=fake.base_url).embed_documents(["never"])
    # tenacity's stop_after_attempt(max_retries): max_retries is the number of *attempts*.
    assert len(fake.embed_requests) == 2


def test_make_embedder_picks_voyage_when_key_is_set(fake, monkeypatch, tmp_path):
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path))
    monkeypatch.setenv("VOYAGE_API_KEY", "pa-secret")
    monkeypatch.setenv("CODERAG_VOYAGE_MODEL", "voyage-code-2")
    emb = make_embedder(Settings.from_env())
    assert isinstance(emb, VoyageEmbedder) and emb.model_name == "voyage-code-2"
    emb.embed_query("q")
    assert fake.embed_requests[0].body["model"] == "voyage-code-2"
    assert fake.embed_requests[0].headers["Authorization"] == "Bearer pa-secret"
