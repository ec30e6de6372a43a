#!/usr/bin/env python3
"""NDCG@10 on a public third-party code-search benchmark (MinishLab/semble's), in the
languages coderag reads through its table-driven chunker only; prints one JSON object.

    python bench/public_eval.py --bench DIR --checkouts DIR [--work DIR] [--repo NAME ...]
        [--no-ablation] [--misses]

``--bench DIR``: a copy of the benchmark's ``benchmarks/`` folder: ``repos.json`` (names,
languages, pinned revisions, benchmark roots; ``repos-extra.json`` beside it adds
entries), ``annotations/<name>.json`` (queries with ``relevant`` and ``secondary``
targets: a path, or a path and a line span; a ``category``), ``results/*.json`` (the
tools' published per-repository figures). Nothing is downloaded: the copy and the
checkouts are made beforehand, outside this project (the annotations stay out of it).

``--checkouts DIR``: ``DIR/<name>`` is a Git clone holding the pinned revision. For each
repository the benchmark root at that revision is exported into ``--work/<name>`` as a
one-commit repository (so only what the benchmark indexes is indexed, and paths are
relative to the root as the annotations are), indexed into the configured index
(``CODERAG_HOME``) as ``bench-<name>`` unless already indexed at that content.

Held out: the benchmark's Python, Go, JavaScript, TypeScript and Java repositories are
never opened, indexed or scored here (they are scored separately); they are listed as
such in the output. Repositories whose annotations or pinned revision cannot be had
here are listed with the reason.

Scoring is the benchmark's own rule, reimplemented: for each target (relevant and
secondary) the rank of the first of the top 10 results that covers it (same path, line
ranges overlapping when the target has a span); NDCG@10 with binary gains at those ranks
over an ideal of ``min(10, targets)`` (targets no indexed file holds do not count); the
mean over a repository's queries; the language and overall means over repositories.
The results are the product's ranked search results (hybrid candidates, ranking stage,
overlap de-duplication) without call-graph expansion, which adds context for answers.

``ablation``: the same with each ranking signal switched off alone and with the ranking
stage off (``no_ranking``), from one hybrid query per question.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT))

#: The benchmark's languages that are held out of this project's tuning.
HELD_OUT = frozenset({"python", "go", "javascript", "typescript", "java"})
TOP_K = 10


# ----------------------------------------------------------------------------- the metric
def path_matches(file_path: str, target_path: str) -> bool:
    """The benchmark's path rule: equal, or one ends with ``/`` + the other."""
    a, b = file_path.replace("\\", "/"), target_path.replace("\\", "/")
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def covers(path: str, start: int, end: int, target: dict) -> bool:
    """A result at ``path:start-end`` covers ``target`` (``{"path", "start_line"?, "end_line"?}``)."""
    if not path_matches(path, target["path"]):
        return False
    if target.get("start_line") is None or target.get("end_line") is None:
        return True
    return not (end < int(target["start_line"]) or start > int(target["end_line"]))


def ndcg_at_k(ranks: list[int], n_relevant: int, k: int = TOP_K) -> float:
    """NDCG@k with binary gains at the 1-based ``ranks`` (a rank counted once) over an
    ideal of ``min(k, n_relevant)`` relevant results; 0 when nothing is relevant."""
    if n_relevant <= 0:
        return 0.0
    gains = [0] * k
    for r in ranks:
        if 1 <= r <= k:
            gains[r - 1] = 1
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains))
    ideal = sum(1 / math.log2(i + 2) for i in range(min(k, n_relevant)))
    return dcg / ideal if ideal else 0.0


def score_query(results: list[tuple[str, int, int]], targets: list[dict], indexed_paths: set[str]) -> float:
    """NDCG@10 of one query: ``results`` as ``(path, start, end)`` best first."""
    ranks = []
    for t in targets:
        for i, (p, s, e) in enumerate(results[:TOP_K], 1):
            if covers(p, s, e, t):
                ranks.append(i)
                break
    n_rel = sum(1 for t in targets if any(path_matches(p, t["path"]) for p in indexed_paths))
    return ndcg_at_k(ranks, n_rel)


def _target(raw) -> dict:
    return {"path": raw} if isinstance(raw, str) else dict(raw)


def load_tasks(path: Path) -> list[dict]:
    """The queries of one annotation file: ``{"query", "category", "targets"}``."""
    out = []
    for item in json.loads(path.read_text()):
        q = item["query"]
        cat = item.get("category") or ("symbol" if " " not in q.strip() else
                                       "architecture" if q.lower().startswith("how ") else "semantic")
        out.append({"query": q, "category": cat,
                    "targets": [_target(t) for t in item.get("relevant", []) + item.get("secondary", [])]})
    return out


