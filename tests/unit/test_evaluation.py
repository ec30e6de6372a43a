"""score_run / first_hit_rank maths on hand-built results."""
from bot.evaluation import MAX_SPAN_LINES, first_hit_rank, score_run


def r(path, start, end, **kw):
    return {"path": path, "start_line": start, "end_line": end, **kw}


def test_first_hit_rank_symbol_and_file_level():
    results = [r("a.py", 1, 5), r("b.py", 100, 120), r("b.py", 10, 20)]
    expected = [{"path": "b.py", "line": 15}]
    assert first_hit_rank(results, expected, symbol_level=True) == 3
    assert first_hit_rank(results, expected, symbol_level=False) == 2
    assert first_hit_rank([], expected, symbol_level=True) is None


def test_span_limit_is_inclusive_at_200_lines():
    expected = [{"path": "big.py", "line": 50}]
    assert first_hit_rank([r("big.py", 1, MAX_SPAN_LINES)], expected, symbol_level=True) == 1
    assert first_hit_rank([r("big.py", 1, MAX_SPAN_LINES + 1)], expected, symbol_level=True) is None
    # ...but it still counts as a file hit.
    assert first_hit_rank([r("big.py", 1, 500)], expected, symbol_level=False) == 1


def test_line_bounds_are_inclusive():
    expected = [{"path": "a.py", "line": 10}]
    assert first_hit_rank([r("a.py", 10, 12)], expected, symbol_level=True) == 1
    assert first_hit_rank([r("a.py", 5, 10)], expected, symbol_level=True) == 1
    assert first_hit_rank([r("a.py", 11, 12)], expected, symbol_level=True) is None


def test_score_run_recall_mrr_and_misses():
    golden = [
        {"id": "q1", "kind": "symbol", "expected": [{"path": "a.py", "line": 3}]},  # rank 1
        {"id": "q2", "kind": "symbol", "expected": [{"path": "b.py", "line": 50}]},  # rank 3
        {"id": "q3", "kind": "concept", "expected": [{"path": "c.py", "line": 7}]},  # rank 7
        {"id": "q4", "kind": "concept", "expected": [{"path": "d.py", "line": 9}]},  # file hit only (span 300)
        {"id": "q5", "kind": "none", "expected": []},                                # skipped
        {"id": "q6", "kind": "none"},                                                # skipped
    ]
    filler = [r("z.py", 1, 10)]
    results = {
        "q1": [r("a.py", 1, 10)],
        "q2": [r("x.py", 1, 2), r("y.py", 1, 2), r("b.py", 40, 60)],
        "q3": filler * 6 + [r("c.py", 5, 9)],
        "q4": [r("d.py", 1, 300)],
        "q5": [r("a.py", 1, 10)],
    }
    m = score_run(golden, results)
    assert m["questions"] == 4
    assert m["symbol_recall@1"] == 0.25
    assert m["symbol_recall@5"] == 0.5
    assert m["symbol_recall@10"] == 0.75
    assert m["file_recall@5"] == 0.75   # q1, q2, q4
    assert m["file_recall@10"] == 1.0
    assert m["mrr@10"] == round((1 + 1 / 3 + 1 / 7) / 4, 3)
    assert m["symbol_recall@5_by_kind"] == {"concept": "0/2", "symbol": "2/2"}
    assert m["misses@5"] == ["q3", "q4"]
    # avg_lines@5: the top-5 results of each scored question.
    spans = [10] + [2, 2, 21] + [10] * 5 + [300]
    assert m["avg_lines@5"] == round(sum(spans) / len(spans), 1)


def test_rank_beyond_10_counts_for_nothing():
    golden = [{"id": "q", "expected": [{"path": "a.py", "line": 1}]}]
    results = {"q": [r("z.py", 1, 1)] * 10 + [r("a.py", 1, 1)]}
    m = score_run(golden, results)
    assert m["symbol_recall@10"] == 0.0
    assert m["mrr@10"] == 0.0
    assert m["misses@5"] == ["q"]


def test_missing_results_are_misses_and_no_questions_gives_zeroes():
    m = score_run([{"id": "q", "expected": [{"path": "a.py", "line": 1}]}], {})
    assert m["symbol_recall@1"] == 0.0 and m["avg_lines@5"] is None
    empty = score_run([{"id": "q", "expected": []}], {"q": [r("a.py", 1, 1)]})
    assert empty["questions"] == 0
    assert empty["symbol_recall@5"] == 0.0 and empty["mrr@10"] == 0.0


def test_any_of_several_expected_locations_counts():
    golden = [{"id": "q", "expected": [{"path": "a.py", "line": 1}, {"path": "b.py", "line": 5}]}]
    m = score_run(golden, {"q": [r("c.py", 1, 9), r("b.py", 1, 9)]})
    assert m["symbol_recall@1"] == 0.0 and m["symbol_recall@5"] == 1.0 and m["mrr@10"] == 0.5
