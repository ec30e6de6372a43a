"""Engine creation and migrations to head (Alembic's own API; no hand-written DDL)."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.orm import DeclarativeBase, sessionmaker

from common.settings import Settings
from common.errors import CoderagError, ExitCode

MIGRATIONS_DIR = Path(__file__).resolve().parents[1] / "migrations"


class Base(DeclarativeBase):
    """Declarative base of every coderag table (graph and query log)."""


class DatabaseError(CoderagError):
    """The SQL database could not be opened or migrated."""

    exit_code = ExitCode.DATABASE_ERROR


def database_url(settings: Settings | None = None) -> str:
    """``CODERAG_DATABASE_URL``, or SQLite at ``CODERAG_HOME/coderag.db``."""
    settings = settings or Settings.from_env()
    if settings.database_url:
        return settings.database_url
    settings.home.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{settings.home / 'coderag.db'}"


def _sqlite_pragmas(dbapi_conn, _record) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA journal_mode=WAL")  # readers (the bot) never block the indexer
    cur.execute("PRAGMA busy_timeout=10000")
    cur.close()


def make_engine(url: str, **kwargs) -> Engine:
    """An Engine for ``url``; SQLite gets WAL, foreign keys and a busy timeout.

    ``kwargs`` go to :func:`sqlalchemy.create_engine` (e.g. ``poolclass``).
    """
    engine = create_engine(url, pool_pre_ping=True, **kwargs)
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    return engine


def alembic_config(url: str):
    """Alembic Config pointing at ``migrations/`` with ``url``."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_to_head(url: str, revision: str = "head") -> None:
    """Run Alembic migrations on ``url`` up to ``revision``. Raises :class:`DatabaseError`."""
    from alembic import command
    from sqlalchemy.exc import SQLAlchemyError

    try:
        command.upgrade(alembic_config(url), revision)
    except ImportError as exc:  # e.g. mysql:// without its driver installed
        raise DatabaseError(f"cannot open database {_redact(url)}: missing driver ({exc.name or exc})") from None
    except SQLAlchemyError as exc:
        raise DatabaseError(f"cannot migrate database {_redact(url)}: {str(exc).splitlines()[0][:300]}") from None


def _redact(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(invalid URL)"


def open_database(settings: Settings | None = None, *, migrate: bool = True) -> sessionmaker:
    """A session factory on the configured database, migrated to head first."""
    url = database_url(settings)
    if migrate:
        # Two commands starting at once on a fresh database would both migrate it.
        import fcntl

        settings = settings or Settings.from_env()
        settings.home.mkdir(parents=True, exist_ok=True)
        with open(settings.home / "db-migrate.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            upgrade_to_head(url)
    return sessionmaker(make_engine(url), expire_on_commit=False)