def published(bench: Path) -> dict[str, dict[str, float]]:
    """``tool -> repo -> NDCG@10`` from the benchmark's result files (the newest file of
    each tool wins when a tool has several; the file name's prefix names the tool)."""
    out: dict[str, dict[str, float]] = {}
    for f in sorted((bench / "results").glob("*.json"), key=lambda p: p.stat().st_mtime):
        try:
            data = json.loads(f.read_text())
        except ValueError:
            continue
        rows = data.get("repos") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            continue
        tool = f.stem.rsplit("-", 1)[0] if "-" in f.stem else "semble"
        per = {r["repo"]: float(r["ndcg10"]) for r in rows if isinstance(r, dict) and "ndcg10" in r}
        if per:
            out[tool] = per
    return out


# ----------------------------------------------------------------------------- checkouts
def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


def export_root(checkout: Path, revision: str, root: str | None, dest: Path) -> Path:
    """``dest`` as a one-commit Git repository holding ``root`` of ``checkout`` at
    ``revision`` (reused when it already holds that export)."""
    marker = dest / ".bench-source"
    want = f"{revision}:{root or ''}"
    if marker.is_file() and marker.read_text() == want:
        return dest
    if dest.exists():
        subprocess.run(["rm", "-rf", str(dest)], check=True)
    dest.mkdir(parents=True)
    # the whole revision, then the root copied with links followed (a benchmark root may be
    # a folder of symbolic links into the rest of the tree, as RxSwift's Sources/ is)
    # (when the whole revision cannot be archived, e.g. a mirror without its largest
    # blobs, the root alone is, links kept as they are)
    with tempfile.TemporaryDirectory(prefix="bench-export-") as full:
        whole = subprocess.run(["git", "-C", str(checkout), "archive", "--format=tar", revision],
                               capture_output=True)
        if whole.returncode == 0:
            subprocess.run(["tar", "-x", "-C", full], input=whole.stdout, check=True)
            src = Path(full) / root if root else Path(full)
            subprocess.run(["cp", "-rL", f"{src}/.", str(dest)], check=False, capture_output=True)
        else:
            tree = f"{revision}:{root}" if root else revision
            part = subprocess.run(["git", "-C", str(checkout), "archive", "--format=tar", tree],
                                  capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", str(dest)], input=part, check=True)
    env = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "commit.gpgsign=false"]
    _git("init", "-q", cwd=dest)
    _git("add", "-A", cwd=dest)
    _git(*env, "commit", "-q", "-m", f"benchmark root {want}", cwd=dest)
    marker.write_text(want)
    return dest


def specs(bench: Path) -> list[dict]:
    """``repos.json`` plus ``repos-extra.json`` (entries of the extra file win)."""
    rows = {r["name"]: r for r in json.loads((bench / "repos.json").read_text())}
    extra = bench / "repos-extra.json"
    if extra.is_file():
        rows.update({r["name"]: r for r in json.loads(extra.read_text())})
    return list(rows.values())


