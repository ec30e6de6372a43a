"""Named refs (``refs`` of a ``CODERAG_REPOS`` entry, ``--ref``): release tags indexed
beside the default branch as overlays that cost only their difference, read with their
own lines and commit. Real Git repositories (tests/helpers/release_repo.py), real
Weaviate, real SQLite, real MiniLM."""
from __future__ import annotations

import json
import os

import pytest

from common.errors import BadInput, ExitCode
from common.settings import Settings, load
from helpers.cli import assert_error, run_cli
from helpers.release_repo import CART, PRICING_HEAD, PRICING_V1, SHIPPING_HEAD, lines_of, make_release_repo

pytestmark = pytest.mark.weaviate

QUESTION = "how is the order total computed?"


class Shop:
    """The release repo synced as ``shop`` with ``refs: ["v*"]``: the pipeline, the
    answer service, and a ``sync()`` that runs ``coderag sync repo shop`` in-process."""


@pytest.fixture
def shop(tmp_path, store, local_embedder, settings_env, monkeypatch):
    from bot.answer.service import AnswerService
    from common.db import open_database
    from helpers.freshness import CountingEmbedder
    from indexer.knowledge import subscribers
    from indexer.pipeline import IndexingPipeline
    from indexer.sources.repository import sync_repo

    repo = make_release_repo(tmp_path)
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(repo.path), "branch": "main",
                                                     "refs": ["v*"]}]))
    settings = Settings.from_env()
    sessions = open_database(settings)
    emb = CountingEmbedder(local_embedder)
    pipeline = IndexingPipeline(settings=settings, store=store, sessions=sessions, embedder=emb,
                                subscribers=subscribers())
    s = Shop()
    s.repo, s.store, s.sessions, s.emb, s.pipeline, s.settings = repo, store, sessions, emb, pipeline, settings
    s.config = load().freshness.repo("shop")
    s.sync = lambda **kw: sync_repo(pipeline, s.config, **kw)
    s.service = AnswerService(store, local_embedder, sessions=sessions, settings=load(), top_k=5)
    s.env = dict(os.environ)
    s.first = s.sync()
    return s


def _hit(hits, symbol: str):
    return next((h for h in hits if h.chunk.symbol == symbol), None)


def _citation(answer, path: str):
    return next(c for c in answer.citations if c.path == path)


def test_a_ref_stores_only_its_difference_and_status_lists_it(shop):
    from indexer import index_status

    assert shop.first.mode == "full"
    by_name = {r.name: r for r in shop.first.refs}
    assert set(by_name) == {"shop@v1", "shop@v2"} and {r.mode for r in by_name.values()} == {"full"}
    v1 = shop.store.sources.get("shop@v1")
    assert (v1.kind, v1.base, v1.ref, v1.commit) == ("git-ref", "shop", "v1", shop.repo.v1)
    # v1 differs from the head in pricing.py (changed) and shipping.py (only the head has it)
    assert set(v1.differs) == {"shop/pricing.py", "shop/shipping.py"}
    own = shop.store.query.where(None, limit=1000, properties=["repo", "path"])
    v1_paths = {o.properties["path"] for o in own if o.properties["repo"] == "shop@v1"}
    assert v1_paths == {"shop/pricing.py"}  # shipping.py is absent at v1: nothing to store
    assert shop.store.query.count("shop") > v1.chunks == len([o for o in own if o.properties["repo"] == "shop@v1"])
    # the default read sees the head only; the ref's view is the head's other files plus its own
    assert shop.store.query.count() == shop.store.query.count("shop")
    rows = {r["name"]: r for r in index_status(shop.settings)}
    assert rows["shop@v1"]["commit"] == shop.repo.v1 and rows["shop@v2"]["commit"] == shop.repo.v2
    assert rows["shop@v1"]["ref"] == "v1" and rows["shop@v1"]["base"] == "shop" and rows["shop@v1"]["differs"] == 2
    assert "base" not in rows["shop"]  # the default branch's row is as before refs


