"""The channel → sources allow-list holds under hybrid search AND graph expansion.

Two real repositories are indexed into a real weaviate-server (MiniLM vectors, SQL call
graph): ``web`` (allowed) and ``payroll`` (forbidden). ``payroll`` matches the questions
best — each test first shows that without the allow-list its chunks come first — and it
defines the same names ``web`` calls, so graph expansion by name could reach it.
"""
from __future__ import annotations

import json

import pytest

from bot.answer.service import AnswerService
from bot.retrieval.expansion import expand
from bot.retrieval.retriever import Retriever
from bot.tenancy import ChannelPolicy, scope
from common.settings import load
from helpers.gitrepo import make_git_repo
from common.db import open_database
from common.errors import BadInput
from common.settings import Settings
from indexer import index_repository

pytestmark = pytest.mark.weaviate

def _fillers(prefix: str) -> str:
    """Checkout-flavoured functions that outrank the callee in hybrid search, so that it
    is reached only through graph expansion."""
    parts = []
    for topic in ("banner", "shipping_estimate", "gift_wrap", "coupon_field", "receipt_email",
                  "address_form", "payment_button", "cart_badge"):
        parts.append(f'''

def {prefix}checkout_{topic}(cart):
    """Checkout page: the {topic.replace("_", " ")} shown at checkout for the cart total."""
    return {{"cart": cart, "checkout": "{topic}"}}
''')
    return "".join(parts)


# Both repos define checkout_total -> lookup_rate; expansion follows that edge by name.
WEB = {
    "checkout/cart.py": '''"""Shopping cart checkout."""


def checkout_total(cart):
    """Total of the cart at checkout, after the member discount."""
    subtotal = sum(item.price for item in cart)
    return lookup_rate(subtotal)


def lookup_rate(amount):
    """Multiply by ninety-five hundredths."""
    return amount * 0.95
''',
    "checkout/pages.py": '''"""Checkout pages."""''' + _fillers("web_"),
}

PAYROLL = {
    "payroll/salary.py": '''"""Executive payroll: confidential bonus formulas."""

SECRET_BONUS_MULTIPLIER = 7.5


def compute_executive_salary_bonus(salary):
    """Executive salary bonus: the salary times the secret bonus multiplier."""
    return salary * SECRET_BONUS_MULTIPLIER


def checkout_total(cart):
    """Checkout total of the cart: what checkout_total calls to apply the member discount at checkout."""
    return lookup_rate(sum(cart))


def lookup_rate(amount):
    """Confidential executive rate table (SECRET_BONUS_MULTIPLIER applies)."""
    return amount * 0.5 * SECRET_BONUS_MULTIPLIER
''',
    "payroll/pages.py": '''"""Payroll checkout pages."""''' + _fillers("payroll_"),
}

BONUS_Q = "how is the executive salary bonus computed?"
EXPANSION_Q = "what does checkout_total call to apply the member discount at checkout?"
TOP_K = 6  # hybrid keeps its first 5; expansion fills the rest


@pytest.fixture
def two_repos(tmp_path, settings_env, store, local_embedder, monkeypatch):
    """``web`` and ``payroll`` indexed (chunks in Weaviate, call graphs in SQLite)."""
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'tenancy.db'}")
    sessions = open_database(Settings.from_env())
    for name, files in (("web", WEB), ("payroll", PAYROLL)):
        repo = make_git_repo(tmp_path, files, name=name)
        index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder,
                         sessions=sessions)
    return store, sessions


def _repos(result) -> list[str]:
    return [h.chunk.repo for h in result.hits]


