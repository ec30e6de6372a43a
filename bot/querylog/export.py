"""``coderag feedback export``: questions for the golden set.

Each line is ``{"id": "querylog-<queries.id>", "question": str, "expected": []}`` (the
format of ``coderag eval``'s golden files; a human fills in ``expected``). Questions are
deduplicated case- and space-insensitively, keeping the most recent asking; a question
someone voted 👎 on with a reason (the feedback form) also has ``"feedback": [comment, ...]``. With
``negative=True`` only 👎-voted or no-coverage questions are written.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import IO, Iterator

from sqlalchemy import exists, select
from sqlalchemy.orm import sessionmaker

from .models import Feedback, Query


def negative_questions(sessions: sessionmaker, *, negative: bool = True,
                       since: datetime | None = None) -> Iterator[dict]:
    """Golden-set items, newest first (see module docstring)."""
    stmt = select(Query.id, Query.question).where(Query.question.is_not(None))
    comments: dict[int, list[str]] = {}
    with sessions() as s:  # why people voted 👎 (the form's reason and text), per query
        for qid, comment in s.execute(select(Feedback.query_id, Feedback.comment)
                                      .where(Feedback.comment.is_not(None), Feedback.query_id.is_not(None))):
            comments.setdefault(qid, []).append(comment)
    if negative:
        downvoted = exists().where(Feedback.query_id == Query.id, Feedback.vote == -1)
        stmt = stmt.where(Query.no_coverage | downvoted)
    if since is not None:
        stmt = stmt.where(Query.created_at >= since)
    seen: set[str] = set()
    with sessions() as s:
        for qid, question in s.execute(stmt.order_by(Query.created_at.desc(), Query.id.desc())):
            key = " ".join(question.lower().split())
            if not key or key in seen:
                continue
            seen.add(key)
            item = {"id": f"querylog-{qid}", "question": question.strip(), "expected": []}
            if comments.get(qid):
                item["feedback"] = comments[qid]
            yield item


def write_jsonl(items, fh: IO[str]) -> int:
    """Write one JSON object per line; returns the count."""
    n = 0
    for item in items:
        fh.write(json.dumps(item, ensure_ascii=False) + "\n")
        n += 1
    return n