def test_search_at_a_ref_reads_its_functions_lines_and_commit(shop):
    from bot.retrieval.retriever import Retriever

    r = Retriever(shop.store, shop.emb, sessions=shop.sessions)
    at_v1 = r.search("legacy coupon total", top_k=5, repos=["shop@v1"]).hits
    legacy = _hit(at_v1, "legacy_coupon_total")
    assert legacy is not None and legacy.chunk.repo == "shop@v1" and legacy.chunk.commit == shop.repo.v1
    assert legacy.chunk.start_line == lines_of(PRICING_V1, "def legacy_coupon_total")
    assert _hit(r.search("quote shipping zone", top_k=10, repos=["shop@v1"]).hits, "quote_shipping") is None
    assert _hit(r.search("legacy coupon total", top_k=10).hits, "legacy_coupon_total") is None
    assert _hit(r.search("quote shipping zone", top_k=5).hits, "quote_shipping") is not None
    # an unchanged file is the head's chunk, cited at the ref's commit (same lines there)
    checkout = _hit(r.search("checkout charges the customer's cart", top_k=5, repos=["shop@v1"]).hits, "checkout")
    assert checkout is not None and (checkout.chunk.repo, checkout.chunk.commit) == ("shop@v1", shop.repo.v1)
    assert checkout.chunk.start_line == lines_of(CART, "def checkout")


def test_ask_at_a_ref_and_in_words_cite_the_ref_and_default_ask_the_head(shop):
    v1_line = lines_of(PRICING_V1, "def compute_total")
    head_line = lines_of(PRICING_HEAD, "def compute_total")
    for answer in (shop.service.ask(QUESTION, ref="v1"), shop.service.ask("how is the order total computed in v1?")):
        cite = _citation(answer, "shop/pricing.py")
        assert (cite.repo, cite.commit, cite.start_line) == ("shop@v1", shop.repo.v1, v1_line)
        assert answer.text.startswith(f"Read at v1 of shop (commit {shop.repo.v1[:7]}).")
        assert f"shop@v1/shop/pricing.py:{v1_line}-" in answer.text and f"@{shop.repo.v1[:7]}" in answer.text
        assert answer.to_json()["refs"] == [{"name": "shop@v1", "base": "shop", "ref": "v1", "commit": shop.repo.v1}]
    head = shop.service.ask(QUESTION)
    cite = _citation(head, "shop/pricing.py")
    assert (cite.repo, cite.commit, cite.start_line) == ("shop", shop.repo.head, head_line)
    assert "Read at" not in head.text and "refs" not in head.to_json()
    with pytest.raises(BadInput, match=r"no indexed ref 'v9' \(indexed refs of shop: v1, v2\)$"):
        shop.service.ask(QUESTION, ref="v9")


def test_a_version_that_is_not_indexed_is_said_first_and_the_default_branch_read(shop):
    answer = shop.service.ask("how is the order total computed in v3?")
    assert answer.text.startswith("v3 is not an indexed ref (indexed refs of shop: v1, v2); this answer reads the "
                                  f"default branch of shop (main, commit {shop.repo.head[:7]}).")
    assert answer.notes[0].startswith("v3 is not an indexed ref")
    cite = _citation(answer, "shop/pricing.py")
    assert (cite.repo, cite.commit) == ("shop", shop.repo.head) and not answer.refs
    assert answer.to_json()["unindexed_ref"] == "v3"
    for question in ("how is the order total computed for 3 items?", "is the total computed in Python 3.10?"):
        plain = shop.service.ask(question)  # numbers that are no version of shop: an ordinary question
        assert not plain.unindexed_ref and "not an indexed ref" not in plain.text
    with pytest.raises(BadInput, match="no indexed ref 'v3'"):  # asked with --ref: refused
        shop.service.ask(QUESTION, ref="v3")


def test_a_version_of_another_form_is_said_not_indexed_and_its_name_is_no_missing_term(shop):
    """Only v1 and v2 are indexed: "in 2.0.1" or "on release/5.x" are versions all the
    same; the version's name is searched for in no source (never "Nothing in ... mentions
    V10", never a refusal for it), with --ref as without."""
    for question, version in (("how is the order total computed in 2.0.1?", "2.0.1"),
                              ("how is the order total computed on release/5.x?", "release/5.x"),
                              ("how is the order total computed in V10?", "V10")):
        answer = shop.service.ask(question)
        assert answer.unindexed_ref == version, (question, answer.text)
        assert answer.text.startswith(f"{version} is not an indexed ref (indexed refs of shop: v1, v2); this "
                                      "answer reads the default branch of shop"), answer.text
        assert not answer.no_coverage and "mentions" not in answer.text and version not in answer.uncovered_terms
    at_ref = shop.service.ask("how is the order total computed in V1?", ref="v1")
    assert at_ref.refs and not at_ref.no_coverage and "mentions V1" not in at_ref.text
    for question in ("does the order total retry 3 times in 2 seconds?", "is the total computed on HTTP 2?"):
        assert not shop.service.ask(question).unindexed_ref, question


