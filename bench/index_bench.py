#!/usr/bin/env python3
"""Benchmark ``coderag index`` on one repository and print one JSON object.

Usage: python bench/index_bench.py REPO_PATH [--name NAME] [--sample N]

Uses WEAVIATE_URL if set, else a throw-away embedded Weaviate under a temporary
CODERAG_HOME (so the run starts from an empty index and every chunk is embedded).
Reports files, lines of code (non-blank lines of indexed files), chunks, seconds spent
parsing+chunking, embedding and writing, and peak RSS of this process in MiB.

Machines are shared and noisy, so the same run also measures the reference: plain
sentence-transformers with the embedding inputs used before the embedding policy (every
chunk, head plus all sub-windows) on a fixed random sample of ``--sample`` chunks (500)
of the same repository, then the configured embedder and policy on the same sample.
``ratio_run_vs_reference`` = the run's chunks/s (whole index, wall clock) over the
reference's chunks/s; ``ratio_embed_same_sample`` compares the two on the sample alone.
``load_average`` (1 min, before and after) says how busy the machine was.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--name", default=None)
    ap.add_argument("--sample", type=int, default=500, help="chunks of the reference sample (500)")
    args = ap.parse_args()
    tmp = None
    if not os.environ.get("WEAVIATE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="coderag-bench-")
        os.environ["CODERAG_HOME"] = tmp.name
    from indexer import ChunkStore, EmbeddedWeaviate, Settings, index_repository, make_embedder
    from indexer.sources import git

    settings = Settings.from_env()
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    embedder = make_embedder(settings)
    load_s = time.perf_counter() - t0
    try:
        with ChunkStore.open(settings) as store:
            summary = index_repository(args.repo, name=args.name, settings=settings, store=store,
                                       embedder=embedder)
        root = git.repo_root(args.repo)
        loc = 0
        for f, data in git.read_blobs(root, git.list_files(root, summary.commit)):
            if f.size_bytes <= settings.max_file_bytes and b"\0" not in data[:8192]:
                loc += sum(1 for ln in data.splitlines() if ln.strip())
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        ref = reference_throughput(args.repo, args.name, settings, embedder, args.sample)
        run_cps = summary.chunks / summary.seconds_total if summary.seconds_total else None
        print(json.dumps({
            "repo": summary.repo, "commit": summary.commit, "model": summary.model,
            "files_seen": summary.files_seen, "files_indexed": summary.files_indexed,
            "lines_of_text": loc, "chunks": summary.chunks, "skipped": dict(summary.skipped),
            "seconds_model_load": round(load_s, 2), "seconds_parse": round(summary.seconds_parse, 2),
            "seconds_embed": round(summary.seconds_embed, 2), "seconds_write": round(summary.seconds_write, 2),
            "seconds_total": round(summary.seconds_total, 2),
            "chunks_per_second": round(summary.chunks / summary.seconds_total, 1) if summary.seconds_total else None,
            "peak_rss_mib": round(peak_mib, 1),
            "runtime": getattr(embedder, "runtime", embedder.model_name),
            **ref,
            "ratio_run_vs_reference": round(run_cps / ref["reference_chunks_per_second"], 2) if run_cps else None,
            "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }))
    finally:
        if tmp:
            EmbeddedWeaviate(Path(tmp.name)).stop()
            tmp.cleanup()


def reference_throughput(repo: str, name: str | None, settings, embedder, n: int) -> dict:
    """Chunks/s of the reference (sentence-transformers, every chunk with all its
    sub-windows: the indexer before this issue) and of ``embedder`` with the current policy,
    on the same ``n`` chunks drawn with a fixed seed. Peak RSS above is taken before this."""
    import random

    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.embeddings.local import LocalEmbedder
    from indexer.pipeline import embed_chunks, parse_repository

    chunks = parse_repository(repo, name, settings).chunks
    sample = random.Random(0).sample(chunks, min(n, len(chunks)))
    reference = LocalEmbedder()
    t = time.perf_counter()
    embed_chunks(reference, sample, policy=ALL_WINDOWS)
    ref_s = time.perf_counter() - t
    t = time.perf_counter()
    embed_chunks(embedder, sample)
    new_s = time.perf_counter() - t
    return {"reference_sample_chunks": len(sample),
            "reference_chunks_per_second": round(len(sample) / ref_s, 2),
            "sample_chunks_per_second_now": round(len(sample) / new_s, 2),
            "ratio_embed_same_sample": round(ref_s / new_s, 2)}


if __name__ == "__main__":
    main()
