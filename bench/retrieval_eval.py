"""Retrieval and refusal evaluation on pinned repositories; prints one JSON object.

    python bench/retrieval_eval.py --repos /work/scratch/repos [--dev PATH] [--dev2 PATH]
        [--noanswer PATH] [--no-ablation] [--no-index] [--results-dir DIR] [--off SIGNALS]

Indexes every repository the question sets name (``REPOS/<repo>``, checked out at the
set's ``commit``) into the configured index (``CODERAG_HOME``), unless it is already
indexed at that commit; then runs each set with the product's retriever (each question
searched in its own ``repo``, top 10, graph expansion on) and prints:

- per set and for the answerable sets combined: symbol recall@1/5/10, MRR@10, NDCG@10,
  file recall@5, symbol recall@5 per kind (scored by ``eval_metrics`` from
  bench/eval_metrics.py when present, else by the built-in scorer with the same
  definitions);
- ``ablation``: the same metrics with each ranking signal switched off alone (``-name``);
  ``no_ranking`` is the hybrid
  order alone. The hybrid candidates are gathered once per question and re-ranked
  in-process;
- ``refusal``: answerable questions refused and no-answer questions refused by the
  answerability decision, and the trade-off over its thresholds.

Sets: ``--dev`` defaults to ``../shared/eval/dev.jsonl`` next to the project (or
``/work/shared/eval/dev.jsonl``), ``--dev2`` and ``--noanswer`` to ``bench/data/``. A
missing set is skipped with a note in the output.
"""
from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
sys.path.insert(0, str(PROJECT))
sys.path.insert(0, str(HERE))

from common.db import open_database
from common.settings import Settings
from indexer import ChunkStore, index_repository, make_embedder

from bot.answer.answerability import THRESHOLDS, assess, decide, tradeoff  # noqa: E402
from bot.retrieval.ranking import SIGNALS, RankingConfig  # noqa: E402
from bot.retrieval.retriever import Retriever  # noqa: E402

# The shared scorer is bench/eval_metrics.py; CODERAG_EVAL_METRICS_DIR names another
# folder holding it (e.g. a branch's worktree before the merge). Without it the built-in
# scorer below (same hit rule; first-come NDCG credit) is used and the output says so.
import os  # noqa: E402

if os.environ.get("CODERAG_EVAL_METRICS_DIR"):
    sys.path.insert(0, os.environ["CODERAG_EVAL_METRICS_DIR"])
try:
    import eval_metrics  # type: ignore
except ImportError:  # pragma: no cover - depends on the checkout
    eval_metrics = None

MAX_SPAN_LINES = 200
TOP_K = 10


def _default_dev() -> Path:
    for p in (PROJECT.parent / "shared" / "eval" / "dev.jsonl", Path("/work/shared/eval/dev.jsonl")):
        if p.is_file():
            return p
    return PROJECT.parent / "shared" / "eval" / "dev.jsonl"


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _hit(r: dict, e: dict) -> bool:
    s, t = int(r.get("start_line", 0)), int(r.get("end_line", -1))
    return r.get("path") == e["path"] and s <= int(e["line"]) <= t and t - s + 1 <= MAX_SPAN_LINES


def builtin_scores(golden: list[dict], results: dict[str, list[dict]]) -> dict:
    """symbol recall@1/5/10, MRR@10, NDCG@10 (binary gains: each expected location
    counts once, at the first result overlapping it), file recall@5, recall@5 per kind."""
    rows = [q for q in golden if q.get("expected")]
    n = len(rows) or 1
    rec = {1: 0, 5: 0, 10: 0}
    mrr = ndcg = frec = 0.0
    kinds: dict[str, list[int]] = {}
    for q in rows:
        res = results.get(q["id"], [])[:TOP_K]
        exp = q["expected"]
        first = next((i for i, r in enumerate(res, 1) if any(_hit(r, e) for e in exp)), None)
        for k in rec:
            rec[k] += 1 if first is not None and first <= k else 0
        mrr += 1.0 / first if first else 0.0
        frec += 1 if any(r.get("path") in {e["path"] for e in exp} for r in res[:5]) else 0
        found, dcg = set(), 0.0
        for i, r in enumerate(res, 1):
            for j, e in enumerate(exp):
                if j not in found and _hit(r, e):
                    found.add(j)
                    dcg += 1.0 / math.log2(i + 1)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(len(exp), TOP_K) + 1))
        ndcg += dcg / ideal if ideal else 0.0
        t = kinds.setdefault(q.get("kind", "?"), [0, 0])
        t[0] += 1 if first is not None and first <= 5 else 0
        t[1] += 1
    return {"questions": len(rows), **{f"symbol_recall@{k}": round(v / n, 3) for k, v in rec.items()},
            "mrr@10": round(mrr / n, 3), "ndcg@10": round(ndcg / n, 3), "file_recall@5": round(frec / n, 3),
            "recall@5_by_kind": {k: f"{h}/{t}" for k, (h, t) in sorted(kinds.items())},
            "misses@5": [q["id"] for q in rows
                         if not any(_hit(r, e) for r in results.get(q["id"], [])[:5] for e in q["expected"])]}


