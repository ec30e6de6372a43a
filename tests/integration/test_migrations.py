"""Alembic migrations on real SQLite and PostgreSQL: every revision upgrades to head with
data in place, head downgrades to base and back, and the models match the migrations
(autogenerate-style comparison; any drift fails)."""
from __future__ import annotations

import importlib
import re
from datetime import datetime, timezone
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory

from common.db import MIGRATIONS_DIR, Base, alembic_config, make_engine, upgrade_to_head

ENV_PY = Path(MIGRATIONS_DIR) / "env.py"


def import_env_models() -> list[str]:
    """Import every project module ``migrations/env.py`` imports (the model modules), so
    ``Base.metadata`` holds exactly the tables Alembic autogenerates from."""
    names = re.findall(r"^\s*(?:import|from)\s+((?:indexer|bot)\.[\w.]+)", ENV_PY.read_text(), re.M)
    for name in names:
        importlib.import_module(name)
    return names


def chain() -> list[str]:
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    return [r.revision for r in reversed(list(script.walk_revisions("base", "heads")))]


def tables(url: str) -> set[str]:
    engine = make_engine(url, poolclass=sa.pool.NullPool)
    try:
        return set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


# Values for NOT NULL columns a generic filler cannot guess (check constraints, enums).
OVERRIDES = {"queries": {"source": "slack", "ref": "0" * 32}, "feedback": {"vote": -1}}


def _value(col: sa.Column, table: str):
    if col.name in OVERRIDES.get(table, {}):
        return OVERRIDES[table][col.name]
    if col.foreign_keys or col.primary_key:
        return 1
    t = col.type
    if isinstance(t, sa.Boolean):
        return True
    if isinstance(t, sa.DateTime):
        return datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    if isinstance(t, (sa.Integer, sa.SmallInteger)):
        return 1
    if isinstance(t, (sa.Float, sa.Numeric)):
        return 1.5
    if isinstance(t, sa.String) and t.length:
        return f"{table[:3]}-{col.name}"[: t.length]
    return f"{table}.{col.name} text"


def insert_sample_rows(url: str) -> dict[str, int]:
    """One row in every table that exists now (parents first, ids = 1); returns row counts."""
    engine = make_engine(url, poolclass=sa.pool.NullPool)
    md = sa.MetaData()
    md.reflect(engine)
    counts = {}
    with engine.begin() as conn:
        for table in md.sorted_tables:
            if table.name == "alembic_version":
                continue
            conn.execute(table.insert().values({c.name: _value(c, table.name) for c in table.columns}))
        for table in md.sorted_tables:
            if table.name != "alembic_version":
                counts[table.name] = conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
    engine.dispose()
    return counts


def drift(url: str) -> list:
    import_env_models()
    engine = make_engine(url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(conn, opts={"compare_type": True, "compare_server_default": False})
            return compare_metadata(ctx, Base.metadata)
    finally:
        engine.dispose()


def test_one_linear_chain_from_base_to_a_single_head():
    script = ScriptDirectory.from_config(alembic_config("sqlite://"))
    assert len(script.get_heads()) == 1, script.get_heads()
    revs = chain()
    assert revs[:3] == ["0001_graph", "0002_slack", "0003_querylog"]


@pytest.mark.parametrize("rev", chain())
def test_upgrade_from_each_revision_with_data_to_head(db_url, rev):
    upgrade_to_head(db_url, rev)
    before = insert_sample_rows(db_url)
    assert set(before) == tables(db_url) and all(n == 1 for n in before.values())
    upgrade_to_head(db_url, "head")
    engine = make_engine(db_url, poolclass=sa.pool.NullPool)
    with engine.connect() as conn:
        for name, n in before.items():  # nothing lost on the way up
            assert conn.execute(sa.text(f'SELECT count(*) FROM "{name}"')).scalar() == n, name
        if "feedback" in before and "queries" not in before:  # a legacy vote: no query to link
            assert conn.execute(sa.text("SELECT query_id, vote FROM feedback")).one() == (None, -1)
        assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == chain()[-1]
    engine.dispose()
    assert drift(db_url) == []


def test_downgrade_to_base_and_up_again(db_url):
    upgrade_to_head(db_url)
    insert_sample_rows(db_url)
    command.downgrade(alembic_config(db_url), "base")
    assert tables(db_url) == set()
    upgrade_to_head(db_url)
    assert {"queries", "query_chunks", "feedback", "slack_events", "code_files"} <= tables(db_url)
    assert drift(db_url) == []
    # each step down and up again, one revision at a time
    for rev in reversed(chain()[:-1]):
        command.downgrade(alembic_config(db_url), rev)
    command.downgrade(alembic_config(db_url), "base")
    upgrade_to_head(db_url)
    assert drift(db_url) == []


def test_models_match_migrations(db_url):
    """Autogenerate-style comparison of every env.py-registered model with the migrated schema."""
    assert "bot.querylog.models" in import_env_models()
    upgrade_to_head(db_url)
    assert drift(db_url) == []


def test_the_drift_check_can_fail(db_url, monkeypatch):
    """A column added to a model without a migration is reported."""
    upgrade_to_head(db_url)
    table = Base.metadata.tables["queries"]
    extra = sa.Column("not_migrated", sa.Integer)
    table.append_column(extra)
    try:
        diffs = drift(db_url)
    finally:
        table._columns.remove(extra)
    assert any(d[0] == "add_column" and d[3].name == "not_migrated" for d in diffs), diffs
    assert drift(db_url) == []


def test_open_database_migrates_to_head(db_url, monkeypatch):
    from common.db import open_database

    monkeypatch.setenv("CODERAG_DATABASE_URL", db_url)
    sessions = open_database()
    with sessions() as s:
        assert s.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == chain()[-1]


def test_a_database_at_an_unknown_revision_is_a_one_line_error(tmp_path):
    """A database written by another version (a revision this one does not have) fails
    with the database error and its one line, not an Alembic traceback."""
    from sqlalchemy import text

    from common.db import DatabaseError

    url = f"sqlite:///{tmp_path / 'other.db'}"
    upgrade_to_head(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    engine.dispose()
    with pytest.raises(DatabaseError, match="0099_from_the_future.*another version of coderag"):
        upgrade_to_head(url)
