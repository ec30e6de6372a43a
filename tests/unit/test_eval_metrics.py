"""bench/eval_metrics.py on small hand-made rankings; every expected value is worked out by hand."""
from __future__ import annotations

import importlib.util
import json
import math
import random
from pathlib import Path

import eval_metrics as em
import pytest

ROOT = Path(__file__).resolve().parents[2]

SHARED_SCORE = Path("/work/shared/eval/score.py")
SHARED_DEV = Path("/work/shared/eval/dev.jsonl")


def r(path, start, end):
    return {"path": path, "start_line": start, "end_line": end}


def L(rank):  # discount of a rank
    return 1 / math.log2(rank + 1)


A = {"path": "a.py", "symbol": "f", "line": 10}
B = {"path": "a.py", "symbol": "g", "line": 50}
C = {"path": "c.go", "symbol": "H", "line": 7}


def test_hit_rule_needs_path_line_and_at_most_200_lines():
    assert em.is_symbol_hit(r("a.py", 10, 10), A)
    assert em.is_symbol_hit(r("a.py", 1, 200), A)          # 200 lines: allowed
    assert not em.is_symbol_hit(r("a.py", 1, 201), A)      # 201 lines: a whole-file citation
    assert em.is_file_hit(r("a.py", 1, 201), A)            # ...but still a file hit
    assert not em.is_symbol_hit(r("a.py", 11, 20), A)      # range misses the line
    assert not em.is_symbol_hit(r("b.py", 1, 20), A)       # other file


def test_recall_mrr_file_recall_by_hand():
    # first symbol hit at rank 3; file hit already at rank 2 (wrong range)
    res = [r("x.py", 1, 5), r("a.py", 30, 40), r("a.py", 5, 15), r("a.py", 1, 300)]
    m = em.question_metrics(res, [A])
    assert m["first_symbol_rank"] == 3 and m["first_file_rank"] == 2
    assert (m["symbol_recall@1"], m["symbol_recall@5"], m["symbol_recall@10"]) == (0.0, 1.0, 1.0)
    assert m["mrr@10"] == pytest.approx(1 / 3)
    assert m["file_recall@5"] == 1.0
    # only a 300-line result contains the line: no symbol hit at all, NDCG 0
    m2 = em.question_metrics([r("a.py", 1, 300)], [A])
    assert m2["symbol_recall@10"] == 0.0 and m2["mrr@10"] == 0.0 and m2["ndcg@10"] == 0.0
    assert m2["file_recall@5"] == 1.0


def test_mrr_stops_at_rank_10_and_recall_at_k():
    res = [r("x.py", i, i) for i in range(1, 11)] + [r("a.py", 10, 10)]  # hit at rank 11
    m = em.question_metrics(res, [A])
    assert m["first_symbol_rank"] == 11
    assert m["mrr@10"] == 0.0 and m["symbol_recall@10"] == 0.0 and m["ndcg@10"] == 0.0
    res = [r("x.py", i, i) for i in range(1, 6)] + [r("a.py", 10, 10)]  # hit at rank 6
    m = em.question_metrics(res, [A])
    assert (m["symbol_recall@5"], m["symbol_recall@10"]) == (0.0, 1.0)
    assert m["mrr@10"] == pytest.approx(1 / 6)


def test_ndcg_credits_each_location_once():
    # two chunks of the same function: the second earns nothing
    res = [r("a.py", 8, 12), r("a.py", 9, 11)]
    assert em.credited_gains(res, [A, B]) == [1, 0]
    assert em.ndcg_at_k(res, [A, B]) == pytest.approx(1 / (1 + L(2)))      # 0.6131
    assert em.ndcg_at_k(res, [A, B]) == pytest.approx(0.61315, abs=1e-4)
    # both locations found at ranks 2 and 3
    res = [r("x.py", 1, 2), r("a.py", 45, 55), r("a.py", 10, 10)]
    assert em.credited_gains(res, [A, B]) == [0, 1, 1]
    assert em.ndcg_at_k(res, [A, B]) == pytest.approx((L(2) + L(3)) / (1 + L(2)))
    # a single expected location found at rank 1 twice: perfect, never above 1
    assert em.ndcg_at_k([r("a.py", 10, 10), r("a.py", 10, 10)], [A]) == pytest.approx(1.0)