def test_an_answer_at_a_ref_reads_the_source_records_once(shop, monkeypatch):
    """Picking the ref, the search's filters, the chunks cited at the ref and the wording
    all use one read of the source records."""
    real, calls = shop.store.sources.all, []

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(shop.store.sources, "all", counting)
    shop.service.ask(QUESTION, ref="v1")  # the retriever's first question also checks the index
    for kw in ({"ref": "v1"}, {}):
        calls.clear()
        answer = shop.service.ask(QUESTION if kw else "how is the order total computed in v1?", **kw)
        assert answer.refs and _citation(answer, "shop/pricing.py").repo == "shop@v1"
        assert len(calls) == 1, kw


def test_impact_at_a_ref_reads_the_refs_callers(shop):
    from bot.impact import impact_report

    def callers(**kw):
        return {c["symbol"] for c in impact_report(shop.sessions, "compute_total", **kw)["callers"]}

    assert callers() == {"checkout", "quote_shipping"}
    assert callers(ref="v1") == {"checkout", "legacy_coupon_total"}
    assert callers(ref="v2") == {"checkout"}
    report = impact_report(shop.sessions, "compute_total", ref="v1")
    assert (report["repo"], report["commit"]) == ("shop@v1", shop.repo.v1)
    with pytest.raises(BadInput, match=r"indexed refs of shop: v1, v2\)$"):
        impact_report(shop.sessions, "compute_total", ref="v3")


def test_who_at_a_ref_reads_its_history(shop):
    from bot.knowledge import at_ref, run_who

    repo, allowed = at_ref(shop.sessions, "v1", None, None)
    res = run_who("legacy_coupon_total", sessions=shop.sessions, settings=shop.settings, repo=repo, allowed=allowed)
    assert res is not None and res.repo == "shop@v1" and res.path == "shop/pricing.py"
    assert res.experts and res.experts[0].email == "tests@example.invalid"
    from bot.impact import UnknownSymbol

    with pytest.raises(UnknownSymbol):  # the default branch no longer has it
        run_who("legacy_coupon_total", sessions=shop.sessions, settings=shop.settings)


def test_the_base_moving_keeps_each_ref_true_to_its_commit(shop):
    """A push to the default branch changes a file v1 shares (cart.py) and reverts
    another to v1's text: v1 takes cart.py from itself, then gives pricing.py back."""
    from bot.retrieval.retriever import Retriever

    changed_cart = CART.replace("Charge the customer's cart.", "Charge the cart, with loyalty points.")
    shop.repo.commit({"shop/cart.py": changed_cart}, "loyalty")
    res = shop.sync()
    assert res.mode == "incremental"
    # each ref took cart.py from itself while the base moved: reported as such, never as noop
    kept = {r.name: r.to_dict() for r in res.refs}
    assert {n: (d["mode"], d["gained"], d["dropped"], d["differs"]) for n, d in kept.items()} == \
        {"shop@v1": ("incremental", 1, 0, 3), "shop@v2": ("incremental", 1, 0, 3)}
    assert kept["shop@v1"]["chunks_written"] > 0
    v1 = shop.store.sources.get("shop@v1")
    assert set(v1.differs) == {"shop/pricing.py", "shop/shipping.py", "shop/cart.py"}
    r = Retriever(shop.store, shop.emb, sessions=shop.sessions)
    checkout = _hit(r.search("checkout charges the customer's cart", top_k=5, repos=["shop@v1"]).hits, "checkout")
    assert checkout is not None and "Charge the customer's cart." in checkout.chunk.content
    assert checkout.chunk.repo == "shop@v1" and checkout.chunk.commit == shop.repo.v1
    head = _hit(r.search("checkout loyalty points", top_k=5).hits, "checkout")
    assert "loyalty points" in head.chunk.content and head.chunk.commit == shop.repo.head
    # main goes back to v1's pricing and cart: v1 shares them again and stops storing them
    shop.repo.commit({"shop/pricing.py": PRICING_V1, "shop/cart.py": CART}, "revert", delete=("shop/shipping.py",))
    shop.emb.documents = 0
    shop.sync()
    v1 = shop.store.sources.get("shop@v1")
    assert v1.differs == [] and v1.chunks == 0 and v1.commit == shop.repo.v1
    assert {o.properties["repo"] for o in shop.store.query.where(None, limit=1000, properties=["repo"])} \
        == {"shop", "shop@v2"}
    legacy = _hit(r.search("legacy coupon total", top_k=5, repos=["shop@v1"]).hits, "legacy_coupon_total")
    assert legacy is not None and (legacy.chunk.repo, legacy.chunk.commit) == ("shop@v1", shop.repo.v1)