def scores(golden: list[dict], results: dict[str, list[dict]]) -> dict:
    """Metrics of one set: eval_metrics.evaluate's overall means (rounded), recall@5 per
    kind and the misses at 5; the built-in scorer when eval_metrics is absent."""
    if eval_metrics is None:
        return builtin_scores(golden, results)
    ev = eval_metrics.evaluate(golden, results)
    out = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in ev["overall"].items()}
    out["recall@5_by_kind"] = {k: round(v["symbol_recall@5"], 3) for k, v in ev["by_kind"].items()}
    out["mrr@10_by_kind"] = {k: round(v["mrr@10"], 3) for k, v in ev["by_kind"].items()}
    out["misses@5"] = ev["misses@5"]
    return out


def ensure_indexed(repos_dir: Path, sets: list[list[dict]], settings: Settings, store: ChunkStore,
                   sessions, embedder) -> dict:
    """Index each named repo at the set's commit unless it already is; returns seconds per repo."""
    wanted = {q["repo"]: q.get("commit") for s in sets for q in s if q.get("repo")}
    # a first index that stopped before its vectors were done is indexed again
    have = {s.name: s.commit for s in store.sources.all() if not int(s.vectors_pending or 0)}
    took = {}
    for name, commit in sorted(wanted.items()):
        path = repos_dir / name
        if not path.is_dir():
            raise SystemExit(f"retrieval_eval: {path} does not exist (clone {name} there at {commit})")
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        if commit and head != commit:
            raise SystemExit(f"retrieval_eval: {path} is at {head[:10]}, the set wants {commit[:10]}")
        if have.get(name) == head:
            continue
        t0 = time.perf_counter()
        index_repository(path, name=name, settings=settings, store=store, embedder=embedder, sessions=sessions)
        took[name] = round(time.perf_counter() - t0, 1)
    return took


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repos", type=Path, default=Path("/work/scratch/repos"), help="folder holding REPOS/<name> checkouts")
    ap.add_argument("--dev", type=Path, default=_default_dev())
    ap.add_argument("--dev2", type=Path, default=PROJECT / "bench" / "data" / "dev2.jsonl")
    ap.add_argument("--noanswer", type=Path, default=PROJECT / "bench" / "data" / "noanswer.jsonl")
    ap.add_argument("--no-ablation", action="store_true", help="skip the per-signal ablation")
    ap.add_argument("--no-index", action="store_true", help="use the index as it is")
    ap.add_argument("--results-dir", type=Path, help="write each set's raw results JSONL here")
    ap.add_argument("--off", default="", help="signals switched off in the measured default (comma list), "
                                              "to compare rankings side by side on one index")
    args = ap.parse_args(argv)
    off = [x for x in args.off.split(",") if x]

    sets: dict[str, list[dict]] = {}
    notes = []
    for name, path in (("dev", args.dev), ("dev2", args.dev2), ("noanswer", args.noanswer)):
        if path.is_file():
            sets[name] = load(path)
        else:
            notes.append(f"{name}: {path} not found, skipped")
    settings = Settings.from_env()
    sessions = open_database(settings)
    embedder = make_embedder(settings)
    out: dict = {"notes": notes, "sets": {k: str(v) for k, v in (("dev", args.dev), ("dev2", args.dev2),
                                                                     ("noanswer", args.noanswer)) if k in sets},
                 "scorer": getattr(eval_metrics, "__file__", "builtin")}
    with ChunkStore.open(settings) as store:
        if not args.no_index:
            out["indexed_seconds"] = ensure_indexed(args.repos, list(sets.values()), settings, store, sessions, embedder)
        retriever = Retriever(store, embedder, sessions=sessions)
        sources = store.sources.all()
        configs = {"all": RankingConfig.without(*off)}
        if not args.no_ablation:  # each signal off alone
            configs.update({f"-{s}": RankingConfig.without(*off, s) for s in SIGNALS if s not in off})
            configs["no_ranking"] = RankingConfig.without(*SIGNALS)
        results: dict[str, dict[str, dict[str, list[dict]]]] = {c: {} for c in configs}
        features: dict[str, list[dict]] = {}
        t0 = time.perf_counter()
        for set_name, items in sets.items():
            for q in items:
                g = retriever.gather(q["question"], repos=[q["repo"]] if q.get("repo") else None)
                for cname, cfg in configs.items():
                    res = retriever.finish(g, top_k=TOP_K, ranking=cfg)
                    results[cname].setdefault(set_name, {})[q["id"]] = [h.to_result() for h in res.hits]
                    if cname == "all":
                        a = assess(res, store, sources)
                        features.setdefault(set_name, []).append(
                            {"id": q["id"], "answerable": set_name != "noanswer" and bool(q.get("expected")),
                             "partial": bool(q.get("partial")), **a.features()})
        out["seconds"] = round(time.perf_counter() - t0, 1)
        if args.results_dir:
            args.results_dir.mkdir(parents=True, exist_ok=True)
            for set_name, res in results["all"].items():
                (args.results_dir / f"{set_name}.jsonl").write_text(
                    "".join(json.dumps({"id": k, "results": v}) + "\n" for k, v in res.items()))
            (args.results_dir / "answerability.jsonl").write_text(
                "".join(json.dumps(f) + "\n" for fs in features.values() for f in fs))

    answerable = {k: v for k, v in sets.items() if k != "noanswer"}
    combined = [q for v in answerable.values() for q in v]

    def metrics_for(cname: str) -> dict:
        per = {k: scores(v, results[cname].get(k, {})) for k, v in answerable.items()}
        merged = {qid: r for k in answerable for qid, r in results[cname].get(k, {}).items()}
        per["combined"] = scores(combined, merged)
        return per

    out["metrics"] = metrics_for("all")
    if not args.no_ablation:
        base = out["metrics"]
        abl = {}
        for cname in configs:
            if cname == "all":
                continue
            m = metrics_for(cname)
            abl[cname] = {k: {"recall@5": v["symbol_recall@5"], "mrr@10": v["mrr@10"], "ndcg@10": v["ndcg@10"],
                              "d_recall@5": round(v["symbol_recall@5"] - base[k]["symbol_recall@5"], 3),
                              "d_mrr@10": round(v["mrr@10"] - base[k]["mrr@10"], 3)}
                          for k, v in m.items()}
        out["ablation"] = abl
    rows = [f for fs in features.values() for f in fs]
    out["refusal"] = {"decision": decide_table(rows), "tradeoff": tradeoff(rows), "thresholds": THRESHOLDS,
                      "signal_auc": signal_auc(rows)}
    if eval_metrics is not None and hasattr(eval_metrics, "refusal_table"):
        qs = [q for v in sets.values() for q in v]
        out["refusal"]["table"] = eval_metrics.refusal_table(qs, {r["id"]: decide(r)[0] for r in rows})
    print(json.dumps(out))
    return 0


