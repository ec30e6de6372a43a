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
