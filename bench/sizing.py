#!/usr/bin/env python3
"""Sizing figures measured on this machine; prints one JSON object (the manual's "Sizing" page).

Usage: python bench/sizing.py [--repo PATH] [--chunks 20000] [--dims 384,1024]
                              [--queries 2000] [--duration 20] [--model-delay 0.5] [--no-postgres]
       python bench/sizing.py --table bench/results/sizing.json   # the sizing tables of docs/operating/sizing.md

1. **Weaviate memory and disk per 10k chunks**, for each embedding dimension in ``--dims``
   (384: the local all-MiniLM-L6-v2; 1024: voyage-code-3). A fresh ``weaviate-server``
   (``WEAVIATE_BINARY``) gets ``--chunks`` chunks made of ``--repo``'s real chunks (this
   repository by default: text, properties, BM25 index as ``coderag index`` writes them) copied
   under distinct repo names. Vectors: the local model's real vectors (plus 1% noise per copy)
   at its dimension, random unit vectors at the others. Memory: the server's RSS at rest (after
   a clean restart on the loaded data and a few searches) minus the empty server's, plus RSS
   samples and the peak while loading (write buffers); disk: its data folder after a clean
   shutdown minus the empty one's.
2. **SQL per 10k chunks of call graph**: rows and bytes the call graph of ``--repo`` takes
   (``save_repo_graph``, as ``coderag index``), scaled by that repo's chunk count; SQLite and
   PostgreSQL (``CODERAG_TEST_POSTGRES_URL`` or a throw-away server from
   ``scripts/start_postgres.sh``; ``--no-postgres`` skips it).
3. **SQL per 10k logged queries**: ``--queries`` records through ``QueryLog.record`` (1 query
   row + 8 retrieved-chunk rows each, a 1.2 kB answer), scaled to 10k.
4. **One bot replica's sustained questions/s with p95 time-to-answer under 2 s**: the real Slack
   HTTP app (Bolt, ``CODERAG_SLACK_WORKERS`` threads, signed ``app_mention`` events) over the
   real ``AnswerService`` (MiniLM query embedding, hybrid search in the 384-dim index above, the
   query log in SQLite) with a **stub model**: a local HTTP stand-in for the Claude Messages API
   (``ANTHROPIC_BASE_URL``) that answers after ``--model-delay`` seconds. Slack's Web API is the
   tests' fake. Open-loop load at a fixed rate for ``--duration`` s per step; the rate doubles
   from 0.25/s until p95 (unanswered count as late) exceeds 2 s, then 3 bisection steps.
   Time to answer = signed event sent -> answer's ``chat.postMessage`` received.

Every figure is for this machine (``machine`` in the output: CPUs and load average, which other
work on a shared machine inflates).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

P95_BUDGET_S = 2.0  # the target: p95 time to answer under 2 s
MIB = 1024 * 1024


# --- measurement helpers ------------------------------------------------------------------

def proc_memory_mib(pid: int) -> dict:
    """``{"rss": MiB, "hwm": MiB}`` of a process from /proc (Linux)."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            out[line[2:5].lower()] = int(line.split()[1]) / 1024
    return out


def disk_bytes(path: Path) -> int:
    """Bytes allocated on disk (st_blocks) by the files under ``path``."""
    total = 0
    for dirpath, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def pct(values: list[float], p: float) -> float:
    """Nearest-rank p-th percentile of ``values`` (same unit); ``inf`` when empty."""
    if not values:
        return float("inf")
    s = sorted(values)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))]


# --- 1. Weaviate ----------------------------------------------------------------------------

def _unit(vec: list[float]) -> list[float]:
    n = sum(x * x for x in vec) ** 0.5 or 1.0
    return [x / n for x in vec]


def _start(binary: str, data: Path, log: Path, home: Path):
    from common.settings import Settings
    from indexer.store.weaviate_server import start_server

    proc, info = start_server(binary, data, log, detach=False)
    return proc, Settings.from_env(weaviate_url=f"http://127.0.0.1:{info.http_port}",
                                   weaviate_grpc_port=info.grpc_port, home=home)


def _stop(proc) -> None:
    proc.send_signal(signal.SIGTERM)  # a clean shutdown flushes the memtables to disk
    proc.wait(timeout=180)


