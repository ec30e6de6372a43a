"""Drift on a large repository: extraction and resolution time for all its docs.

    python bench/drift_bench.py /work/scratch/17/sqlalchemy --docs doc/ [--history 3000] [--sample 10]

Runs the same stages as the index hook (:func:`indexer.drift.service.refresh_repo`), on
a throw-away SQLite database, each timed: reading and extracting the docs under
``--docs`` (``CODERAG_DRIFT_EXCLUDE`` applies: changelogs are skipped), building the code
index of HEAD (no stored call graph here, so definitions come from tree-sitter), looking
every reference up, and the one ``git log -p`` pass over the last ``--history`` commits
that dates the missing ones. Prints one JSON object: counts (found, ok, stale, unknown,
per kind), wall-clock seconds per stage, CPU seconds of the whole run (this process and
its git children: the wall clock is inflated on a shared machine), and ``--sample`` stale findings spread over the docs for
checking by hand.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path, help="A Git work tree (e.g. a sqlalchemy clone).")
    ap.add_argument("--docs", default="doc/", help="Only docs under this folder (default doc/).")
    ap.add_argument("--history", type=int, default=3000, help="Commits read to date stale references.")
    ap.add_argument("--sample", type=int, default=10, help="Stale findings to print for checking by hand.")
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--docs-rev", default="HEAD",
                    help="Read the docs from this revision (e.g. an old release tag) and check them against "
                         "HEAD's code: an unmaintained runbook. Default HEAD.")
    ap.add_argument("--dump", type=Path, help="Also write every stale/unknown reference here (JSONL).")
    args = ap.parse_args()
    if not (args.repo / ".git").exists() and not (args.repo / "HEAD").exists():
        sys.exit(f"drift_bench: {args.repo} is not a Git repository")

    home = tempfile.mkdtemp(prefix="drift-bench-")
    os.environ["CODERAG_HOME"] = home
    os.environ.pop("CODERAG_DATABASE_URL", None)
    os.environ["CODERAG_DRIFT_HISTORY_COMMITS"] = str(args.history)

    from sqlalchemy import select

    from common.db import open_database
    from common.settings import Settings
    from indexer.drift import service
    from indexer.drift.extract import extract_references
    from indexer.drift.models import DocRef
    from indexer.sources import git

    settings = Settings.from_env()
    sessions = open_database(settings)
    root = git.repo_root(args.repo)
    commit = git.head_commit(root)
    name = root.name
    service.upsert_repo(sessions, name, root, commit)

    t0 = time.perf_counter()
    import subprocess

    docs_commit = subprocess.run(["git", "-C", str(root), "rev-parse", args.docs_rev + "^{commit}"], check=True,
                                 capture_output=True, text=True).stdout.strip()
    docs = [d for d in service.repo_docs(root, docs_commit, settings) if d.doc.startswith(args.docs)]
    t_read = time.perf_counter() - t0
    t1 = time.perf_counter()
    n_refs = sum(len(extract_references(d.doc, d.text)) for d in docs)
    t_extract = time.perf_counter() - t1
    service._replace_docs(sessions, name, docs)  # extracts again and stores (timed apart below)
    t_store = time.perf_counter() - t1 - t_extract
    stats = service.resolve_sources(sessions, settings, [name])
    with sessions() as s:
        rows = list(s.execute(select(DocRef).where(DocRef.source == name)).scalars())
    by_kind: dict[str, Counter] = {}
    for r in rows:
        by_kind.setdefault(r.kind, Counter())[r.status] += 1
    stale = [r for r in rows if r.status == "stale"]
    rng = random.Random(args.seed)
    uniq = {}
    for r in stale:  # one finding per (kind, ref) so the sample is not ten copies of one name
        uniq.setdefault((r.kind, r.ref), r)
    sample = rng.sample(sorted(uniq.values(), key=lambda r: (r.doc, r.line)), min(args.sample, len(uniq)))
    if args.dump:
        with args.dump.open("w") as fh:
            for r in rows:
                if r.status != "ok":
                    fh.write(json.dumps({"status": r.status, "doc": r.doc, "line": r.line, "kind": r.kind,
                                         "ref": r.ref, "removed_commit": r.removed_commit[:10],
                                         "removed_summary": r.removed_summary, "new_name": r.new_name,
                                         "note": r.note}) + "\n")
    print(json.dumps({
        "repo": name, "commit": commit, "docs_rev": args.docs_rev, "docs_commit": docs_commit, "docs": len(docs), "code_files": service._INDEX_CACHE[(name, commit)].files,
        "history_commits": args.history,
        "found": n_refs, "ok": stats["ok"], "stale": stats["stale"], "unknown": stats["unknown"],
        "stale_unique": len(uniq),
        "by_kind": {k: dict(v) for k, v in sorted(by_kind.items())},
        "seconds": {"read_docs": round(t_read, 3), "extract": round(t_extract, 3), "store_refs": round(t_store, 3),
                    "code_index": round(stats["seconds_index"], 3), "lookup": round(stats["seconds_lookup"], 3),
                    "history": round(stats["seconds_history"], 3),
                    "resolution_total": round(stats["seconds_index"] + stats["seconds_lookup"]
                                              + stats["seconds_history"], 3)},
        "cpu_seconds": round(sum(resource.getrusage(w).ru_utime + resource.getrusage(w).ru_stime
                                 for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)), 3),
        "stale_sample": [{"doc": r.doc, "line": r.line, "kind": r.kind, "ref": r.ref,
                          "removed_commit": r.removed_commit[:10], "removed_summary": r.removed_summary[:100],
                          "new_name": r.new_name, "note": r.note} for r in sample],
    }))


if __name__ == "__main__":
    main()
