#!/usr/bin/env python3
"""Kill-during-write, N times at random points, on a generated 2,000-chunk repository.

Usage: python bench/chaos.py [--runs 50] [--seed 1] [--files 200] [--funcs 9] [--work DIR]

Starts a throw-away weaviate-server (child process, fixed ports, data under a temp dir
or ``--work``) and SQLite, generates a Git repository of ``--files`` modules with
``--funcs`` functions each (200 x (9 + 1 header) = 2,000 chunks), indexes it, then per run:

1. commits a new version (every chunk names its version: a keyword found in exactly
   one version; one module deleted, one added);
2. starts ``coderag index`` (in-process ``index_repository``) and SIGKILLs Weaviate at a
   random point: inside the n-th insert request (random n and delay), after the k-th
   acknowledged batch, before the verification, before the commit (source record),
   after the commit, before the clean-up. Weaviate is restarted at once on the same data
   and ports, as a supervisor would, so the run either fails or carries on after the
   client's retries;
3. checks what a reader sees: half-visible = anything but exactly the committed
   version, complete (visible commits, visible count vs record, keyword hits of the
   other version);
4. runs the index again (the repair), timed, and checks the reader's view again and
   that every searchable object is in the vector index.

Prints one JSON object: runs, half_visible_runs (must be 0), missing_vectors_runs after
the next index (must be 0), repair seconds (the next index run: p50/max), restart seconds,
how the interrupted runs ended, and the vector-index losses Weaviate itself showed right
after a kill (objects of the committed version without vector: repaired by the next run).
Embedder: a deterministic hash embedder (this measures crash safety, not retrieval).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

POINTS = ("mid_request", "write_batch", "before_verify", "before_commit", "after_commit", "before_cleanup")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="kill-during-write runs (default 10)")
    ap.add_argument("--seed", type=int, default=1, help="random seed for the kill points")
    ap.add_argument("--files", type=int, default=200, help="generated modules (default 200)")
    ap.add_argument("--funcs", type=int, default=9, help="functions per module (default 9)")
    ap.add_argument("--work", type=Path, default=None, help="keep the data here (default: a temp dir)")
    args = ap.parse_args()
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    work = args.work or Path(tempfile.mkdtemp(prefix="coderag-chaos-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ["CODERAG_HOME"] = str(work / "home")
    os.environ.pop("CODERAG_DATABASE_URL", None)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import logging

    logging.basicConfig(level=logging.ERROR)
    import weaviate  # noqa: F401  (sets up its loggers first)

    for noisy in ("weaviate-client", "indexer", "weaviate"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)

    from helpers.faults import KillableWeaviate
    from indexer.store.weaviate_server import find_binary

    w = KillableWeaviate(find_binary(os.environ.get("WEAVIATE_BINARY")), work / "weaviate").start()
    os.environ.update(w.env())
    try:
        print(json.dumps(run(w, work, args)), flush=True)
    finally:
        w.stop()


def run(w, work: Path, args) -> dict:
    import threading

    from helpers.embedders import HashEmbedder
    from helpers.faults import commit_version, half_visible, inspect_repo, make_versioned_repo, marker
    from common.db import open_database
    from common.settings import Settings
    from indexer import ChunkStore, index_repository
    from indexer.store import weaviate_store
    from indexer.store.data import DataNamespace
    from indexer.store.faults import set_fault_hook

    rng = random.Random(args.seed)
    settings = Settings.from_env()
    sessions = open_database(settings)
    embedder = HashEmbedder()
    repo = make_versioned_repo(work / "repos", args.files, args.funcs, name="chaos")

    def index():
        store = ChunkStore.open(settings)
        try:
            return index_repository(repo, name="chaos", settings=settings, store=store, embedder=embedder,
                                    sessions=sessions)
        finally:
            store.close()

    def seen(version: int) -> dict:
        store = ChunkStore.open(settings)
        try:
            return inspect_repo(store, "chaos", {"new": marker(version), "old": marker(version - 1)})
        finally:
            store.close()

    first = index()
    batches = -(-first.chunks // weaviate_store.WRITE_BATCH_SIZE)
    restarts: list[float] = []
    restart_lock = threading.Lock()

    def kill_and_restart():
        with restart_lock:
            w.kill()
            t0 = time.perf_counter()
            w.start()
            restarts.append(time.perf_counter() - t0)

    results, outcomes, points = [], Counter(), Counter()
    half_runs = missing_runs = 0
    repair_s: list[float] = []
    lost_after_kill = 0
    original_insert = DataNamespace.insert

    def summary(done: int) -> dict:
        return _summary(done, first, half_runs, missing_runs, repair_s, restarts, points, outcomes,
                        lost_after_kill, args.seed)

    for i in range(args.runs):
        version = i + 2
        commit_version(repo, args.files, args.funcs, version)
        point = rng.choice(POINTS)
        points[point] += 1
        fired = threading.Event()
        killer: list[threading.Thread] = []
        if point == "mid_request":
            nth, delay = rng.randint(1, batches), rng.uniform(0.0, 0.15)
            calls = {"n": 0}

            def insert(self, objs, nth=nth, delay=delay, calls=calls):
                calls["n"] += 1
                if calls["n"] == nth and not fired.is_set():
                    fired.set()
                    t = threading.Thread(target=lambda: (time.sleep(delay), kill_and_restart()), daemon=True)
                    t.start()
                    killer.append(t)
                return original_insert(self, objs)

            DataNamespace.insert = insert
        else:
            k = rng.randint(1, batches)

            def hook(p, point=point, k=k, **info):
                if fired.is_set() or p != point or (p == "write_batch" and info.get("batch") != k):
                    return
                fired.set()
                t = threading.Thread(target=kill_and_restart, daemon=True)
                t.start()
                killer.append(t)
                t.join(0.05)  # the kill lands now; the restart goes on in the background

            set_fault_hook(hook)
        try:
            index()
            outcomes["completed"] += 1
        except Exception as exc:  # noqa: BLE001 - any failure of the interrupted run is fine
            outcomes[f"failed:{type(exc).__name__}"] += 1
        finally:
            DataNamespace.insert = original_insert
            set_fault_hook(None)
        for t in killer:
            t.join(120)
        if w.proc is None or w.proc.poll() is not None:
            kill_and_restart()
        after = seen(version)
        half = half_visible(after) or (after["keyword_new"] > 0 and after["keyword_old"] > 0)
        half_runs += bool(half)
        lost_after_kill += after["missing_vectors"]
        t0 = time.perf_counter()
        index()
        repair_s.append(time.perf_counter() - t0)
        final = seen(version)
        bad_final = half_visible(final) or final["keyword_old"] > 0 or final["keyword_new"] == 0
        half_runs += bool(bad_final and not half)
        missing_runs += bool(final["missing_vectors"] or final["total_objects"] != final["visible"])
        results.append({"run": i + 1, "point": point, "half_visible": bool(half), "after_kill": {
            k: after[k] for k in ("visible", "record_chunks", "visible_commits", "missing_vectors", "total_objects")},
            "after_next_index": {k: final[k] for k in ("visible", "missing_vectors", "total_objects")}})
        print(f"run {i + 1}/{args.runs}: {point} half_visible={half} missing_after_next="
              f"{final['missing_vectors']} repair={repair_s[-1]:.1f}s", file=sys.stderr, flush=True)
        (work / "partial.json").write_text(json.dumps(summary(i + 1)), encoding="utf-8")
    return summary(args.runs)


def _summary(runs, first, half_runs, missing_runs, repair_s, restarts, points, outcomes, lost_after_kill, seed):
    return {
        "runs": runs, "chunks": first.chunks, "half_visible_runs": half_runs,
        "missing_vectors_runs_after_next_index": missing_runs,
        "repair_seconds_p50": round(statistics.median(repair_s), 2), "repair_seconds_max": round(max(repair_s), 2),
        "restart_seconds_p50": round(statistics.median(restarts), 2) if restarts else None,
        "kill_points": dict(points), "interrupted_runs": dict(outcomes),
        "committed_objects_without_vector_right_after_kill": lost_after_kill,
        "seed": seed, "embedder": "hash (tests/helpers/embedders.py)",
    }


if __name__ == "__main__":
    main()