def test_a_crash_between_widening_and_the_base_commit_shows_no_wrong_content(shop, monkeypatch):
    """The base run fails after the refs were widened: the ref view is still right (its
    differs only larger), and the next sync narrows it."""
    import indexer.sources.repository as repository
    from bot.retrieval.retriever import Retriever

    shop.repo.commit({"shop/cart.py": CART.replace("customer's cart", "customer's basket")}, "basket")

    def crash(*_a, **_k):
        raise RuntimeError("killed before the base's commit")

    monkeypatch.setattr(repository, "_incremental", crash)
    with pytest.raises(RuntimeError):
        shop.sync()
    v1 = shop.store.sources.get("shop@v1")
    assert "shop/cart.py" in v1.differs  # widened for the head that never committed
    r = Retriever(shop.store, shop.emb, sessions=shop.sessions)
    checkout = _hit(r.search("checkout charges the customer's cart", top_k=5, repos=["shop@v1"]).hits, "checkout")
    assert checkout is not None and "customer's cart" in checkout.chunk.content
    monkeypatch.undo()
    shop.sync()
    assert "shop/cart.py" in shop.store.sources.get("shop@v1").differs  # the head has the basket now


def test_a_moved_tag_is_reindexed_and_a_deleted_one_removed_and_doctor_is_clean(shop):
    from helpers.gitrepo import git
    from indexer.store.doctor import check_index

    shop.repo.tag("v2", shop.repo.head)  # re-pointed: v2 is the head now
    res = shop.sync()
    assert res.mode == "noop" and {r.name: r.mode for r in res.refs} == {"shop@v1": "noop", "shop@v2": "full"}
    v2 = shop.store.sources.get("shop@v2")
    assert v2.commit == shop.repo.head and v2.differs == [] and v2.chunks == 0
    git(shop.repo.path, "tag", "-d", "v1")
    res = shop.sync()
    assert {r.name: r.mode for r in res.refs} == {"shop@v2": "noop", "shop@v1": "removed"}
    assert shop.store.sources.get("shop@v1") is None
    from indexer.store.sync_state import ref_sources

    assert set(ref_sources(shop.sessions)) == {"shop@v2"}
    health = {h.name: h for h in check_index(shop.store, shop.sessions)}
    assert set(health) == {"shop", "shop@v2"} and all(h.ok for h in health.values()), \
        {n: h.problems for n, h in health.items()}


def test_a_tag_of_a_tag_is_followed_to_its_commit_and_a_tag_of_a_tree_is_reported(shop):
    from helpers.gitrepo import git
    from indexer import index_status

    git(shop.repo.path, "tag", "-a", "v3", "-m", "a tag of the annotated tag v2", "v2")
    git(shop.repo.path, "tag", "-a", "v4", "-m", "a tag of a tree", f"{shop.repo.head}^{{tree}}")
    res = shop.sync()
    modes = {r.name: (r.mode, r.reason) for r in res.refs}
    assert modes["shop@v3"] == ("full", "") and shop.store.sources.get("shop@v3").commit == shop.repo.v2
    assert modes["shop@v4"] == ("unresolved", "tag v4 points at a tree, not a commit")
    assert shop.store.sources.get("shop@v4") is None
    rows = {r["name"]: r for r in index_status(shop.settings)}
    assert rows["shop@v4"]["last_error"] == "not indexed: tag v4 points at a tree, not a commit"
    status = run_cli(shop.env, "status")
    assert "shop@v4:" in status.stdout and "not indexed: tag v4 points at a tree, not a commit" in status.stdout
    # --ref v4 says why, as status does, wherever it is taken
    for args in (["ask", QUESTION, "--ref", "v4", "--no-log"], ["search", "coupon total", "--ref", "v4"],
                 ["impact", "compute_total", "--ref", "v4"]):
        proc = run_cli(shop.env, *args)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "ref 'v4' is configured but not indexed: tag v4 points at a tree, not a commit (indexed refs of " \
               "shop: " in proc.stderr, (args, proc.stderr)
    git(shop.repo.path, "tag", "-d", "v4")
    res = shop.sync()
    assert "shop@v4" not in {r.name for r in res.refs} and "shop@v4" not in {r["name"] for r in index_status(shop.settings)}