def weaviate_size(binary: str, work: Path, parsed, real_vectors: list[list[float]], dims: int,
                  n_chunks: int, model: str, keep_running: bool = False) -> tuple[dict, object]:
    """Fill a fresh server with ``n_chunks`` chunks of ``dims`` dimensions; memory and disk.

    Memory is read three times: the empty server, while loading (RSS samples, which include
    Weaviate's write buffers), and **at rest** after a clean restart on the loaded data and a
    few hybrid searches (what a loaded pod holds; the sizing table uses it, plus the loading
    peak as headroom). Disk: the data folder after the clean shutdown.

    Returns ``(figures, settings)``; with ``keep_running`` the restarted server stays up
    (``settings`` points at it; the caller stops it with :func:`stop_all`), else it is stopped
    and ``settings`` is ``None``. ``model``: the embedding model name recorded for the source
    (the bot refuses an index of another model).
    """
    from indexer import ChunkStore
    from indexer.documents import chunk_properties
    from indexer.store.weaviate_store import new_run_id, utcnow
    from indexer.models import SourceRecord

    data, home = work / f"weaviate-{dims}", work / "home"
    proc, settings = _start(binary, data, work / f"weaviate-{dims}.log", home)
    _RUNNING.append(proc)
    rnd = random.Random(dims)
    with ChunkStore.open(settings) as store:
        time.sleep(2.0)
        mem0, disk0 = proc_memory_mib(proc.pid), disk_bytes(data)
        base = len(parsed.chunks)
        copies = -(-n_chunks // base)
        written, t0 = 0, time.perf_counter()
        indexed_at, run_id = utcnow(), new_run_id()
        repo0 = parsed.summary.repo
        marks = {n_chunks * q // 4 for q in (1, 2, 3)}
        samples: list[tuple[int, float]] = [(0, mem0["rss"])]

        def rows():
            nonlocal written
            for k in range(copies):
                for chunk, vec in zip(parsed.chunks, real_vectors):
                    if written >= n_chunks:
                        return
                    if dims == len(vec):
                        v = vec if k == 0 else _unit([x + rnd.gauss(0, 0.01) for x in vec])
                    else:
                        v = _unit([rnd.gauss(0, 1) for _ in range(dims)])
                    written += 1
                    if written in marks:  # the batches before it have been written
                        samples.append((written, proc_memory_mib(proc.pid)["rss"]))
                    yield chunk_properties(chunk, repo=repo0 if k == 0 else f"{repo0}-copy{k}",
                                           commit=parsed.commit, indexed_at=indexed_at, run_id=run_id), v

        store.data.write_chunks(rows())
        write_s = time.perf_counter() - t0
        store.sources.save(SourceRecord.from_properties({"name": repo0, "kind": "git", "root": str(parsed.root), "commit": parsed.commit,
                           "indexed_at": indexed_at, "model": model, "dimensions": dims,
                           "files": parsed.summary.files_indexed, "chunks": base, "url_template": "",
                           "skipped": {}}))
        count = store.query.count()
        time.sleep(3.0)
        mem1 = proc_memory_mib(proc.pid)
        samples.append((count, mem1["rss"]))
    _stop(proc)
    _RUNNING.remove(proc)
    disk1 = disk_bytes(data)
    proc, settings = _start(binary, data, work / f"weaviate-{dims}-restart.log", home)
    _RUNNING.append(proc)
    with ChunkStore.open(settings) as store:
        words = [c.symbol or "config" for c in parsed.chunks[:20]]
        for w in words:
            store.query.hybrid(w, _unit([rnd.gauss(0, 1) for _ in range(dims)]), alpha=0.5, limit=8)
        time.sleep(3.0)
        mem2 = proc_memory_mib(proc.pid)
    scale = 10_000 / count
    figures = {
        "dimensions": dims, "chunks": count,
        "vectors": "local model's (+noise)" if dims == len(real_vectors[0]) else "random unit",
        "write_s": round(write_s, 1),
        "empty_server_rss_mib": round(mem0["rss"], 1),
        "rss_mib_per_10k_at_rest": round((mem2["rss"] - mem0["rss"]) * scale, 1),
        "loading_rss_samples_mib": [[x, round(y, 1)] for x, y in samples],
        "loading_peak_rss_mib": round(max(mem1["hwm"], mem1["rss"]), 1),
        "disk_mib_per_10k": round((disk1 - disk0) / MIB * scale, 1),
        "raw_vectors_mib_per_10k": round(10_000 * dims * 4 / MIB, 1),
    }
    if keep_running:
        return figures, settings
    _stop(proc)
    _RUNNING.remove(proc)
    return figures, None


_RUNNING: list = []  # weaviate-server processes this run started and has not stopped yet


def stop_all() -> None:
    """Stop every server still running (also on errors: none is left behind)."""
    while _RUNNING:
        p = _RUNNING.pop()
        if p.poll() is None:
            _stop(p)


# --- 2. and 3. SQL ----------------------------------------------------------------------------

def _table_rows(engine) -> dict[str, int]:
    from sqlalchemy import inspect, text

    with engine.connect() as conn:
        return {t: conn.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one()
                for t in inspect(engine).get_table_names() if t != "alembic_version"}


def _db_bytes(engine, url: str) -> int:
    from sqlalchemy import text

    if url.startswith("sqlite"):
        with engine.connect() as conn:
            conn.execute(text("PRAGMA wal_checkpoint(TRUNCATE)"))
        path = Path(url.split("///", 1)[1])
        return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    with engine.connect() as conn:
        conn.execute(text("COMMIT"))
        return int(conn.execute(text(
            "SELECT coalesce(sum(pg_total_relation_size(quote_ident(tablename))), 0) "
            "FROM pg_tables WHERE schemaname = 'public'")).scalar_one())


def sql_sizes(url: str, write, per: int) -> dict:
    """Migrate ``url``, run ``write(sessions)``, return rows and MiB added, scaled to 10k of ``per``."""
    from sqlalchemy.orm import sessionmaker

    from common.db import make_engine, upgrade_to_head

    upgrade_to_head(url)
    engine = make_engine(url)
    sessions = sessionmaker(engine, expire_on_commit=False)
    rows0, bytes0 = _table_rows(engine), _db_bytes(engine, url)
    t0 = time.perf_counter()
    write(sessions)
    seconds = time.perf_counter() - t0
    rows1, bytes1 = _table_rows(engine), _db_bytes(engine, url)
    engine.dispose()
    scale = 10_000 / per
    added = {t: rows1[t] - rows0.get(t, 0) for t in rows1 if rows1[t] != rows0.get(t, 0)}
    return {"rows_per_10k": {t: round(n * scale) for t, n in sorted(added.items())},
            "total_rows_per_10k": round(sum(added.values()) * scale),
            "mib_per_10k": round((bytes1 - bytes0) / MIB * scale, 2), "write_s": round(seconds, 2)}


def graph_writer(parsed):
    from indexer.graph.sql_store import save_repo_graph

    return lambda sessions: save_repo_graph(sessions, parsed.summary.repo, parsed.commit, parsed.facts)


def querylog_writer(n: int):
    from bot.querylog.privacy import UserHasher
    from bot.querylog.recorder import QueryLog
    from helpers.querylog import record

    answer = ("The total is computed in `calculate_price_with_tax` [1], which applies the rate "
              "from the region table [2] before rounding. ") * 10  # ~1.2 kB, a typical answer

    def write(sessions):
        log = QueryLog(sessions, hasher=UserHasher())
        for i in range(n):
            log.record(record(question=f"where is the tax for order type {i} computed?", answer=answer,
                              message_ts=f"{1700000000 + i}.000100", thread_ts=f"{1700000000 + i}.000100",
                              user=f"U{i % 500:05d}"))
    return write


# --- 4. one bot replica ---------------------------------------------------------------------------

class StubClaude:
    """A local HTTP stand-in for the Messages API: every POST /v1/messages answers after ``delay`` s."""

    def __init__(self, delay: float):
        self.delay, self.calls, self.lock = delay, 0, threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                time.sleep(stub.delay)
                with stub.lock:
                    stub.calls += 1
                raw = json.dumps({
                    "id": "msg_stub", "type": "message", "role": "assistant", "model": body.get("model"),
                    "content": [{"type": "text", "text": "It is computed in the first source [1], see also [2]."}],
                    "stop_reason": "end_turn", "stop_sequence": None,
                    "usage": {"input_tokens": 3000, "output_tokens": 120, "cache_creation_input_tokens": 0,
                              "cache_read_input_tokens": 2500}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def bot_throughput(settings, symbols: list[str], db_url: str, args) -> dict:
    """Highest open-loop question rate (per s) one bot replica answers with p95 under 2 s."""
    import httpx

    from bot.answer.service import AnswerService
    from bot.slack.app import build_app
    from bot.slack.server import BackgroundServer, build_http_app
    from helpers.fake_slack import BOT_USER_ID, FakeSlack, sign
    from common.db import open_database
    from indexer import ChunkStore, make_embedder

    stub = StubClaude(args.model_delay)
    os.environ["ANTHROPIC_API_KEY"] = "sk-stub-not-a-key"
    os.environ["ANTHROPIC_BASE_URL"] = stub.url
    os.environ["CODERAG_DATABASE_URL"] = db_url
    workers = int(os.environ.get("CODERAG_SLACK_WORKERS") or 16)
    secret = "sizing-secret"
    fake = FakeSlack().start()
    rnd = random.Random(7)
    counter = iter(range(10**9))
    steps = []
    with ExitStack() as stack:
        store = stack.enter_context(ChunkStore.open(settings))
        sessions = open_database(settings)
        from common.settings import SlackSettings, load

        app = load()
        service = AnswerService(store, make_embedder(settings), sessions=sessions, settings=app)
        slack = SlackSettings.from_env({}, bot_token="xoxb-sizing", signing_secret=secret, api_url=fake.api_url,
                                       workers=workers)
        from bot.querylog.recorder import QueryLog

        server = BackgroundServer(build_http_app(build_app(service, slack, chat=app.chat, sessions=sessions,
                                                           querylog=QueryLog(sessions, settings=app.querylog)))).start()
        stack.callback(server.stop)
        client = stack.enter_context(httpx.Client(timeout=30, limits=httpx.Limits(max_connections=200)))
        pool = stack.enter_context(ThreadPoolExecutor(max_workers=64))
        url = f"{server.url}/slack/events"

        def send(sent: dict) -> None:
            i = next(counter)
            ts = f"1800000000.{i:06d}"
            question = f"<@{BOT_USER_ID}> how does {rnd.choice(symbols)} work and where is it called?"
            body = json.dumps({"type": "event_callback", "team_id": "T0000001", "event_id": f"EvSIZE{i:07d}",
                               "event": {"type": "app_mention", "user": "U1", "channel": "C1", "ts": ts,
                                         "text": question}})
            sent[ts] = time.monotonic()
            client.post(url, content=body, headers={"Content-Type": "application/json", **sign(secret, body)})

        def answered_at() -> dict:
            first: dict[str, float] = {}
            for c in fake.posts():
                if c.body.get("blocks") and c.body.get("thread_ts"):
                    first.setdefault(c.body["thread_ts"], c.at)
            return first

        def step(rate: float, duration: float) -> dict:
            sent: dict[str, float] = {}
            n = max(3, round(rate * duration))
            start = time.monotonic()
            for k in range(n):
                delay = start + k / rate - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(send, sent)
            deadline = time.monotonic() + max(10.0, 4 * P95_BUDGET_S)
            while time.monotonic() < deadline:
                done = answered_at()
                if len(sent) == n and all(ts in done for ts in sent):
                    break
                time.sleep(0.1)
            done = answered_at()
            lat = [done[ts] - t if ts in done else float("inf") for ts, t in sent.items()]
            p95 = pct(lat, 95)
            finite = [x for x in lat if x != float("inf")]
            drain = time.monotonic() + 300
            while time.monotonic() < drain and not all(ts in answered_at() for ts in sent):
                time.sleep(0.2)  # a backlog must not slow the next step down
            return {"rate_per_s": round(rate, 3), "sent": n, "answered": len(finite),
                    "p50_ms": round(pct(finite, 50) * 1000) if finite else None,
                    "p95_ms": round(p95 * 1000) if p95 != float("inf") else None,
                    "ok": p95 <= P95_BUDGET_S}

        for _ in range(3):  # warm-up: model load, first connections
            step(1.0, 2.0)
        good, bad, rate = 0.0, None, 0.25
        while bad is None and rate <= 64:
            r = step(rate, args.duration)
            steps.append(r)
            if r["ok"]:
                good, rate = rate, rate * 2
            else:
                bad = rate
        for _ in range(3 if bad is not None and good > 0 else 0):
            mid = (good + bad) / 2
            r = step(mid, args.duration)
            steps.append(r)
            good, bad = (mid, bad) if r["ok"] else (good, mid)
    fake.stop()
    stub.close()
    best = max((s for s in steps if s["ok"]), key=lambda s: s["rate_per_s"], default=None)
    return {"workers": workers, "model_delay_s": args.model_delay, "step_s": args.duration,
            "questions_per_s": best["rate_per_s"] if best else 0.0,
            "questions_per_min": round(best["rate_per_s"] * 60, 1) if best else 0.0,
            "p95_ms_at_that_rate": best["p95_ms"] if best else None,
            "model_calls": stub.calls, "steps": steps}


# --- the docs tables --------------------------------------------------------------------------

TABLE_CHUNKS = (10_000, 100_000, 1_000_000)
TABLE_QPM = (10, 60, 300, 1_000, 3_000)


def _mib(x: float) -> str:
    return f"{x / 1024:.1f} GiB" if x >= 1024 else f"{x:.0f} MiB"


def render_table(result: dict) -> str:
    """The sizing tables of docs/operating/sizing.md (Markdown) from one output of this benchmark.

    Weaviate memory = the empty server's RSS + RSS per 10k chunks at rest (after a restart on the
    loaded data) x chunks / 10k, linear beyond the ``result["weaviate"][d]["chunks"]`` measured;
    disk = disk per 10k chunks after a clean shutdown x chunks / 10k. Bot replicas for a rate =
    ceil(questions per minute / one replica's sustained questions per minute).
    """
    import math

    w = result["weaviate"]
    dims = sorted(w, key=int)
    head = "| chunks | " + " | ".join(f"Weaviate memory, {d} dims | Weaviate disk, {d} dims" for d in dims) + " |"
    lines = [head, "|---|" + "---|---|" * len(dims)]
    for n in TABLE_CHUNKS:
        cells = []
        for d in dims:
            f = w[d]
            cells += [_mib(f["empty_server_rss_mib"] + f["rss_mib_per_10k_at_rest"] * n / 10_000),
                      _mib(f["disk_mib_per_10k"] * n / 10_000)]
        lines.append(f"| {n:,} | " + " | ".join(cells) + " |")
    sql = ["", "| per 10k | SQLite rows | SQLite disk | PostgreSQL rows | PostgreSQL disk |", "|---|---|---|---|---|"]
    for key, label in (("call_graph", "chunks of call graph"), ("query_log", "logged queries")):
        part = result[key]
        lite, pg = part["sqlite"], part.get("postgresql")
        sql.append(f"| {label} | {lite['total_rows_per_10k']:,} | {lite['mib_per_10k']} MiB | "
                   + (f"{pg['total_rows_per_10k']:,} | {pg['mib_per_10k']} MiB |" if pg else "— | — |"))
    bot = result.get("bot_replica")
    rep = []
    if bot and bot["questions_per_min"] > 0:
        per = bot["questions_per_min"]
        rep = ["", "| questions per minute (peak) | bot replicas (p95 < 2 s) |", "|---|---|"]
        rep += [f"| {q:,} | {max(1, math.ceil(q / per))} |" for q in TABLE_QPM]
    return "\n".join(lines + sql + rep)


# --- main --------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--repo", default=str(ROOT), help="repository whose chunks and call graph are used")
    ap.add_argument("--chunks", type=int, default=20_000, help="chunks loaded into Weaviate per dimension")
    ap.add_argument("--dims", default="384,1024", help="embedding dimensions to measure (comma-separated)")
    ap.add_argument("--queries", type=int, default=2_000, help="query-log records written")
    ap.add_argument("--duration", type=float, default=20.0, help="seconds per load step")
    ap.add_argument("--model-delay", type=float, default=0.5, help="seconds the stub model takes per answer")
    ap.add_argument("--no-postgres", action="store_true", help="SQLite only")
    ap.add_argument("--no-load", action="store_true", help="skip the bot throughput test")
    ap.add_argument("--table", metavar="JSON", type=Path,
                    help="print the docs' sizing tables from a saved output of this benchmark, and exit")
    args = ap.parse_args()
    if args.table:
        try:
            print(render_table(json.loads(args.table.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError) as exc:
            sys.exit(f"sizing: error: cannot make the tables from {args.table}: {exc!r}")
        return
    try:
        dims = [int(d) for d in args.dims.split(",") if d.strip()]
    except ValueError:
        sys.exit(f"sizing: error: --dims must be whole numbers separated by commas, got {args.dims!r}")
    if args.chunks < 1 or args.queries < 1 or not dims:
        sys.exit("sizing: error: --chunks, --queries and --dims must be positive")

    from common.settings import Settings
    from indexer import make_embedder
    from indexer.embedding_policy import ALL_WINDOWS
    from indexer.documents import embed_chunks
    from indexer.sources.repository import parse_repository
    from indexer.store.weaviate_server import find_binary

    t_start = time.perf_counter()
    load0 = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="coderag-sizing-"))
    os.environ["CODERAG_HOME"] = str(work / "home")
    binary = find_binary(os.environ.get("WEAVIATE_BINARY"))
    settings = Settings.from_env()
    parsed = parse_repository(args.repo, None, settings)
    if not parsed.chunks:
        sys.exit(f"sizing: error: {args.repo} has no chunks to index")
    embedder = make_embedder(settings)
    t0 = time.perf_counter()
    real_vectors: list[list[float]] = []
    for i in range(0, len(parsed.chunks), 256):
        real_vectors += embed_chunks(embedder, parsed.chunks[i:i + 256], ALL_WINDOWS)  # a vector for every chunk
    embed_s = time.perf_counter() - t0
    local_dims = len(real_vectors[0])
    out: dict = {"repo": parsed.summary.repo, "commit": parsed.commit, "repo_chunks": len(parsed.chunks),
                 "embedding_model": embedder.model_name, "model_dimensions": local_dims,
                 "embed_chunks_per_s": round(len(parsed.chunks) / embed_s, 1), "weaviate": {}}

    try:
        run_all(args, dims, binary, work, parsed, real_vectors, embedder.model_name, out)
    finally:
        stop_all()
    out["machine"] = {"cpus": os.cpu_count(), "loadavg_start": [round(x, 2) for x in load0],
                      "loadavg_end": [round(x, 2) for x in os.getloadavg()]}
    out["seconds_total"] = round(time.perf_counter() - t_start, 1)
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(out, indent=2))


def run_all(args, dims, binary, work, parsed, real_vectors, model_name, out) -> None:
    """Steps 1-4 of the module docstring, filling ``out``."""
    local_dims = len(real_vectors[0])
    bot_settings = None
    for d in dims:
        figures, running = weaviate_size(binary, work, parsed, real_vectors, d, args.chunks,
                                         model_name if d == local_dims else f"random-{d}",
                                         keep_running=(d == local_dims and not args.no_load))
        out["weaviate"][str(d)] = figures
        bot_settings = running or bot_settings

    def sql_all(name: str, writer, per: int) -> dict:
        res = {"sqlite": sql_sizes(f"sqlite:///{work}/{name}.db", writer, per)}
        if not args.no_postgres:
            from helpers.postgres import fresh_database

            with fresh_database(pg_server) as url:
                res["postgresql"] = sql_sizes(url, writer, per)
        return res

    with ExitStack() as stack:
        if not args.no_postgres:
            from helpers.postgres import postgres_server

            pg_server = stack.enter_context(postgres_server())
        out["call_graph"] = {"chunks_of_repo": len(parsed.chunks), "files": len(parsed.facts),
                             "definitions": sum(len(f.definitions) for f in parsed.facts),
                             **sql_all("graph", graph_writer(parsed), len(parsed.chunks))}
        out["query_log"] = {"queries": args.queries, **sql_all("querylog", querylog_writer(args.queries),
                                                              args.queries)}
    if bot_settings is not None:
        symbols = sorted({c.symbol for c in parsed.chunks if c.symbol}) or ["the indexer"]
        out["bot_replica"] = bot_throughput(bot_settings, symbols, f"sqlite:///{work}/bot.db", args)


if __name__ == "__main__":
    main()
