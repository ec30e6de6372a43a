"""Scoring functions for the retrieval evaluation on the generalization sets (pure: no indexing, no I/O).

Inputs
------
``questions``: dicts as in ``../shared/eval/dev.jsonl``, ``bench/data/dev2.jsonl`` and
``bench/data/noanswer.jsonl``: ``id``, ``kind``, ``expected: [{"path", "line", ...}]``
(no-answer questions have no ``expected``; partly covered ones have ``covered_expected``).

``results``: the ranked results per question, best first, either a mapping
``{question_id: [result, ...]}`` or the lines of ``coderag search --batch ... --json``
(``[{"id": ..., "results": [...]}, ...]``). A result is a dict with at least ``path``,
``start_line`` and ``end_line`` (1-based, inclusive).

Hit rule (the one in ``../shared/eval/score.py`` and :mod:`bot.evaluation`)
--------------------------------------------------------------------------
A result *hits* an expected location ``e`` when ``result.path == e.path``,
``start_line <= e.line <= end_line`` and the span ``end_line - start_line + 1`` is at
most :data:`MAX_SPAN` (200) lines: a citation must locate the answer, not just contain
the whole file. It is a *file hit* when only the path matches.

Metrics per question (``rank`` is 1-based)
------------------------------------------
- ``symbol_recall@k`` = 1 if some result of rank <= k hits some expected location, else 0.
- ``file_recall@5`` = 1 if some result of rank <= 5 has an expected path, else 0.
- ``mrr@10`` = 1 / (rank of the first hit) if that rank <= 10, else 0 (Voorhees, "The
  TREC-8 Question Answering Track Report", 1999).
- ``ndcg@10`` with binary gains (Jarvelin & Kekalainen, "Cumulated gain-based
  evaluation of IR techniques", ACM TOIS 20(4), 2002; the log2(rank + 1) discount):
  ``DCG@10 = sum_{rank=1..10} gain(rank) / log2(rank + 1)``.
  A result has gain 1 when it can be credited with an expected location that no
  higher-ranked result was credited with, else 0; each expected location is credited at
  most once, so ten chunks of one function count once. The credit is a maximum matching
  between results and the locations they hit, built in rank order with augmenting paths
  (Kuhn's algorithm): a result that hits locations A and B followed by one that hits only
  A earns two gains (first -> B, second -> A). Processing ranks in order and keeping a
  result whenever the matching can grow gives the largest DCG, because the matchable
  result sets form a transversal matroid and the rank discounts fall with rank
  (the matroid greedy theorem).
  ``IDCG@10 = sum_{rank=1..min(n, 10)} 1 / log2(rank + 1)`` with ``n`` the number of
  expected locations; ``NDCG@10 = DCG@10 / IDCG@10``, in [0, 1].

Every metric is averaged over the questions that have ``expected`` locations, overall and
per ``kind``. A question with no entry in ``results`` counts as an empty ranking and is
listed under ``missing``.

Refusals
--------
:func:`refusal_table` counts answerable questions refused against no-answer questions
refused. The targets in :data:`REFUSAL_TARGETS` are the refusal goals: at
least 90% of the no-answer questions refused, at most 1 in 30 answerable ones refused.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

try:  # one hit rule for the product's evaluator and this module
    from bot.evaluation import MAX_SPAN_LINES as MAX_SPAN
except ImportError:  # bench run without the package on the path
    MAX_SPAN = 200  # ../shared/eval/score.py MAX_SPAN

NDCG_K = 10
MRR_K = 10
RECALL_KS = (1, 5, 10)
FILE_RECALL_K = 5

#: Refusal goals: >= 90% of no-answer questions refused, <= 1 in 30 answerable refused.
REFUSAL_TARGETS = {"noanswer_refused_min": 0.90, "answerable_refused_max": 1 / 30}

METRIC_NAMES = tuple(f"symbol_recall@{k}" for k in RECALL_KS) + (
    f"mrr@{MRR_K}", f"ndcg@{NDCG_K}", f"file_recall@{FILE_RECALL_K}")


def _span(result: Mapping) -> tuple[int, int]:
    return int(result.get("start_line", 0)), int(result.get("end_line", -1))


def is_symbol_hit(result: Mapping, expected: Mapping) -> bool:
    """True when ``result`` hits the expected location: same path, its inclusive line range
    contains ``expected["line"]`` and it spans at most :data:`MAX_SPAN` lines."""
    if result.get("path") != expected["path"]:
        return False
    start, end = _span(result)
    return start <= int(expected["line"]) <= end and end - start + 1 <= MAX_SPAN


def is_file_hit(result: Mapping, expected: Mapping) -> bool:
    """True when ``result`` has the expected location's path (line range ignored)."""
    return result.get("path") == expected["path"]


