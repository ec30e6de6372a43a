"""The ranking stage, signal by signal, on a small repository the test builds.

The repository's files are chunked by the real chunker (``indexer.chunking.chunk_file``);
each test gives every candidate the same hybrid score (or the scores stated), so the
order is decided by the signal under test, and checks that switching that signal off
(``RankingConfig.without``) loses the effect.
"""
from __future__ import annotations

import pytest

from bot.retrieval.query_analysis import analyze
from bot.retrieval.ranking import DEFAULT_OFF, SIGNALS, Candidate, RankingConfig, rank, ranking_config
from common.errors import BadInput
from indexer.read import StoredChunk
from indexer.chunking import chunk_file

REPO = {
    "shop/cart.py": '''"""Shopping cart."""
import decimal

TAX = decimal.Decimal("0.2")


class Cart:
    """Items and their total."""

    def __init__(self):
        self.items = []

    def add(self, item):
        self.items.append(item)


def cart(items):
    """Build a Cart from a list (lower-case twin of the class)."""
    c = Cart()
    for i in items:
        c.add(i)
    return c
''',
    "shop/errors.py": '''def checkout(cart):
    if not cart.items:
        raise ValueError("cart is empty, nothing to check out")
    return sum(cart.items)


def describe_checkout():
    """Mentions checkout, cart and empty in prose only."""
    return "checkout of an empty cart is refused"
''',
    "shop/dependencies/resolver.py": '''def resolve(graph):
    """Order nodes so each comes after what it needs."""
    return sorted(graph)
''',
    "shop/graph.py": '''def resolve_graph(graph):
    """Order nodes."""
    return sorted(graph)
''',
    "tests/test_cart.py": '''def test_cart_total():
    cart = Cart()
    cart.add(1)
    assert cart.items == [1]
''',
    "docs/guide.md": '''# Guide

## Configuring the cart

The documentation recommends setting the tax rate once, at start-up.
''',
    "shop/compat/cart_v1.py": '''def add_to_cart(cart, item):
    """Add an item to a cart (old API)."""
    cart.append(item)
''',
    "shop/basket.py": '''def add_to_cart(cart, item):
    """Add an item to a cart."""
    cart.items.append(item)
''',
    "shop/inventory.py": '''def stock_level(sku):
    return 3


def reserve(sku):
    return True


def release(sku):
    return True
''',
    "shop/orders.py": '''def place_order(cart, card):
    reserve_stock(cart)
    charge_card(card)
    return "placed"


def reserve_stock(cart):
    return [i for i in cart.items]


def charge_card(card):
    return card.number
''',
    "shop/limits.py": '''def body_limit(size):
    return body_limit_with_config({"limit": size})


def body_limit_with_config(config):
    return check_body(config)


def check_body(config):
    if config["limit"] < 0:
        raise ValueError("request body too large")
    return config
''',
    "shop/long.py": "def process(order):\n" + "".join(f"    step_{i} = {i}\n" for i in range(60))
    + "    # refund the voucher when the payment gateway declines the card\n    return order\n",
}


def chunks_of(repo: dict[str, str]) -> list[StoredChunk]:
    out = []
    for path, text in repo.items():
        for i, c in enumerate(chunk_file(path, text)):
            out.append(StoredChunk(uuid=f"{path}#{i}", repo="shop", path=path, language="", symbol=c.symbol,
                                   kind=c.kind, start_line=c.start_line, end_line=c.end_line,
                                   commit="abc1234", indexed_at=None, content=c.text))
    return out


ALL = chunks_of(REPO)


def cands(pick=None, hybrid=0.5, scores: dict | None = None) -> list[Candidate]:
    chosen = [c for c in ALL if pick is None or pick(c)]
    return [Candidate(chunk=c, hybrid=(scores or {}).get((c.path, c.symbol), hybrid)) for c in chosen]


def order(question, candidates, config=RankingConfig()):
    return [(c.chunk.path, c.chunk.symbol) for c in rank(analyze(question), candidates, config)]


