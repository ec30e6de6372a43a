"""``coderag stats``: what the query log says about a time window.

Method. Counts, sums and the coverage-gap grouping run in SQL (portable to SQLite and
PostgreSQL; the covering index ``ix_queries_stats`` serves the window scans). Latency percentiles use the **nearest-rank**
definition: the values of one stage in the window (NULLs = not measured are left out) are
sorted ascending and ``pP = v[ceil(P/100 * n) - 1]`` (1-based rank ``ceil(P*n/100)``), so
the result is always an observed value, e.g. for ``n = 20`` p50 is the 10th and p95 the
19th smallest. The stage columns are fetched once and sorted in Python (the whole report takes about 1 s
for 100k queries on SQLite or PostgreSQL; see ``bench/querylog_bench.py``).

Feedback counts are votes on queries asked in the window, plus unlinked (legacy) votes
given in it. A coverage gap is a question that was answered with no coverage or got at
least one 👎; SQL selects those rows and Python groups them case- and
whitespace-insensitively (``" ".join(q.lower().split())``, which SQL cannot do portably),
ordered by how often they were asked, then 👎 count, then most recent (the most recent
wording is shown). Questions blanked by retention are not listed.
"""
from __future__ import annotations

import math
from datetime import datetime, timezone

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import sessionmaker

from common.timewindow import parse_since  # noqa: F401 - the window's start, shared with `changes`

from .models import Feedback, Query
from .recorder import STAGES

PERCENTILES = (50, 95)


def nearest_rank(sorted_values: list[float], p: int) -> float | None:
    """The ``p``-th percentile (0 < p <= 100) of ascending ``sorted_values`` by nearest rank."""
    n = len(sorted_values)
    if n == 0:
        return None
    rank = max(1, math.ceil(p * n / 100))
    return sorted_values[rank - 1]


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def compute_stats(sessions: sessionmaker, since: datetime, *, now: datetime | None = None,
                  top: int = 10) -> dict:
    """Statistics of queries with ``since <= created_at <= now``.

    Returns a JSON-ready dict: ``since``/``until`` (ISO), ``queries`` (int), ``by_source``
    {source: n}, ``by_channel`` [{source, channel, queries, no_coverage}] (most first),
    ``latency_ms`` {stage: {n, p50, p95}} (ms, nearest rank), ``no_coverage`` {count,
    share}, ``stale`` {count, share}, ``feedback`` {up, down, votes, up_rate, down_rate,
    queries_with_votes, vote_rate}, ``tokens`` {input, output, cache_read, cache_write},
    ``cost_usd``, ``coverage_gaps`` [{question, asked, no_coverage, downvotes, last_asked}].
    """
    now = now or datetime.now(timezone.utc)
    window = and_(Query.created_at >= since, Query.created_at <= now)
    as_int = lambda cond: func.sum(case((cond, 1), else_=0))  # noqa: E731
    with sessions() as session:
        s = session.connection()  # Core rows: no ORM row processing on 100k-row fetches
        groups = s.execute(
            select(Query.source, Query.channel, func.count(), as_int(Query.no_coverage), as_int(Query.stale),
                   func.sum(Query.input_tokens), func.sum(Query.output_tokens),
                   func.sum(Query.cache_read_tokens), func.sum(Query.cache_write_tokens), func.sum(Query.cost_usd))
            .where(window).group_by(Query.source, Query.channel)).all()
        stage_rows = s.execute(select(Query.retrieve_ms, Query.expand_ms, Query.generate_ms, Query.post_ms)
                               .where(window)).all()
        linked = and_(Feedback.query_id.is_not(None), window)
        legacy = and_(Feedback.query_id.is_(None), Feedback.created_at >= since, Feedback.created_at <= now)
        fb = s.execute(select(as_int(Feedback.vote == 1), as_int(Feedback.vote == -1),
                              func.count(func.distinct(Feedback.query_id)))
                       .select_from(Feedback).outerjoin(Query, Query.id == Feedback.query_id)
                       .where(or_(linked, legacy))).one()
        downs = (select(Feedback.query_id.label("qid"), as_int(Feedback.vote == -1).label("down"))
                 .where(Feedback.query_id.is_not(None)).group_by(Feedback.query_id).subquery())
        down = func.coalesce(downs.c.down, 0)
        gap_rows = s.execute(
            select(Query.question, Query.no_coverage, down, Query.created_at)
            .select_from(Query).outerjoin(downs, downs.c.qid == Query.id)
            .where(window, Query.question.is_not(None), or_(Query.no_coverage, down > 0))).all()

    total = sum(int(g[2]) for g in groups)
    by_source: dict[str, int] = {}
    for g in groups:
        by_source[g[0]] = by_source.get(g[0], 0) + int(g[2])
    by_channel = sorted(({"source": g[0], "channel": g[1], "queries": int(g[2]), "no_coverage": int(g[3] or 0)}
                         for g in groups), key=lambda d: (-d["queries"], d["source"], d["channel"] or ""))
    no_cov = sum(int(g[3] or 0) for g in groups)
    stale = sum(int(g[4] or 0) for g in groups)
    latency = {}
    for i, stage in enumerate(STAGES):
        values = sorted(r[i] for r in stage_rows if r[i] is not None)
        latency[stage] = {"n": len(values), **{f"p{p}": nearest_rank(values, p) for p in PERCENTILES}}
    up, dn, voted = int(fb[0] or 0), int(fb[1] or 0), int(fb[2] or 0)
    return {
        "since": since.isoformat(), "until": now.isoformat(), "queries": total,
        "by_source": dict(sorted(by_source.items(), key=lambda kv: -kv[1])),
        "by_channel": by_channel,
        "latency_ms": latency,
        "no_coverage": {"count": no_cov, "share": _ratio(no_cov, total)},
        "stale": {"count": stale, "share": _ratio(stale, total)},
        "feedback": {"up": up, "down": dn, "votes": up + dn, "up_rate": _ratio(up, up + dn),
                     "down_rate": _ratio(dn, up + dn), "queries_with_votes": voted,
                     "vote_rate": _ratio(voted, total)},
        "tokens": {k: int(sum((g[5 + i] or 0) for g in groups))
                   for i, k in enumerate(("input", "output", "cache_read", "cache_write"))},
        "cost_usd": round(sum(float(g[9] or 0) for g in groups), 6),
        "coverage_gaps": _gaps(gap_rows, top),
    }