def test_ndcg_matching_lets_a_later_result_take_the_other_location():
    # rank 1 spans both A (10) and B (50); rank 2 contains only A.
    # Greedy "first free location" would credit A to rank 1 and nothing to rank 2;
    # the matching credits B to rank 1 and A to rank 2: DCG = IDCG.
    res = [r("a.py", 1, 60), r("a.py", 10, 12)]
    assert em.credited_gains(res, [A, B]) == [1, 1]
    assert em.ndcg_at_k(res, [A, B]) == pytest.approx(1.0)
    # whatever the order of the expected list
    assert em.ndcg_at_k(res, [B, A]) == pytest.approx(1.0)


def test_ndcg_200_line_rule_and_cutoff():
    # a 201-line chunk containing A earns no gain; the precise one at rank 2 does
    res = [r("a.py", 1, 201), r("a.py", 10, 10)]
    assert em.credited_gains(res, [A]) == [0, 1]
    assert em.ndcg_at_k(res, [A]) == pytest.approx(L(2))                   # 0.6309
    # only the top 10 count
    res = [r("x.py", i, i) for i in range(10)] + [r("a.py", 10, 10)]
    assert em.ndcg_at_k(res, [A]) == 0.0


def test_idcg_is_capped_at_10_locations():
    expected = [{"path": "m.py", "symbol": f"f{i}", "line": 10 * i + 1} for i in range(12)]
    res = [r("m.py", 10 * i + 1, 10 * i + 5) for i in range(12)]  # 12 distinct hits, 10 count
    assert em.ndcg_at_k(res, expected) == pytest.approx(1.0)
    # 5 hits of 12 locations at ranks 1-5: DCG/IDCG with IDCG over 10 ranks
    got = em.ndcg_at_k(res[:5], expected)
    assert got == pytest.approx(sum(L(i) for i in range(1, 6)) / sum(L(i) for i in range(1, 11)))


def test_evaluate_overall_by_kind_missing_and_noanswer_skipped():
    questions = [
        {"id": "q1", "kind": "behavior", "expected": [A]},
        {"id": "q2", "kind": "behavior", "expected": [A, B]},
        {"id": "q3", "kind": "config", "expected": [C]},
        {"id": "q4", "kind": "config", "expected": [C]},           # no results line
        {"id": "n1", "kind": "no-answer", "expected": [], "covered_expected": []},
    ]
    lines = [
        {"id": "q1", "results": [r("a.py", 9, 11)]},                       # hit at 1
        {"id": "q2", "results": [r("z.py", 1, 1), r("a.py", 48, 52)]},     # B at 2
        {"id": "q3", "results": [r("c.go", 100, 120), r("c.go", 1, 300)]}, # file only
        {"id": "n1", "results": [r("a.py", 1, 2)]},
    ]
    out = em.evaluate(questions, lines)
    assert out["questions"] == 4 and out["missing"] == ["q4"]
    o = out["overall"]
    assert o["symbol_recall@1"] == pytest.approx(1 / 4)
    assert o["symbol_recall@5"] == pytest.approx(2 / 4)
    assert o["mrr@10"] == pytest.approx((1 + 1 / 2) / 4)
    assert o["file_recall@5"] == pytest.approx(3 / 4)
    q2_ndcg = L(2) / (1 + L(2))
    assert o["ndcg@10"] == pytest.approx((1 + q2_ndcg) / 4)
    beh, cfg = out["by_kind"]["behavior"], out["by_kind"]["config"]
    assert beh["questions"] == 2 and beh["mrr@10"] == pytest.approx(0.75)
    assert beh["ndcg@10"] == pytest.approx((1 + q2_ndcg) / 2)
    assert cfg["questions"] == 2 and cfg["symbol_recall@10"] == 0.0 and cfg["file_recall@5"] == 0.5
    assert out["misses@5"] == ["q3", "q4"]
    assert "n1" not in out["per_question"]


