"""The query-log store on real SQLite and PostgreSQL: one transaction per record, crash
safety, feedback linking, hashing of user ids."""
from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sqlalchemy import event, func, select

from bot.querylog.models import Feedback, Query, QueryChunk
from bot.querylog.pricing import cost_usd
from bot.querylog.privacy import UserHasher, hash_user_id
from bot.querylog.recorder import QueryLog, record_from_answer
from helpers.querylog import migrated_sessions, record
from common.errors import BadInput
from common.settings import load

ROOT = Path(__file__).resolve().parents[2]


def counts(sessions) -> tuple[int, int, int]:
    with sessions() as s:
        return tuple(s.scalar(select(func.count()).select_from(m)) for m in (Query, QueryChunk, Feedback))


def test_record_writes_query_and_chunks(db_url):
    sessions = migrated_sessions(db_url)
    qid = QueryLog(sessions, hasher=UserHasher()).record(record())
    with sessions() as s:
        q = s.get(Query, qid)
        assert (q.source, q.channel, q.user, q.question, q.model, q.no_coverage, q.stale) == \
            ("slack", "C1", "U1", "where is tax computed?", "claude-sonnet-5-5", False, False)
        assert (q.retrieve_ms, q.expand_ms, q.generate_ms, q.post_ms) == (50.0, 5.0, 900.0, 120.0)
        assert (q.input_tokens, q.output_tokens, q.cache_read_tokens, q.cache_write_tokens) == (1000, 200, 3000, 0)
        # sonnet: $3/MTok in, $15 out, $0.30 cache read -> 0.003 + 0.003 + 0.0009
        assert q.cost_usd == pytest.approx(0.0069)
        assert [(c.rank, c.path, c.cited) for c in q.chunks][:3] == \
            [(1, "src/m1.py", True), (2, "src/m2.py", True), (3, "src/m3.py", False)]
        assert len(q.chunks) == 8 and q.chunks[7].start_line == 80 and q.chunks[7].commit == "a" * 40
        assert q.created_at is not None and len(q.ref) == 32


class Boom(RuntimeError):
    pass


def test_error_after_the_query_insert_rolls_back_everything(db_url):
    """An exception raised after the queries INSERT ran, before the commit: no partial rows."""
    sessions = migrated_sessions(db_url)
    seen = []

    def crash(mapper, connection, target):
        # the query row is already inserted in this transaction:
        seen.append(connection.execute(select(func.count()).select_from(Query)).scalar())
        raise Boom("simulated crash while writing chunks")

    event.listen(QueryChunk, "before_insert", crash)
    try:
        with pytest.raises(Boom):
            QueryLog(sessions, hasher=UserHasher()).record(record())
    finally:
        event.remove(QueryChunk, "before_insert", crash)
    assert seen and seen[0] == 1
    assert counts(sessions) == (0, 0, 0)
    QueryLog(sessions, hasher=UserHasher()).record(record())  # the store still works
    assert counts(sessions) == (1, 8, 0)


def test_process_killed_mid_record_leaves_no_partial_rows(db_url):
    """A real crash: the process dies (os._exit) after the query INSERT, before COMMIT."""
    migrated_sessions(db_url)
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from sqlalchemy import event
        from bot.querylog.models import QueryChunk
        from bot.querylog.privacy import UserHasher
        from bot.querylog.recorder import QueryLog
        from helpers.querylog import migrated_sessions, record
        sessions = migrated_sessions({db_url!r})
        def die(*a):
            os._exit(17)
        event.listen(QueryChunk, "before_insert", die)
        QueryLog(sessions, hasher=UserHasher()).record(record())
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 17, proc.stderr
    sessions = migrated_sessions(db_url)
    assert counts(sessions) == (0, 0, 0)


def test_feedback_links_by_ref_and_by_message_and_replaces_votes(db_url):
    sessions = migrated_sessions(db_url)
    log = QueryLog(sessions, hasher=UserHasher())
    rec = record()
    qid = log.record(rec)
    log.record_feedback("C1", "9.9", "U7", 1, query_ref=rec.ref)   # slash command: answer ts, ref
    log.record_feedback("C1", "1.1", "U8", -1)                      # no ref: found by channel + ts
    log.record_feedback("C1", "1.1", "U8", 1, comment="ok now")     # change of mind
    # a click that raced ahead of the record is linked when the record is written
    log.record_feedback("C2", "2.2", "U9", -1)
    qid2 = log.record(record(channel="C2", message_ts="2.2", thread_ts="2.2"))
    # ... also for a slash-command answer (no question message): through the button's ref
    early = record(channel="C3", message_ts=None, thread_ts=None)
    log.record_feedback("C3", "7.7", "U9", 1, query_ref=early.ref)
    qid3 = log.record(early)
    with sessions() as s:
        rows = {(f.message_ts, f.user): (f.query_id, f.vote, f.comment) for f in s.scalars(select(Feedback))}
    assert rows == {("9.9", "U7"): (qid, 1, None), ("1.1", "U8"): (qid, 1, "ok now"),
                    ("2.2", "U9"): (qid2, -1, None), ("7.7", "U9"): (qid3, 1, None)}
    with pytest.raises(ValueError):
        log.record_feedback("C1", "1.1", "U8", 0)


