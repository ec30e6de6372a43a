#!/usr/bin/env python3
"""Benchmark call-graph extraction, resolution and SQL storage on one repository.

Usage: python bench/graph_bench.py REPO_PATH

Reads the HEAD commit's files as `coderag index` does, extracts per-file facts with
tree-sitter, resolves the repo-wide edges, and writes them to a throw-away SQLite
database through the same code as the indexer. Prints one JSON object: files, lines,
definitions, call sites, edges (resolved share), seconds per phase, peak RSS (MiB).
"""
from __future__ import annotations

import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    from common.settings import Settings
    from common.db import open_database
    from indexer.graph import extract_file, resolve
    from indexer.graph.sql_store import save_repo_graph
    from indexer.sources import filters, git

    settings = Settings.from_env()
    root = git.repo_root(sys.argv[1])
    commit = git.head_commit(root)
    files = [f for f in git.list_files(root, commit)
             if not filters.skip_reason_for_path(f.path, f.size_bytes, settings.max_file_bytes)]
    t0 = time.perf_counter()
    facts, lines = [], 0
    for f, data in git.read_blobs(root, files):
        text, reason = filters.decode_source(data)
        if reason:
            continue
        ff = extract_file(f.path, text)
        if ff is not None:
            facts.append(ff)
            lines += text.count("\n") + 1
    t1 = time.perf_counter()
    edges = resolve(facts)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["CODERAG_DATABASE_URL"] = f"sqlite:///{tmp}/graph.db"
        sessions = open_database(settings)
        t3 = time.perf_counter()
        save_repo_graph(sessions, root.name, commit, facts)
        t4 = time.perf_counter()
    print(json.dumps({
        "repo": root.name, "commit": commit, "files": len(facts), "lines": lines,
        "definitions": sum(len(f.definitions) for f in facts),
        "call_sites": sum(len(f.calls) for f in facts), "edges": len(edges),
        "resolved_share": round(sum(e.resolved for e in edges) / len(edges), 3) if edges else None,
        "seconds_extract": round(t1 - t0, 2), "seconds_resolve": round(t2 - t1, 2),
        "seconds_resolve_and_store_sqlite": round(t4 - t3, 2),  # save_repo_graph resolves again
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
