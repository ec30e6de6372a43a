"""Drift precision on real repositories: every stale alarm, and how many are real.

    python bench/drift_eval.py --checkouts DIR [--repos bench/data/drift_repos.jsonl]
        [--labels bench/data/drift_labels.jsonl] [--history 3000] [--only NAME]

Each line of ``--repos`` names a public repository (``repo``: the folder under
``--checkouts`` holding a Git clone, ``url``, ``commit``: the code checked, ``docs_rev``:
the revision the docs are read from, default ``commit``; a release tag's docs checked
against later code is an unmaintained runbook, where real drift exists). The script
runs the product's drift stages (:mod:`indexer.drift.service`: extraction, lookup, one
``git log -p`` pass) on a throw-away SQLite database, prints every stale alarm, joins
each with its hand label in ``--labels`` (``{"repo","docs_rev","doc","line","ref",
"label": "real"|"false","reason"}``) and prints one JSON object: per repository and in
all, the alarms, how many are labelled real / false / not yet labelled, and the
precision of "stale" (real / labelled). Nothing is downloaded: clone the repositories
first (their commits are pinned in the repos file). Unlabelled alarms are listed so
they can be labelled by reading the doc and the commit.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

_DATA = Path(__file__).resolve().parent / "data"


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def label_key(a: dict) -> tuple:
    """What identifies an alarm across runs: repository, docs revision, doc, line, ref."""
    return (a["repo"], a["docs_rev"], a["doc"], int(a["line"]), a["ref"])


def run_one(entry: dict, checkouts: Path, history: int) -> tuple[list[dict], dict]:
    """Drift on one repository entry: ``(alarms, counts)``; each alarm
    ``{"repo","docs_rev","doc","line","kind","ref","removed_commit","removed_summary","new_name","note"}``."""
    import subprocess

    from sqlalchemy import select

    from common.db import open_database
    from common.settings import Settings
    from indexer.drift import service
    from indexer.drift.models import DocRef

    home = tempfile.mkdtemp(prefix="drift-eval-")
    os.environ["CODERAG_HOME"] = home
    os.environ.pop("CODERAG_DATABASE_URL", None)
    os.environ["CODERAG_DRIFT_HISTORY_COMMITS"] = str(history)
    settings = Settings.from_env()
    sessions = open_database(settings)
    root = checkouts / entry["repo"]
    name = entry["repo"]
    rev = lambda r: subprocess.run(["git", "-C", str(root), "rev-parse", r + "^{commit}"], check=True,  # noqa: E731
                                   capture_output=True, text=True).stdout.strip()
    commit = rev(entry["commit"])
    docs_rev = entry.get("docs_rev") or entry["commit"]
    service.upsert_repo(sessions, name, root, commit)
    docs = [d for d in service.repo_docs(root, rev(docs_rev), settings) if d.doc.startswith(entry.get("docs", ""))]
    service._replace_docs(sessions, name, docs)
    t0 = time.perf_counter()
    stats = service.resolve_sources(sessions, settings, [name])
    with sessions() as s:
        rows = list(s.execute(select(DocRef).where(DocRef.source == name)).scalars())
    alarms = [{"repo": name, "docs_rev": docs_rev, "doc": r.doc, "line": r.line, "kind": r.kind, "ref": r.ref,
               "removed_commit": r.removed_commit[:10], "removed_summary": r.removed_summary[:120],
               "new_name": r.new_name, "note": r.note} for r in rows if r.status == "stale"]
    alarms.sort(key=lambda a: (a["doc"], a["line"], a["ref"]))
    counts = {"docs": len(docs), "refs": stats["refs"], "ok": stats["ok"], "unknown": stats["unknown"],
              "stale": stats["stale"], "seconds": round(time.perf_counter() - t0, 2)}
    return alarms, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkouts", type=Path, required=True, help="Folder of Git clones, one per repository name.")
    ap.add_argument("--repos", type=Path, default=_DATA / "drift_repos.jsonl")
    ap.add_argument("--labels", type=Path, default=_DATA / "drift_labels.jsonl")
    ap.add_argument("--history", type=int, default=3000, help="Commits read to date missing references.")
    ap.add_argument("--only", help="Run only the entries of this repository.")
    args = ap.parse_args()
    labels = {label_key(x): x for x in _read_jsonl(args.labels)}
    entries = [e for e in _read_jsonl(args.repos) if not args.only or e["repo"] == args.only]
    if not entries:
        sys.exit(f"drift_eval: no repositories in {args.repos}")
    per_repo, unlabelled, all_alarms = [], [], []
    for e in entries:
        if not (args.checkouts / e["repo"]).exists():
            per_repo.append({"repo": e["repo"], "docs_rev": e.get("docs_rev") or e["commit"], "skipped": "no clone"})
            continue
        alarms, counts = run_one(e, args.checkouts, args.history)
        real = sum(1 for a in alarms if labels.get(label_key(a), {}).get("label") == "real")
        false = sum(1 for a in alarms if labels.get(label_key(a), {}).get("label") == "false")
        for a in alarms:
            lab = labels.get(label_key(a))
            a["label"], a["reason"] = (lab["label"], lab.get("reason", "")) if lab else ("", "")
            if not lab:
                unlabelled.append(a)
        all_alarms += alarms
        per_repo.append({"repo": e["repo"], "docs_rev": e.get("docs_rev") or e["commit"], **counts,
                         "alarms": len(alarms), "real": real, "false": false})
    real = sum(r.get("real", 0) for r in per_repo)
    false = sum(r.get("false", 0) for r in per_repo)
    print(json.dumps({
        "repositories": len({r["repo"] for r in per_repo if "skipped" not in r}),
        "runs": per_repo,
        "alarms": len(all_alarms), "real": real, "false": false, "unlabelled": len(unlabelled),
        "precision": round(real / (real + false), 3) if real + false else None,
        "all_alarms": all_alarms,
    }, indent=1))


if __name__ == "__main__":
    main()
