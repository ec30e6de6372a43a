"""The sizing tables of the manual (docs/operating/sizing.md) are made from a saved output of
bench/sizing.py, mechanically."""
from __future__ import annotations

import copy
import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
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


def _capacity_plan():
    spec = importlib.util.spec_from_file_location("capacity_plan", ROOT / "bench/capacity_plan.py")
    cap = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cap)
    return cap


def _load(name: str) -> dict:
    return json.loads((ROOT / "bench/results" / name).read_text(encoding="utf-8"))


def _replan(cap, i: dict, **changes) -> dict:
    args = dict(median=i["median_chunks"], p95=i["p95_chunks"], voyage_batch=i["voyage_batch"],
                voyage_seconds=i["voyage_seconds_per_request"], voyage_tpm=i["voyage_tokens_per_minute"],
                voyage_rpm=i["voyage_requests_per_minute"], tokens_per_chunk=i["tokens_per_embedded_chunk"],
                pushes_per_day=i["pushes_per_repo_per_day"], push_seconds=i["push_worker_seconds"],
                busy_hours=i["busy_hours_per_day"], node_gib=i["weaviate_node_gib"], replicas=i["replication"])
    args.update(changes)
    return cap.plan(_load("index_click.json"), _load("sizing.json"), _load("queue_bench.json"), **args)


def test_capacity_plan_table_matches_its_saved_plan_and_inputs():
    cap = _capacity_plan()
    saved = json.loads((ROOT / "bench/results/capacity.json").read_text(encoding="utf-8"))
    assert cap.table(saved) in PAGE.read_text(encoding="utf-8")
    # the saved plan is what the measured inputs give with the stated assumptions
    i = saved["inputs"]
    again = _replan(cap, i)
    assert cap.table(json.loads(json.dumps(again))) == cap.table(saved)
    assert "docs.voyageai.com" in i["voyage_limits_source"]  # the Voyage limit is sourced, the latency assumed
    # more workers, less time; a slower API, more time
    rows = {r["repos"]: r for r in saved["rows"]}
    first = rows[1000]["first_index_hours"]
    assert first["local"]["16"] < first["local"]["4"] < first["local"]["1"]
    slower = _replan(cap, i, voyage_seconds=4.0)
    assert slower["rows"][2]["first_index_hours"]["voyage"][4] > first["voyage"]["4"]


def test_no_first_index_is_faster_than_its_largest_repository():
    """One repository is one job on one worker (the queue's per-repository lock): however
    many workers, a first index takes at least as long as the largest repository alone,
    and with Voyage no less than all the chunks at the account's rate limit."""
    saved = json.loads((ROOT / "bench/results/capacity.json").read_text(encoding="utf-8"))
    i = saved["inputs"]
    local, voyage = i["local_chunks_per_s_per_worker"], i["voyage_chunks_per_s_per_worker"]
    limit = i["voyage_chunks_per_s_account_limit"]
    for r in saved["rows"]:
        alone = {"local": r["largest_repo_chunks"] / local / 3600,
                 "voyage": r["largest_repo_chunks"] / min(voyage, limit) / 3600}
        for model, hours in r["first_index_hours"].items():
            for workers, h in hours.items():
                assert h >= alone[model] * 0.995, (r["repos"], model, workers, h, alone[model])  # rates rounded
                assert h >= r["largest_repo_hours"][model] * 0.999
                if model == "voyage":
                    assert h >= r["chunks"] / limit / 3600 * 0.995, (r["repos"], workers, h)
    # the rule bites: with 16 workers the 10 repositories take their largest one's time
    ten = saved["rows"][0]
    assert ten["first_index_hours"]["local"]["16"] <= ten["largest_repo_hours"]["local"] * 1.001


def test_the_schedule_runs_one_repository_per_worker():
    cap = _capacity_plan()
    assert cap.makespan([100, 10, 10], workers=8, rate=10) == 10  # the big one alone bounds it
    assert cap.makespan([10, 10, 10, 10], workers=2, rate=10) == 2  # two rounds of two
    assert cap.makespan([10, 10, 10, 10], workers=4, rate=10, cap=20) == 2  # 4 share a limit of 20 chunks/s
    sizes = cap.repo_sizes(1000, 1600, 30700)
    assert sorted(sizes)[500] == __import__("pytest").approx(1600, rel=0.01)  # the median
    assert sizes == cap.repo_sizes(1000, 1600, 30700)  # the same plan every run
