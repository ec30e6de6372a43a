"""The answerability decision (covered, uncovered, partly covered), ``coderag ask --json``,
and Voyage rerank through the real ``voyageai`` client against a local fake endpoint.

Retrieval runs on a real weaviate-server holding a small Git repository the test builds
(real MiniLM vectors); the vocabulary lookups are real BM25 queries on it.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bot.answer.answerability import assess, decide, question_terms
from bot.answer.service import AnswerService
from bot.retrieval.query_analysis import analyze
from bot.retrieval.ranking import Candidate
from bot.retrieval.rerank import VoyageReranker, make_reranker
from bot.retrieval.retriever import Retriever
from helpers.gitrepo import head_sha, make_git_repo
from common.settings import Settings
from indexer import index_repository
from indexer.read import StoredChunk

SHOP = {
    "shop/orders.py": '''"""Orders and their events."""


def place_order(cart, customer):
    """Create an order from the cart and emit an OrderPlaced event on the in-process bus."""
    order = {"items": list(cart), "customer": customer}
    publish_event("OrderPlaced", order)
    return order


def publish_event(name, payload):
    """Deliver an event to the subscribers registered in this process (no broker)."""
    for handler in SUBSCRIBERS.get(name, []):
        handler(payload)


SUBSCRIBERS = {}
''',
    "shop/pricing.py": '''def price_with_tax(amount, rate=0.2):
    """Amount plus value-added tax, rounded to cents."""
    return round(amount * (1 + rate), 2)
''',
    # a docs page that names a technology no code or configuration of the shop uses
    "docs/deploy.md": "# Deploying\n\nPut a Memcached cache in front of the catalogue pages if they get slow.\n",
    # a corner: a demo that mentions a technology the product itself does not use
    "examples/redis_demo.py": '''"""Demo only: keep computed prices in a Redis cache between runs."""
import redis

CACHE = redis.Redis()
''',
}


# ------------------------------------------------------------------------ pure decision
def test_distinctive_terms_are_identifiers_quotes_technology_names_and_words():
    q = 'Does `place_order` send "order placed" to Kafka and record GraphQL metrics?'
    qa = analyze(q)
    terms = {(t.text, t.kind) for t in question_terms(q, qa.identifiers, qa.quoted)}
    assert {("place_order", "identifier"), ("order placed", "quoted"), ("Kafka", "name"),
            ("record", "word"), ("metrics", "word")} <= terms
    assert ("GraphQL", "identifier") in terms  # camel case reads as code: strong either way
    # question words and the sentence's first word are not terms
    assert not {t for t, _k in terms} & {"Does", "does", "to", "and"}


def features(strong_uncovered=(), strong_covered=(), words=0, words_uncovered=(), supported=False,
             best_cosine=0.5, hits=5):
    return {"strong_uncovered": list(strong_uncovered), "strong_covered": list(strong_covered),
            "words": words, "words_uncovered": list(words_uncovered), "supported": supported,
            "best_cosine": best_cosine, "margin": 0.1, "hits": hits}


def test_decision_rule_covered_uncovered_and_partly_covered():
    # covered: nothing missing
    assert decide(features(strong_covered=["place_order"], words=3, supported=True)) == (False, [])
    # uncovered: a technology nothing mentions, and nothing named in the question was found
    assert decide(features(strong_uncovered=["Kafka"], words=2)) == (True, ["Kafka"])
    # partly covered: the named function exists, Kafka does not -> answered, Kafka named
    assert decide(features(strong_uncovered=["Kafka"], strong_covered=["place_order"], supported=True)) \
        == (False, ["Kafka"])
    # most plain words unknown and no support -> refused
    assert decide(features(words=4, words_uncovered=["sourdough", "bread", "yeast"]))[0] is True  # 3/4 >= 0.67
    # no hits at all -> refused
    assert decide(features(hits=0))[0] is True
    # an answered question does not name plain words the code never uses ("visitor");
    # a refusal does, since they are its reason
    assert decide(features(strong_covered=["Owner"], words=5, words_uncovered=["visitor"], supported=True)) \
        == (False, [])
    assert decide(features(words=4, words_uncovered=["sourdough", "bread", "yeast"])) == \
        (True, ["sourdough", "bread", "yeast"])


# ------------------------------------------------------------------- on a real index
@pytest.fixture
def shop(tmp_path, settings_env, store, local_embedder):
    repo = make_git_repo(tmp_path, SHOP, name="shop")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder)
    return repo




@pytest.mark.weaviate
def test_vocabulary_lookup_covered_uncovered_partly(shop, store, local_embedder):
    r = Retriever(store, local_embedder)
    covered = assess(r.search("How does place_order emit the OrderPlaced event?"), store)
    assert not covered.refused and covered.uncovered_terms == []
    kafka = assess(r.search("Do we push order events to Kafka?"), store)
    assert kafka.refused and "Kafka" in kafka.uncovered_terms
    partly = assess(r.search("Does place_order also send the order to Kafka?"), store)
    assert not partly.refused and partly.features()["strong_uncovered"] == ["Kafka"]


def test_hyphenated_feature_words_are_compound_key_words_and_generic_ones_are_not():
    q = "How do we rate-limit built-in order exports per customer?"
    qa = analyze(q)
    terms = {(t.text, t.kind) for t in question_terms(q, qa.identifiers, qa.quoted)}
    assert ("rate-limit", "compound") in terms
    assert not {t for t, _k in terms} & {"built-in", "built", "rate", "limit"}


@pytest.mark.weaviate
def test_plain_word_gaps_and_corner_only_terms_are_refused(shop, store, local_embedder):
    """A feature named in plain words that no source has (``rate-limit``) is refused
    like a missing technology; a technology only an example mentions is not covered
    (the answer says where it is); a hyphenated word the code has stays covered."""
    r = Retriever(store, local_embedder)
    limit = assess(r.search("How does the shop rate-limit orders per customer?"), store)
    assert limit.refused and "rate-limit" in limit.uncovered_terms
    # refused on its own, whatever the similarity: the shop says "rate" (a tax rate), never "limit"
    assert [t.foreign_part for t in limit.terms if t.text == "rate-limit"] == ["limit"]
    assert limit.features()["strong_uncovered"] == ["rate-limit"]
    redis = assess(r.search("Which file configures the Redis cache for orders?"), store)
    assert redis.refused and "Redis (except in examples/redis_demo.py)" in redis.uncovered_terms
    tax = assess(r.search("How is the value-added tax added to a price?"), store)
    assert not tax.refused and tax.uncovered_terms == []


def test_the_gap_rule_needs_an_uncovered_key_word_no_support_and_weak_similarity():
    """A key word no source has refuses only together with a weak best cosine and no
    support; a strong term refuses alone; an answered question names an uncovered
    compound (``protocol-relative``) but not a plain word."""
    base = {"strong_uncovered": [], "strong_covered": [], "words": 5, "words_uncovered": ["breaker"],
            "supported": False, "best_cosine": 0.30, "margin": 0.5, "hits": 10}
    assert decide(base) == (True, ["breaker"])
    assert decide(base, {"gap_cosine": 0.0})[0] is False  # the older rule answered it
    assert decide({**base, "best_cosine": 0.55}) == (False, [])
    assert decide({**base, "supported": True})[0] is False
    assert decide({**base, "words_uncovered": []})[0] is False
    compound = {**base, "words_uncovered": ["protocol-relative"], "best_cosine": 0.42}
    assert decide(compound) == (False, ["protocol-relative"])
    from bot.answer.answerability import Term

    assert not Term("protocol-relative", "compound").strong  # both words in the code: a key word
    assert Term("rate-limit", "compound", foreign_part="rate").strong  # a word nothing uses: foreign
    assert decide({**base, "strong_uncovered": ["Kafka"], "best_cosine": 0.9})[0] is True


@pytest.mark.weaviate
def test_a_plain_word_feature_no_source_has_is_refused(shop, store, local_embedder):
    """Asked the way a PM asks, with no technology name: the shop keeps no audit trail."""
    r = Retriever(store, local_embedder)
    audit = assess(r.search("Where is the audit trail of each order, price and tax change kept?"), store)
    f = audit.features()
    assert "audit" in f["words_uncovered"] and not f["strong_uncovered"]
    assert audit.refused and "audit" in audit.uncovered_terms
    assert not decide(f, {"gap_cosine": 0.0})[0], f  # refused by the gap rule, not the older ones


@pytest.mark.weaviate
def test_ask_partly_covered_names_the_missing_part_and_cites_the_closest(shop, store, local_embedder, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    service = AnswerService(store, local_embedder, top_k=3)
    ans = service.ask("Does place_order also send the order to Kafka?")
    assert not ans.no_coverage and ans.uncovered_terms == ["Kafka"]
    assert ans.text.startswith(f"Nothing in shop@{head_sha(shop)[:7]} mentions Kafka.")
    assert ans.citations and ans.citations[0].symbol == "place_order"


@pytest.mark.weaviate
def test_a_technology_only_the_docs_name_is_answered_saying_no_code_mentions_it(shop, store, local_embedder,
                                                                              monkeypatch):
    """Not refused (the docs may answer "how do I use X"), but the answer says up front that
    no code mentions it, so "which file configures X" is not answered as if some did."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    service = AnswerService(store, local_embedder, top_k=3)
    ans = service.ask("Which file configures the Memcached cache for the catalogue?")
    assert not ans.no_coverage
    assert f"No product code in shop@{head_sha(shop)[:7]} mentions Memcached; only its docs do (docs/deploy.md)." in ans.text
    kafka = service.ask("Does place_order also send the order to Kafka?")  # a name nothing has: no such line
    assert "only its docs do" not in kafka.text