def _gaps(rows, top: int) -> list[dict]:
    """Group (question, no_coverage, downvotes, created_at) rows by normalised question."""
    groups: dict[str, dict] = {}
    for question, no_cov, down, at in rows:
        key = " ".join(question.lower().split())
        if not key:
            continue
        at = _aware(at)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"question": question.strip(), "asked": 0, "no_coverage": 0, "downvotes": 0,
                               "last": at}
        g["asked"] += 1
        g["no_coverage"] += int(bool(no_cov))
        g["downvotes"] += int(down or 0)
        if at > g["last"]:
            g["last"], g["question"] = at, question.strip()
    ranked = sorted(groups.values(), key=lambda g: (-g["asked"], -g["downvotes"], -g["last"].timestamp()))
    return [{"question": g["question"], "asked": g["asked"], "no_coverage": g["no_coverage"],
             "downvotes": g["downvotes"], "last_asked": g["last"].isoformat()} for g in ranked[:top]]


def _aware(value: datetime) -> datetime:
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _iso(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):  # SQLite may hand back text for aggregates
        return value
    return (value if value.tzinfo else value.replace(tzinfo=timezone.utc)).isoformat()


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:,.0f}"


def render_stats(d: dict) -> str:
    """A plain-text report of :func:`compute_stats`'s dict."""
    lines = [f"Queries since {d['since'][:16].replace('T', ' ')} UTC: {d['queries']}"]
    if d["by_source"]:
        lines.append("  by source: " + ", ".join(f"{k} {v}" for k, v in d["by_source"].items()))
    for c in d["by_channel"][:10]:
        lines.append(f"  {c['source']:<6} {c['channel'] or '-':<14} {c['queries']:>7}  "
                     f"(no coverage {c['no_coverage']})")
    lines.append("Latency (ms, nearest rank):   p50      p95       n")
    for stage, v in d["latency_ms"].items():
        lines.append(f"  {stage:<10} {_ms(v['p50']):>16} {_ms(v['p95']):>8} {v['n']:>7}")
    f = d["feedback"]
    lines.append(f"Feedback: 👍 {f['up']}  👎 {f['down']}  (👍 rate {_pct(f['up_rate'])}, "
                 f"👎 rate {_pct(f['down_rate'])}; {_pct(f['vote_rate'])} of queries voted on)")
    lines.append(f"No coverage: {d['no_coverage']['count']} ({_pct(d['no_coverage']['share'])}); "
                 f"stale answers: {d['stale']['count']} ({_pct(d['stale']['share'])})")
    t = d["tokens"]
    lines.append(f"Tokens: {t['input']:,} in, {t['output']:,} out, {t['cache_read']:,} cache read, "
                 f"{t['cache_write']:,} cache write; cost ${d['cost_usd']:.2f}")
    lines.append("Coverage gaps (no coverage or 👎):" if d["coverage_gaps"] else "Coverage gaps: none")
    for g in d["coverage_gaps"]:
        lines.append(f"  {g['asked']:>4}× {g['question'][:100]!r} (no coverage {g['no_coverage']}, "
                     f"👎 {g['downvotes']})")
    return "\n".join(lines) + "\n"