# ----------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench", type=Path, required=True, help="the benchmark's benchmarks/ folder (a local copy)")
    ap.add_argument("--checkouts", type=Path, required=True, help="folder of Git clones named as in repos.json")
    ap.add_argument("--work", type=Path, default=None, help="where benchmark roots are exported (default: temporary)")
    ap.add_argument("--repo", action="append", default=[], help="only these repositories (repeatable)")
    ap.add_argument("--no-ablation", action="store_true", help="skip the per-signal ablation")
    ap.add_argument("--misses", action="store_true", help="list each query's NDCG and top files")
    args = ap.parse_args(argv)

    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, index_repository, make_embedder
    from bot.retrieval.ranking import SIGNALS, RankingConfig
    from bot.retrieval.retriever import Retriever

    tmp = None
    work = args.work
    if work is None:
        tmp = tempfile.TemporaryDirectory(prefix="coderag-public-eval-")
        work = Path(tmp.name)
    skipped: dict[str, str] = {}
    todo = []
    for spec in specs(args.bench):
        name, lang = spec["name"], spec["language"]
        if args.repo and name not in args.repo:
            continue
        if lang in HELD_OUT:
            skipped[name] = f"held out ({lang})"
            continue
        ann = args.bench / "annotations" / f"{name}.json"
        if not ann.is_file():
            skipped[name] = "no annotations here"
            continue
        checkout = args.checkouts / name
        try:
            _git("-C", str(checkout), "cat-file", "-e", spec["revision"] + "^{commit}")
        except (subprocess.CalledProcessError, FileNotFoundError):
            skipped[name] = f"revision {spec['revision'][:12]} not in {checkout}"
            continue
        todo.append((spec, ann))

    settings = Settings.from_env()
    sessions = open_database(settings)
    embedder = make_embedder(settings)
    configs = {"all": RankingConfig()}
    if not args.no_ablation:
        configs.update({f"-{s}": RankingConfig.without(s) for s in SIGNALS})
        configs["no_ranking"] = RankingConfig.without(*SIGNALS)
    pub = published(args.bench)
    repos_out = []
    with ChunkStore.open(settings) as store:
        have = {s.name: s.to_dict() for s in store.sources.all()}
        retriever = Retriever(store, embedder, sessions=sessions)
        for spec, ann in todo:
            name = spec["name"]
            iname = f"bench-{name}"
            root = export_root(args.checkouts / name, spec["revision"], spec.get("benchmark_root"), work / name)
            head = _git("-C", str(root), "rev-parse", "HEAD")
            t0 = time.perf_counter()
            rec = have.get(iname)
            if rec is None or rec.get("commit") != head or int(rec.get("vectors_pending") or 0):
                index_repository(root, name=iname, settings=settings, store=store, embedder=embedder,
                                 sessions=sessions)
            index_s = time.perf_counter() - t0
            indexed = set(_git("-C", str(root), "ls-files").splitlines())
            tasks = load_tasks(ann)
            per_cfg: dict[str, list[float]] = {c: [] for c in configs}
            cats: dict[str, list[float]] = {}
            misses = []
            lat = []
            rank_ms: dict[str, list[float]] = {c: [] for c in configs}
            for task in tasks:
                q0 = time.perf_counter()
                g = retriever.gather(task["query"], repos=[iname])
                for cname, cfg in configs.items():
                    res = retriever.finish(g, top_k=TOP_K, expand_graph=False, ranking=cfg)
                    rank_ms[cname].append(res.timings.get("rank", 0.0))
                    if cname == "all":
                        lat.append((time.perf_counter() - q0) * 1000)
                    found = [(h.chunk.path, h.chunk.start_line, h.chunk.end_line) for h in res.hits]
                    s = score_query(found, task["targets"], indexed)
                    per_cfg[cname].append(s)
                    if cname == "all":
                        cats.setdefault(task["category"], []).append(s)
                        if args.misses and s < 1.0:
                            misses.append({"query": task["query"], "ndcg10": round(s, 3),
                                           "targets": [t["path"] for t in task["targets"]],
                                           "top": [f"{p}:{a}-{b}" for p, a, b in found[:5]]})
            row = {"repo": name, "language": spec["language"], "queries": len(tasks),
                   "ndcg10": round(sum(per_cfg["all"]) / len(tasks), 4),
                   "by_category": {c: round(sum(v) / len(v), 4) for c, v in sorted(cats.items())},
                   "index_s": round(index_s, 1), "query_ms_p50": round(sorted(lat)[len(lat) // 2], 1),
                   "rank_ms_p95": {c: round(sorted(v)[int(0.95 * (len(v) - 1))], 2) for c, v in rank_ms.items()
                                   if c in ("all", "no_ranking")},
                   "published": {tool: round(v[name], 4) for tool, v in sorted(pub.items()) if name in v}}
            if not args.no_ablation:
                row["ablation"] = {c: round(sum(v) / len(v), 4) for c, v in per_cfg.items() if c != "all"}
            if misses:
                row["misses"] = misses
            repos_out.append(row)
            print(f"{name:<20} {spec['language']:<8} ndcg@10 {row['ndcg10']:.3f}  "
                  f"{' '.join(f'{t}={v:.3f}' for t, v in row['published'].items())}", file=sys.stderr)

    def mean(xs):
        xs = list(xs)
        return round(sum(xs) / len(xs), 4) if xs else None

    by_lang = {}
    for lang in sorted({r["language"] for r in repos_out}):
        rows = [r for r in repos_out if r["language"] == lang]
        by_lang[lang] = {"repos": len(rows), "ndcg10": mean(r["ndcg10"] for r in rows),
                         "published": {t: mean(r["published"][t] for r in rows if t in r["published"])
                                       for t in pub if any(t in r["published"] for r in rows)}}
    cat_means = {}
    for cat in ("architecture", "semantic", "symbol"):
        vals = [r["by_category"][cat] for r in repos_out if cat in r["by_category"]]
        if vals:
            cat_means[cat] = mean(vals)
    tools = {}
    for tool, per in pub.items():
        common = [r for r in repos_out if r["repo"] in per]
        if common:
            tools[tool] = {"repos": len(common), "ndcg10": mean(per[r["repo"]] for r in common),
                           "coderag_on_same": mean(r["ndcg10"] for r in common)}
    out = {"repos_scored": len(repos_out), "ndcg10": mean(r["ndcg10"] for r in repos_out),
           "rank_ms_p95": {c: mean(r["rank_ms_p95"][c] for r in repos_out if c in r["rank_ms_p95"])
                           for c in ("all", "no_ranking")},
           "by_category": cat_means, "by_language": by_lang, "published_tools": tools,
           "skipped": skipped, "repos": repos_out}
    if not args.no_ablation and repos_out:
        out["ablation"] = {c: mean(r["ablation"][c] for r in repos_out) for c in repos_out[0]["ablation"]}
    print(json.dumps(out, indent=1))
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