def signal_auc(rows: list[dict]) -> dict:
    """How well each continuous answerability signal separates answerable from no-answer
    questions (partial ones left out): the ROC AUC, i.e. the probability that a random
    answerable question scores higher than a random no-answer one (ties count half;
    Hanley & McNeil 1982). 0.5 = no better than chance."""
    ans = [r for r in rows if r["answerable"]]
    no = [r for r in rows if not r["answerable"] and not r["partial"]]
    out = {}
    for key in ("best_cosine", "margin"):
        a, n = [r[key] for r in ans], [r[key] for r in no]
        if a and n:
            out[key] = round(sum((x > y) + 0.5 * (x == y) for x in a for y in n) / (len(a) * len(n)), 3)
    return out


def decide_table(rows: list[dict]) -> dict:
    """Refusals under the shipped decision rule: answerable refused, no-answer refused
    (outright, and refused or declared uncovered)."""
    ans = [r for r in rows if r["answerable"]]
    no = [r for r in rows if not r["answerable"] and not r["partial"]]
    part = [r for r in rows if r["partial"]]
    ref = lambda r: decide(r)[0]  # noqa: E731
    decl = lambda r: decide(r)[0] or bool(decide(r)[1])  # noqa: E731
    return {"answerable": len(ans), "answerable_refused": sum(map(ref, ans)),
            "answerable_declared_uncovered": sum(1 for r in ans if decl(r) and not ref(r)),
            "noanswer": len(no), "noanswer_refused": sum(map(ref, no)),
            "noanswer_refused_or_declared": sum(map(decl, no)),
            "partial": len(part), "partial_refused": sum(map(ref, part)),
            "partial_declared_uncovered": sum(1 for r in part if decl(r) and not ref(r)),
            "answerable_refused_ids": [r["id"] for r in ans if ref(r)],
            "noanswer_answered_ids": [r["id"] for r in no if not decl(r)]}


if __name__ == "__main__":
    sys.exit(main())
