"""Alembic environment: the URL comes from the Config (set by common.db) or CODERAG_DATABASE_URL."""
from __future__ import annotations

from alembic import context
from sqlalchemy import pool

from common.db import Base, database_url, make_engine
import indexer.graph.sql_models  # noqa: F401  (registers the graph tables)
import bot.slack.models  # noqa: F401  (registers slack_events)
import bot.querylog.models  # noqa: F401  (registers queries, query_chunks, feedback)
import indexer.store.sql_models  # noqa: F401  (registers index_state, confluence_pages, scheduler_locks)
import indexer.drift.models  # noqa: F401  (registers knowledge_repos, doc_refs)
import indexer.experts.models  # noqa: F401  (registers expert_changes)
import bot.runconfig.models  # noqa: F401  (registers config_sources, channel_policies, config_values, config_changes, review_drafts)

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    return config.get_main_option("sqlalchemy.url") or database_url()


def run_offline() -> None:
    context.configure(url=_url(), target_metadata=target_metadata, literal_binds=True,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    engine = make_engine(_url(), poolclass=pool.NullPool)
    with engine.connect() as conn:
        sqlite = conn.dialect.name == "sqlite"
        if sqlite:
            # A batch migration on SQLite copies a table, drops the old one and renames the
            # copy; with foreign keys on, the drop would cascade-delete the child rows
            # (query_chunks of queries). Off for the migration (it cannot change inside a
            # transaction), checked afterwards.
            conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
            conn.commit()
        context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True,
                          compare_type=True)
        with context.begin_transaction():
            context.run_migrations()
        if sqlite:
            broken = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
            conn.exec_driver_sql("PRAGMA foreign_keys=ON")
            conn.commit()
            if broken:
                raise RuntimeError(f"migration left {len(broken)} rows with a broken foreign key: {broken[:3]}")


if context.is_offline_mode():
    run_offline()
else:
    run_online()
