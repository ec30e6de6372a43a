"""Multi-tenancy on a real weaviate-server: native multi-tenancy vs a ``repo`` filter.

Indexes N synthetic repos × M chunks (random unit 384-d vectors, short synthetic code
text) twice — into a collection with Weaviate native multi-tenancy (one tenant per repo)
and into one plain collection with a ``repo`` property filter (coderag's layout) — and
measures:

* write time (batch import of all N × M objects), seconds;
* hybrid query latency p50 / p95 (ms) for one repo;
* hybrid query latency p50 / p95 (ms) for a set of 3 repos (a channel allow-list spanning
  several sources): one ``contains_any`` filter for the partition layout; for native MT
  one query per tenant (Weaviate queries one tenant at a time) and a merge by score,
  both sequential and with the 3 tenant queries in parallel threads.

Usage: ``python bench/tenancy_bench.py [--repos 50] [--chunks 400] [--queries 200] [--json]``.
Starts its own server (``WEAVIATE_BINARY`` / PATH / ~/go/bin) in a temp folder; nothing
else is touched. Prints a table (or one JSON object).
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import weaviate
from weaviate.classes.config import Configure, DataType, Property, Tokenization, VectorDistances
from weaviate.classes.query import Filter, HybridFusion
from weaviate.classes.tenants import Tenant

from indexer.store.weaviate_server import find_binary, start_server

DIM = 384
WORDS = ("retry backoff session request response cache token auth user order price tax cart "
         "invoice ledger payment refund queue worker schedule index search chunk embed vector "
         "parse render template config settings logger metrics health probe cluster node").split()


def _vec(rng: random.Random) -> list[float]:
    v = [rng.gauss(0, 1) for _ in range(DIM)]
    n = sum(x * x for x in v) ** 0.5
    return [x / n for x in v]


def _text(rng: random.Random) -> str:
    return "def " + "_".join(rng.sample(WORDS, 3)) + "(x):\n    " + " ".join(rng.choices(WORDS, k=40))


def _props(mt: bool) -> list[Property]:
    props = [Property(name="content", data_type=DataType.TEXT, tokenization=Tokenization.WORD)]
    if not mt:
        props.append(Property(name="repo", data_type=DataType.TEXT, tokenization=Tokenization.FIELD,
                              index_searchable=False, index_filterable=True))
    return props


def _create(client, name: str, mt: bool):
    client.collections.delete(name)
    return client.collections.create(
        name=name, properties=_props(mt),
        vector_config=Configure.Vectors.self_provided(
            vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE)),
        multi_tenancy_config=Configure.multi_tenancy(enabled=True) if mt else None)


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))] * 1000


def run(n_repos: int, n_chunks: int, n_queries: int, seed: int = 7, tenants_first: bool = False) -> dict:
    rng = random.Random(seed)
    repos = [f"repo-{i:03d}" for i in range(n_repos)]
    data = {r: [(_text(rng), _vec(rng)) for _ in range(n_chunks)] for r in repos}
    queries = [(" ".join(rng.sample(WORDS, 3)), _vec(rng)) for _ in range(n_queries)]
    picks1 = [[rng.choice(repos)] for _ in range(n_queries)]
    picks3 = [rng.sample(repos, 3) for _ in range(n_queries)]

    root = Path(tempfile.mkdtemp(prefix="coderag-tenancy-"))
    proc, info = start_server(find_binary(), root / "data", root / "server.log", detach=False)
    client = weaviate.connect_to_custom(http_host="127.0.0.1", http_port=info.http_port, http_secure=False,
                                        grpc_host="127.0.0.1", grpc_port=info.grpc_port, grpc_secure=False)
    out: dict = {"repos": n_repos, "chunks_per_repo": n_chunks, "queries": n_queries, "dim": DIM}
    try:
        # -- writes (order selectable: the first import also pays for a cold server)
        def write_partition():
            part = _create(client, "BenchPartition", mt=False)
            t0 = time.perf_counter()
            with part.batch.fixed_size(batch_size=200, concurrent_requests=2) as b:
                for r in repos:
                    for text, vec in data[r]:
                        b.add_object(properties={"content": text, "repo": r}, vector=vec)
            out["write_s_partition"] = time.perf_counter() - t0
            assert not part.batch.failed_objects
            return part

        def write_tenants():
            mt = _create(client, "BenchTenants", mt=True)
            t0 = time.perf_counter()
            mt.tenants.create([Tenant(name=r) for r in repos])
            with client.batch.fixed_size(batch_size=200, concurrent_requests=2) as b:
                for r in repos:
                    for text, vec in data[r]:
                        b.add_object(collection="BenchTenants", properties={"content": text}, vector=vec, tenant=r)
            out["write_s_tenants"] = time.perf_counter() - t0
            assert not client.batch.failed_objects
            return mt

        if tenants_first:
            mt = write_tenants()
            part = write_partition()
        else:
            part = write_partition()
            mt = write_tenants()
        out["order"] = "tenants first" if tenants_first else "partition first"

        def q_part(query, vec, rs):
            return part.query.hybrid(query=query, vector=vec, alpha=0.7, limit=10,
                                     fusion_type=HybridFusion.RELATIVE_SCORE,
                                     filters=Filter.by_property("repo").contains_any(rs)).objects

        def q_tenant(query, vec, r):
            return mt.with_tenant(r).query.hybrid(query=query, vector=vec, alpha=0.7, limit=10,
                                                  fusion_type=HybridFusion.RELATIVE_SCORE).objects

        pool = ThreadPoolExecutor(max_workers=3)

        def q_tenants(query, vec, rs, parallel):
            if parallel:
                parts = list(pool.map(lambda r: q_tenant(query, vec, r), rs))
            else:
                parts = [q_tenant(query, vec, r) for r in rs]
            # Scores of separate relativeScoreFusion runs are each normalised to 0..1: merging
            # them by score is only approximate (one more cost of per-tenant queries).
            merged = [o for p in parts for o in p]
            merged.sort(key=lambda o: -(o.metadata.score or 0.0))
            return merged[:10]

        def timed(fn, items) -> list[float]:
            for args in items[:10]:  # warm-up
                fn(*args)
            lat = []
            for args in items:
                t = time.perf_counter()
                fn(*args)
                lat.append(time.perf_counter() - t)
            return lat

        cases = {
            "partition_1repo": timed(q_part, [(q, v, rs) for (q, v), rs in zip(queries, picks1)]),
            "tenants_1repo": timed(q_tenant, [(q, v, rs[0]) for (q, v), rs in zip(queries, picks1)]),
            "partition_3repos": timed(q_part, [(q, v, rs) for (q, v), rs in zip(queries, picks3)]),
            "tenants_3repos_sequential": timed(lambda q, v, rs: q_tenants(q, v, rs, False),
                                               [(q, v, rs) for (q, v), rs in zip(queries, picks3)]),
            "tenants_3repos_parallel": timed(lambda q, v, rs: q_tenants(q, v, rs, True),
                                             [(q, v, rs) for (q, v), rs in zip(queries, picks3)]),
        }
        pool.shutdown()
        for name, lat in cases.items():
            out[name] = {"p50_ms": round(_pct(lat, 50), 2), "p95_ms": round(_pct(lat, 95), 2),
                         "mean_ms": round(statistics.mean(lat) * 1000, 2)}
        out["write_s_partition"] = round(out["write_s_partition"], 2)
        out["write_s_tenants"] = round(out["write_s_tenants"], 2)
    finally:
        client.close()
        proc.terminate()
        proc.wait(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repos", type=int, default=50)
    ap.add_argument("--chunks", type=int, default=400)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--tenants-first", action="store_true", help="import the tenant collection first")
    a = ap.parse_args()
    res = run(a.repos, a.chunks, a.queries, tenants_first=a.tenants_first)
    if a.json:
        print(json.dumps(res))
        return
    print(f"{a.repos} repos × {a.chunks} chunks ({a.repos * a.chunks} objects, {DIM}-d), {a.queries} queries")
    print(f"write ({res['order']}): partition {res['write_s_partition']} s, native tenants {res['write_s_tenants']} s")
    print(f"{'case':<28}{'p50 ms':>10}{'p95 ms':>10}")
    for k, v in res.items():
        if isinstance(v, dict):
            print(f"{k:<28}{v['p50_ms']:>10}{v['p95_ms']:>10}")


if __name__ == "__main__":
    main()
