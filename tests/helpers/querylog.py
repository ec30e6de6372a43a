"""Building query-log records and databases for tests (real SQLite / PostgreSQL)."""
from __future__ import annotations

from sqlalchemy.orm import sessionmaker

from bot.querylog.recorder import ChunkRecord, QueryRecord
from common.db import make_engine, upgrade_to_head


def migrated_sessions(url: str) -> sessionmaker:
    upgrade_to_head(url)
    return sessionmaker(make_engine(url), expire_on_commit=False)


def chunks(n: int = 8, cited=(1, 2)) -> list[ChunkRecord]:
    return [ChunkRecord(rank=i, repo="shop", path=f"src/m{i}.py", start_line=10 * i, end_line=10 * i + 9,
                        commit="a" * 40, score=1.0 - i / 100, cited=i in cited) for i in range(1, n + 1)]


def record(question="where is tax computed?", **kw) -> QueryRecord:
    base = dict(question=question, answer="In tax.py [1]", source="slack", model="claude-sonnet-5-5",
                latency_ms={"retrieve": 50.0, "expand": 5.0, "generate": 900.0, "post": 120.0},
                usage={"input_tokens": 1000, "output_tokens": 200, "cache_read_input_tokens": 3000,
                       "cache_creation_input_tokens": 0},
                chunks=chunks(), workspace="T1", channel="C1", thread_ts="1.1", message_ts="1.1", user="U1")
    base.update(kw)
    return QueryRecord(**base)
