"""The sizing tables of the manual (docs/operating/sizing.md) are made from a saved output of
bench/sizing.py, mechanically."""
from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sizing", ROOT / "bench/sizing.py")
sizing = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sizing)
RESULT = ROOT / "bench/results/sizing.json"
PAGE = ROOT / "docs/operating/sizing.md"


def _result() -> dict:
    return json.loads(RESULT.read_text(encoding="utf-8"))


def test_the_saved_run_has_every_measurement():
    r = _result()
    for d, f in r["weaviate"].items():
        assert f["dimensions"] == int(d) and f["chunks"] > 0 and f["disk_mib_per_10k"] > 0
    assert str(r["model_dimensions"]) in r["weaviate"]
    for part in ("call_graph", "query_log"):
        assert r[part]["sqlite"]["total_rows_per_10k"] > 0
    assert r["bot_replica"]["questions_per_s"] > 0 and r["bot_replica"]["p95_ms_at_that_rate"] < 2000
    assert r["bot_replica"]["model_calls"] > 0  # the stub model answered: the Claude path was measured


def test_docs_tables_match_the_saved_run():
    assert sizing.render_table(_result()) in PAGE.read_text(encoding="utf-8")


def test_other_figures_give_other_tables():
    r = _result()
    changed = copy.deepcopy(r)
    d = str(r["model_dimensions"])
    changed["weaviate"][d]["rss_mib_per_10k_at_rest"] *= 3
    changed["bot_replica"]["questions_per_min"] /= 4
    assert sizing.render_table(changed) != sizing.render_table(r)
    assert sizing.render_table(changed) not in PAGE.read_text(encoding="utf-8")


def test_capacity_plan_table_matches_its_saved_plan_and_inputs():
    spec = importlib.util.spec_from_file_location("capacity_plan", ROOT / "bench/capacity_plan.py")
    cap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cap)
    saved = json.loads((ROOT / "bench/results/capacity.json").read_text(encoding="utf-8"))
    assert cap.table(saved) in PAGE.read_text(encoding="utf-8")
    # the saved plan is what the measured inputs give with the stated assumptions
    i = saved["inputs"]
    load = lambda name: json.loads((ROOT / "bench/results" / name).read_text(encoding="utf-8"))  # noqa: E731
    again = cap.plan(load("index_click.json"), load("sizing.json"), load("queue_bench.json"), median=i["median_chunks"],
                     p95=i["p95_chunks"], voyage_batch=i["voyage_batch"], voyage_seconds=i["voyage_seconds_per_request"],
                     pushes_per_day=i["pushes_per_repo_per_day"], push_seconds=i["push_worker_seconds"],
                     busy_hours=i["busy_hours_per_day"], node_gib=i["weaviate_node_gib"], replicas=i["replication"])
    assert cap.table(json.loads(json.dumps(again))) == cap.table(saved)
    # more workers, less time; a slower API, more time
    rows = {r["repos"]: r for r in saved["rows"]}
    first = rows[1000]["first_index_hours"]
    assert first["local"]["16"] < first["local"]["4"] < first["local"]["1"]
    slower = cap.plan(load("index_click.json"), load("sizing.json"), load("queue_bench.json"), median=1600, p95=30700,
                      voyage_batch=128, voyage_seconds=4.0, pushes_per_day=5, push_seconds=2.5, busy_hours=8,
                      node_gib=48, replicas=3)
    assert slower["rows"][2]["first_index_hours"]["voyage"][4] > first["voyage"]["4"]