def first_hit_rank(results: Sequence[Mapping], expected: Sequence[Mapping], *,
                   symbol_level: bool = True) -> int | None:
    """1-based rank of the first result that hits any expected location (file hit when
    ``symbol_level`` is False), or None when no result does."""
    hit = is_symbol_hit if symbol_level else is_file_hit
    for rank, r in enumerate(results, 1):
        if any(hit(r, e) for e in expected):
            return rank
    return None


def credited_gains(results: Sequence[Mapping], expected: Sequence[Mapping],
                   k: int = NDCG_K) -> list[int]:
    """Binary gain (0/1) of each of the top ``k`` results, each expected location credited
    at most once (maximum matching in rank order, see the module docstring).

    Returns a list of length ``min(k, len(results))``.
    """
    top = list(results[:k])
    hits = [[j for j, e in enumerate(expected) if is_symbol_hit(r, e)] for r in top]
    owner: dict[int, int] = {}  # expected index -> result index credited with it

    def augment(i: int, seen: set[int]) -> bool:
        for j in hits[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    gains = []
    for i in range(len(top)):
        gains.append(1 if hits[i] and augment(i, set()) else 0)
    return gains


def ndcg_at_k(results: Sequence[Mapping], expected: Sequence[Mapping], k: int = NDCG_K) -> float:
    """NDCG@k with binary, once-per-location gains; IDCG from ``min(len(expected), k)``
    ideal hits. 0.0 when ``expected`` is empty."""
    n_ideal = min(len(expected), k)
    if n_ideal == 0:
        return 0.0
    dcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(credited_gains(results, expected, k), 1))
    idcg = sum(1.0 / math.log2(rank + 1) for rank in range(1, n_ideal + 1))
    return dcg / idcg


def question_metrics(results: Sequence[Mapping], expected: Sequence[Mapping]) -> dict:
    """Per-question values of every metric in :data:`METRIC_NAMES` (each in [0, 1]) plus
    ``first_symbol_rank`` / ``first_file_rank`` (int or None)."""
    sym = first_hit_rank(results, expected, symbol_level=True)
    fil = first_hit_rank(results, expected, symbol_level=False)
    out: dict = {f"symbol_recall@{k}": float(sym is not None and sym <= k) for k in RECALL_KS}
    out[f"mrr@{MRR_K}"] = 1.0 / sym if sym is not None and sym <= MRR_K else 0.0
    out[f"ndcg@{NDCG_K}"] = ndcg_at_k(results, expected, NDCG_K)
    out[f"file_recall@{FILE_RECALL_K}"] = float(fil is not None and fil <= FILE_RECALL_K)
    out["first_symbol_rank"], out["first_file_rank"] = sym, fil
    return out


def results_by_id(results: Mapping[str, Sequence[Mapping]] | Iterable[Mapping]) -> dict[str, list]:
    """Normalise ``results`` to ``{id: [result, ...]}``. Accepts the mapping itself or the
    ``coderag search --batch --json`` lines (``{"id", "results"}``). Raises ValueError on
    a line without ``id`` or on an id given twice."""
    if isinstance(results, Mapping):
        return {str(k): list(v) for k, v in results.items()}
    out: dict[str, list] = {}
    for n, line in enumerate(results, 1):
        if "id" not in line:
            raise ValueError(f"results line {n} has no 'id'")
        if line["id"] in out:
            raise ValueError(f"results line {n}: id {line['id']!r} given twice")
        out[line["id"]] = list(line.get("results", []))
    return out


def _mean(rows: list[dict]) -> dict:
    n = len(rows)
    return {m: (sum(r[m] for r in rows) / n if n else 0.0) for m in METRIC_NAMES} | {"questions": n}


