"""``stats`` maths, retention and the golden-set export on a seeded log (real SQLite and
PostgreSQL); the CLI commands on SQLite."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy import select

from bot.querylog.export import negative_questions
from bot.querylog.models import Feedback, Query
from bot.querylog.privacy import UserHasher
from bot.querylog.recorder import QueryLog
from bot.querylog.retention import (JOB_ID, prune, retention_job_provider, run_retention,
                                    schedule_retention)
from bot.querylog.stats import compute_stats, nearest_rank, parse_since
from helpers.querylog import migrated_sessions, record
from common.errors import BadInput
from common.settings import load

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
ROOT = Path(__file__).resolve().parents[2]


def test_nearest_rank_definition():
    v = [15, 20, 35, 40, 50]  # the textbook example
    assert [nearest_rank(v, p) for p in (5, 30, 40, 50, 95, 100)] == [15, 20, 20, 35, 50, 50]
    assert nearest_rank(list(range(1, 21)), 50) == 10 and nearest_rank(list(range(1, 21)), 95) == 19
    assert nearest_rank([], 50) is None and nearest_rank([7.5], 95) == 7.5


def test_parse_since():
    assert parse_since("7d", now=NOW) == NOW - timedelta(days=7)
    assert parse_since("36h", now=NOW) == NOW - timedelta(hours=36)
    assert parse_since("2w", now=NOW) == NOW - timedelta(weeks=2)
    assert parse_since("2026-05-01") == datetime(2026, 5, 1, tzinfo=timezone.utc)
    with pytest.raises(BadInput):
        parse_since("last tuesday")


def seed(sessions) -> dict:
    """20 queries in the window (retrieve 1..20 ms, generate 10..200 ms, shuffled), 3 before it."""
    log = QueryLog(sessions, hasher=UserHasher())
    order = list(range(1, 21))
    random.Random(7).shuffle(order)
    refs = {}
    for k, i in enumerate(order):
        source, channel = ("slack", "C1") if i <= 8 else ("slack", "C2") if i <= 12 else ("cli", None)
        no_cov = i in (1, 2, 3, 17, 18)
        question = {1: "Where is  the GraphQL schema?", 2: "where is the graphql schema?",
                    3: "WHERE is the GraphQL schema? ", 17: "how do we rotate kafka keys?",
                    18: "what is the SLA?"}.get(i, f"question {i}?")
        post = None if source == "cli" and i == 20 else float(i * 2)
        rec = record(question=question, source=source, channel=channel, message_ts=f"{i}.0", thread_ts=f"{i}.0",
                     no_coverage=no_cov, model="extractive" if no_cov else "claude-sonnet-5-5",
                     latency_ms={"retrieve": float(i), "expand": 0.0, "generate": float(10 * i), "post": post},
                     created_at=NOW - timedelta(hours=k + 1), stale=(i == 5))
        log.record(rec)
        refs[i] = rec.ref
    for j in range(3):  # outside a 7-day window
        log.record(record(question="old question?", no_coverage=True, created_at=NOW - timedelta(days=30 + j),
                          latency_ms={"retrieve": 9999.0}))
    # votes: 6 up, 2 down (on questions 5 and 6), one of the ups on an old query (outside the window)
    for i, (user, vote) in {4: ("U1", 1), 5: ("U1", -1), 6: ("U2", -1), 7: ("U1", 1), 8: ("U1", 1),
                            9: ("U1", 1), 10: ("U1", 1), 11: ("U3", 1)}.items():
        log.record_feedback("C", f"{i}.0", user, vote, query_ref=refs[i])
    return refs


def test_stats_maths_on_a_seeded_log(db_url):
    sessions = migrated_sessions(db_url)
    seed(sessions)
    d = compute_stats(sessions, NOW - timedelta(days=7), now=NOW)
    assert d["queries"] == 20
    assert d["by_source"] == {"slack": 12, "cli": 8}
    assert d["by_channel"] == [{"source": "cli", "channel": None, "queries": 8, "no_coverage": 2},
                               {"source": "slack", "channel": "C1", "queries": 8, "no_coverage": 3},
                               {"source": "slack", "channel": "C2", "queries": 4, "no_coverage": 0}]
    lat = d["latency_ms"]
    assert lat["retrieve"] == {"n": 20, "p50": 10.0, "p95": 19.0}
    assert lat["generate"] == {"n": 20, "p50": 100.0, "p95": 190.0}
    assert lat["expand"] == {"n": 20, "p50": 0.0, "p95": 0.0}
    # post: 19 values 2,4,...,38 (question 20 unmeasured) -> rank ceil(9.5)=10 -> 20, ceil(18.05)=19 -> 38
    assert lat["post"] == {"n": 19, "p50": 20.0, "p95": 38.0}
    assert d["no_coverage"] == {"count": 5, "share": 0.25}
    assert d["stale"] == {"count": 1, "share": 0.05}
    assert d["feedback"] == {"up": 6, "down": 2, "votes": 8, "up_rate": 0.75, "down_rate": 0.25,
                             "queries_with_votes": 8, "vote_rate": 0.4}
    assert d["tokens"]["input"] == 20 * 1000 and d["tokens"]["cache_read"] == 20 * 3000
    assert d["cost_usd"] == pytest.approx(15 * 0.0069)  # 15 sonnet answers, no-coverage ones are free
    gaps = [(g["question"].lower().split(), g["asked"], g["no_coverage"], g["downvotes"]) for g in d["coverage_gaps"]]
    assert gaps[0] == ("where is the graphql schema?".split(), 3, 3, 0)
    assert sorted(gaps[1:3], key=lambda g: g[0]) == [("question 5?".split(), 1, 0, 1), ("question 6?".split(), 1, 0, 1)]
    assert {tuple(g[0]) for g in gaps[3:]} == {("how", "do", "we", "rotate", "kafka", "keys?"), ("what", "is", "the", "sla?")}
    assert len(gaps) == 5 and "old question?" not in json.dumps(d)
    # a narrower window: the 5 most recent hours
    d5 = compute_stats(sessions, NOW - timedelta(hours=5, minutes=30), now=NOW)
    assert d5["queries"] == 5


def test_export_negative_questions(db_url):
    sessions = migrated_sessions(db_url)
    seed(sessions)
    items = list(negative_questions(sessions))
    assert all(set(i) == {"id", "question", "expected"} and i["expected"] == [] for i in items)
    qs = [i["question"] for i in items]
    # deduplicated, newest first; downvoted and no-coverage ones, incl. the old no-coverage question
    assert len(qs) == 6 and sum("graphql" in q.lower() for q in qs) == 1
    assert {"question 5?", "question 6?", "old question?", "what is the SLA?"} <= set(qs)
    assert all(i["id"].startswith("querylog-") for i in items)
    recent = list(negative_questions(sessions, since=NOW - timedelta(days=7)))
    assert "old question?" not in [i["question"] for i in recent]


def test_retention_blanks_text_but_keeps_aggregates(db_url):
    sessions = migrated_sessions(db_url)
    log = QueryLog(sessions, hasher=UserHasher())
    old = record(question="old secret?", created_at=NOW - timedelta(days=40))
    new = record(question="new?", created_at=NOW - timedelta(days=2), message_ts="2.2")
    log.record(old), log.record(new)
    log.record_feedback("C1", "1.1", "U1", -1, query_ref=old.ref, comment="wrong file")
    log.record_feedback("C1", "2.2", "U1", 1, query_ref=new.ref, comment="great")
    before = compute_stats(sessions, NOW - timedelta(days=365), now=NOW)
    result = prune(sessions, 30, now=NOW)
    assert (result["queries"], result["comments"]) == (1, 1)
    with sessions() as s:
        rows = {q.ref: q for q in s.scalars(select(Query))}
        n_chunks = {q.ref: len(q.chunks) for q in rows.values()}
        votes = {f.query_id: (f.vote, f.comment) for f in s.scalars(select(Feedback))}
    o, n = rows[old.ref], rows[new.ref]
    assert (o.question, o.answer) == (None, None) and o.redacted_at is not None
    assert (o.retrieve_ms, o.generate_ms, o.input_tokens, o.cost_usd, n_chunks[old.ref]) == \
        (50.0, 900.0, 1000, pytest.approx(0.0069), 8)
    assert (n.question, n.answer, n.redacted_at) == ("new?", "In tax.py [1]", None)
    assert votes == {o.id: (-1, None), n.id: (1, "great")}
    after = compute_stats(sessions, NOW - timedelta(days=365), now=NOW)
    for key in ("queries", "latency_ms", "feedback", "no_coverage", "tokens", "cost_usd", "by_channel"):
        assert after[key] == before[key], key
    assert prune(sessions, 30, now=NOW)["queries"] == 0  # idempotent
    with pytest.raises(ValueError):
        prune(sessions, 0)


def test_schedule_retention_adds_a_daily_job(tmp_path):
    from apscheduler.schedulers.background import BackgroundScheduler

    sessions = migrated_sessions(f"sqlite:///{tmp_path / 'r.db'}")
    QueryLog(sessions, hasher=UserHasher()).record(record(created_at=datetime.now(timezone.utc) - timedelta(days=9)))
    scheduler = BackgroundScheduler(timezone="UTC")
    scheduler.start(paused=True)
    request_shutdown = scheduler.shutdown
    job = schedule_retention(scheduler, sessions, 7)
    assert job.id == JOB_ID and "cron" in str(job.trigger) and "hour='3'" in str(job.trigger)
    assert schedule_retention(scheduler, sessions, 7).id == JOB_ID and len(scheduler.get_jobs()) == 1
    assert job.next_run_time.hour == 3 and job.next_run_time.minute == 17
    request_shutdown(wait=False)
    job.func()  # what the scheduler runs daily
    with sessions() as s:
        assert s.scalars(select(Query.question)).all() == [None]


def test_retention_job_in_the_freshness_scheduler_persists_and_prunes(tmp_path, monkeypatch):
    """``coderag serve`` adds retention to the single (locked, persistent) scheduler: the
    job is stored by reference, survives a restart, is removed when retention is turned
    off, and its body prunes the configured database."""
    from indexer.freshness.scheduler import FreshnessScheduler, next_runs

    url = f"sqlite:///{tmp_path / 'r.db'}"
    monkeypatch.setenv("CODERAG_DATABASE_URL", url)
    sessions = migrated_sessions(url)
    QueryLog(sessions, hasher=UserHasher()).record(record(created_at=datetime.now(timezone.utc) - timedelta(days=9)))
    for attempt in range(2):  # a restart replaces the stored job, never duplicates it
        sched = FreshnessScheduler(sessions)
        sched.on_start(retention_job_provider(7))
        sched.start()
        try:
            jobs = [j for j in sched.scheduler.get_jobs() if j.id == JOB_ID]
            assert len(jobs) == 1 and jobs[0].trigger.interval == timedelta(days=1), attempt
            assert jobs[0].func_ref == "bot.querylog.retention:run_retention" and jobs[0].args == (7,)
            first = next_runs(sessions.kw["bind"])[JOB_ID]
            assert timedelta(0) < first - datetime.now(timezone.utc) <= timedelta(seconds=61)
        finally:
            sched.shutdown()
    sched = FreshnessScheduler(sessions)
    sched.on_start(retention_job_provider(None))
    sched.start()
    try:
        assert JOB_ID not in sched.job_ids()
    finally:
        sched.shutdown()
    run_retention(7)  # the job body, outside any runtime: opens CODERAG_DATABASE_URL
    with sessions() as s:
        assert s.scalars(select(Query.question)).all() == [None]


def test_retention_setting(monkeypatch):
    retention_days = lambda: load().querylog.retention_days  # noqa: E731
    monkeypatch.delenv("CODERAG_RETENTION_DAYS", raising=False)
    assert retention_days() == 90  # on by default
    monkeypatch.setenv("CODERAG_RETENTION_DAYS", "off")
    assert retention_days() is None
    monkeypatch.setenv("CODERAG_RETENTION_DAYS", "45")
    assert retention_days() == 45
    monkeypatch.setenv("CODERAG_RETENTION_DAYS", "-3")
    with pytest.raises(BadInput):
        retention_days()


def cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_cli_db_stats_export_prune(tmp_path):
    import os

    url = f"sqlite:///{tmp_path / 'cli.db'}"
    env = {**os.environ, "CODERAG_DATABASE_URL": url, "CODERAG_HOME": str(tmp_path / "home")}
    up = cli(env, "db", "upgrade")
    assert up.returncode == 0 and "head" in up.stdout, up.stderr
    sessions = migrated_sessions(url)
    log = QueryLog(sessions, hasher=UserHasher())
    now = datetime.now(timezone.utc)
    log.record(record(question="why no docs?", no_coverage=True, created_at=now - timedelta(hours=1)))
    log.record(record(question="fine?", created_at=now - timedelta(hours=2), message_ts="2.2"))
    log.record(record(question="ancient?", created_at=now - timedelta(days=100), message_ts="3.3"))
    st = cli(env, "stats", "--since", "7d", "--json")
    assert st.returncode == 0, st.stderr
    d = json.loads(st.stdout)
    assert d["queries"] == 2 and d["no_coverage"]["share"] == 0.5
    assert [g["question"] for g in d["coverage_gaps"]] == ["why no docs?"]
    text = cli(env, "stats")
    assert text.returncode == 0 and "p50" in text.stdout and "why no docs?" in text.stdout
    out = tmp_path / "gold.jsonl"
    ex = cli(env, "feedback", "export", "--negative", "--out", str(out))
    assert ex.returncode == 0, ex.stderr
    assert [json.loads(line)["question"] for line in out.read_text().splitlines()] == ["why no docs?"]
    pr = cli({**env, "CODERAG_RETENTION_DAYS": "off"}, "db", "prune", "--json")
    assert pr.returncode == 2 and "CODERAG_RETENTION_DAYS" in pr.stderr
    pr = cli({**env, "CODERAG_RETENTION_DAYS": "30"}, "db", "prune", "--json")
    assert pr.returncode == 0 and json.loads(pr.stdout)["queries"] == 1, pr.stderr
    bad = cli(env, "stats", "--since", "yesterday-ish")
    assert bad.returncode == 2 and "coderag: error:" in bad.stderr