def test_policy_parsing_and_lookup():
    assert ChannelPolicy.from_settings(load({}).chat).allowed("C1") is None  # no policy: everything
    chat = load({"CODERAG_CHANNEL_SOURCES": '{"C1": ["web"]}'}).chat
    assert ChannelPolicy.from_settings(chat).allowed("C1") == frozenset({"web"})
    p = ChannelPolicy.parse('{"C1": ["web", "runbooks"], "C2": [], "*": ["runbooks"]}')
    assert p.allowed("C1") == {"web", "runbooks"}
    assert p.allowed("C2") == frozenset()  # explicitly nothing
    assert p.allowed("C9") == {"runbooks"}  # default
    assert ChannelPolicy.parse('{"C1": ["web"]}').allowed("C9") == frozenset()  # no "*": nothing
    for bad in ("[1]", "{", '{"C1": "web"}', '{"C1": [1]}'):
        with pytest.raises(BadInput):
            ChannelPolicy.parse(bad)
    assert scope(None, None) is None
    assert scope(["a"], {"a", "b"}) == ["a"]
    assert scope(["x"], {"a"}) == []
    assert scope(None, {"b", "a"}) == ["a", "b"]


def test_hybrid_never_returns_a_forbidden_source_even_when_it_matches_best(two_repos, local_embedder):
    store, sessions = two_repos
    retriever = Retriever(store, local_embedder, sessions=sessions)
    open_result = retriever.search(BONUS_Q, top_k=5)
    assert open_result.hits[0].chunk.repo == "payroll"  # the forbidden repo is the best match
    assert open_result.hits[0].chunk.symbol == "compute_executive_salary_bonus"

    scoped = retriever.search(BONUS_Q, top_k=5, allowed={"web"})
    assert scoped.hits, "the allowed repo still answers"
    assert set(_repos(scoped)) == {"web"}

    # Explicitly asking for the forbidden repo inside the policy yields nothing, not an error.
    assert retriever.search(BONUS_Q, top_k=5, repos=["payroll"], allowed={"web"}).hits == []
    # An empty allow-list reads nothing at all.
    assert retriever.search(BONUS_Q, top_k=5, allowed=set()).hits == []
    # Allowed names that are not indexed are not an error.
    assert set(_repos(retriever.search(BONUS_Q, top_k=5, allowed={"web", "not-indexed"}))) == {"web"}


def test_graph_expansion_stays_inside_the_allow_list(two_repos, local_embedder):
    store, sessions = two_repos
    retriever = Retriever(store, local_embedder, sessions=sessions)
    # Without a policy the payroll definitions (same names) are found, some by expansion.
    open_result = retriever.search(EXPANSION_Q, top_k=TOP_K)
    assert "payroll" in _repos(open_result)
    assert any(h.origin == "expansion" and h.chunk.repo == "payroll" for h in open_result.hits)

    scoped = retriever.search(EXPANSION_Q, top_k=TOP_K, allowed={"web"})
    assert set(_repos(scoped)) == {"web"}
    assert all(h.chunk.repo == "web" for h in scoped.hits if h.origin == "expansion")
    # expansion does run inside the allowed repo (whether the ranking already put the
    # callee in the first five is the ranking's business): from web's checkout_total alone
    seed = [h.chunk for h in retriever.search(EXPANSION_Q, top_k=5, repos=["web"], expand_graph=False).hits
            if h.chunk.symbol == "checkout_total"]
    assert seed
    pairs = expand(EXPANSION_Q, seed, store=store, neighbours_for=retriever.neighbours_for, limit=6,
                   allowed={"web"})
    added = [(c.repo, c.symbol) for c, reason in pairs if reason]
    assert ("web", "lookup_rate") in added and all(repo == "web" for repo, _ in added)


def test_expand_skips_forbidden_seeds_and_neighbours(two_repos, local_embedder):
    """Unit level: even if a forbidden chunk reached expand() as a seed, nothing of it is
    expanded, and no neighbour from outside the allow-list is added."""
    store, sessions = two_repos
    retriever = Retriever(store, local_embedder, sessions=sessions)
    payroll_seed = [h.chunk for h in retriever.search(EXPANSION_Q, top_k=3, repos=["payroll"],
                                                      expand_graph=False).hits]
    assert "lookup_rate" not in {c.symbol for c in payroll_seed}
    assert payroll_seed and all(c.repo == "payroll" for c in payroll_seed)
    unrestricted = expand(EXPANSION_Q, payroll_seed, store=store, neighbours_for=retriever.neighbours_for, limit=6)
    assert any(r for _c, r in unrestricted), "expansion adds neighbours when unrestricted"
    pairs = expand(EXPANSION_Q, payroll_seed, store=store, neighbours_for=retriever.neighbours_for, limit=6,
                   allowed={"web"})
    assert [r for _c, r in pairs if r] == []  # no expansion from a forbidden seed


