"""Readings of a call graph built from in-memory files, shared by the per-language graph
tests: the callers of one definition as comparable rows, and the rule that resolved each
edge."""
from __future__ import annotations

from indexer.graph import resolve


def caller_rows(graph, query: str, *, strip: str = "", **kw) -> set[tuple]:
    """``{(path, caller symbol, line, depth, is_test)}`` of the callers of the one definition
    ``query`` names (asserted unique); ``strip`` is removed from each path; ``kw`` goes to
    ``graph.callers`` (``depth=``, ``include_unresolved=``)."""
    defs = graph.find_definitions(query)
    assert len(defs) == 1, defs
    return {(c.path.replace(strip, "") if strip else c.path, c.symbol, c.line, c.depth, c.is_test)
            for c in graph.callers(defs[0], **kw)}


def edge_rules(facts) -> dict[tuple[str, int, str], str]:
    """``{(caller symbol, line, callee symbol): rule}`` of the resolved edges of ``facts``."""
    return {(e.caller_symbol, e.line, e.callee_symbol): e.rule for e in resolve(facts) if e.resolved}
