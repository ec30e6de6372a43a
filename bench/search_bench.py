#!/usr/bin/env python3
"""Warm search latency per stage over a large index (several repositories together).

Usage: python bench/search_bench.py --repo NAME=PATH[xCOPIES] [--repo ...] [--home DIR]
       [--questions 240] [--vectors hashed|model] [--min-chunks 100000] [--warmup 30]

``NAME=PATHx3`` indexes the repository three times, as NAME, NAME-copy2 and NAME-copy3
(parsed once; a cheap way to reach 100k+ chunks with few real repositories).

Builds the index under ``--home`` (a ``CODERAG_HOME``; default a temporary folder), or
reuses it when every repository is already indexed there at the same commit: chunks in
the embedded Weaviate (``WEAVIATE_URL`` if set) and the call graph in SQLite, as
``coderag index`` writes them. ``--vectors model`` embeds chunks with the configured
embedder (hours for 100k+ chunks on a shared 2-core machine); ``--vectors hashed`` (the
default) gives every chunk a 384-float feature-hashing vector of its embedding text
instead: the index has the same size, shape and HNSW graph cost, but vector similarity
carries no meaning, so this measures latency, never quality. Questions are always
embedded by the configured embedder (the ``embed`` stage is real).

Questions: those of ``/work/shared/eval/dev.jsonl`` whose repo is indexed, then questions
generated from random definitions of the stored call graph (fixed seed): "how does X
work", "where is X defined", and one in four an impact question ("what calls X?"), which
also expands to callers. The first ``--warmup`` questions run once unmeasured (the bot is
a long-running process), then every question once measured, over all repositories (no
repo filter).

Prints one JSON object: chunks, edges, questions, per stage p50/p95/p99 in ms (stages of
``bot.retrieval.Retriever.search``: checks, analyze, embed, hybrid, links (the call-graph
edges among the top candidates, for the ranking signal call_hub), rank, graph, total)
and the load average before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import tempfile
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

DIMENSIONS = 384  # MiniLM's, so the HNSW index has the size of a real one
STAGES = ("checks", "analyze", "embed", "hybrid", "links", "rank", "graph", "total")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")


def hashed_vector(text: str) -> list[float]:
    """Signed feature hashing of the words of ``text`` (crc32) into 384 floats, L2-normalised."""
    v = [0.0] * DIMENSIONS
    for w in _WORD.findall(text.lower()):
        h = zlib.crc32(w.encode())
        v[h % DIMENSIONS] += 1.0 if (h >> 16) & 1 else -1.0
    norm = sum(x * x for x in v) ** 0.5 or 1.0
    return [x / norm for x in v]


def percentiles(values: list[float]) -> dict:
    """p50/p95/p99 (nearest rank) and max of ``values``, rounded to 0.1 ms."""
    s = sorted(values)

    def at(q: float) -> float:
        return round(s[min(len(s) - 1, max(0, int(round(q * len(s) + 0.5)) - 1))], 1)

    return {"p50": at(0.50), "p95": at(0.95), "p99": at(0.99), "max": round(s[-1], 1)}


def build(store, sessions, settings, embedder, name: str, path: str, vectors: str, parsed=None) -> dict:
    """Index one repository unless it is already there at its HEAD commit; returns a
    summary dict (with ``parsed``: the parse, reused for copies)."""
    from indexer.documents import chunk_properties, embedding_text
    from indexer.graph.sql_store import save_repo_graph
    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.documents import embed_chunks
    from indexer.sources.repository import parse_repository
    from indexer.sources import git
    from indexer.store.weaviate_store import new_run_id, utcnow
    from indexer.models import SourceRecord

    commit = git.head_commit(git.repo_root(path))
    known = {s.name: s.to_dict() for s in store.sources.all()}
    if known.get(name, {}).get("commit") == commit:
        return {"repo": name, "chunks": known[name].get("chunks"), "reused": True, "parsed": parsed}
    t0 = time.perf_counter()
    parsed = parsed or parse_repository(path, name, settings)
    edges = save_repo_graph(sessions, name, parsed.commit, parsed.facts)
    run_id, at = new_run_id(), utcnow()

    def rows():
        for start in range(0, len(parsed.chunks), 256):
            part = parsed.chunks[start:start + 256]
            vecs = (embed_chunks(embedder, part, ALL_WINDOWS) if vectors == "model"
                    else [hashed_vector(f"{name} {embedding_text(c)}") for c in part])
            for c, v in zip(part, vecs):
                yield chunk_properties(c, repo=name, commit=parsed.commit, indexed_at=at, run_id=run_id), v

    store.data.write_chunks(rows())
    store.data.delete_stale(name, run_id)
    store.sources.save(SourceRecord.from_properties({"name": name, "kind": "git", "root": str(parsed.root), "commit": parsed.commit,
                       "indexed_at": at, "model": embedder.model_name, "dimensions": DIMENSIONS,
                       "files": parsed.summary.files_indexed, "chunks": len(parsed.chunks),
                       "url_template": "", "skipped": {}, }))
    return {"repo": name, "chunks": len(parsed.chunks), "edges": edges, "reused": False,
            "seconds": round(time.perf_counter() - t0, 1), "parsed": parsed}


def build_all(specs: list[str], store, sessions, settings, embedder, vectors: str) -> list[dict]:
    """:func:`build` for each ``NAME=PATH[xCOPIES]`` spec (copies indexed as ``NAME-copyK``,
    parsed once); returns the summaries (also printed to stderr as they come)."""
    built = []
    for spec in specs:
        name, _, path = spec.partition("=")
        copies = 1
        if re.search(r"x\d+$", path) and not Path(path).exists():
            path, copies = path.rsplit("x", 1)[0], int(path.rsplit("x", 1)[1])
        parsed = None
        for k in range(1, copies + 1):
            b = build(store, sessions, settings, embedder, name if k == 1 else f"{name}-copy{k}", path, vectors,
                      parsed)
            parsed = b.pop("parsed")
            built.append(b)
            print(json.dumps(b), file=sys.stderr, flush=True)
    return built


def questions(sessions, repos: list[str], n: int) -> list[str]:
    """Dev-set questions on the indexed repos, then generated ones up to ``n``."""
    from sqlalchemy import select

    from indexer.graph.sql_models import CodeDefinition

    out = []
    dev = Path("/work/shared/eval/dev.jsonl")
    if dev.exists():
        out += [q["question"] for q in map(json.loads, dev.read_text().splitlines()) if q.get("repo") in repos]
    with sessions() as s:
        defs = s.execute(select(CodeDefinition.symbol, CodeDefinition.name)
                         .where(CodeDefinition.repo.in_(repos), CodeDefinition.kind.in_(["function", "method"]))).all()
    rng = random.Random(0)
    templates = ["How does {sym} work?", "Where is {name} defined and what does it return?",
                 "What happens when {name} gets an empty input?", "What calls {name}? What breaks if we change it?"]
    i = 0
    while len(out) < n and defs:
        sym, name = rng.choice(defs)
        if name.startswith("__"):
            continue
        out.append(templates[i % len(templates)].format(sym=sym, name=name))
        i += 1
    return out[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH (repeatable)")
    ap.add_argument("--home", type=Path, default=None, help="CODERAG_HOME to build or reuse")
    ap.add_argument("--questions", type=int, default=240)
    ap.add_argument("--vectors", choices=["hashed", "model"], default="hashed")
    ap.add_argument("--min-chunks", type=int, default=100_000)
    ap.add_argument("--warmup", type=int, default=30, help="questions run unmeasured first (30)")
    args = ap.parse_args()
    tmp = None
    if args.home:
        args.home.mkdir(parents=True, exist_ok=True)
        os.environ["CODERAG_HOME"] = str(args.home)
    elif not os.environ.get("WEAVIATE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="coderag-search-bench-")
        os.environ["CODERAG_HOME"] = tmp.name
    from bot.retrieval.retriever import Retriever
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, EmbeddedWeaviate, make_embedder

    settings = Settings.from_env()
    embedder = make_embedder(settings)
    sessions = open_database(settings)
    load_before = os.getloadavg()[0]
    try:
        with ChunkStore.open(settings) as store:
            built = build_all(args.repo, store, sessions, settings, embedder, args.vectors)
            chunks = store.query.count()
            if chunks < args.min_chunks:
                print(f"warning: the index has {chunks} chunks, fewer than --min-chunks {args.min_chunks}",
                      file=sys.stderr)
            qs = questions(sessions, [b["repo"] for b in built], args.questions)
            retriever = Retriever(store, embedder, sessions=sessions)
            for q in qs[:args.warmup]:  # warm-up: caches, connections, the ONNX session
                retriever.search(q, top_k=10)
            times: dict[str, list[float]] = {k: [] for k in STAGES}
            for q in qs:
                res = retriever.search(q, top_k=10)
                for k in STAGES:
                    times[k].append(res.timings[k])
        print(json.dumps({
            "chunks": chunks, "repos": built, "questions": len(qs), "vectors": args.vectors,
            "runtime": getattr(embedder, "runtime", embedder.model_name),
            "stages_ms": {k: percentiles(v) for k, v in times.items()},
            "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }))
    finally:
        if tmp:
            EmbeddedWeaviate(Path(tmp.name)).stop()
            tmp.cleanup()


if __name__ == "__main__":
    main()
