#!/usr/bin/env python3
"""The graph neighbour query of retrieval expansion, before and after, side by side.

Usage: python bench/neighbour_bench.py REPO_NAME [--samples 30]

Reads the call graph already stored in ``CODERAG_HOME``'s database (``coderag index``
or ``bench/search_bench.py`` put it there). For a fixed random sample of definitions of
``REPO_NAME``, alternately runs the callee query as it was before this change (one
statement with GROUP BY, which SQLite planned on ``repo`` alone) and
:func:`indexer.read.graph_neighbours` (callees only, as for most questions), and prints one
JSON object: per variant p50/p95 in ms, the ratio of the medians, the edge count and
the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--samples", type=int, default=30)
    args = ap.parse_args()
    from sqlalchemy import func, select

    from common.db import open_database
    from common.settings import Settings
    from indexer.read import graph_neighbours
    from indexer.graph.sql_models import CodeDefinition, CodeEdge

    sessions = open_database(Settings.from_env())
    with sessions() as s:
        defs = s.execute(select(CodeDefinition.path, CodeDefinition.symbol)
                         .where(CodeDefinition.repo == args.repo)).all()
        edges = s.execute(select(func.count()).select_from(CodeEdge).where(CodeEdge.repo == args.repo)).scalar()
    if not defs:
        sys.exit(f"no call graph stored for {args.repo!r} in {os.environ.get('CODERAG_HOME', '~')}")
    sample = random.Random(0).sample(defs, min(args.samples, len(defs)))

    def before(path: str, symbol: str):
        with sessions() as s:
            return s.execute(
                select(CodeEdge.callee_path, CodeEdge.callee_symbol, func.min(CodeEdge.line))
                .where(CodeEdge.repo == args.repo, CodeEdge.caller_path == path,
                       CodeEdge.caller_symbol == symbol, CodeEdge.resolved.is_(True))
                .group_by(CodeEdge.callee_path, CodeEdge.callee_symbol)
                .order_by(func.min(CodeEdge.line), CodeEdge.callee_path, CodeEdge.callee_symbol)).all()

    times: dict[str, list[float]] = {"before": [], "now": []}
    load = os.getloadavg()[0]
    for path, symbol in sample:
        for name, fn in (("before", lambda: before(path, symbol)),
                         ("now", lambda: graph_neighbours(sessions, args.repo, path, symbol))):
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1000)

    def pct(v: list[float], q: float) -> float:
        s = sorted(v)
        return round(s[min(len(s) - 1, int(q * len(s)))], 2)

    print(json.dumps({
        "repo": args.repo, "edges": edges, "samples": len(sample),
        **{f"{k}_ms": {"p50": pct(v, 0.5), "p95": pct(v, 0.95)} for k, v in times.items()},
        "ratio_p50": round(pct(times["before"], 0.5) / max(pct(times["now"], 0.5), 1e-3), 1),
        "load_average": [round(load, 1), round(os.getloadavg()[0], 1)],
    }))


if __name__ == "__main__":
    main()
