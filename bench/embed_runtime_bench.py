#!/usr/bin/env python3
"""Side-by-side throughput and agreement of the local embedding runtimes; prints one JSON object.

Usage: python bench/embed_runtime_bench.py REPO_PATH [--sample N] [--rounds R]

Draws a fixed random sample (seed 0) of ``--sample`` chunks (300) of the repository,
builds their embedder inputs under the ALL_WINDOWS policy (head plus every sub-window:
the reference workload of the indexing speed work) and embeds them, in one process and one run, with:

- ``reference``: sentence-transformers (``LocalEmbedder``);
- ``onnx_fp32``: the ONNX Runtime export (``OnnxEmbedder(precision="fp32")``);
- ``onnx_int8``: the same graph with int8 weights (``OnnxEmbedder(precision="int8")``,
  dynamic quantization, see ``indexer/embeddings/onnx.py``).

The runtimes take turns for ``--rounds`` rounds (3), so a burst of load on the shared
machine hits all of them; each figure is the median round. Reports inputs, word pieces,
seconds, inputs/s and word pieces/s per runtime, the speed-up over the reference measured
in the same run, and the cosine of each runtime's vectors to the reference's (min, p01,
mean). ``load_average`` says how busy the machine was.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--sample", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--home", default=None, help="CODERAG_HOME holding the ONNX exports (default: a temporary one)")
    args = ap.parse_args()
    home = args.home or tempfile.mkdtemp(prefix="coderag-embed-bench-")
    os.environ["CODERAG_HOME"] = home

    import random

    import numpy as np

    from common.settings import Settings
    from indexer.documents import embedding_texts
    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.embeddings.local import LocalEmbedder
    from indexer.embeddings.onnx import OnnxEmbedder
    from indexer.sources.repository import parse_repository

    settings = Settings.from_env()
    chunks = parse_repository(args.repo, None, settings).chunks
    sample = random.Random(0).sample(chunks, min(args.sample, len(chunks)))
    texts = [t for c in sample for t in embedding_texts(c, ALL_WINDOWS)]
    load_before = os.getloadavg()[0]
    runtimes = {"reference": LocalEmbedder(),
                "onnx_fp32": OnnxEmbedder(Path(home), precision="fp32"),
                "onnx_int8": OnnxEmbedder(Path(home), precision="int8")}
    pieces = sum(len(e.ids) for e in runtimes["onnx_fp32"]._tok.encode_batch(texts))
    for emb in runtimes.values():
        emb.embed_documents(texts[:16])  # warm-up: first-call allocations
    seconds: dict[str, list[float]] = {k: [] for k in runtimes}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(args.rounds):
        for name, emb in runtimes.items():
            t = time.perf_counter()
            v = emb.embed_documents(texts)
            seconds[name].append(time.perf_counter() - t)
            vectors[name] = np.asarray(v, dtype=np.float32)
    ref_s = statistics.median(seconds["reference"])
    out: dict = {"repo": args.repo, "sample_chunks": len(sample), "inputs": len(texts),
                 "word_pieces": pieces, "rounds": args.rounds, "runtimes": {}}
    for name in runtimes:
        s = statistics.median(seconds[name])
        cos = np.sum(vectors[name] * vectors["reference"], axis=1)
        out["runtimes"][name] = {
            "seconds": round(s, 2), "inputs_per_second": round(len(texts) / s, 1),
            "word_pieces_per_second": round(pieces / s), "speedup_vs_reference": round(ref_s / s, 2),
            "cosine_to_reference": {"min": round(float(cos.min()), 4),
                                    "p01": round(float(np.percentile(cos, 1)), 4),
                                    "mean": round(float(cos.mean()), 4)}}
    out["load_average"] = [round(load_before, 1), round(os.getloadavg()[0], 1)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
