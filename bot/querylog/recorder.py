"""Writing the query log: one answered question (query row + its chunk rows) per
transaction, and feedback votes linked to their query.

A record is built in memory (:func:`record_from_answer`), then :meth:`QueryLog.record`
inserts the ``queries`` row and all its ``query_chunks`` rows inside one transaction
(``session.begin()``): a crash or error anywhere before the commit leaves no row at all.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

from sqlalchemy import and_, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import sessionmaker

from common.settings import QueryLogSettings, defaults

from .models import SOURCES, Feedback, Query, QueryChunk
from .pricing import cost_usd
from .privacy import UserHasher

log = logging.getLogger(__name__)
STAGES = ("retrieve", "expand", "generate", "post")


def new_ref() -> str:
    """A fresh public query id (32 hex characters), known before the row is written."""
    return uuid.uuid4().hex


@dataclass
class ChunkRecord:
    """One retrieved chunk: ``rank`` 1 = best, lines 1-based inclusive."""

    rank: int
    repo: str
    path: str
    start_line: int
    end_line: int
    commit: str
    score: float
    cited: bool = False


@dataclass
class QueryRecord:
    """Everything logged about one question. ``latency_ms`` keys are :data:`STAGES`
    (milliseconds); ``usage`` is the Anthropic API usage dict (``input_tokens``,
    ``output_tokens``, ``cache_read_input_tokens``, ``cache_creation_input_tokens``).
    ``user`` is the raw id: :class:`QueryLog` hashes it when configured."""

    question: str
    answer: str
    source: str
    model: str
    no_coverage: bool = False
    stale: bool = False
    latency_ms: dict[str, float] = field(default_factory=dict)
    usage: dict = field(default_factory=dict)
    chunks: list[ChunkRecord] = field(default_factory=list)
    workspace: str | None = None
    channel: str | None = None
    thread_ts: str | None = None
    message_ts: str | None = None
    user: str | None = None
    ref: str = field(default_factory=new_ref)
    created_at: datetime | None = None


def _cite_key(x) -> tuple:
    return (x.repo, x.path, x.start_line, x.end_line, x.commit)


def record_from_answer(answer, *, source: str, post_ms: float | None = None, ref: str | None = None,
                       **where) -> QueryRecord:
    """A :class:`QueryRecord` from a :class:`bot.answer.service.Answer`.

    Chunks are ``answer.hits`` in rank order; a chunk is cited when a citation has the
    same repo, path, lines and commit. ``where``: ``workspace``, ``channel``,
    ``thread_ts``, ``message_ts``, ``user``, ``created_at``.
    """
    cited = {_cite_key(c) for c in answer.citations}
    chunks = []
    for i, h in enumerate(answer.hits or [], 1):
        c = h.chunk
        chunks.append(ChunkRecord(rank=i, repo=c.repo, path=c.path, start_line=c.start_line,
                                  end_line=c.end_line, commit=c.commit, score=float(h.score),
                                  cited=_cite_key(c) in cited))
    latency = dict(answer.latency_ms or {})
    if post_ms is not None:
        latency["post"] = post_ms
    return QueryRecord(question=answer.question, answer=answer.text, source=source, model=answer.model,
                       no_coverage=bool(answer.no_coverage), stale=bool(answer.stale), latency_ms=latency,
                       usage=dict(answer.usage or {}), chunks=chunks, ref=ref or new_ref(), **where)


def record_posted(querylog: "QueryLog | None", answer, *, source: str, **where) -> None:
    """Log one answer a front end (``source``: ``slack``, ``teams``) posted, through
    :meth:`QueryLog.record_answer` (nothing without a ``querylog``). A failure is logged,
    never raised: the answer is already posted and a query-log outage must not undo it."""
    if querylog is None:
        return
    try:
        querylog.record_answer(answer, source=source, **where)
    except Exception:
        log.exception("recording the %s answer to %r failed", source, str(getattr(answer, "question", ""))[:200])


class QueryLog:
    """The query log on a session factory (``common.db.open_database()``).

    ``settings``: the query-log group read at start-up (user-id hashing, price overrides).
    ``hasher`` pseudonymises user ids (default: :meth:`UserHasher.from_settings` on
    ``sessions``: hashed, with the configured salt or the one kept in this database).
    """

    def __init__(self, sessions: sessionmaker, *, hasher: UserHasher | None = None,
                 settings: QueryLogSettings | None = None):
        """``settings=None``: the group's declared defaults (ids hashed with the salt kept
        in the database, list prices), never the environment."""
        self.sessions = sessions
        self.settings = settings if settings is not None else defaults().querylog
        self.hasher = hasher if hasher is not None else UserHasher.from_settings(self.settings, sessions)

    def record(self, rec: QueryRecord) -> int:
        """Insert the query and its chunks in one transaction; returns ``queries.id``.

        Votes given before this record existed (a click racing the write) are linked in
        the same transaction: by the button's ``query_ref``, or by (channel, message_ts). Raises
        ``ValueError`` for an unknown ``source``, SQLAlchemy errors from the database
        (nothing is written then).
        """
        if rec.source not in SOURCES:
            raise ValueError(f"source must be one of {SOURCES}, got {rec.source!r}")
        usage = rec.usage or {}
        tokens = {
            "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"),
            "cache_read_tokens": usage.get("cache_read_input_tokens"),
            "cache_write_tokens": usage.get("cache_creation_input_tokens"),
        }
        cost = cost_usd(rec.model, **{k: v or 0 for k, v in tokens.items()}, prices=self.settings)
        lat = rec.latency_ms or {}
        row = Query(ref=rec.ref, created_at=rec.created_at or datetime.now(timezone.utc), source=rec.source,
                    workspace=rec.workspace, channel=rec.channel, thread_ts=rec.thread_ts,
                    message_ts=rec.message_ts, user=self.hasher(rec.user), question=rec.question,
                    answer=rec.answer, model=rec.model or "", no_coverage=rec.no_coverage, stale=rec.stale,
                    retrieve_ms=lat.get("retrieve"), expand_ms=lat.get("expand"),
                    generate_ms=lat.get("generate"), post_ms=lat.get("post"), cost_usd=cost, **tokens)
        row.chunks = [QueryChunk(rank=c.rank, repo=c.repo, path=c.path, start_line=c.start_line,
                                 end_line=c.end_line, commit=c.commit, score=c.score, cited=c.cited)
                      for c in rec.chunks]
        with self.sessions() as session, session.begin():
            session.add(row)
            session.flush()  # INSERT queries, then query_chunks (same transaction)
            same = Feedback.query_ref == rec.ref
            if rec.channel and rec.message_ts:
                same = or_(same, and_(Feedback.channel == rec.channel, Feedback.message_ts == rec.message_ts))
            session.execute(update(Feedback).where(Feedback.query_id.is_(None), same).values(query_id=row.id))
            return row.id

    def record_answer(self, answer, *, source: str, post_ms: float | None = None, ref: str | None = None,
                      **where) -> int:
        """:func:`record_from_answer` then :meth:`record`; returns ``queries.id``."""
        return self.record(record_from_answer(answer, source=source, post_ms=post_ms, ref=ref, **where))

    def record_feedback(self, channel: str, message_ts: str, user: str, vote: int, *,
                        query_ref: str | None = None, comment: str | None = None) -> int:
        """Store ``vote`` (+1/-1) of ``user`` on the answer keyed ``channel``/``message_ts``.

        One row per (channel, message_ts, user): a later click replaces the vote (and the
        comment when one is given). ``query_ref`` (from the button) links the vote to its
        query; without it, a query with the same channel and ``message_ts`` is looked up.
        Returns the feedback row id. Raises ``ValueError`` for a vote other than ±1.
        """
        if vote not in (1, -1):
            raise ValueError(f"vote must be +1 or -1, got {vote}")
        user_key = self.hasher(user) or ""
        now = datetime.now(timezone.utc)
        for attempt in range(2):  # a concurrent first insert by the same user: retry as update
            with self.sessions() as session:
                try:
                    with session.begin():
                        query_id = self._query_id(session, channel, message_ts, query_ref)
                        row = session.scalars(select(Feedback).where(
                            Feedback.channel == channel, Feedback.message_ts == message_ts,
                            Feedback.user == user_key)).first()
                        if row is None:
                            row = Feedback(channel=channel, message_ts=message_ts, user=user_key, vote=vote,
                                           comment=comment, created_at=now, query_id=query_id,
                                           query_ref=query_ref or None)
                            session.add(row)
                        else:
                            row.vote, row.created_at = vote, now
                            row.query_id = row.query_id or query_id
                            row.query_ref = row.query_ref or query_ref or None
                            if comment is not None:
                                row.comment = comment
                        session.flush()
                        row_id, linked = row.id, row.query_id is not None
                except IntegrityError:
                    if attempt:
                        raise
                    continue
            if not linked:
                self._relink(row_id, channel, message_ts, query_ref)
            return row_id
        raise AssertionError("unreachable")

    def _relink(self, feedback_id: int, channel: str, message_ts: str, query_ref: str | None) -> None:
        """Second look after commit: a query recorded concurrently (its transaction did not
        see this vote, this one did not see the query) is linked now. Whichever of the two
        commits last sees the other, so no vote stays unlinked."""
        with self.sessions() as session, session.begin():
            query_id = self._query_id(session, channel, message_ts, query_ref)
            if query_id is not None:
                session.execute(update(Feedback).where(Feedback.id == feedback_id, Feedback.query_id.is_(None))
                                .values(query_id=query_id))

    @staticmethod
    def _query_id(session, channel: str, message_ts: str, ref: str | None) -> int | None:
        if ref:
            found = session.scalar(select(Query.id).where(Query.ref == ref))
            if found is not None:
                return found
        if channel and message_ts:
            return session.scalar(select(Query.id).where(Query.channel == channel, Query.message_ts == message_ts)
                                  .order_by(Query.id.desc()).limit(1))
        return None

    def votes(self, channel: str, message_ts: str) -> list[Feedback]:
        """All votes on one answer key."""
        with self.sessions() as session:
            return list(session.scalars(select(Feedback).where(
                Feedback.channel == channel, Feedback.message_ts == message_ts)))