def test_cli_ref_options_and_the_unknown_ref_error(shop):
    proc = run_cli(shop.env, "ask", QUESTION, "--ref", "v1", "--no-log")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"Read at v1 of shop (commit {shop.repo.v1[:7]}).")
    assert f"shop@v1/shop/pricing.py:{lines_of(PRICING_V1, 'def compute_total')}-" in proc.stdout
    proc = run_cli(shop.env, "search", "legacy coupon total", "--ref", "v1", "--json")
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)["results"]
    assert any(r["symbol"] == "legacy_coupon_total" and r["repo"] == "shop@v1" and r["commit"] == shop.repo.v1
               for r in results)
    proc = run_cli(shop.env, "impact", "compute_total", "--ref", "v1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert {c["symbol"] for c in json.loads(proc.stdout)["callers"]} == {"checkout", "legacy_coupon_total"}
    for args in (["ask", QUESTION, "--ref", "v9"], ["search", "total", "--ref", "v9"],
                 ["impact", "compute_total", "--ref", "v9"], ["who", "shop/pricing.py", "--ref", "v9"]):
        assert_error(run_cli(shop.env, *args), ExitCode.USAGE, "no indexed ref 'v9' (indexed refs of shop: v1, v2)")
    status = run_cli(shop.env, "status")
    assert f"shop@v1: ref v1 of shop at {shop.repo.v1[:7]} · 2 files differ from shop" in status.stdout


def test_repo_at_ref_reads_as_repo_and_ref_and_an_unknown_repo_is_that_whatever_the_ref(shop):
    """``--repo shop@v1`` and ``--ref shop@v1`` are ``--repo shop --ref v1`` (the answer says
    which ref it read); an unknown ``--repo`` is exit 4 with or without ``--ref``, and the
    error lists the repositories, never their refs."""
    from bot.impact import impact_report
    from common.errors import EmptyIndex

    header = f"Read at v1 of shop (commit {shop.repo.v1[:7]})."
    for kw in ({"repos": ["shop@v1"]}, {"repos": ["shop"], "ref": "shop@v1"}, {"ref": "shop@v1"},
               {"repos": ["shop@v1"], "ref": "v1"}):
        answer = shop.service.ask(QUESTION, **kw)
        assert answer.text.startswith(header), kw
        assert _citation(answer, "shop/pricing.py").repo == "shop@v1"
    with pytest.raises(BadInput, match="--repo shop@v1 names the ref v1 and --ref names v2"):
        shop.service.ask(QUESTION, repos=["shop@v1"], ref="v2")
    assert impact_report(shop.sessions, "compute_total", repo="shop@v1")["repo"] == "shop@v1"
    assert impact_report(shop.sessions, "compute_total", ref="shop@v1")["commit"] == shop.repo.v1
    for call in (lambda: shop.service.ask(QUESTION, repos=["nosuch"], ref="v1"),
                 lambda: shop.service.ask(QUESTION, repos=["nosuch"]),
                 lambda: impact_report(shop.sessions, "compute_total", repo="nosuch", ref="v1"),
                 lambda: impact_report(shop.sessions, "compute_total", repo="nosuch")):
        with pytest.raises(EmptyIndex, match=r"^no indexed repo named nosuch \(indexed: shop\)$"):
            call()
    proc = run_cli(shop.env, "search", "legacy coupon total", "--repo", "shop@v1")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"At v1 of shop (commit {shop.repo.v1[:7]}):")
    for args in (["ask", QUESTION, "--ref", "v1", "--repo", "nosuch", "--no-log"],
                 ["search", "total", "--ref", "v1", "--repo", "nosuch"],
                 ["impact", "compute_total", "--ref", "v1", "--repo", "nosuch"],
                 ["who", "shop/pricing.py", "--ref", "v1", "--repo", "nosuch"]):
        assert_error(run_cli(shop.env, *args), ExitCode.EMPTY_INDEX, "no indexed repo named nosuch (indexed: shop)")


def test_webhook_routes_a_tag_push_of_a_named_ref():
    from common.settings import FreshnessSettings
    from common.sources import RepoConfig
    from indexer.freshness.webhooks import route_push

    cfg = FreshnessSettings.from_env({}, repos=(RepoConfig("shop", "/srv/shop.git", "main", refs=("v*", "release/4.x")),
                                                RepoConfig("api", "/srv/api.git", "main")))
    assert route_push(cfg, {"name": "shop"}, "refs/tags/v2.3") == ("shop", "")
    assert route_push(cfg, {"name": "shop"}, "refs/heads/release/4.x") == ("shop", "")
    assert route_push(cfg, {"name": "shop"}, "refs/tags/nightly")[0] is None
    assert route_push(cfg, {"name": "api"}, "refs/tags/v2.3")[0] is None


