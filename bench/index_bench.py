#!/usr/bin/env python3
"""Benchmark ``coderag index`` on one repository and print one JSON object.

Usage: python bench/index_bench.py REPO_PATH [--name NAME] [--sample N] [--keyword WORD]
                                   [--models DIR]

Uses WEAVIATE_URL if set, else a throw-away embedded Weaviate under a temporary
CODERAG_HOME (so the run starts from an empty index: a first index, which is committed
keyword-ready and then gets its vectors, see indexer/pipeline.py). Reports files, lines
of text, chunks, the stage seconds (they overlap: parse, embed and write stream through
bounded queues), ``seconds_keyword_ready`` (the run's keyword-ready commit),
``seconds_first_keyword_hit`` (measured from outside: a second connection asks a BM25
query for ``--keyword`` every 0.5 s from the start of the run; the time of the first hit),
the most chunks the stages held at once, and peak RSS of this process in MiB (the
embedded Weaviate server is another process, reported apart as ``weaviate_peak_rss_mib``).

The ONNX export (and with ``CODERAG_EMBEDDING_PRECISION=int8`` its quantization) is made
once, in a subprocess (so torch never loads here), into
``--models`` (default ``~/.cache/coderag-bench-models``), which the temporary
CODERAG_HOME links to.

Machines are shared and noisy, so the same run also measures the reference: plain
sentence-transformers with the embedding inputs used before the measured defaults (every chunk, head
plus all sub-windows) on a fixed random sample of ``--sample`` chunks (500) of the same
repository, in a subprocess after the index (torch does not count against the indexer's
RSS), then the configured embedder and policy on the same sample in this process.
``ratio_run_vs_reference`` = the run's chunks/s (whole index until its vectors are
complete, wall clock) over the reference's chunks/s; ``ratio_embed_same_sample``
compares the two embedders on the sample alone. ``load_average`` (1 min, before and
after) says how busy the machine was.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("repo")
    ap.add_argument("--name", default=None)
    ap.add_argument("--sample", type=int, default=500, help="chunks of the reference sample (500)")
    ap.add_argument("--keyword", default="import", help="BM25 query polled during the run (import)")
    ap.add_argument("--models", default=str(Path.home() / ".cache" / "coderag-bench-models"),
                    help="persistent cache of the ONNX export")
    ap.add_argument("--reference", action="store_true", help=argparse.SUPPRESS)  # the subprocess
    args = ap.parse_args()
    if args.reference:
        print(json.dumps(reference_throughput(args.repo, args.name, args.sample)))
        return
    tmp = None
    if not os.environ.get("WEAVIATE_URL"):
        tmp = tempfile.TemporaryDirectory(prefix="coderag-bench-")
        os.environ["CODERAG_HOME"] = tmp.name
        models = Path(args.models)
        models.mkdir(parents=True, exist_ok=True)
        (Path(tmp.name) / "models").symlink_to(models)
    from common.settings import Settings
    from indexer import ChunkStore, EmbeddedWeaviate, index_repository, make_embedder
    from indexer.sources import git

    settings = Settings.from_env()
    export_s = ensure_export(settings)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    embedder = make_embedder(settings)
    load_s = time.perf_counter() - t0
    name = args.name or git.repo_root(args.repo).name
    try:
        with ChunkStore.open(settings) as store:
            watch = KeywordWatch(settings, name, args.keyword)
            watch.start()
            t_run = time.perf_counter()
            summary = index_repository(args.repo, name=args.name, settings=settings, store=store,
                                       embedder=embedder)
            wall = time.perf_counter() - t_run
            first_hit = watch.stop(t_run)
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        weaviate_mib = weaviate_peak_rss(settings)
        root = git.repo_root(args.repo)
        loc = 0
        for f, data in git.read_blobs(root, git.list_files(root, summary.commit)):
            if f.size_bytes <= settings.max_file_bytes and b"\0" not in data[:8192]:
                loc += sum(1 for ln in data.splitlines() if ln.strip())
        ref = json.loads(subprocess.run(
            [sys.executable, __file__, args.repo, "--reference", "--sample", str(args.sample)]
            + (["--name", args.name] if args.name else []), check=True, capture_output=True, text=True,
            env=dict(os.environ, PYTHONPATH=str(ROOT))).stdout.strip().splitlines()[-1])
        now = configured_on_sample(args.repo, args.name, settings, embedder, args.sample, ref)
        run_cps = summary.chunks / wall if wall else None
        print(json.dumps({
            "repo": summary.repo, "commit": summary.commit, "model": summary.model,
            "runtime": getattr(embedder, "runtime", embedder.model_name),
            "embedding_policy": summary_policy(settings), "precision": getattr(embedder, "precision", None),
            "files_seen": summary.files_seen, "files_indexed": summary.files_indexed,
            "lines_of_text": loc, "chunks": summary.chunks, "embedded": summary.embedded,
            "keyword_only": summary.keyword_only, "reused_vectors": summary.reused_vectors,
            "skipped": dict(summary.skipped),
            "seconds_onnx_export": export_s, "seconds_model_load": round(load_s, 2),
            "seconds_parse": round(summary.seconds_parse, 2), "seconds_graph": round(summary.seconds_graph, 2),
            "seconds_embed": round(summary.seconds_embed, 2), "seconds_write": round(summary.seconds_write, 2),
            "seconds_keyword_ready": round(summary.seconds_keyword_ready, 2)
            if summary.seconds_keyword_ready is not None else None,
            "seconds_first_keyword_hit": round(first_hit, 2) if first_hit is not None else None,
            "seconds_total": round(wall, 2),
            "chunks_per_second": round(run_cps, 1) if run_cps else None,
            "max_chunks_in_flight": summary.max_chunks_in_flight,
            "peak_rss_mib": round(peak_mib, 1), "weaviate_peak_rss_mib": weaviate_mib,
            **ref, **now,
            "ratio_run_vs_reference": round(run_cps / ref["reference_chunks_per_second"], 2) if run_cps else None,
            "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
        }))
    finally:
        if tmp:
            EmbeddedWeaviate(Path(tmp.name)).stop()
            tmp.cleanup()


def summary_policy(settings) -> str:
    from indexer.embedding_policy import named

    return named(settings.embedding_policy).name


def ensure_export(settings) -> float | None:
    """Make the ONNX export in a subprocess when it is not cached; seconds it took (None: cached)."""
    if settings.voyage_api_key or settings.embedding_runtime == "sentence-transformers":
        return None
    from indexer.embeddings.onnx import export_path

    path = export_path(settings.home)
    final = export_path(settings.home, settings.embedding_precision)
    if final.exists():
        return None
    t = time.perf_counter()
    code = ("import sys; from pathlib import Path; from indexer.embeddings.onnx import export_model, quantize_model; "
            "p = export_model(Path(sys.argv[1])); q = Path(sys.argv[2]); q == p or quantize_model(p, q)")
    subprocess.run([sys.executable, "-c", code, str(path), str(final)], check=True,
                   env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return round(time.perf_counter() - t, 1)


class KeywordWatch:
    """Polls ``keyword_search(word)`` on its own connection until the first hit."""

    def __init__(self, settings, repo: str, word: str):
        self.settings, self.repo, self.word = settings, repo, word
        self.hit_at: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _loop(self) -> None:
        from indexer import ChunkStore

        with ChunkStore.open(self.settings) as store:
            while not self._stop.is_set():
                try:
                    if store.query.keyword(self.word, limit=1, repos=[self.repo], include_vector=False):
                        self.hit_at = time.perf_counter()
                        return
                except Exception:  # noqa: BLE001 - not committed yet / busy: try again
                    pass
                self._stop.wait(0.5)

    def stop(self, t0: float) -> float | None:
        self._stop.set()
        self._thread.join(timeout=30)
        return None if self.hit_at is None else self.hit_at - t0


def weaviate_peak_rss(settings) -> float | None:
    """VmHWM of the embedded Weaviate server process (MiB), when it runs here."""
    try:
        from indexer.store.weaviate_server import EmbeddedWeaviate

        info = EmbeddedWeaviate(settings.home, settings.weaviate_binary).running()
        pid = getattr(info, "pid", None)
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except Exception:  # noqa: BLE001 - informative only
        return None
    return None


def _sample(repo: str, name: str | None, settings, n: int):
    import random

    from indexer.sources.repository import parse_repository

    chunks = parse_repository(repo, name, settings).chunks
    return random.Random(0).sample(chunks, min(n, len(chunks)))


def reference_throughput(repo: str, name: str | None, n: int) -> dict:
    """(In the subprocess.) Chunks/s of the reference, sentence-transformers with every
    chunk and all its sub-windows (the indexer before the measured defaults), on ``n`` chunks drawn
    with a fixed seed."""
    from common.settings import Settings
    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.embeddings.local import LocalEmbedder
    from indexer.documents import embed_chunks

    sample = _sample(repo, name, Settings.from_env(), n)
    reference = LocalEmbedder()
    embed_chunks(reference, sample[:8], policy=ALL_WINDOWS)  # warm-up (first call allocations)
    t = time.perf_counter()
    embed_chunks(reference, sample, policy=ALL_WINDOWS)
    ref_s = time.perf_counter() - t
    return {"reference_sample_chunks": len(sample), "reference_seconds": round(ref_s, 2),
            "reference_chunks_per_second": round(len(sample) / ref_s, 2)}


def configured_on_sample(repo: str, name: str | None, settings, embedder, n: int, ref: dict) -> dict:
    """The configured embedder and policy on the reference's sample (same seed)."""
    from indexer.documents import embed_chunks

    sample = _sample(repo, name, settings, n)
    t = time.perf_counter()
    embed_chunks(embedder, sample)
    new_s = time.perf_counter() - t
    return {"sample_chunks_per_second_now": round(len(sample) / new_s, 2),
            "ratio_embed_same_sample": round(ref["reference_seconds"] / new_s, 2)}


if __name__ == "__main__":
    main()
