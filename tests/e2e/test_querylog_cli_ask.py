"""``coderag ask`` logs its answer (source cli) unless ``--no-log``: real Weaviate, real MiniLM."""
from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.querylog.models import Query
from helpers.querylog import migrated_sessions
from helpers.cli import run_many

pytestmark = pytest.mark.weaviate


def test_ask_records_a_cli_query_unless_no_log(settings_env, tiny, tmp_path):
    url = f"sqlite:///{tmp_path / 'log.db'}"
    env = {**settings_env, "CODERAG_DATABASE_URL": url}
    logged, unlogged = run_many(env, ["ask", "how is the price with tax calculated?"],
                                ["ask", "--no-log", "what does the health handler answer?"])
    assert logged.returncode == 0 and unlogged.returncode == 0, (logged.stderr, unlogged.stderr)
    sessions = migrated_sessions(url)
    with sessions() as s:
        (q,) = s.scalars(select(Query)).all()
        chunks = [(c.rank, c.path, c.cited) for c in q.chunks]
    assert (q.source, q.question, bool(q.model), q.no_coverage) == \
        ("cli", "how is the price with tax calculated?", True, False)
    assert q.answer and "pricing/tax.py" in q.answer and q.user
    assert q.retrieve_ms > 0 and q.generate_ms is not None and q.post_ms is not None
    assert chunks and chunks[0][:2] == (1, "pricing/tax.py") and any(c[2] for c in chunks)
