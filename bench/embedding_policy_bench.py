#!/usr/bin/env python3
"""Measure embedding policies (which roles get a vector, how many sub-windows) by recall.

Usage: python bench/embedding_policy_bench.py [--golden FILE ...] [--repo NAME=PATH ...]
       [--cache DIR] [--only REPO ...]

For every repository named in the golden files (found at ``--repo NAME=PATH``, else
``/work/scratch/repos/NAME``), chunks the HEAD commit as ``coderag index`` does and embeds
every embedder input of the widest policy once (head and all sub-windows, vectors cached
in ``--cache`` by text hash, so a second run embeds nothing). Each policy's chunk vectors are
then composed from those inputs, written to a throw-away embedded Weaviate (``WEAVIATE_URL``
if set), and every golden question is searched vector-only (alpha 1) and hybrid (alpha
per question), with graph expansion, through the same Retriever as ``coderag eval``.

Prints one JSON object: per policy and golden file, symbol recall@5 and MRR@10 for both
modes, the embedder inputs and word pieces the policy costs, and the chosen policy: the
one with the fewest word pieces whose figures are all within 0.01 of those of the first
policy (the behaviour before the policy; the quality bar), plus ``best`` and which
policies are within 0.01 of the best on every figure (often none: no single policy is).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DEFAULT_GOLDEN = [Path("/work/shared/eval/dev.jsonl"), Path("/work/wt-13data/bench/data/dev2.jsonl")]
# Within this of the best figure, a cheaper policy wins (the quality bar).
TOLERANCE = 0.01


def policies():
    from indexer.embedding_policy import ALL_WINDOWS, EmbeddingPolicy as P

    no_tests = {"test": "none"}
    return [
        ALL_WINDOWS,
        P("all roles, 1 sub-window", max_windows=1),
        P("all roles, head only", default="head"),
        P("tests head-only, others all sub-windows", modes={"test": "head"}),
        P("tests keyword-only, others all sub-windows", modes=no_tests),
        P("tests keyword-only, others head only", modes=no_tests, default="head"),
        P("tests+changelog keyword-only, docs/examples head, code 1 sub-window",
          modes={"test": "none", "changelog": "none", "docs": "head", "example": "head"}, max_windows=1),
    ]


class VectorCache:
    """``sha1(text) -> vector`` in one .npz per run folder (float32)."""

    def __init__(self, folder: Path):
        import numpy as np

        self.path = folder / "vectors.npz"
        folder.mkdir(parents=True, exist_ok=True)
        self.vecs: dict[str, object] = {}
        if self.path.exists():
            data = np.load(self.path)
            self.vecs = {k: data[k] for k in data.files}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha1(text.encode()).hexdigest()

    def missing(self, texts):
        return [t for t in dict.fromkeys(texts) if self.key(t) not in self.vecs]

    def add(self, texts, vectors) -> None:
        import numpy as np

        for t, v in zip(texts, vectors):
            self.vecs[self.key(t)] = np.asarray(v, dtype=np.float32)

    def save(self) -> None:
        import numpy as np

        tmp = self.path.with_suffix(".tmp.npz")
        np.savez(tmp, **self.vecs)
        os.replace(tmp, self.path)

    def get(self, text: str):
        return self.vecs[self.key(text)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", type=Path, action="append", help="golden JSONL (repeatable)")
    ap.add_argument("--repo", action="append", default=[], help="NAME=PATH of a repository")
    ap.add_argument("--cache", type=Path, default=Path("/work/scratch/16/policy-cache"))
    ap.add_argument("--only", action="append", default=[],
                    help="keep only the questions (and index only the repos) named (repeatable)")
    args = ap.parse_args()
    goldens = args.golden or [g for g in DEFAULT_GOLDEN if g.exists()]
    paths = dict(r.split("=", 1) for r in args.repo)
    tmp = None
    if not os.environ.get("WEAVIATE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="coderag-policy-")
        os.environ["CODERAG_HOME"] = tmp.name
    import numpy as np

    from bot.evaluation import score_run
    from bot.retrieval.retriever import Retriever
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, EmbeddedWeaviate, make_embedder
    from indexer.documents import chunk_properties, embedding_texts
    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.graph.sql_store import save_repo_graph
    from indexer.sources.repository import parse_repository
    from indexer.store.weaviate_store import new_run_id, utcnow
    from indexer.models import SourceRecord

    settings = Settings.from_env()
    golden = {g: [q for q in map(json.loads, filter(str.strip, g.read_text().splitlines()))
                  if not args.only or q["repo"] in args.only] for g in goldens}
    golden = {g: qs for g, qs in golden.items() if qs}
    repos = sorted({q["repo"] for qs in golden.values() for q in qs})
    embedder = make_embedder(settings)
    sessions = open_database(settings)
    parsed = {}
    for name in repos:
        path = paths.get(name) or f"/work/scratch/repos/{name}"
        parsed[name] = parse_repository(path, name, settings)
        save_repo_graph(sessions, name, parsed[name].commit, parsed[name].facts)
    cache = VectorCache(args.cache)
    widest = [t for p in parsed.values() for c in p.chunks for t in embedding_texts(c, ALL_WINDOWS)]
    todo = cache.missing(widest)
    t0 = time.perf_counter()
    for i in range(0, len(todo), 256):
        batch = todo[i:i + 256]
        cache.add(batch, embedder.embed_documents(batch))
        cache.save()
    embed_s = time.perf_counter() - t0
    tok = getattr(embedder, "_tok", None)

    def pieces(text: str) -> int:
        return len(tok.encode(text).ids) if tok else len(text) // 4

    table = []
    with ChunkStore.open(settings) as store:
        retriever = Retriever(store, embedder, sessions=sessions)
        for pol in policies():
            store.schema.reset()
            inputs = words = with_vector = chunks = 0
            for name, p in parsed.items():
                run_id, at = new_run_id(), utcnow()
                rows = []
                for c in p.chunks:
                    texts = embedding_texts(c, pol)
                    vec = None
                    if texts:
                        v = np.sum([cache.get(t) for t in texts], axis=0)
                        vec = (v / (np.linalg.norm(v) or 1.0)).tolist()
                        with_vector += 1
                    inputs += len(texts)
                    words += sum(pieces(t) for t in texts)
                    chunks += 1
                    rows.append((chunk_properties(c, repo=name, commit=p.commit, indexed_at=at, run_id=run_id), vec))
                store.data.write_chunks(rows)
                store.sources.save(SourceRecord.from_properties({"name": name, "kind": "git", "root": str(p.root), "commit": p.commit,
                                   "indexed_at": at, "model": embedder.model_name, "dimensions": 384,
                                   "files": p.summary.files_indexed, "chunks": len(p.chunks),
                                   "url_template": "", "skipped": {}}))
            row = {"policy": pol.name, "chunks": chunks, "chunks_with_vector": with_vector,
                   "embedder_inputs": inputs, "word_pieces": words}
            for g, qs in golden.items():
                for mode, alpha in (("vector", 1.0), ("hybrid", None)):
                    res = {q["id"]: [h.to_result() for h in retriever.search(
                        q["question"], top_k=10, repos=[q["repo"]], alpha=alpha).hits] for q in qs}
                    m = score_run(qs, res)
                    row[f"{g.stem}_{mode}_recall@5"] = m["symbol_recall@5"]
                    row[f"{g.stem}_{mode}_mrr@10"] = m["mrr@10"]
            table.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    keys = [k for k in table[0] if k.endswith(("recall@5", "mrr@10"))]
    best = {k: max(r[k] for r in table) for k in keys}
    base = table[0]
    ok = [r for r in table if all(r[k] >= base[k] - TOLERANCE for k in keys)]
    chosen = min(ok, key=lambda r: r["word_pieces"]) if ok else None
    near_best = [r["policy"] for r in table if all(r[k] >= best[k] - TOLERANCE for k in keys)]
    print(json.dumps({"golden": [str(g) for g in goldens], "repos": repos,
                      "embedder": getattr(embedder, "runtime", embedder.model_name),
                      "texts_embedded_now": len(todo), "seconds_embed": round(embed_s, 1),
                      "best": best, "tolerance": TOLERANCE, "within_tolerance_of_best": near_best,
                      "chosen": chosen["policy"] if chosen else None, "policies": table}))
    if tmp:
        EmbeddedWeaviate(Path(tmp.name)).stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
