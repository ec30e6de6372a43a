"""Capacity plan for 10 to 10,000 repositories, computed from figures measured on this machine.

Measured inputs (files in bench/results/, each written by a bench):

* ``index_click.json`` (``bench/index_bench.py`` on pallets/click, 1,623 chunks): the
  local model's whole-index rate (chunks/s, one worker on 2 cores), and the time the run
  spent outside embedding (parse, call graph, writes), which is what a worker still spends
  per chunk when Voyage embeds;
* ``sizing.json`` (``bench/sizing.py``): Weaviate memory per 10k chunks at rest (384 and
  1024 dimensions), and call-graph rows per 10k chunks in PostgreSQL;
* ``queue_bench.json`` (``bench/queue_bench.py``): that workers add up on I/O-bound jobs
  (3 workers: 2.67x one), which is what lets the plan divide by the worker count.

First-index time is scheduled, not divided: a repository is one job, run by one worker
(the queue's per-repository lock), so N workers never index faster than the largest
repository alone. The N repositories of a row are the N quantiles of the size distribution
(deterministic: the (i + 0.5)/N quantiles), queued in a fixed shuffled order; each free
worker takes the next one (the queue's list scheduling) and the time is when the last
finishes. With Voyage, every worker shares one account's rate limit: the workers' combined
rate is capped at the tokens-per-minute limit, so past a few workers more add nothing.

Stated assumptions (flags, printed in the JSON): repository sizes follow a log-normal
fitted to a median of 1,600 chunks (click-sized) and a p95 of 30,700 (sqlalchemy-sized);
Voyage answers a 128-text request in 1.0 s (an assumption: the API documents no latency,
and none is measurable offline); Voyage's limit for voyage-code-3 at usage tier 1 is
3,000,000 tokens and 2,000 requests a minute per account (tier 2: twice, tier 3: three
times; source: https://docs.voyageai.com/docs/rate-limits); an embedded chunk is 240
tokens (assumed: click's chunks average 19.8 lines, measured, at about 12 tokens a line);
only the chunks the embedding policy embeds are sent (click: 892 of 1,623, measured);
5 pushes per repository per working day, each a worker run of 2.5 s (the p50 measured by
``bench/freshness_bench.py``, docs/benchmarks.md), concentrated in 8 working hours;
Weaviate nodes hold 48 GiB each and keep 3 copies of every shard.

Writes ``bench/results/capacity.json``; ``--table FILE`` prints the Markdown table of
docs/operating/sizing.md from it (``tests/unit/test_sizing_table.py`` checks the page matches).

    python bench/capacity_plan.py [--out bench/results/capacity.json]
    python bench/capacity_plan.py --table bench/results/capacity.json
"""
from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path
from statistics import NormalDist

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
REPOS = (10, 100, 1_000, 10_000)
WORKERS = (1, 4, 16)
GIB = 1024.0
VOYAGE_LIMITS_SOURCE = "https://docs.voyageai.com/docs/rate-limits (voyage-code-3, usage tier 1)"


def lognormal_mean(median: float, p95: float) -> float:
    """Mean of the log-normal with this median and 95th percentile (chunks)."""
    sigma = math.log(p95 / median) / 1.6449
    return median * math.exp(sigma * sigma / 2)


def repo_sizes(n: int, median: float, p95: float, seed: int = 7) -> list[float]:
    """``n`` repository sizes (chunks): the (i + 0.5)/n quantiles of the log-normal, in a
    shuffled order (seeded: the same plan every run), the order they are queued in."""
    sigma = math.log(p95 / median) / 1.6449
    normal = NormalDist()
    sizes = [median * math.exp(sigma * normal.inv_cdf((i + 0.5) / n)) for i in range(n)]
    random.Random(seed).shuffle(sizes)
    return sizes


def makespan(sizes: list[float], workers: int, rate: float, cap: float = math.inf) -> float:
    """Seconds until ``workers`` workers have indexed every repository of ``sizes``
    (chunks, in queue order), one repository per worker at a time, each free worker taking
    the next: each runs at ``rate`` chunks/s, the running ones together at most ``cap``
    (a shared API limit: k running jobs each get min(rate, cap / k))."""
    nxt, running, t = 0, [], 0.0
    while nxt < len(sizes) or running:
        while nxt < len(sizes) and len(running) < workers:
            running.append(sizes[nxt])
            nxt += 1
        speed = min(rate, cap / len(running))
        step = min(running)
        t += step / speed
        running = [r - step for r in running if r - step > 1e-9 * max(1.0, r)]
    return t