def test_quoted_message_finds_the_function_holding_the_exact_phrase():
    q = 'Where does "cart is empty, nothing to check out" come from?'
    pool = cands(lambda c: c.path == "shop/errors.py",
                 scores={("shop/errors.py", "describe_checkout"): 0.9, ("shop/errors.py", "checkout"): 0.6})
    assert order(q, pool)[0] == ("shop/errors.py", "checkout")
    assert order(q, cands(lambda c: c.path == "shop/errors.py",
                          scores={("shop/errors.py", "describe_checkout"): 0.9, ("shop/errors.py", "checkout"): 0.6}),
                 RankingConfig.without("quoted_phrase", "best_window"))[0] == ("shop/errors.py", "describe_checkout")


def test_tests_are_demoted_unless_the_question_asks_about_tests():
    pool = lambda: cands(lambda c: c.path in ("tests/test_cart.py", "shop/basket.py"),  # noqa: E731
                         scores={("tests/test_cart.py", "test_cart_total"): 0.7})
    assert order("how is an item added to the cart?", pool())[0][0] == "shop/basket.py"
    assert order("which test covers adding an item to the cart?", pool())[0][0] == "tests/test_cart.py"
    assert order("how is an item added to the cart?", pool(),
                 RankingConfig.without("role_prior"))[0][0] == "tests/test_cart.py"


def test_a_documentation_question_gets_the_docs():
    pool = lambda: cands(lambda c: c.path in ("docs/guide.md", "shop/cart.py"),  # noqa: E731
                         scores={("shop/cart.py", "Cart"): 0.7})
    assert order("what does the documentation recommend for the tax rate?", pool())[0][0] == "docs/guide.md"
    assert order("what does the documentation recommend for the tax rate?", pool(),
                 RankingConfig.without("role_prior", "best_window"))[0][0] == "shop/cart.py"


def test_best_window_finds_a_mid_body_match_in_a_long_function():
    q = "when is the voucher refunded after the payment gateway declines?"
    pool = lambda: cands(lambda c: c.path in ("shop/long.py", "shop/basket.py"),  # noqa: E731
                         scores={("shop/basket.py", "add_to_cart"): 0.6})
    assert order(q, pool())[0][0] == "shop/long.py"
    assert order(q, pool(), RankingConfig.without("best_window"))[0][0] == "shop/basket.py"


def test_call_hub_lifts_the_function_that_connects_the_other_candidates():
    # place_order reserves stock and charges the card: for "what happens when an order
    # is placed" the orchestrating function, not one of its pieces, should come first
    scores = {("shop/orders.py", "reserve_stock"): 0.6, ("shop/orders.py", "charge_card"): 0.58,
              ("shop/orders.py", "place_order"): 0.5, ("shop/basket.py", "add_to_cart"): 0.59}
    links = [("shop", "shop/orders.py", "place_order", "shop/orders.py", "reserve_stock"),
             ("shop", "shop/orders.py", "place_order", "shop/orders.py", "charge_card")]
    pool = lambda: cands(lambda c: (c.path, c.symbol) in scores, scores=scores)  # noqa: E731
    q = analyze("what goes on end to end?")

    ranked = rank(q, pool(), links=links)
    assert (ranked[0].chunk.path, ranked[0].chunk.symbol) == ("shop/orders.py", "place_order")
    assert ranked[0].signals["call_hub"] > 0
    # the callees get a caller's share, smaller than the hub's
    add = next(c for c in ranked if c.chunk.symbol == "reserve_stock")
    assert 0 < add.signals["call_hub"] < ranked[0].signals["call_hub"]
    assert order("what goes on end to end?", pool(),
                 RankingConfig.without("call_hub"))[0] == ("shop/orders.py", "reserve_stock")
    # links to chunks that are not candidates count for nothing; no links, no signal
    assert all(c.signals["call_hub"] == 0 for c in rank(q, pool()))
    far = [("shop", "shop/orders.py", "place_order", "shop/elsewhere.py", "ghost")]
    assert all(c.signals["call_hub"] == 0 for c in rank(q, pool(), links=far))