@pytest.mark.weaviate
def test_ask_json_has_exactly_the_documented_keys(shop, settings_env):
    env = dict(settings_env)
    env.pop("ANTHROPIC_API_KEY", None)
    run = lambda q: subprocess.run([sys.executable, "-m", "bot.cli", "ask", q, "--json", "--no-log"],  # noqa: E731
                                   env=env, capture_output=True, text=True, timeout=180)
    ok, none = run("How is the price with tax rounded?"), run("Do we push order events to Kafka?")
    assert ok.returncode == 0, ok.stderr
    data = json.loads(ok.stdout)
    assert set(data) == {"answer", "citations", "no_coverage", "uncovered_terms", "stale", "model", "usage"}
    assert data["no_coverage"] is False and data["model"] == "extractive" and data["stale"] is False
    first = data["citations"][0]
    assert set(first) == {"n", "repo", "path", "start_line", "end_line", "commit", "indexed_at"}
    assert first["repo"] == "shop" and data["answer"].count(f"shop/shop/pricing.py:1-3@{head_sha(shop)[:7]}") == 1
    assert first["n"] == 1 and first["path"] == "shop/pricing.py" and first["commit"] == head_sha(shop)
    assert first["start_line"] == 1 and first["end_line"] == 3 and first["indexed_at"].startswith("20")
    refused = json.loads(none.stdout)
    assert refused["no_coverage"] is True and "Kafka" in refused["uncovered_terms"]
    assert "mentions Kafka" in refused["answer"]  # the refusal's text names the missing term too


