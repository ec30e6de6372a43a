"""The public benchmark's scoring rule as bench/public_eval.py reimplements it: path
matching by suffix, span overlap, NDCG@10 with binary gains over the indexed targets."""
import json
import math

import pytest

import public_eval as pe


def test_ndcg_binary_gains_over_the_ideal_of_the_indexed_targets():
    assert pe.ndcg_at_k([1], 1) == 1.0
    assert pe.ndcg_at_k([2], 1) == pytest.approx(1 / math.log2(3))
    assert pe.ndcg_at_k([1, 3], 2) == pytest.approx((1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert pe.ndcg_at_k([11], 1) == 0.0          # outside the top 10
    assert pe.ndcg_at_k([], 0) == 0.0            # nothing relevant indexed
    assert pe.ndcg_at_k([1, 1], 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))  # a rank counts once


def test_paths_match_by_suffix_and_spans_by_overlap():
    assert pe.path_matches("handler/mod.rs", "axum/src/handler/mod.rs")
    assert pe.path_matches("axum/src/handler/mod.rs", "handler/mod.rs")
    assert not pe.path_matches("xhandler/mod.rs", "handler/mod.rs")
    t = {"path": "lib/sinatra/base.rb", "start_line": 100, "end_line": 120}
    assert pe.covers("sinatra/base.rb", 110, 300, t)
    assert not pe.covers("sinatra/base.rb", 121, 300, t)
    assert pe.covers("lib/rack/utils.rb", 5, 9, {"path": "lib/rack/utils.rb"})


def test_score_query_counts_each_target_at_its_first_covering_result():
    results = [("a.rs", 1, 10), ("b.rs", 1, 10), ("a.rs", 20, 30), ("c.rs", 1, 5)]
    targets = [{"path": "src/b.rs"}, {"path": "src/c.rs"}, {"path": "src/missing.rs"}]
    indexed = {"a.rs", "b.rs", "c.rs"}
    expected = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))  # ranks 2 and 4, ideal of 2
    assert pe.score_query(results, targets, indexed) == pytest.approx(expected)


def test_categories_and_held_out_languages(tmp_path):
    ann = tmp_path / "x.json"
    ann.write_text(json.dumps([
        {"query": "Router", "relevant": ["r.ex"]},
        {"query": "how routes dispatch", "relevant": [{"path": "r.ex", "start_line": 1, "end_line": 2}],
         "secondary": ["c.ex"]},
        {"query": "route helpers", "relevant": ["r.ex"], "category": "semantic"},
    ]))
    cats = [(t["category"], len(t["targets"])) for t in pe.load_tasks(ann)]
    assert cats == [("symbol", 1), ("architecture", 2), ("semantic", 1)]
    assert pe.HELD_OUT == {"python", "go", "javascript", "typescript", "java"}