def test_results_by_id_rejects_bad_lines():
    with pytest.raises(ValueError, match="no 'id'"):
        em.results_by_id([{"results": []}])
    with pytest.raises(ValueError, match="given twice"):
        em.results_by_id([{"id": "a", "results": []}, {"id": "a", "results": []}])
    assert em.results_by_id({"a": ({"path": "p"},)}) == {"a": [{"path": "p"}]}


QS = (
    [{"id": f"a{i}", "kind": "behavior", "expected": [A]} for i in range(30)]
    + [{"id": f"n{i}", "kind": "no-answer", "partial": False, "expected": []} for i in range(10)]
    + [{"id": f"p{i}", "kind": "no-answer", "partial": True, "covered_expected": [A]} for i in range(2)]
)


def test_refusal_table_counts_groups_and_targets():
    refused = {f"a{i}": i == 0 for i in range(30)}                  # 1 of 30 answerable refused
    refused |= {f"n{i}": i < 9 for i in range(10)}                  # 9 of 10 no-answer refused
    refused |= {"p0": True}                                         # p1 missing
    t = em.refusal_table(QS, refused)
    assert (t["answerable"]["refused"], t["answerable"]["total"]) == (1, 30)
    assert t["answerable"]["rate"] == pytest.approx(1 / 30)
    assert (t["noanswer"]["refused"], t["noanswer"]["total"], t["noanswer"]["rate"]) == (9, 10, 0.9)
    assert (t["partial"]["refused"], t["partial"]["total"], t["partial"]["missing"]) == (1, 2, ["p1"])
    assert t["meets_targets"] is True
    refused["a1"] = True                                            # 2 of 30: over the limit
    assert em.refusal_table(QS, refused)["meets_targets"] is False
    refused["a1"], refused["n0"] = False, False                     # 8 of 10: too few refused
    assert em.refusal_table(QS, refused)["meets_targets"] is False


def test_refusal_tradeoff_thresholds():
    scores = {f"a{i}": 0.5 + i / 100 for i in range(30)} | {f"n{i}": 0.1 * i for i in range(10)}
    scores |= {"p0": 0.45, "p1": 0.55}
    rows = em.refusal_tradeoff(QS, scores, [0.0, 0.5, 0.95])
    assert [x["threshold"] for x in rows] == [0.0, 0.5, 0.95]
    assert (rows[0]["answerable_refused"], rows[0]["noanswer_refused"]) == (0, 0)
    # 0.5: no answerable below it; n0..n5 have 0.0..0.5 (n5 = 0.5 is not below) -> 5 refused
    assert (rows[1]["answerable_refused"], rows[1]["noanswer_refused"], rows[1]["partial_refused"]) == (0, 5, 1)
    # 0.95: a0..a29 are 0.50..0.79 -> all 30 refused; all 10 no-answer (max 0.9) refused
    assert (rows[2]["answerable_refused"], rows[2]["noanswer_refused"]) == (30, 10)
    assert not any(x["meets_targets"] for x in rows)


@pytest.mark.skipif(not (SHARED_SCORE.exists() and SHARED_DEV.exists()),
                    reason="the shared scorer ../shared/eval/score.py is not on this machine")
def test_recall_and_mrr_agree_with_shared_score_py():
    spec = importlib.util.spec_from_file_location("shared_score", SHARED_SCORE)
    score = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(score)
    golden = [json.loads(x) for x in SHARED_DEV.read_text().splitlines() if x.strip()]
    rng = random.Random(13)
    lines = []
    for q in golden:  # random rankings around the answers: hits, near misses, long spans
        res = []
        for _ in range(rng.randint(0, 12)):
            e = rng.choice(q["expected"])
            path = e["path"] if rng.random() < 0.6 else "other/" + e["path"]
            start = e["line"] - rng.randint(-5, 40)
            res.append(r(path, start, start + rng.choice([3, 30, 150, 199, 250])))
        lines.append({"id": q["id"], "results": res})
    theirs = score.score(golden, lines)
    ours = em.evaluate(golden, lines)["overall"]
    assert theirs["questions"] == len(golden)
    assert 0 < theirs["symbol_recall@10"] < 1  # the sample exercises hits and misses
    for key in ("symbol_recall@1", "symbol_recall@5", "symbol_recall@10", "file_recall@5", "mrr@10"):
        assert round(ours[key], 3) == theirs[key], key
