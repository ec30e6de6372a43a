"""The SQL database: call graph (indexer) and query log (bot), one schema, Alembic-managed.

``CODERAG_DATABASE_URL`` picks it (default SQLite at ``CODERAG_HOME/coderag.db``);
PostgreSQL is the production database. :func:`open_database` brings the schema to the
Alembic head before returning, so every command runs on a migrated database.
"""
from .engine import Base, database_url, open_database, upgrade_to_head

__all__ = ["Base", "database_url", "open_database", "upgrade_to_head"]
