#!/usr/bin/env python3
"""Push-to-searchable latency of incremental re-indexing, and a full re-index for comparison.

Usage: python bench/freshness_bench.py [--source /work/scratch/sqlalchemy] [--pushes 10] [--work DIR]

``--work DIR`` keeps the clone, Weaviate data and SQLite there, so a rerun skips the cold
full index (its figures are then ``null``). On 2 shared cores the cold index of
sqlalchemy (~930 files, ~31k chunks, ~46k MiniLM inputs) takes most of an hour.

Clones SOURCE (read-only) into a temp dir to commit to, starts a throw-away Weaviate
(``weaviate-server`` child process) and SQLite under a temp CODERAG_HOME (unless
WEAVIATE_URL is set), serves the webhook route with uvicorn in a thread, then:

1. a signed push webhook for the current head -> full index (cold, every chunk embedded);
2. ``coderag sync repo --full`` equivalent with the embedding cache warm (what a
   force-push costs);
3. N one-file commits (a new uniquely named function appended to a different module each
   time), each followed by a signed ``POST /webhooks/github``; the clock runs from the
   POST until the Retriever (``coderag search``, with graph expansion) running in a
   separate process, as the bot does, returns the new function
   (``same_process_search_seconds``: the same check from the worker's own process, where
   the CPU-bound call-graph update competes for the GIL).

Prints one JSON object: latencies (s) per push, p50/p95/max, the worker's own run time
per push, and the full re-index times. Embedder: the configured one (offline MiniLM
without VOYAGE_API_KEY).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

SECRET = "bench-secret"
GIT_ID = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    k = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[k]


def _searcher(conn) -> None:
    """Child process: the read side (``coderag search``'s Retriever, with graph expansion),
    as the bot runs it in its own process. For each symbol name received, poll until a
    hit defines it, then send back the wall-clock time (``time.time()``) it was found."""
    from bot.retrieval.retriever import Retriever
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, make_embedder

    settings = Settings.from_env()
    store = ChunkStore.open(settings)
    retriever = Retriever(store, make_embedder(settings), sessions=open_database(settings))
    retriever.search("warm up", top_k=5, repos=["bench"])
    conn.send("ready")
    while True:
        name = conn.recv()
        if name is None:
            break
        deadline = time.time() + 300
        while time.time() < deadline:
            if any(h.chunk.symbol == name for h in retriever.search(name, top_k=5, repos=["bench"]).hits):
                break
            time.sleep(0.05)
        conn.send(time.time())
    store.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default="/work/scratch/sqlalchemy")
    ap.add_argument("--pushes", type=int, default=10)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one push to be searchable")
    ap.add_argument("--work", default=None, help="persistent work folder (default: a new temp folder)")
    args = ap.parse_args()

    tmp = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="coderag-fresh-bench-"))
    tmp.mkdir(parents=True, exist_ok=True)
    upstream = tmp / "upstream"
    if not upstream.exists():
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", args.source, str(upstream)], check=True)
    branch = _git(upstream, "rev-parse", "--abbrev-ref", "HEAD").strip()
    os.environ["CODERAG_HOME"] = str(tmp / "home")
    os.environ.pop("CODERAG_DATABASE_URL", None)
    os.environ["CODERAG_REPOS"] = json.dumps([{"name": "bench", "url": str(upstream), "branch": branch}])
    os.environ["CODERAG_GITHUB_WEBHOOK_SECRET"] = SECRET
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    proc = None
    if not os.environ.get("WEAVIATE_URL"):
        from indexer.store.weaviate_server import find_binary, start_server

        proc, info = start_server(find_binary(os.environ.get("WEAVIATE_BINARY")), tmp / "weaviate",
                                  tmp / "weaviate.log", detach=False)
        os.environ["WEAVIATE_URL"] = f"http://127.0.0.1:{info.http_port}"
        os.environ["WEAVIATE_GRPC_PORT"] = str(info.grpc_port)
    try:
        print(json.dumps(run(upstream, branch, args)), flush=True)
    finally:
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)


def run(upstream: Path, branch: str, args) -> dict:
    import httpx

    from bot.retrieval.retriever import Retriever
    from bot.server import ServerContext, build_asgi
    from helpers.freshness import wait_idle
    from helpers.http_server import BackgroundServer
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, make_embedder
    from indexer.sources.repository import sync_repo
    from indexer.freshness.runtime import FreshnessRuntime
    from indexer.freshness.webhooks import github_signature

    settings = Settings.from_env()
    sessions = open_database(settings)
    store = ChunkStore.open(settings)
    embedder = make_embedder(settings)
    from common.settings import load

    runtime = FreshnessRuntime.build(load().freshness, settings, sessions=sessions, embedder=embedder,
                                     store=store)
    ctx = ServerContext(service=None, sessions=sessions, settings=settings, store=store, freshness=runtime)
    server = BackgroundServer(build_asgi(ctx)).start()
    retriever = Retriever(store, embedder, sessions=sessions)

    def post() -> None:
        body = json.dumps({"ref": f"refs/heads/{branch}", "repository": {"name": "bench"}}).encode()
        r = httpx.post(f"{server.url}/webhooks/github", content=body, timeout=30,
                       headers={"X-GitHub-Event": "push", "X-Hub-Signature-256": github_signature(SECRET, body)})
        assert r.status_code == 202, r.text

    def note(**kv) -> None:
        print(json.dumps(kv), file=sys.stderr, flush=True)

    try:
        t0 = time.perf_counter()
        post()
        while not wait_idle(runtime.workers, "bench", 600):  # the cold index may take an hour
            note(phase="full_cold", waiting_seconds=round(time.perf_counter() - t0))
        full_cold = time.perf_counter() - t0
        first = runtime.workers.stats("bench")["last"]
        assert first is not None and first.mode in ("full", "incremental", "noop"), first
        if first.mode != "full":  # --work rerun: the index already existed
            full_cold, first = None, None
        note(phase="full_cold", seconds=full_cold, embedded=first.embedded if first else None)
        t0 = time.perf_counter()
        warm = sync_repo(runtime.ctx, runtime.config.repo("bench"), force_full=True)
        full_warm = time.perf_counter() - t0
        note(phase="full_warm_cache", seconds=round(full_warm, 2), embedded=warm.embedded)

        files = sorted(p for p in _git(upstream, "ls-files", "lib/sqlalchemy").split("\n")
                       if p.endswith(".py") and "/testing/" not in p)[:: 7] or \
            [p for p in _git(upstream, "ls-files").split("\n") if p.endswith(".py")]
        # The read side runs in its own process (as the bot does with CODERAG_ROLE=bot), so
        # the worker's CPU-bound graph update does not hold its GIL.
        import multiprocessing as mp

        parent, child = mp.get_context("spawn").Pipe()
        searcher = mp.get_context("spawn").Process(target=_searcher, args=(child,), daemon=True)
        searcher.start()
        assert parent.recv() == "ready"
        latencies, worker_s, embedded, inproc = [], [], [], []
        for n in range(args.pushes):
            name = f"freshness_probe_{n}_{uuid.uuid4().hex[:6]}"
            rel = files[n % len(files)]
            with open(upstream / rel, "a", encoding="utf-8") as fh:
                fh.write(f"\n\ndef {name}(value):\n    \"\"\"Benchmark probe {n}.\"\"\"\n    return value\n")
            _git(upstream, "commit", "-q", "-am", f"probe {n}")
            t_post = time.time()
            post()
            parent.send(name)
            if not parent.poll(args.timeout):
                raise SystemExit(f"push {n} not searchable after {args.timeout}s")
            latencies.append(round(parent.recv() - t_post, 3))
            # Same check from this (the worker's) process, for comparison.
            while not any(h.chunk.symbol == name for h in retriever.search(name, top_k=5, repos=["bench"]).hits):
                time.sleep(0.05)
            inproc.append(round(time.time() - t_post, 3))
            wait_idle(runtime.workers, "bench", 120)
            last = runtime.workers.stats("bench")["last"]
            worker_s.append(round(last.seconds, 3))
            embedded.append(last.embedded)
            note(phase="push", n=n, seconds=latencies[-1], same_process=inproc[-1], worker_seconds=worker_s[-1],
                 embedded=last.embedded)
        src = next(s for s in store.sources.all() if s.name == "bench")
        return {
            "repo": str(args.source), "files": src.files, "chunks": src.chunks, "model": embedder.model_name,
            "full_reindex_cold_seconds": round(full_cold, 2) if full_cold else None,
            "full_reindex_cold_embedded": first.embedded if first else None,
            "full_reindex_warm_cache_seconds": round(full_warm, 2), "full_reindex_warm_embedded": warm.embedded,
            "pushes": len(latencies), "push_to_searchable_seconds": latencies,
            "p50_seconds": round(statistics.median(latencies), 3), "p95_seconds": round(_pct(latencies, 0.95), 3),
            "max_seconds": max(latencies), "worker_run_seconds": worker_s, "embedded_per_push": embedded,
            "same_process_search_seconds": inproc,
            "goal_p95_seconds": 5.0, "goal_met": _pct(latencies, 0.95) <= 5.0,
        }
    finally:
        try:
            parent.send(None)
        except Exception:  # noqa: BLE001 - the searcher may not have started
            pass
        server.stop()
        runtime.workers.stop()
        store.close()


if __name__ == "__main__":
    main()
