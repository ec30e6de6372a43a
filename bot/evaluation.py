"""Retrieval metrics over a golden set, as documented in docs/commands.md ("Golden-set format").

A result is a *symbol hit* for a question when its path equals an expected path, its
``[start_line, end_line]`` contains the expected definition line, and it spans at most
:data:`MAX_SPAN_LINES` lines; a *file hit* when only the path matches.
symbol_recall@k = share of questions with a symbol hit in the top k;
MRR@10 = mean of 1/rank of the first symbol hit within 10 (0 if none).
"""
from __future__ import annotations

from typing import Iterable

# A hit must locate the answer, not merely contain the whole file (docs/commands.md, "Golden-set format").
MAX_SPAN_LINES = 200


def first_hit_rank(results: list[dict], expected: list[dict], *, symbol_level: bool) -> int | None:
    """1-based rank of the first result that answers the question, or ``None``."""
    for rank, r in enumerate(results, 1):
        for e in expected:
            if r.get("path") != e["path"]:
                continue
            if not symbol_level:
                return rank
            start, end = int(r.get("start_line", 0)), int(r.get("end_line", -1))
            if start <= int(e["line"]) <= end and end - start + 1 <= MAX_SPAN_LINES:
                return rank
    return None


def score_run(golden: Iterable[dict], results_by_id: dict[str, list[dict]]) -> dict:
    """Metrics dict: questions, symbol_recall@1/5/10, file_recall@5/10, mrr@10,
    avg_lines@5, symbol_recall@5_by_kind (``"hits/total"``) and misses@5 (ids).

    Questions with no ``expected`` entries are left out (they are no-answer questions).
    """
    rows = []
    for q in golden:
        if not q.get("expected"):
            continue
        res = results_by_id.get(q["id"], [])
        rows.append((q, first_hit_rank(res, q["expected"], symbol_level=True),
                     first_hit_rank(res, q["expected"], symbol_level=False), res))
    n = len(rows) or 1

    def recall(k: int, idx: int) -> float:
        return round(sum(1 for r in rows if r[idx] is not None and r[idx] <= k) / n, 3)

    by_kind: dict[str, list[int]] = {}
    for q, sym, _f, _r in rows:
        tally = by_kind.setdefault(q.get("kind", "?"), [0, 0])
        tally[0] += 1 if sym is not None and sym <= 5 else 0
        tally[1] += 1
    spans = [int(x.get("end_line", 0)) - int(x.get("start_line", 0)) + 1 for *_x, res in rows for x in res[:5]]
    return {
        "questions": len(rows),
        "symbol_recall@1": recall(1, 1),
        "symbol_recall@5": recall(5, 1),
        "symbol_recall@10": recall(10, 1),
        "file_recall@5": recall(5, 2),
        "file_recall@10": recall(10, 2),
        "mrr@10": round(sum(1.0 / r[1] for r in rows if r[1] is not None and r[1] <= 10) / n, 3),
        "avg_lines@5": round(sum(spans) / len(spans), 1) if spans else None,
        "symbol_recall@5_by_kind": {k: f"{h}/{t}" for k, (h, t) in sorted(by_kind.items())},
        "misses@5": [q["id"] for q, s, _f, _r in rows if s is None or s > 5],
    }
