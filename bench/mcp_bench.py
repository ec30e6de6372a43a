#!/usr/bin/env python3
"""MCP ``search`` latency over streamable HTTP, side by side with ``coderag search --batch``.

Usage: python bench/mcp_bench.py --repo NAME=PATH[xCOPIES] [--repo ...] [--home DIR]
       [--questions 120] [--warmup 10] [--min-chunks 10000] [--vectors hashed|model]

Builds (or reuses) an index under ``--home`` exactly as ``bench/search_bench.py`` does
(``--vectors hashed`` by default: real chunks, call graph and HNSW index, feature-hashed
vectors, so this measures latency, never quality), then in one run:

1. starts a real ``coderag serve`` (bot role, MCP only, one bearer token) and drives
   ``/mcp`` with the SDK's streamable HTTP client: ``--warmup`` searches unmeasured, then
   every question once (``top_k`` 10, all repositories), timing each ``tools/call``
   round trip as the client sees it;
2. runs ``coderag search --batch FILE --json --top-k 10`` over the same questions and
   times the gap between consecutive output lines (a question's search; the first line,
   which includes the process start-up, is reported apart as ``first_line_s``).

Prints one JSON object: chunks, questions, ``mcp_http_ms`` and ``cli_batch_ms``
(p50/p95/p99/max), ``first_line_s`` of the CLI, their p50 ratio, and the load average.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from search_bench import build_all, percentiles, questions  # noqa: E402

TOKEN = "bench-token-0123456789abcdef"


def _serve(env: dict, port: int, log_path: Path) -> subprocess.Popen:
    import httpx

    with open(log_path, "w") as log:  # the child keeps its own descriptor
        proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], env=env,
                                stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"coderag serve exited {proc.returncode}; see {log_path}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit("coderag serve did not come up within 300 s")


def mcp_times(url: str, qs: list[str], warmup: int) -> list[float]:
    """Milliseconds per ``search`` call over one MCP session (after ``warmup`` calls)."""
    import anyio
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async def main() -> list[float]:
        out = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=300) as http:
            async with streamable_http_client(url, http_client=http) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                for q in qs[:warmup]:
                    await session.call_tool("search", {"query": q, "top_k": 10})
                for q in qs:
                    t0 = time.perf_counter()
                    res = await session.call_tool("search", {"query": q, "top_k": 10})
                    out.append((time.perf_counter() - t0) * 1000)
                    if res.is_error:
                        raise SystemExit(f"search failed: {res.content[0].text}")
        return out

    return anyio.run(main)


def cli_times(env: dict, batch: Path) -> tuple[list[float], float]:
    """Gaps (ms) between consecutive result lines of ``coderag search --batch``, and the
    seconds to the first line (start-up plus one search)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "search", "--batch", str(batch), "--json",
                             "--top-k", "10"], env=env, stdout=subprocess.PIPE, text=True)
    stamps = []
    with proc.stdout:
        for _line in proc.stdout:
            stamps.append(time.perf_counter())
    if proc.wait() != 0:
        raise SystemExit(f"coderag search --batch exited {proc.returncode}")
    gaps = [(b - a) * 1000 for a, b in zip(stamps, stamps[1:])]
    return gaps, stamps[0] - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", action="append", required=True, help="NAME=PATH[xCOPIES] (repeatable)")
    ap.add_argument("--home", type=Path, default=None, help="CODERAG_HOME to build or reuse")
    ap.add_argument("--questions", type=int, default=120)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--min-chunks", type=int, default=10_000)
    ap.add_argument("--vectors", choices=["hashed", "model"], default="hashed")
    args = ap.parse_args()
    tmp = None
    if args.home:
        args.home.mkdir(parents=True, exist_ok=True)
        os.environ["CODERAG_HOME"] = str(args.home)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="coderag-mcp-bench-")
        os.environ["CODERAG_HOME"] = tmp.name
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, EmbeddedWeaviate, make_embedder
    from indexer.store.weaviate_server import free_ports

    settings = Settings.from_env()
    embedder = make_embedder(settings)
    sessions = open_database(settings)
    with ChunkStore.open(settings) as store:
        built = build_all(args.repo, store, sessions, settings, embedder, args.vectors)
        chunks = store.query.count()
    if chunks < args.min_chunks:
        print(f"warning: the index has {chunks} chunks, fewer than --min-chunks {args.min_chunks}", file=sys.stderr)
    qs = questions(sessions, [b["repo"] for b in built], args.questions)
    work = Path(tempfile.mkdtemp(prefix="coderag-mcp-bench-run-"))
    batch = work / "questions.jsonl"
    batch.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(qs)))
    env = dict(os.environ, CODERAG_ROLE="bot",
               CODERAG_MCP_TOKENS=json.dumps({"bench": {"token": TOKEN, "sources": ["*"]}}))
    (port,) = free_ports(1)
    load_before = os.getloadavg()[0]
    server = _serve(env, port, work / "serve.log")
    try:
        mcp_ms = mcp_times(f"http://127.0.0.1:{port}/mcp", qs, args.warmup)
    finally:
        server.terminate()
        server.wait(timeout=60)
    cli_ms, first_line_s = cli_times(dict(os.environ), batch)
    mcp_p, cli_p = percentiles(mcp_ms), percentiles(cli_ms)
    print(json.dumps({
        "chunks": chunks, "repos": built, "questions": len(qs), "vectors": args.vectors,
        "mcp_http_ms": mcp_p, "cli_batch_ms": cli_p, "cli_first_line_s": round(first_line_s, 2),
        "p50_ratio_mcp_to_cli": round(mcp_p["p50"] / cli_p["p50"], 2) if cli_p["p50"] else None,
        "load_average": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }))
    if tmp:
        EmbeddedWeaviate(Path(tmp.name)).stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
