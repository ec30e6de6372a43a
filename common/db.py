"""Engine creation and migrations to head (Alembic's own API; no hand-written DDL)."""
from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import NullPool
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


_REVISION = re.compile(r"^(down_revision|revision)\s*=\s*['\"]?([\w.-]+|None)['\"]?\s*$", re.M)


@lru_cache(maxsize=1)
def head_revision() -> str | None:
    """The newest migration's revision id, read from the files in ``migrations/versions``
    (the one no other file names as its ``down_revision``); ``None`` when that is not one
    revision (then Alembic decides)."""
    revisions, parents = set(), set()
    for path in MIGRATIONS_DIR.joinpath("versions").glob("*.py"):
        fields = dict((k, v) for k, v in _REVISION.findall(path.read_text(encoding="utf-8")))
        if "revision" in fields:
            revisions.add(fields["revision"])
            parents.add(fields.get("down_revision"))
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def _at_head(url: str) -> bool:
    """True when the database at ``url`` already records the head revision (one cheap
    query; an error means "not sure", and Alembic runs). Raises :class:`DatabaseError`
    when a database server does not accept the connection."""
    head = head_revision()
    if head is None:
        return False
    from sqlalchemy.exc import OperationalError

    try:
        engine = make_engine(url, poolclass=NullPool)
        try:
            try:
                conn = engine.connect()
            except OperationalError as exc:  # a database server that does not answer: say so
                if url.startswith("sqlite"):
                    return False
                first = (str(exc.orig or exc).strip().splitlines() or [type(exc).__name__])[0][:300]
                raise DatabaseError(f"cannot reach database {_redact(url)}: {first}") from None
            with conn:
                rows = conn.exec_driver_sql("SELECT version_num FROM alembic_version").fetchall()
        finally:
            engine.dispose()
    except DatabaseError:
        raise
    except Exception:  # no table yet, no database yet, a driver error: let Alembic handle it
        return False
    return [r[0] for r in rows] == [head]


def upgrade_to_head(url: str, revision: str = "head") -> None:
    """Run Alembic migrations on ``url`` up to ``revision``. Raises :class:`DatabaseError`.

    A database already at head is recognised with one query, without loading Alembic
    (most of a short command's start-up)."""
    if revision == "head" and _at_head(url):
        return
    from alembic import command
    from alembic.util import CommandError
    from sqlalchemy.exc import SQLAlchemyError

    try:
        command.upgrade(alembic_config(url), revision)
    except CommandError as exc:  # e.g. the database records a revision this version does not have
        raise DatabaseError(f"cannot migrate database {_redact(url)}: {str(exc).splitlines()[0][:300]} "
                            "(was it written by another version of coderag?)") from None
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


#: Seconds a short command (``coderag status``, ``coderag sync``) waits for PostgreSQL to
#: accept a connection, and for one statement (:func:`bounded_postgres`).
SHORT_CONNECT_S = 2
SHORT_STATEMENT_S = 5


def libpq_limits(connect_s: float, statement_s: float = 0) -> dict[str, object]:
    """The libpq connection parameters that bound one PostgreSQL connection:
    ``{"connect_timeout": whole seconds, at least 2 (libpq's minimum)}`` plus, when
    ``statement_s`` > 0, ``{"options": "-c statement_timeout=<ms>"}``. Passed as keyword
    arguments to ``psycopg.connect`` (or a dialect's ``connect``); :func:`bounded_postgres`
    sets the same limits for a whole process."""
    limits: dict[str, object] = {"connect_timeout": max(2, round(connect_s))}
    if statement_s:
        limits["options"] = f"-c statement_timeout={int(statement_s * 1000)}"
    return limits


@contextmanager
def bounded_postgres(settings: Settings | None = None, *, connect_s: int = SHORT_CONNECT_S,
                     statement_s: float = SHORT_STATEMENT_S) -> Iterator[None]:
    """A context manager for a short command on PostgreSQL: every connection this process
    opens inside it (SQLAlchemy, psycopg, procrastinate's pool: all go through libpq) gets a
    connect timeout of ``connect_s`` seconds and a ``statement_timeout`` of ``statement_s``
    seconds (libpq's ``PGCONNECT_TIMEOUT`` and ``PGOPTIONS``, unless already set; ``0``: no
    statement timeout), so a
    frozen server (its host stopped, its postmaster SIGSTOP'd) ends the command instead of
    holding it forever. A database error raised inside is re-raised as one-line
    :class:`DatabaseError` (URL password masked). SQLite (the embedded default): nothing
    changes."""
    url = settings.database_url if settings is not None else None
    if not url or not url.startswith(("postgresql", "postgres")):
        yield
        return
    saved = {k: os.environ.get(k) for k in ("PGCONNECT_TIMEOUT", "PGOPTIONS")}
    limits = libpq_limits(connect_s, statement_s)
    os.environ.setdefault("PGCONNECT_TIMEOUT", str(limits["connect_timeout"]))
    if "options" in limits and "statement_timeout" not in (saved["PGOPTIONS"] or ""):
        os.environ["PGOPTIONS"] = f"{saved['PGOPTIONS'] or ''} {limits['options']}".strip()
    try:
        yield
    except CoderagError:
        raise
    except Exception as exc:  # noqa: BLE001 - a driver error: one line
        if not _is_database_error(exc):
            raise
        from .redact import redact_text, redact_url

        first = (str(getattr(exc, "orig", None) or exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise DatabaseError(f"cannot use the database {redact_url(url)}: {redact_text(first)} (waited at most "
                            f"{max(2, int(connect_s))} s to connect"
                            + (f", {statement_s:g} s per statement)" if statement_s else ")")) from None
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _is_database_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a driver's failure to reach or query the database (SQLAlchemy's
    ``OperationalError``, psycopg's or its pool's errors)."""
    from sqlalchemy.exc import OperationalError

    if isinstance(exc, OperationalError):
        return True
    mod = type(exc).__module__ or ""
    return mod.startswith(("psycopg", "psycopg_pool")) and "Operational" in "".join(
        c.__name__ for c in type(exc).__mro__) or type(exc).__name__ in ("PoolTimeout", "ConnectorException")