def evaluate(questions: Iterable[Mapping], results: Mapping | Iterable[Mapping]) -> dict:
    """Score ranked results against questions.

    Returns ``{"questions": n, "missing": [ids without results], "overall": {metric: mean,
    "questions": n}, "by_kind": {kind: {...same...}}, "misses@5": [ids without a symbol
    hit in the top 5], "per_question": {id: question_metrics(...)}}``. Means are
    unrounded floats in [0, 1]. Questions with no ``expected`` (no-answer questions) are
    left out, as in ``score.py``.
    """
    by_id = results_by_id(results)
    rows, kinds, missing, per_question = [], {}, [], {}
    for q in questions:
        expected = q.get("expected") or []
        if not expected:
            continue
        if q["id"] not in by_id:
            missing.append(q["id"])
        m = question_metrics(by_id.get(q["id"], []), expected)
        per_question[q["id"]] = m
        rows.append(m)
        kinds.setdefault(q.get("kind", "?"), []).append(m)
    return {
        "questions": len(rows),
        "missing": missing,
        "overall": _mean(rows),
        "by_kind": {k: _mean(v) for k, v in sorted(kinds.items())},
        "misses@5": [qid for qid, m in per_question.items() if not m["symbol_recall@5"]],
        "per_question": per_question,
    }


def _is_answerable(q: Mapping) -> bool:
    return bool(q.get("expected")) and q.get("kind") != "no-answer"


def refusal_table(questions: Iterable[Mapping], refused: Mapping[str, bool]) -> dict:
    """Refusal counts for one decision rule.

    ``refused[id]`` is True when the product declined to answer (no_coverage) question
    ``id``. Questions fall in three groups: ``answerable`` (non-empty ``expected``),
    ``noanswer`` (kind ``no-answer``, not ``partial``) and ``partial`` (kind
    ``no-answer`` with ``partial: true``; the right reply answers the covered part and
    names the uncovered terms, so their refusals are reported apart, in neither rate).
    Questions of no group (no expected, not no-answer) are ignored.

    Returns ``{group: {"refused", "total", "rate", "missing"}}`` for the three groups and
    ``"meets_targets"`` (bool, per :data:`REFUSAL_TARGETS`). A question absent from
    ``refused`` counts as not refused and is listed under ``missing``.
    """
    groups: dict[str, list[str]] = {"answerable": [], "noanswer": [], "partial": []}
    for q in questions:
        if q.get("kind") == "no-answer":
            groups["partial" if q.get("partial") else "noanswer"].append(q["id"])
        elif _is_answerable(q):
            groups["answerable"].append(q["id"])
    table: dict = {}
    for name, ids in groups.items():
        n_ref = sum(1 for i in ids if refused.get(i, False))
        table[name] = {"refused": n_ref, "total": len(ids),
                       "rate": n_ref / len(ids) if ids else 0.0,
                       "missing": [i for i in ids if i not in refused]}
    table["meets_targets"] = (
        table["noanswer"]["rate"] >= REFUSAL_TARGETS["noanswer_refused_min"]
        and table["answerable"]["rate"] <= REFUSAL_TARGETS["answerable_refused_max"])
    return table


def refusal_tradeoff(questions: Sequence[Mapping], scores: Mapping[str, float],
                     thresholds: Iterable[float]) -> list[dict]:
    """The trade-off table of a score-based rule "refuse when score < threshold".

    ``scores[id]`` is the answerability score of each question (higher = more likely
    answerable; a missing id counts as -inf, so it is refused). Returns one row per
    threshold: ``{"threshold", "answerable_refused", "answerable_total",
    "noanswer_refused", "noanswer_total", "partial_refused", "partial_total",
    "meets_targets"}``.
    """
    rows = []
    for t in thresholds:
        refused = {q["id"]: scores.get(q["id"], -math.inf) < t for q in questions}
        tab = refusal_table(questions, refused)
        rows.append({"threshold": t,
                     **{f"{g}_{f}": tab[g][f] for g in ("answerable", "noanswer", "partial")
                        for f in ("refused", "total")},
                     "meets_targets": tab["meets_targets"]})
    return rows
