"""graph_neighbours (SQL, used by retrieval expansion) agrees with the in-memory CallGraph
(used by impact) on a small repo, on SQLite and on PostgreSQL."""
from __future__ import annotations

import pytest

from indexer.graph import CallGraph, extract_file, is_test_path, resolve
from indexer.graph.sql_store import graph_neighbours, save_repo_graph

FILES = {
    "shop/pricing.py": '''
from shop.tax import add_tax


def base_price(item):
    return item.price


def total(items):
    """Sum of prices with tax."""
    return add_tax(sum(base_price(i) for i in items))


def countdown(n):
    return countdown(n - 1) if n else 0
''',
    "shop/tax.py": '''
RATE = 0.2


def add_tax(amount):
    return round_cents(amount * (1 + RATE))


def round_cents(x):
    return round(x, 2)
''',
    "shop/cart.py": '''
from shop import pricing


class Cart:
    def __init__(self):
        self.items = []

    def checkout(self):
        return pricing.total(self.items)


def quick_total(items):
    return unique_helper(items)
''',
    "shop/helpers.py": '''
def unique_helper(items):
    return len(items)
''',
    "tests/test_tax.py": '''
from shop.tax import add_tax, round_cents


def test_add_tax():
    assert round_cents(add_tax(10)) == 12.0
''',
}


def _expected(graph: CallGraph, path: str, symbol: str, callers: bool) -> list[tuple[str, str, int, str]]:
    key = (path, symbol)
    out: dict[tuple[str, str], int] = {}
    for callee, edges in graph.incoming.items():
        for e in edges:
            if (e.caller_path, e.caller_symbol) == key and callee != key and not is_test_path(callee[0]):
                out[callee] = min(out.get(callee, e.line), e.line)
    rows = [(p, s, line, "callee") for (p, s), line in sorted(out.items(), key=lambda kv: (kv[1], kv[0]))]
    if callers:
        rows += [(c.path, c.symbol, c.line, "caller")
                 for c in graph.callers(graph.definitions[key], depth=1)]
    return rows


@pytest.fixture
def stored(db_url):
    from sqlalchemy.orm import sessionmaker

    from common.db import make_engine, upgrade_to_head

    upgrade_to_head(db_url)
    sessions = sessionmaker(make_engine(db_url))
    facts = [f for p, src in FILES.items() if (f := extract_file(p, src)) is not None]
    save_repo_graph(sessions, "shop", "c0ffee", facts)
    return sessions, CallGraph(facts, resolve(facts))


def test_sql_neighbours_match_the_in_memory_graph(stored):
    sessions, graph = stored
    assert len(graph.definitions) >= 8
    for path, symbol in graph.definitions:
        for callers in (False, True):
            got = graph_neighbours(sessions, "shop", path, symbol, callers=callers)
            assert got == _expected(graph, path, symbol, callers), (path, symbol, callers)


def test_sql_neighbours_cases(stored):
    sessions, _graph = stored
    total = graph_neighbours(sessions, "shop", "shop/pricing.py", "total", callers=True)
    # both callees are on the same line (ties go by path); shop/ has no __init__.py, so
    # Cart.checkout's ``pricing.total`` resolves through a PEP 420 namespace package
    assert [(p, s, k) for p, s, _l, k in total] == [
        ("shop/pricing.py", "base_price", "callee"), ("shop/tax.py", "add_tax", "callee"),
        ("shop/cart.py", "Cart.checkout", "caller")]
    # recursion is neither callee nor caller of itself
    assert graph_neighbours(sessions, "shop", "shop/pricing.py", "countdown", callers=True) == []
    # the test calling round_cents is a caller, never a callee
    rc = graph_neighbours(sessions, "shop", "shop/tax.py", "round_cents", callers=True)
    assert {(p, k) for p, _s, _l, k in rc} == {("shop/tax.py", "caller"), ("tests/test_tax.py", "caller")}
    assert graph_neighbours(sessions, "shop", "shop/tax.py", "round_cents", callers=True) == rc
    # unknown definitions and repos: nothing, no error
    assert graph_neighbours(sessions, "shop", "shop/nowhere.py", "ghost", callers=True) == []
    assert graph_neighbours(sessions, "other", "shop/pricing.py", "total", callers=True) == []


def test_graph_links_are_the_resolved_edges_among_the_given_definitions(stored):
    from indexer.read import graph_links

    sessions, graph = stored
    defs = [("shop/pricing.py", "total"), ("shop/pricing.py", "base_price"), ("shop/tax.py", "add_tax"),
            ("shop/tax.py", "round_cents"), ("shop/cart.py", "Cart.checkout"), ("shop/pricing.py", "countdown")]
    got = graph_links(sessions, "shop", defs)
    want = sorted({(e.caller_path, e.caller_symbol, callee[0], callee[1])
                   for callee, edges in graph.incoming.items() for e in edges
                   if (e.caller_path, e.caller_symbol) in defs and callee in defs
                   and callee != (e.caller_path, e.caller_symbol)})
    assert got == want
    assert ("shop/pricing.py", "total", "shop/tax.py", "add_tax") in got
    assert ("shop/cart.py", "Cart.checkout", "shop/pricing.py", "total") in got
    # a definition outside the set is never an end; recursion is no link; other repos: none
    assert not any(e[3] == "unique_helper" or e[1] == e[3] for e in got)
    assert graph_links(sessions, "shop", [("shop/tax.py", "round_cents")]) == []
    assert graph_links(sessions, "other", defs) == []
    assert graph_links(sessions, "shop", []) == []