def test_refs_config_is_parsed_and_checked():
    from common.sources import parse_repos

    (repo,) = parse_repos('[{"name": "shop", "url": "x", "refs": ["v*", "release/4.x"], "max_refs": 3}]')
    assert repo.refs == ("v*", "release/4.x") and repo.max_refs == 3
    (plain,) = parse_repos('[{"name": "shop", "url": "x"}]')
    assert plain.refs == () and plain.max_refs == 5
    for bad in ('"v*"', '["--upload-pack=x"]', '["a..b"]'):
        with pytest.raises(ValueError, match="refs of repo 'shop'"):
            parse_repos('[{"name": "shop", "url": "x", "refs": %s}]' % bad)
    with pytest.raises(ValueError, match="max_refs"):
        parse_repos('[{"name": "shop", "url": "x", "refs": ["v*"], "max_refs": 0}]')
    (full,) = parse_repos('[{"name": "shop", "url": "x", "refs": ["refs/tags/v*", "refs/heads/release/4.x"]}]')
    assert full.refs == ("v*", "release/4.x")  # a full ref name is its tag or branch name
    with pytest.raises(ValueError, match=r"refs of repo 'shop': '2.\[' is no usable pattern \(an unclosed '\['\)$"):
        parse_repos('[{"name": "shop", "url": "x", "refs": ["2.["]}]')


def test_a_channel_that_may_read_the_repo_reads_its_refs_and_no_other(shop):
    answer = shop.service.ask("how is the order total computed in v1?", allowed={"shop"})
    assert answer.refs and _citation(answer, "shop/pricing.py").repo == "shop@v1"
    other = shop.service.ask("how is the order total computed in v1?", allowed={"billing"})
    assert not other.refs and not other.citations
    with pytest.raises(BadInput, match=r"indexed refs: none"):
        shop.service.ask(QUESTION, ref="v1", allowed={"billing"})


def test_coderag_index_keeps_the_refs_of_the_repos_entry(tmp_path, store, settings_env):
    from common.sources import RepoConfig
    from indexer import index_path

    repo = make_release_repo(tmp_path, name="local")
    settings = Settings.from_env()
    entry = RepoConfig("local", "unused", "main", refs=("v*",), max_refs=1)
    summary = index_path(repo.path, settings=settings, repos=(entry,))
    assert [(r.name, r.mode) for r in summary.refs] == [("local@v2", "full")]  # the newest v* tag only
    rec = store.sources.get("local@v2")
    assert (rec.commit, rec.root, rec.differs) == (repo.v2, str(repo.path), ["shop/pricing.py", "shop/shipping.py"])
    assert json.loads(json.dumps(summary.to_dict()))["refs"][0]["name"] == "local@v2"
    again = index_path(repo.path, settings=settings)  # no entry names refs any more: they go
    assert [(r.name, r.mode) for r in again.refs] == [("local@v2", "removed")]
    assert store.sources.get("local@v2") is None and again.to_dict()["refs"][0]["mode"] == "removed"
    third = index_path(repo.path, settings=settings)  # nothing to keep: the output is as before refs
    assert third.refs == [] and "refs" not in third.to_dict()


def test_mcp_tools_and_chat_commands_take_a_ref(shop):
    from bot.chat.render import lookup_impact
    from bot.knowledge import chat_reply
    from bot.mcp_server import Backend, Principal, Tools

    tools = Tools(Backend(load(), sessions=shop.sessions, service=shop.service))
    channel = Principal(name="t", allowed=frozenset({"shop"}))
    found, _text = tools.search(channel, "legacy coupon total", None, 5, "v1")
    assert any(r["symbol"] == "legacy_coupon_total" and (r["repo"], r["commit"]) == ("shop@v1", shop.repo.v1)
               for r in found["results"])
    report, text = tools.impact(channel, "compute_total", None, 3, "v1")
    assert {c["symbol"] for c in report["callers"]} == {"checkout", "legacy_coupon_total"} and "shop@v1" in text
    answer, _text = tools.ask(channel, QUESTION, None, "v2")
    assert answer["refs"][0]["commit"] == shop.repo.v2
    who, _text = tools.who(channel, "legacy_coupon_total", "v1")
    assert who["repo"] == "shop@v1"
    with pytest.raises(BadInput, match="no indexed ref 'v9'"):
        tools.search(channel, "total", None, 5, "v9")
    # chat: `/coderag impact compute_total --ref v1`, `/coderag who legacy_coupon_total --ref v1`
    impact = lookup_impact(shop.service, "compute_total --ref v1", {"shop"})
    assert impact.message is None and impact.value["repo"] == "shop@v1"
    assert "shop/pricing.py" in chat_reply(shop.service, "who", "legacy_coupon_total --ref v1", allowed={"shop"})
    assert "no indexed ref 'v9'" in chat_reply(shop.service, "who", "legacy_coupon_total --ref v9")


