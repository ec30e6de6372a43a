"""Graph expansion: after hybrid search, pull in the definitions the top chunks call
(and, for impact/risk questions, their callers), so an answer is not missing the code
its best chunk depends on.

Expansion keeps the hybrid order of the first ``KEEP_TOP`` results untouched, inserts
expanded chunks after them, and caps the whole context at ``max_context`` chunks.
"""
from __future__ import annotations

import re
from typing import Callable, Collection, Sequence

from indexer.read import ChunkReader, StoredChunk

# Results whose order expansion never changes (recall@5 is measured there).
KEEP_TOP = 5
# Seeds: how many top hybrid hits are expanded, and how many neighbours each adds.
SEED_COUNT = 3
PER_SEED = 2
# Default cap on the whole context (hybrid + expansion), chunks.
DEFAULT_MAX_CONTEXT = 18
# Questions about change risk also pull in callers.
IMPACT_QUESTION = re.compile(
    r"\b(impact|affect(s|ed)?|break(s|ing)?|risk(y|s)?|who calls|callers?|called by|call sites?|"
    r"used by|uses? of|depend(s|ents|encies)? on|if (we|i) change|refactor)\b", re.IGNORECASE)
CODE_KINDS = {"function", "method", "class", "class_signature"}


# ``(chunk, with_callers) -> [(path, symbol, line, "callee" | "caller")]`` for one seed,
# e.g. ``indexer.read.graph_neighbours`` bound to a database (see Retriever.neighbours_for).
NeighbourFn = Callable[[StoredChunk, bool], list[tuple[str, str, int, str]]]


def neighbours(neighbour_fn: NeighbourFn, chunk: StoredChunk, *, callers: bool) -> list[tuple[str, str, str]]:
    """``(path, symbol, reason)`` of the chunk's resolved callees (first call first), and
    of its direct callers when ``callers`` is set. Tests are never added as callees;
    module-level callers (no symbol) are skipped."""
    out: list[tuple[str, str, str]] = []
    seen = {(chunk.path, chunk.symbol)}
    for path, symbol, line, kind in neighbour_fn(chunk, callers):
        if (path, symbol) in seen or not symbol:
            continue
        seen.add((path, symbol))
        if kind == "callee":
            out.append((path, symbol, f"callee of {chunk.symbol} (called at {chunk.path}:{line})"))
        else:
            out.append((path, symbol, f"caller of {chunk.symbol} ({path}:{line})"))
    return out


def expand(question: str, ranked: Sequence[StoredChunk], *, store: ChunkReader,
           neighbours_for: NeighbourFn, limit: int,
           max_context: int = DEFAULT_MAX_CONTEXT,
           allowed: Collection[str] | None = None, visible=None,
           records: Sequence | None = None) -> list[tuple[StoredChunk, str]]:
    """Final context: ``(chunk, reason)`` pairs, reason "" for hybrid hits.

    ``ranked``: hybrid results best first; ``limit``: results wanted (top-k);
    the output has at most ``min(limit, max_context)`` entries... unless ``limit`` is
    larger than the hybrid list, in which case expansion only fills the gap.

    ``allowed``: sources the caller may read (``None`` = all). Seeds outside it are not
    expanded, and an expanded chunk is added only when its own ``repo`` (as stored, not
    as the graph claims) is in it: a call graph edge never carries a forbidden source in.

    ``visible``: the search's visible filter (``store.query.visible_filter``), so the
    look-ups do not read the source records again (``None``: each look-up reads them);
    ``records``: the search's source records, for a look-up through a named ref.
    """
    cap = min(limit, max_context)
    want_callers = bool(IMPACT_QUESTION.search(question))
    present = {(c.repo, c.path, c.symbol) for c in ranked}
    extra: list[tuple[StoredChunk, str]] = []
    for seed in ranked[:SEED_COUNT]:
        if seed.kind not in CODE_KINDS or not seed.symbol:
            continue
        if allowed is not None and seed.repo not in allowed:
            continue
        picked = 0
        cands = neighbours(neighbours_for, seed, callers=want_callers)
        wanted = [(p, s, r) for p, s, r in cands if (seed.repo, p, s) not in present]
        if not wanted:
            continue
        hits = store.query.by_symbol(seed.repo, [s for _p, s, _r in wanted], visible=visible, records=records)
        found = {(c.path, c.symbol): c for c in hits}
        for path, symbol, reason in wanted:
            chunk = found.get((path, symbol))
            if chunk is None or (seed.repo, path, symbol) in present:
                continue
            if chunk.repo != seed.repo or (allowed is not None and chunk.repo not in allowed):
                continue
            present.add((seed.repo, path, symbol))
            extra.append((chunk, reason))
            picked += 1
            if picked >= PER_SEED:
                break
    merged = [(c, "") for c in ranked[:KEEP_TOP]] + extra + [(c, "") for c in ranked[KEEP_TOP:]]
    return merged[:max(cap, 1)]