def plan(index: dict, sizing: dict, queue: dict, *, median: float, p95: float, voyage_batch: int,
         voyage_seconds: float, voyage_tpm: float, voyage_rpm: float, tokens_per_chunk: float,
         pushes_per_day: float, push_seconds: float, busy_hours: float, node_gib: float, replicas: int) -> dict:
    """The plan (see the module docstring); every input figure is echoed under ``inputs``."""
    local_rate = index["chunks"] / index["seconds_total"]  # chunks/s, one worker, whole index
    outside_embed = (index["seconds_parse"] + index["seconds_graph"] + index["seconds_write"]) / index["chunks"]
    embedded = index["embedded"] / index["chunks"]  # the share of chunks the policy sends to the model
    voyage_rate = 1.0 / (outside_embed + embedded * voyage_seconds / voyage_batch)
    # the account's limit, in chunks/s of whole repositories (only embedded chunks use it)
    voyage_cap = min(voyage_tpm / tokens_per_chunk, voyage_rpm * voyage_batch) / 60.0 / embedded
    mean = lognormal_mean(median, p95)
    mib_384 = sizing["weaviate"]["384"]["rss_mib_per_10k_at_rest"]
    mib_1024 = sizing["weaviate"]["1024"]["rss_mib_per_10k_at_rest"]
    pg_rows = sizing["call_graph"]["postgresql"]["total_rows_per_10k"]
    three = next((r["speedup_vs_1"] for r in queue["results"] if r["workers"] == 3), None)
    rows = []
    for n in REPOS:
        sizes = repo_sizes(n, median, p95)
        chunks, largest = sum(sizes), max(sizes)
        first = {"local": {w: makespan(sizes, w, local_rate) / 3600 for w in WORKERS},
                 "voyage": {w: makespan(sizes, w, voyage_rate, voyage_cap) / 3600 for w in WORKERS}}
        floor = {"local": largest / local_rate / 3600, "voyage": largest / min(voyage_rate, voyage_cap) / 3600}
        push_hours = n * pushes_per_day * push_seconds / 3600  # worker-hours per day
        busy_workers = push_hours / busy_hours  # workers kept busy through the working hours
        mem = {d: chunks / 10_000 * mib / GIB * 1.5 for d, mib in (("384", mib_384), ("1024", mib_1024))}
        nodes = {d: replicas * max(1, math.ceil(g / node_gib)) for d, g in mem.items()}
        rows.append({"repos": n, "chunks": round(chunks), "largest_repo_chunks": round(largest),
                     "first_index_hours": first, "largest_repo_hours": floor,
                     "push_worker_hours_per_day": push_hours, "push_workers_busy": busy_workers,
                     "weaviate_gib_total": mem, "weaviate_nodes": nodes,
                     "postgresql_rows": round(chunks / 10_000 * pg_rows)})
    return {"inputs": {"local_chunks_per_s_per_worker": round(local_rate, 1),
                       "voyage_chunks_per_s_per_worker": round(voyage_rate, 1),
                       "voyage_chunks_per_s_account_limit": round(voyage_cap, 1),
                       "worker_seconds_per_chunk_outside_embedding": round(outside_embed, 5),
                       "embedded_share": round(embedded, 3),
                       "measured_on": f"{index.get('repo', '?')} {str(index.get('commit', ''))[:7]}, "
                                      f"{index['chunks']} chunks",
                       "three_workers_speedup": three, "median_chunks": median, "p95_chunks": p95,
                       "mean_chunks": round(mean), "voyage_batch": voyage_batch,
                       "voyage_seconds_per_request": voyage_seconds, "voyage_tokens_per_minute": voyage_tpm,
                       "voyage_requests_per_minute": voyage_rpm, "voyage_limits_source": VOYAGE_LIMITS_SOURCE,
                       "tokens_per_embedded_chunk": tokens_per_chunk, "pushes_per_repo_per_day": pushes_per_day,
                       "push_worker_seconds": push_seconds, "busy_hours_per_day": busy_hours,
                       "weaviate_node_gib": node_gib, "replication": replicas,
                       "weaviate_mib_per_10k": {"384": mib_384, "1024": mib_1024},
                       "postgresql_rows_per_10k_chunks": pg_rows},
            "rows": rows}


def _h(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.0f} min"
    return f"{hours:,.1f} h" if hours < 48 else f"{hours / 24:,.1f} d"