def test_mcp_read_opens_a_citation_at_a_ref(shop):
    from bot.mcp_server import Backend, Principal, Tools

    tools = Tools(Backend(load(), sessions=shop.sessions, service=shop.service))
    line = lines_of(PRICING_V1, "def legacy_coupon_total")
    got, text = tools.read(Principal(name="t", allowed=frozenset({"shop"})), "shop@v1", "shop/pricing.py", line, line)
    assert got["commit"] == shop.repo.v1 and got["text"].startswith("def legacy_coupon_total")
    assert text.startswith(f"shop@v1/shop/pricing.py:{line}-{line}@{shop.repo.v1[:7]}")


def test_a_ref_run_that_crashes_before_its_commit_hides_nothing_and_the_next_sync_repairs_it(shop):
    """The versioned write protocol holds for a ref source: a crash before its commit
    leaves its committed version (and the base) as they were, doctor sees the orphan run,
    and the next sync cleans it up and finishes."""
    from bot.retrieval.retriever import Retriever
    from indexer.store.doctor import check_index
    from indexer.store.faults import set_fault_hook

    shop.repo.commit({"shop/cart.py": CART.replace("customer's cart", "customer's basket")}, "basket")

    def hook(point, **info):
        if point == "before_commit" and info.get("source") == "shop@v1":
            raise RuntimeError("crashed before the ref's commit")

    set_fault_hook(hook)
    try:
        with pytest.raises(RuntimeError):
            shop.sync()
    finally:
        set_fault_hook(None)
    v1 = shop.store.sources.get("shop@v1")
    assert "shop/cart.py" not in v1.differs and shop.store.sources.get("shop").commit != shop.repo.head
    health = {h.name: h for h in check_index(shop.store, shop.sessions)}
    assert health["shop@v1"].orphans > 0 and not health["shop@v1"].ok
    r = Retriever(shop.store, shop.emb, sessions=shop.sessions)
    checkout = _hit(r.search("checkout charges the customer's cart", top_k=5, repos=["shop@v1"]).hits, "checkout")
    assert checkout is not None and "customer's cart" in checkout.chunk.content
    shop.sync()
    assert "shop/cart.py" in shop.store.sources.get("shop@v1").differs
    assert shop.store.sources.get("shop").commit == shop.repo.head
    health = {h.name: h for h in check_index(shop.store, shop.sessions)}
    assert all(h.ok for h in health.values()), {n: h.problems for n, h in health.items()}
    checkout = _hit(r.search("checkout charges the customer's cart", top_k=5, repos=["shop@v1"]).hits, "checkout")
    assert "customer's cart" in checkout.chunk.content and checkout.chunk.commit == shop.repo.v1