def test_call_hub_passes_a_wrappers_link_to_the_function_it_delegates_to(monkeypatch):
    # body_limit -> body_limit_with_config -> check_body: each wrapper calls exactly one
    # candidate, so the link counts for the callee, not for the thin function in front
    import bot.retrieval.ranking as ranking

    scores = {("shop/limits.py", "body_limit"): 0.62, ("shop/limits.py", "body_limit_with_config"): 0.6,
              ("shop/limits.py", "check_body"): 0.55}
    links = [("shop", "shop/limits.py", "body_limit", "shop/limits.py", "body_limit_with_config"),
             ("shop", "shop/limits.py", "body_limit_with_config", "shop/limits.py", "check_body")]
    pool = lambda: cands(lambda c: (c.path, c.symbol) in scores, scores=scores)  # noqa: E731
    q = analyze("what happens on an overflow?")  # no word of it in the code: call_hub decides
    ranked = rank(q, pool(), links=links)
    names = [c.chunk.symbol for c in ranked]
    assert names.index("check_body") < names.index("body_limit")
    sig = {c.chunk.symbol: c.signals["call_hub"] for c in ranked}
    assert sig["body_limit"] == 0  # it only delegates
    assert sig["body_limit_with_config"] == pytest.approx(0.62 / ranking.HUB_SATURATION)
    assert sig["check_body"] == pytest.approx(0.6 / ranking.HUB_SATURATION)
    # without delegation the outermost wrapper collects its callee's score instead
    monkeypatch.setattr(ranking, "HUB_DELEGATION", False)
    names = [c.chunk.symbol for c in rank(q, pool(), links=links)]
    assert names.index("body_limit") < names.index("check_body")


def test_localized_copies_of_a_resource_are_demoted_when_their_family_is_among_the_candidates():
    from bot.retrieval.ranking import LOCALIZED_PENALTY, _localized_copies

    family = ["res/messages.properties", "res/messages_de.properties", "res/messages_pt_BR.properties"]
    assert _localized_copies(family) == set(family[1:])
    assert _localized_copies(["docs/README.md", "docs/README.de.md"]) == {"docs/README.de.md"}
    assert _localized_copies(["l/app.json", "l/app.zh-Hans.json"]) == {"l/app.zh-Hans.json"}
    # a lone translation has no family among the candidates: left alone
    assert _localized_copies(["res/messages_de.properties", "shop/cart.py"]) == set()
    # code files and non-language suffixes are not translations
    assert _localized_copies(["a/setup.py", "a/setup_de.py", "g/path.go", "g/path_js.go",
                              "t/test_io.py", "t/test_os.py", "x/index.js", "x/index.es.js",
                              "m/model.py", "m/model_pb.py", "y/foo_id_map.json", "y/foo_id_list.json"]) == set()
    # in the ranking: the base file outranks its translations that the hybrid query put first
    base = StoredChunk(uuid="base", repo="shop", path=family[0], language="", symbol="", kind="window",
                       start_line=1, end_line=3, commit="abc1234", indexed_at=None,
                       content="telephone.invalid=Telephone must be numeric")
    copies = [StoredChunk(uuid=f"c{i}", repo="shop", path=p, language="", symbol="", kind="window",
                          start_line=1, end_line=3, commit="abc1234", indexed_at=None,
                          content="telephone.invalid=Telefon muss numerisch sein")
              for i, p in enumerate(family[1:])]
    pool = lambda: [Candidate(chunk=c, hybrid=0.7) for c in copies] + [Candidate(chunk=base, hybrid=0.6)]  # noqa: E731
    ranked = rank(analyze("what message is shown for an invalid telephone?"), pool())
    assert ranked[0].chunk.path == family[0]
    assert {c.chunk.path: c.signals["role_prior"] for c in ranked}[family[1]] == LOCALIZED_PENALTY
    no_prior = rank(analyze("what message is shown for an invalid telephone?"), pool(), RankingConfig.without("role_prior"))
    assert no_prior[0].chunk.path != family[0]