def table(result: dict) -> str:
    """The Markdown table (and its input line) of a plan."""
    i = result["inputs"]
    head = ("| repos (chunks; largest) | first index, local model: 1 / 4 / 16 workers | first index, Voyage: 1 / 4 / 16 "
            "workers | pushes: worker-hours a day (workers busy) | Weaviate, 384 / 1024 dims: memory of one copy "
            "(nodes) | "
            "PostgreSQL rows |\n|---|---|---|---|---|---|\n")
    lines = []
    for r in result["rows"]:
        f = r["first_index_hours"]
        local = " / ".join(_h(f["local"][str(w)] if str(w) in f["local"] else f["local"][w]) for w in WORKERS)
        voyage = " / ".join(_h(f["voyage"][str(w)] if str(w) in f["voyage"] else f["voyage"][w]) for w in WORKERS)
        mem, nodes = r["weaviate_gib_total"], r["weaviate_nodes"]
        lines.append(f"| {r['repos']:,} ({r['chunks']:,}; {r['largest_repo_chunks']:,}) | {local} | {voyage} | "
                     f"{r['push_worker_hours_per_day']:,.1f} ({r['push_workers_busy']:,.1f}) | "
                     f"{mem['384']:,.1f} GiB ({nodes['384']}) / {mem['1024']:,.1f} GiB ({nodes['1024']}) | "
                     f"{r['postgresql_rows']:,} |")
    note = (f"\nPer worker: {i['local_chunks_per_s_per_worker']} chunks/s with the local model (2 cores), "
            f"{i['voyage_chunks_per_s_per_worker']} with Voyage ({i['voyage_batch']} texts per "
            f"{i['voyage_seconds_per_request']} s request, assumed; {i['embedded_share']:.0%} of the chunks embedded, "
            f"measured). Voyage, all workers together: at most {i['voyage_chunks_per_s_account_limit']} chunks/s "
            f"({i['voyage_tokens_per_minute']:,.0f} tokens and {i['voyage_requests_per_minute']:,.0f} requests a "
            f"minute, {i['voyage_limits_source']}; {i['tokens_per_embedded_chunk']:g} tokens an embedded chunk, "
            f"assumed). One repository is one job on one worker: no time is below its largest repository's. "
            f"Repositories: the quantiles of a log-normal of median {i['median_chunks']:,.0f}, "
            f"p95 {i['p95_chunks']:,.0f}, mean {i['mean_chunks']:,} chunks. Pushes: "
            f"{i['pushes_per_repo_per_day']:g} per repository a day, {i['push_worker_seconds']:g} s of a worker "
            f"each, in {i['busy_hours_per_day']:g} working hours. Weaviate: 1.5x the memory at rest, "
            f"{i['weaviate_node_gib']:g} GiB nodes, {i['replication']} copies.\n")
    return head + "\n".join(lines) + "\n" + note


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", type=Path, help="print the Markdown table of this plan JSON and exit")
    ap.add_argument("--out", type=Path, default=RESULTS / "capacity.json")
    ap.add_argument("--median", type=float, default=1600, help="median repository size, chunks (1600)")
    ap.add_argument("--p95", type=float, default=30700, help="95th percentile repository size, chunks (30700)")
    ap.add_argument("--voyage-batch", type=int, default=128, help="texts per Voyage request (128)")
    ap.add_argument("--voyage-seconds", type=float, default=1.0, help="seconds per Voyage request (1.0, assumed)")
    ap.add_argument("--voyage-tpm", type=float, default=3_000_000,
                    help="Voyage tokens a minute for the account (3,000,000: voyage-code-3, tier 1)")
    ap.add_argument("--voyage-rpm", type=float, default=2_000, help="Voyage requests a minute (2,000: tier 1)")
    ap.add_argument("--tokens-per-chunk", type=float, default=240, help="tokens of an embedded chunk (240, assumed)")
    ap.add_argument("--pushes", type=float, default=5, help="pushes per repository per day (5)")
    ap.add_argument("--push-seconds", type=float, default=2.5, help="worker seconds per push (2.5, measured p50)")
    ap.add_argument("--busy-hours", type=float, default=8, help="hours a day the pushes arrive in (8)")
    ap.add_argument("--node-gib", type=float, default=48, help="memory of one Weaviate node, GiB (48)")
    ap.add_argument("--replication", type=int, default=3, help="copies of every shard (3)")
    args = ap.parse_args()
    if args.table:
        print(table(json.loads(args.table.read_text())), end="")
        return
    if args.median <= 0 or args.p95 <= args.median or args.voyage_batch < 1 or args.voyage_seconds <= 0:
        ap.error("need 0 < median < p95, a batch of at least 1 and a positive request time")
    load = lambda name: json.loads((RESULTS / name).read_text())  # noqa: E731
    result = plan(load("index_click.json"), load("sizing.json"), load("queue_bench.json"), median=args.median,
                  p95=args.p95, voyage_batch=args.voyage_batch, voyage_seconds=args.voyage_seconds,
                  voyage_tpm=args.voyage_tpm, voyage_rpm=args.voyage_rpm, tokens_per_chunk=args.tokens_per_chunk,
                  pushes_per_day=args.pushes, push_seconds=args.push_seconds, busy_hours=args.busy_hours,
                  node_gib=args.node_gib, replicas=args.replication)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["inputs"], indent=1))


if __name__ == "__main__":
    main()