def test_a_tag_push_webhook_indexes_the_new_release(tmp_path, store, local_embedder, settings_env, monkeypatch):
    """`coderag serve`'s webhook: a signed GitHub push of a new tag matching `refs` queues
    the repo, whose run indexes that tag as a ref source (the head unchanged: a noop)."""
    from bot.server import ServerContext, build_asgi
    from common.db import open_database
    from helpers.freshness import SECRET, post_github, wait_idle
    from helpers.http_server import BackgroundServer
    from indexer.freshness.runtime import FreshnessRuntime

    repo = make_release_repo(tmp_path)
    monkeypatch.setenv("CODERAG_REPOS", json.dumps([{"name": "shop", "url": str(repo.path), "branch": "main",
                                                     "refs": ["v3*"]}]))
    monkeypatch.setenv("CODERAG_GITHUB_WEBHOOK_SECRET", SECRET)
    settings = Settings.from_env()
    sessions = open_database(settings)
    runtime = FreshnessRuntime.build(load().freshness, settings, sessions=sessions, embedder=local_embedder,
                                     store=store)
    server = BackgroundServer(build_asgi(ServerContext(service=None, sessions=sessions, settings=settings,
                                                       store=store, freshness=runtime))).start()
    payload = {"repository": {"name": "shop", "full_name": "acme/shop"}, "before": "0" * 40}
    try:
        r = post_github(server.url, SECRET, dict(payload, ref="refs/heads/main", after=repo.head))
        assert r.status_code == 202 and wait_idle(runtime.workers, "shop", 120)
        assert [s.name for s in store.sources.all()] == ["shop"]  # no tag matches v3* yet
        repo.tag("v3.0", repo.v2)
        r = post_github(server.url, SECRET, dict(payload, ref="refs/tags/v3.0", after=repo.v2))
        assert r.status_code == 202, r.text
        assert wait_idle(runtime.workers, "shop", 120)
        last = runtime.workers.stats("shop")["last"]
        assert last.mode == "noop" and [(x.name, x.mode) for x in last.refs] == [("shop@v3.0", "full")]
        assert store.sources.get("shop@v3.0").commit == repo.v2
        r = post_github(server.url, SECRET, dict(payload, ref="refs/tags/nightly", after=repo.v2))
        assert r.json() == {"ignored": "ref refs/tags/nightly is not the configured branch main"}
    finally:
        server.stop()
        runtime.workers.stop()


def test_sync_all_prints_each_repositorys_ref_lines_as_sync_repo_does(shop):
    """``coderag sync --all`` renders a repository's run as ``sync repo`` does: its ref
    lines (moved, removed) follow the default branch's line."""
    from helpers.gitrepo import git

    shop.repo.tag("v2", shop.repo.head)  # moved
    git(shop.repo.path, "tag", "-d", "v1")  # removed
    proc = run_cli(shop.env, "sync", "--all")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("shop: noop "), proc.stdout
    assert f"  ref shop@v2: full at {shop.repo.head[:7]}, 0 file(s) differ from the default branch" in lines[1], \
        proc.stdout
    assert "  ref shop@v1: removed" in lines, proc.stdout
    again = run_cli(shop.env, "sync", "repo", "shop")
    assert [x for x in again.stdout.splitlines() if x.startswith("  ref ")] == ["  ref shop@v2: noop at "
                                                                              f"{shop.repo.head[:7]}, 0 file(s) "
                                                                              "differ from the default branch"]


def test_a_ref_pattern_that_matches_nothing_is_reported_by_sync_and_status(shop, monkeypatch):
    """A ``refs`` pattern that selects no tag or branch is no error (the tag may come
    later) but not silent: one line in the sync's output, and ``coderag status`` shows it."""
    env = dict(shop.env, CODERAG_REPOS=json.dumps([{"name": "shop", "url": str(shop.repo.path), "branch": "main",
                                                    "refs": ["v*", "9.*"]}]))
    proc = run_cli(env, "sync", "repo", "shop")
    assert proc.returncode == 0, proc.stderr
    assert "  ref pattern '9.*' of shop matches no tag or branch" in proc.stdout.splitlines(), proc.stdout
    status = run_cli(env, "status")
    assert "ref pattern '9.*' of shop matches no tag or branch" in status.stdout, status.stdout
    proc = run_cli(shop.env, "sync", "repo", "shop")  # the pattern gone from the config: so is its report
    assert "9.*" not in proc.stdout and "9.*" not in run_cli(shop.env, "status").stdout


def test_a_search_batch_checks_every_lines_repo_at_the_ref_before_the_first_search(shop, tmp_path):
    """``search --batch --ref v1``: a line whose repository lacks the ref fails the batch
    with its line number before line 1's results are written."""
    from helpers.gitrepo import make_git_repo

    other = make_git_repo(tmp_path / "o", {"tool.py": "def run():\n    return 1\n"}, name="tool")
    assert run_cli(shop.env, "index", str(other)).returncode == 0
    batch = tmp_path / "b.jsonl"
    batch.write_text(json.dumps({"id": "1", "question": "compute total", "repo": "shop"}) + "\n"
                     + json.dumps({"id": "2", "question": "run", "repo": "tool"}) + "\n")
    proc = run_cli(shop.env, "search", "--batch", str(batch), "--ref", "v1")
    assert_error(proc, ExitCode.USAGE, f"{batch}:2: no indexed ref 'v1' of tool (indexed refs: none)")
    assert proc.stdout == ""
