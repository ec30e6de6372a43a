#!/usr/bin/env python3
"""Benchmark ``coderag index`` on one repository and print one JSON object.

Usage: python bench/index_bench.py REPO_PATH [--name NAME]

Uses WEAVIATE_URL if set, else a throw-away embedded Weaviate under a temporary
CODERAG_HOME (so the run starts from an empty index and every chunk is embedded).
Reports files, lines of code (non-blank lines of indexed files), chunks, seconds spent
parsing+chunking, embedding and writing, and peak RSS of this process in MiB.
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
    args = ap.parse_args()
    tmp = None
    if not os.environ.get("WEAVIATE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="coderag-bench-")
        os.environ["CODERAG_HOME"] = tmp.name
    from indexer import ChunkStore, EmbeddedWeaviate, Settings, index_repository, make_embedder
    from indexer.sources import git

    settings = Settings.from_env()
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
        print(json.dumps({
            "repo": summary.repo, "commit": summary.commit, "model": summary.model,
            "files_seen": summary.files_seen, "files_indexed": summary.files_indexed,
            "lines_of_text": loc, "chunks": summary.chunks, "skipped": dict(summary.skipped),
            "seconds_model_load": round(load_s, 2), "seconds_parse": round(summary.seconds_parse, 2),
            "seconds_embed": round(summary.seconds_embed, 2), "seconds_write": round(summary.seconds_write, 2),
            "seconds_total": round(summary.seconds_total, 2),
            "chunks_per_second": round(summary.chunks / summary.seconds_total, 1) if summary.seconds_total else None,
            "peak_rss_mib": round(peak_mib, 1),
        }))
    finally:
        if tmp:
            EmbeddedWeaviate(Path(tmp.name)).stop()
            tmp.cleanup()


if __name__ == "__main__":
    main()