class LeakyQuery:
    """The real store's ``query`` with its repo filters broken (ignores ``repos`` and the
    repo of ``by_symbol``)."""

    def __init__(self, query):
        self._query = query

    def __getattr__(self, name):
        return getattr(self._query, name)

    def hybrid(self, *args, repos=None, visible=None, **kwargs):
        return self._query.hybrid(*args, repos=None, **kwargs)  # the search's visible filter too

    def by_symbol(self, repo, symbols, limit=50, visible=None, records=None):
        return [c for r in ("payroll", "web") for c in self._query.by_symbol(r, symbols, limit)]


class LeakyStore:
    """The real store with its repo filters broken (:class:`LeakyQuery`): the retriever's
    own checks must still hold the line."""

    def __init__(self, store):
        self._store = store
        self.query = LeakyQuery(store.query)

    def __getattr__(self, name):
        return getattr(self._store, name)


def test_retriever_drops_forbidden_chunks_even_if_the_store_filter_fails(two_repos, local_embedder):
    store, sessions = two_repos
    retriever = Retriever(LeakyStore(store), local_embedder, sessions=sessions)
    assert "payroll" in _repos(retriever.search(BONUS_Q, top_k=5))  # the leak is real
    for q in (BONUS_Q, EXPANSION_Q):
        result = retriever.search(q, top_k=TOP_K, allowed={"web"})
        assert set(_repos(result)) <= {"web"}


def test_answer_service_status_and_impact_respect_the_allow_list(two_repos, local_embedder):
    from bot.impact import UnknownSymbol

    store, sessions = two_repos
    service = AnswerService(store, local_embedder, top_k=5, sessions=sessions)
    answer = service.ask(BONUS_Q, allowed={"web"})
    assert "payroll" not in answer.text and "SECRET_BONUS" not in answer.text
    assert all(h.chunk.repo == "web" for h in answer.hits)
    assert [s["name"] for s in service.status(allowed={"web"})] == ["web"]
    assert {s["name"] for s in service.status()} == {"web", "payroll"}
    with pytest.raises(UnknownSymbol):
        service.impact("compute_executive_salary_bonus", allowed={"web"})
    assert service.impact("compute_executive_salary_bonus")["repo"] == "payroll"
    assert service.impact("checkout_total", allowed={"web"})["repo"] == "web"


def test_slack_channels_only_see_their_sources(two_repos, local_embedder):
    """The Slack app looks the channel up in the CODERAG_CHANNEL_SOURCES policy it is
    given and passes it on."""
    from helpers.slack_harness import Harness

    store, sessions = two_repos
    policy = ChannelPolicy.parse(json.dumps({"CWEB": ["web"], "CPAY": ["payroll", "web"], "*": []}))
    service = AnswerService(store, local_embedder, top_k=5, sessions=sessions)
    with Harness(service, sessions=sessions, repo_urls={}, policy=policy) as h:
        for channel in ("CWEB", "CPAY", "COTHER"):
            h.mention(BONUS_Q, channel=channel)
        h.fake.wait_for(lambda: all(h.fake.posts(c) for c in ("CWEB", "CPAY", "COTHER")), timeout=60)
        text = {c: json.dumps([p.body for p in h.fake.posts(c)]) for c in ("CWEB", "CPAY", "COTHER")}
        resp, _ = h.command("status", channel="CWEB", name="status")
        assert resp.status_code == 200
        h.fake.wait_for(lambda: h.fake.responses("status"), timeout=30)
        status = json.dumps([r.body for r in h.fake.responses("status")])
    assert "compute_executive_salary_bonus" in text["CPAY"]  # allowed there: the best match
    for forbidden in ("compute_executive_salary_bonus", "payroll/salary.py", "SECRET_BONUS_MULTIPLIER"):
        assert forbidden not in text["CWEB"]
        assert forbidden not in text["COTHER"]
    assert "payroll" not in status and "web" in status