def test_every_signal_is_named_weighted_and_switchable():
    assert set(SIGNALS) == {"quoted_phrase", "best_window", "role_prior", "call_hub", "symbol_definition",
                            "path_match", "file_diversity"}
    assert DEFAULT_OFF == frozenset()  # every shipped signal is on (each earned its place)
    assert ranking_config(["best_window,call_hub", "role_prior"]).disabled == \
        {"best_window", "call_hub", "role_prior"}
    assert ranking_config(None).disabled == frozenset()
    with pytest.raises(BadInput, match="unknown ranking signal.*nope"):
        ranking_config(["nope"])


def test_phrase_look_ups_are_dropped_when_their_signal_is_off():
    c = next(x for x in ALL if x.symbol == "checkout")
    looked = Candidate(chunk=c, hybrid=0.1, origin="phrase_lookup")
    other = Candidate(chunk=next(x for x in ALL if x.symbol == "add_to_cart" and x.path == "shop/basket.py"), hybrid=0.5)
    q = analyze('where does "cart is empty, nothing to check out" come from?')
    assert [x.chunk.symbol for x in rank(q, [looked, other])][0] == "checkout"
    assert [x.chunk.symbol for x in rank(q, [looked, other], RankingConfig.without("quoted_phrase"))] == ["add_to_cart"]


# ---- signals for the file-level questions of any codebase ----------------------------
def test_symbol_definition_puts_the_defining_chunk_first_for_a_one_identifier_question():
    # `cart` (the function) and the test both mention Cart more than the class does
    scores = {("shop/cart.py", "cart"): 0.9, ("tests/test_cart.py", "test_cart_total"): 0.95}
    pool = lambda: cands(lambda c: c.symbol in ("Cart", "cart", "test_cart_total"), hybrid=0.6, scores=scores)  # noqa: E731
    assert order("Cart", pool())[0] == ("shop/cart.py", "Cart")
    assert order("shop::Cart", pool())[0] == ("shop/cart.py", "Cart")  # a qualified name: its last part
    assert order("Cart", pool(), RankingConfig.without("symbol_definition"))[0] != ("shop/cart.py", "Cart")
    # a sentence is not a symbol question: the signal stays 0
    assert all(c.signals["symbol_definition"] == 0 for c in rank(analyze("what is a Cart"), pool()))


def test_path_match_prefers_the_file_named_like_the_question():
    pool = lambda: cands(lambda c: c.symbol in ("stock_level", "place_order"), hybrid=0.5,  # noqa: E731
                         scores={("shop/orders.py", "place_order"): 0.6})
    q = "inventory stock level of a product"
    assert order(q, pool())[0] == ("shop/inventory.py", "stock_level")
    assert order(q, pool(), RankingConfig.without("path_match", "best_window"))[0] == ("shop/orders.py", "place_order")


def test_path_match_reads_the_folder_of_a_generic_file_name():
    from bot.retrieval.ranking import _file_words, stem

    assert _file_words("axum/src/extract/mod.rs") == {stem("extract")}
    assert _file_words("lib/rack/body_proxy.rb") == {stem("body"), stem("proxy")}
    assert _file_words("Source/Features/URLEncodedFormEncoder.swift") >= {stem("encoder"), stem("form")}


def test_file_diversity_lets_a_second_file_into_the_top_results():
    inv = [c for c in ALL if c.path == "shop/inventory.py" and c.symbol]
    other = next(c for c in ALL if c.symbol == "place_order")
    pool = lambda: [Candidate(chunk=c, hybrid=0.8 - i * 0.01) for i, c in enumerate(inv)] + \
        [Candidate(chunk=other, hybrid=0.7)]  # noqa: E731
    q = "sku order"
    # the first DIVERSITY_FREE chunks of a file are free; the next one pays
    from bot.retrieval.ranking import DIVERSITY_FREE
    assert DIVERSITY_FREE == 2
    top3 = [c.chunk.path for c in rank(analyze(q), pool(), RankingConfig.without("path_match"))[:3]]
    assert top3 == ["shop/inventory.py", "shop/inventory.py", "shop/orders.py"]
    off = rank(analyze(q), pool(), RankingConfig.without("path_match", "file_diversity"))
    assert [c.chunk.path for c in off[:3]] == ["shop/inventory.py"] * 3