# ------------------------------------------------------------------ Voyage rerank
def _cand(path, symbol, content, hybrid):
    c = StoredChunk(uuid=path + symbol, repo="shop", path=path, language="python", symbol=symbol, kind="function",
                    start_line=1, end_line=3, commit="abc", indexed_at=None, content=content)
    return Candidate(chunk=c, hybrid=hybrid, score=hybrid)


def test_voyage_rerank_on_the_wire_reorders_the_candidates(fake_voyage):
    cands = [_cand("a.py", "alpha", "def alpha(): pass", 0.9),
             _cand("b.py", "tax", "def tax(amount): return amount * rate  # value added tax rounding", 0.5),
             _cand("c.py", "gamma", "def gamma(): pass", 0.4)]
    out = VoyageReranker("vk-test", base_url=fake_voyage.base_url).rerank("value added tax rounding", cands)
    (req,) = fake_voyage.rerank_requests
    assert req.headers["Authorization"] == "Bearer vk-test"
    assert req.body["query"] == "value added tax rounding" and req.body["model"] == "rerank-2.5"
    assert req.body["documents"][1].startswith("b.py tax\ndef tax(amount)")
    assert [c.chunk.symbol for c in out][0] == "tax"
    assert out[0].signals["voyage_rerank"] == 1.0


def test_voyage_rerank_failure_keeps_the_local_order(fake_voyage):
    fake_voyage.fail_with = [400]
    cands = [_cand("a.py", "alpha", "x", 0.9), _cand("b.py", "beta", "value tax", 0.5)]
    out = VoyageReranker("vk-test", base_url=fake_voyage.base_url, max_retries=0).rerank("value tax", cands)
    assert [c.chunk.symbol for c in out] == ["alpha", "beta"] and len(fake_voyage.rerank_requests) == 1


def test_reranker_only_with_a_key(fake_voyage):
    assert make_reranker(Settings.from_env({})) is None
    assert make_reranker(Settings.from_env({"VOYAGE_API_KEY": "  "})) is None
    r = make_reranker(Settings.from_env({"VOYAGE_API_KEY": "vk-test", "VOYAGE_BASE_URL": fake_voyage.base_url,
                                         "CODERAG_VOYAGE_RERANK_MODEL": "rerank-x"}))
    assert isinstance(r, VoyageReranker) and r.model == "rerank-x"
    r.rerank("tax", [_cand("a.py", "alpha", "x", 0.9), _cand("b.py", "beta", "tax", 0.5)])
    (req,) = fake_voyage.rerank_requests  # the settings' base URL and model, not the environment's
    assert req.body["model"] == "rerank-x" and req.headers["Authorization"] == "Bearer vk-test"


@pytest.mark.weaviate
def test_retriever_applies_voyage_rerank_before_the_cap(shop, store, local_embedder, fake_voyage):
    r = Retriever(store, local_embedder, reranker=VoyageReranker("vk-test", base_url=fake_voyage.base_url))
    res = r.search("value-added tax rounded to cents amount", top_k=2, expand_graph=False)
    (req,) = fake_voyage.rerank_requests
    assert len(req.body["documents"]) > 2  # sent before the cap of 2
    assert res.hits[0].chunk.symbol == "price_with_tax" and "voyage_rerank" in res.hits[0].signals
