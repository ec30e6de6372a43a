"""Reading the query log for the admin page: the questions with their answer, the
citations as posted and the votes, filtered by surface, channel and outcome; the
coverage gaps (questions it could not answer, or answered with a 👎) with the reasons."""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import exists, func, select
from sqlalchemy.orm import sessionmaker

from ..answer.extractive import CitedLines

from .models import SOURCES, Feedback, Query, QueryChunk

#: Outcome filters: ``answered`` (covered), ``refused`` (no coverage), ``down`` (a 👎 vote).
OUTCOMES = ("answered", "refused", "down")


class Citation(CitedLines):
    """A cited chunk, labelled as the answer showed it (``repo/path:start-end@sha7``)."""

    @property
    def label(self) -> str:
        """``repo/path:start-end@sha7`` (the answer's :attr:`CitedLines.ref`)."""
        return self.ref


@dataclass
class QueryView:
    """One logged question, with its citations and votes (``up``, ``down``, ``reasons``)."""

    id: int
    ref: str
    created_at: datetime
    source: str
    channel: str | None
    question: str | None
    answer: str | None
    no_coverage: bool
    model: str
    citations: list[Citation] = field(default_factory=list)
    up: int = 0
    down: int = 0
    reasons: list[str] = field(default_factory=list)


def list_queries(sessions: sessionmaker, *, surface: str | None = None, channel: str | None = None,
                 outcome: str | None = None, ids: list[int] | None = None, limit: int = 100,
                 offset: int = 0) -> list[QueryView]:
    """The newest questions matching the filters (``surface``: one of
    :data:`~.models.SOURCES`; ``outcome``: one of :data:`OUTCOMES`; ``ids``: only these).
    Unknown filter values raise ``ValueError``."""
    stmt = select(Query)
    if surface:
        if surface not in SOURCES:
            raise ValueError(f"surface must be one of {SOURCES}")
        stmt = stmt.where(Query.source == surface)
    if channel:
        stmt = stmt.where(Query.channel == channel)
    if outcome:
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}")
        down = exists().where(Feedback.query_id == Query.id, Feedback.vote == -1)
        stmt = stmt.where({"answered": Query.no_coverage.is_(False), "refused": Query.no_coverage.is_(True),
                           "down": down}[outcome])
    if ids is not None:
        stmt = stmt.where(Query.id.in_(ids or [-1]))
    stmt = stmt.order_by(Query.created_at.desc(), Query.id.desc()).limit(limit).offset(offset)
    with sessions() as s:
        rows = s.scalars(stmt).all()
        found = [r.id for r in rows]
        cites: dict[int, list[Citation]] = {}
        for c in s.scalars(select(QueryChunk).where(QueryChunk.query_id.in_(found or [-1]), QueryChunk.cited.is_(True))
                           .order_by(QueryChunk.query_id, QueryChunk.rank)):
            cites.setdefault(c.query_id, []).append(Citation(c.repo, c.path, c.start_line, c.end_line, c.commit))
        votes: dict[int, dict] = {}
        for qid, vote, comment in s.execute(select(Feedback.query_id, Feedback.vote, Feedback.comment)
                                            .where(Feedback.query_id.in_(found or [-1]))):
            v = votes.setdefault(qid, {"up": 0, "down": 0, "reasons": []})
            v["up" if vote > 0 else "down"] += 1
            if comment:
                v["reasons"].append(comment)
    return [QueryView(id=r.id, ref=r.ref, created_at=r.created_at, source=r.source, channel=r.channel,
                      question=r.question, answer=r.answer, no_coverage=r.no_coverage, model=r.model,
                      citations=cites.get(r.id, []), **votes.get(r.id, {"up": 0, "down": 0, "reasons": []}))
            for r in rows]


def coverage_gaps(sessions: sessionmaker, *, limit: int = 200) -> list[QueryView]:
    """Questions it could not answer or that got a 👎, newest first, with the reasons."""
    down = exists().where(Feedback.query_id == Query.id, Feedback.vote == -1)
    with sessions() as s:
        ids = list(s.scalars(select(Query.id).where(Query.question.is_not(None), Query.no_coverage | down)
                             .order_by(Query.created_at.desc(), Query.id.desc()).limit(limit)))
    return list_queries(sessions, ids=ids, limit=limit)


def channels_seen(sessions: sessionmaker, limit: int = 200) -> list[str]:
    """Channel ids that asked something, most questions first (the filter's choices)."""
    with sessions() as s:
        return [c for c, _n in s.execute(select(Query.channel, func.count()).where(Query.channel.is_not(None))
                                         .group_by(Query.channel).order_by(func.count().desc()).limit(limit))]


def golden_cases(sessions: sessionmaker, ids: list[int]) -> list[dict]:
    """Golden-set items (the ``coderag eval`` / ``coderag feedback export`` format:
    ``{"id": "querylog-N", "question", "expected": [], "feedback"?: [reasons]}``) for the
    queries ``ids`` that still have their text, newest first; ``expected`` is for a
    person to fill in."""
    items = []
    for q in list_queries(sessions, ids=[int(i) for i in ids], limit=max(1, len(ids))):
        if not q.question:
            continue
        item: dict = {"id": f"querylog-{q.id}", "question": q.question.strip(), "expected": []}
        if q.reasons:
            item["feedback"] = q.reasons
        items.append(item)
    return items


