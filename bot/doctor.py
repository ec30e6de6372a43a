"""``coderag doctor [--repair] [--json]``: the index's versions, checked source by source.

A thin presentation layer over :func:`indexer.check_index` / :func:`indexer.repair_index`
(see :mod:`indexer.store.doctor` for what is checked and how it is repaired): one table,
or one JSON object with ``--json``. Exit code 0 when every source is healthy (after the
repair, with ``--repair``), :data:`EXIT_PROBLEMS` otherwise.
"""
from __future__ import annotations

import json

from common.db import open_database
from common.settings import Settings
from indexer import ChunkStore, check_index, make_embedder, reindex_recorded, repair_index
from indexer.read import indexed_repos, load_graph

EXIT_PROBLEMS = 1


def run_doctor(settings: Settings, *, repair: bool = False, as_json: bool = False, echo=print) -> int:
    """Check (and with ``repair`` fix) every source of the index ``settings`` (the storage
    group read at start-up) names; print the table (or JSON) with ``echo``; return the
    exit code. Raises ``WeaviateUnavailable``."""
    sessions = open_database(settings)
    store = ChunkStore.open(settings)
    try:
        if repair:
            reports = repair_index(store, sessions, embedder_factory=lambda: make_embedder(settings),
                                   reindex=lambda name: reindex_recorded(
                                       name, settings=settings, store=store, sessions=sessions,
                                       embedder_factory=lambda: make_embedder(settings)),
                                   lock_ttl=settings.index_lock_ttl)
        else:
            reports = check_index(store, sessions, lock_ttl=settings.index_lock_ttl)
    finally:
        store.close()
    problems = sum(len(r.problems) for r in reports)
    unmapped = unmapped_imports(sessions)
    if as_json:
        echo(json.dumps({"sources": [r.to_dict() for r in reports], "problems": problems,
                         "repaired": bool(repair),
                         "unmapped_imports": {repo: [{"path": p, "line": n, "module": m} for p, n, m in found]
                                              for repo, found in unmapped.items()}}))
    else:
        echo(format_table(reports))
        for repo, found in unmapped.items():
            echo(unmapped_note(repo, found))
        if problems:
            echo(f"{problems} problem(s) found" + ("" if repair else "; run `coderag doctor --repair` to fix them"))
        else:
            echo("No problems found." if reports else "Nothing indexed yet.")
    return EXIT_PROBLEMS if problems else 0


def unmapped_imports(sessions) -> dict[str, list[tuple[str, int, str]]]:
    """Per indexed repository with any: the imports of its own modules that map to none
    of them (``[(path, line, module)]``); calls through them are missing from ``impact``.
    A warning, not a problem: re-indexing does not change it."""
    out = {}
    for repo in indexed_repos(sessions):
        graph = load_graph(sessions, repo)
        found = graph.unmapped_imports() if graph is not None else []
        if found:
            out[repo] = found
    return out


def unmapped_note(repo: str, found: list[tuple[str, int, str]]) -> str:
    """One line: how many imports of ``repo`` could not be mapped, with the first three."""
    shown = ", ".join(f"{p}:{n} {m}" for p, n, m in found[:3])
    return (f"{repo}: {len(found)} import(s) of the repository's own modules map to none of them "
            f"(e.g. {shown}); impact misses the calls made through them")


def format_table(reports) -> str:
    """One line per source: committed run, searchable/recorded chunks, objects per run,
    orphans, superseded objects, missing vectors, call-graph files without chunks,
    ``code_files`` rows without a source, of another commit or without chunks, status."""
    head = ["source", "kind", "run", "searchable", "record", "objects per run", "orphans", "superseded",
            "no vector", "graph w/o chunks", "stale file rows", "status"]
    rows = [head]
    for r in reports:
        runs = " ".join(f"{k}:{v}" for k, v in r.runs.items()) or "-"
        status = "ok" if r.ok else "; ".join(r.problems)
        if r.vectors_percent is not None:  # a recorded state: a first index still embedding
            status += f" (vectors {r.vectors_percent}% done)"
        if r.keyword_only:
            status += f" ({r.keyword_only} keyword-only by policy)"
        if r.repaired:
            status = ("ok" if r.ok else status) + " (repaired: " + "; ".join(r.repaired) + ")"
        rows.append([r.name, r.kind or "-", str(r.committed_gen) if r.has_record else "none", str(r.visible),
                     str(r.record_chunks), runs, str(r.orphans), str(r.pending), str(r.missing_vectors),
                     str(r.graph_orphans), str(r.code_file_orphans), status])
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row[:-1], widths)) + "  " + row[-1] for row in rows)