def test_user_ids_are_hmac_sha256_when_hashing_is_on(db_url, monkeypatch):
    sessions = migrated_sessions(db_url)
    monkeypatch.setenv("CODERAG_HASH_USER_IDS", "1")
    monkeypatch.setenv("CODERAG_USER_HASH_SALT", "pepper-pepper-pepper")
    log = QueryLog(sessions, settings=load().querylog)
    # HMAC-SHA256(key="pepper-pepper-pepper", msg="U1"), computed independently
    digest = hmac.new(b"pepper-pepper-pepper", b"U1", hashlib.sha256).hexdigest()
    assert hash_user_id("U1", "pepper-pepper-pepper") == digest and len(digest) == 64
    qid = log.record(record(user="U1"))
    log.record_feedback("C1", "1.1", "U1", -1)
    with sessions() as s:
        assert s.get(Query, qid).user == digest
        (fb,) = s.scalars(select(Feedback)).all()
        assert (fb.user, fb.query_id) == (digest, qid)
        raw = s.scalar(select(func.count()).select_from(Query).where(Query.user == "U1"))
        assert raw == 0


@pytest.mark.parametrize("salt", [None, "", "short"])
def test_hashing_without_a_proper_salt_is_refused(monkeypatch, salt):
    monkeypatch.setenv("CODERAG_HASH_USER_IDS", "1")
    if salt is None:
        monkeypatch.delenv("CODERAG_USER_HASH_SALT", raising=False)
    else:
        monkeypatch.setenv("CODERAG_USER_HASH_SALT", salt)
    with pytest.raises(BadInput, match="CODERAG_USER_HASH_SALT"):
        UserHasher.from_settings(load().querylog)


def test_hashing_on_by_default_and_off_on_request(db_url, monkeypatch):
    monkeypatch.delenv("CODERAG_HASH_USER_IDS", raising=False)
    monkeypatch.delenv("CODERAG_USER_HASH_SALT", raising=False)
    h = UserHasher.from_settings(load().querylog, migrated_sessions(db_url))  # salt generated and kept in the database
    assert h.enabled and h("U1") != "U1" and len(h("U1")) == 64 and h("") is None
    monkeypatch.setenv("CODERAG_HASH_USER_IDS", "0")
    h = UserHasher.from_settings(load().querylog)
    assert not h.enabled and h("U1") == "U1" and h("") is None
    monkeypatch.setenv("CODERAG_HASH_USER_IDS", "maybe")
    with pytest.raises(BadInput, match="CODERAG_HASH_USER_IDS"):
        load()


def test_pricing(monkeypatch):
    assert cost_usd("extractive", 10**6, 10**6) == 0.0
    assert cost_usd("claude-haiku-4-5", 10**6, 10**6) == pytest.approx(6.0)
    assert cost_usd("claude-opus-4-5", 0, 10**6, 10**6, 10**6) == pytest.approx(25 + 0.5 + 6.25)
    assert cost_usd("some-other-model", 10, 10) is None
    monkeypatch.setenv("CODERAG_PRICE_INPUT_PER_MTOK", "2")
    assert cost_usd("claude-sonnet-5-5", 10**6, 10**6) == pytest.approx(3 + 15)  # the settings passed count
    prices = load().querylog
    assert cost_usd("claude-sonnet-5-5", 10**6, 10**6, prices=prices) == pytest.approx(2 + 15)
    assert cost_usd("some-other-model", 10**6, 10**6, prices=prices) == pytest.approx(2)


def test_record_from_answer_marks_cited_chunks():
    from bot.answer.extractive import Citation
    from bot.answer.service import Answer
    from bot.retrieval.retriever import SearchHit
    from types import SimpleNamespace

    def chunk(path, start):
        return SimpleNamespace(repo="shop", path=path, start_line=start, end_line=start + 5, commit="c" * 40)

    hits = [SearchHit(chunk=chunk("a.py", 1), rank=1, score=0.9, cosine=0.8),
            SearchHit(chunk=chunk("b.py", 7), rank=2, score=0.5, cosine=0.4)]
    cites = [Citation(repo="shop", path="b.py", start_line=7, end_line=12, commit="c" * 40, symbol="f",
                      indexed_at=None)]
    answer = Answer(question="q?", text="t", citations=cites, hits=hits, no_coverage=False, model="extractive",
                    latency_ms={"retrieve": 1.0, "expand": 0.0, "generate": 2.0})
    rec = record_from_answer(answer, source="cli", post_ms=3.0, user="me")
    assert [(c.rank, c.path, c.cited, c.score) for c in rec.chunks] == [(1, "a.py", False, 0.9), (2, "b.py", True, 0.5)]
    assert rec.latency_ms == {"retrieve": 1.0, "expand": 0.0, "generate": 2.0, "post": 3.0}
    assert (rec.source, rec.user, rec.model) == ("cli", "me", "extractive")


def test_record_posted_writes_the_answer_and_never_raises(db_url, tmp_path, caplog):
    """The front ends' one query-log call (Slack and Teams ``record``): the answer is
    written with its source; without a log nothing happens; a failing log is logged, never
    raised (the answer is already posted)."""
    from bot.answer.service import Answer
    from bot.querylog.recorder import record_posted
    from common.db import make_engine
    from sqlalchemy.orm import sessionmaker

    answer = Answer(question="where is tax?", text="t", citations=[], hits=[], no_coverage=False, model="extractive",
                    latency_ms={"retrieve": 1.0})
    sessions = migrated_sessions(db_url)
    record_posted(QueryLog(sessions, hasher=UserHasher()), answer, source="teams", channel="C9", message_ts="9.9")
    with sessions() as s:
        (q,) = s.scalars(select(Query)).all()
        assert (q.source, q.channel, q.question) == ("teams", "C9", "where is tax?")
    record_posted(None, answer, source="slack")  # no query log configured
    unmigrated = sessionmaker(make_engine(f"sqlite:///{tmp_path / 'empty.db'}"))  # no tables: every write fails
    record_posted(QueryLog(unmigrated, hasher=UserHasher()), answer, source="slack")
    assert any("recording the slack answer to 'where is tax?' failed" in r.getMessage() for r in caplog.records)
    assert counts(sessions) == (1, 0, 0)
