"""Every SQL statement of graph_neighbours (retrieval expansion, once per seed chunk) and of
graph_links (ranking signal call_hub, once per search) is an index lookup on SQLite, so
its cost does not grow with the repo's graph.

Before migration 0005 and the rewrite, the callee query's GROUP BY made SQLite pick an index
on ``repo`` alone and scan the whole repo (0.6 s per seed on sqlalchemy's 205k edges)."""
from __future__ import annotations

import re

from sqlalchemy import event
from sqlalchemy.orm import sessionmaker

from common.db import make_engine, upgrade_to_head
from indexer.graph import extract_file
from indexer.graph.sql_store import graph_links, graph_neighbours, save_repo_graph


def _module(n: int) -> str:
    # Many functions calling each other and a shared name, so every index has rows.
    return "\n".join(
        f"def f{n}_{i}(x):\n    return helper(f{n}_{(i + 1) % 40}(x)) + run(x)\n" for i in range(40)
    ) + ("\ndef helper(x):\n    return x\n" if n == 0 else "")


def test_neighbour_queries_use_a_full_index_lookup(tmp_path):
    url = f"sqlite:///{tmp_path / 'g.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    sessions = sessionmaker(engine)
    facts = [extract_file(f"pkg/m{n}.py", _module(n)) for n in range(30)]
    dup = "def shared(x):\n    return target(x)\n\n\ndef target(x):\n    return x\n"
    facts += [extract_file("pkg/dup_a.py", dup), extract_file("pkg/dup_b.py", dup)]
    save_repo_graph(sessions, "big", "c0ffee", facts)
    save_repo_graph(sessions, "other", "c0ffee", facts)  # a second repo: "repo = ?" alone is not selective

    statements: list[tuple[str, tuple]] = []

    def capture(conn, cursor, sql, params, context, executemany):
        if sql.lstrip().upper().startswith("SELECT"):
            statements.append((sql, params))

    event.listen(engine, "before_cursor_execute", capture)
    got = graph_neighbours(sessions, "big", "pkg/m3.py", "f3_5", callers=True)
    got_helper = graph_neighbours(sessions, "big", "pkg/m0.py", "helper", callers=True)
    defs = [(f"pkg/m{n}.py", f"f{n}_{i}") for n in (1, 2) for i in range(15)] + [("pkg/m0.py", "helper")]
    # dup_a.py and dup_b.py define the same names: (dup_a, shared) is in the cross product
    # of the two IN lists without being a candidate, and it calls the candidate (dup_a, target)
    defs += [("pkg/dup_a.py", "target"), ("pkg/dup_b.py", "shared")]
    links = graph_links(sessions, "big", defs)
    event.remove(engine, "before_cursor_execute", capture)

    # f1_i calls f1_{i+1} (both candidates for i < 14); cross pairs of the two IN lists
    # such as (pkg/m1.py, f2_3) are not definitions and give nothing (helper() from another
    # module is an unresolved call: no link)
    assert ("pkg/m1.py", "f1_3", "pkg/m1.py", "f1_4") in links
    assert ("pkg/m1.py", "f1_14", "pkg/m1.py", "f1_15") not in links  # f1_15 is not a candidate
    assert all((cp, cs) in defs and (ep, es) in defs for cp, cs, ep, es in links)
    assert ("pkg/dup_a.py", "shared", "pkg/dup_a.py", "target") not in links
    assert len(links) == 2 * 14

    assert {(p, s, k) for p, s, _line, k in got} >= {("pkg/m3.py", "f3_6", "callee"),
                                                     ("pkg/m3.py", "f3_4", "caller")}
    helper_callers = {(p, s) for p, s, _line, k in got_helper if k == "caller"}
    assert len(helper_callers) > 40  # same-file callers and unresolved same-name ones
    assert len(statements) >= 6
    with engine.connect() as conn:
        for sql, params in statements:
            plan = [row[-1] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)]
            assert not any(line.startswith("SCAN") for line in plan), (sql, plan)
            searches = [line for line in plan if line.startswith("SEARCH")]
            assert searches, (sql, plan)
            for line in searches:
                used = re.search(r"\((.*)\)", line).group(1)
                assert used != "repo=?", f"only the repo column of the index is used: {sql} -> {plan}"
