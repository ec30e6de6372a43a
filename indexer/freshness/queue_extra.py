"""Whether the index queue's packages are installed: procrastinate and the PostgreSQL
driver come with the ``postgres`` extra (``pip install 'coderag[postgres]'``), not with
coderag itself, so a queue command run without them says so in one line (exit 2)
instead of ending in an import traceback."""
from __future__ import annotations

import importlib

from common.errors import BadInput

#: The pip extra that installs the index queue's packages (pyproject.toml).
EXTRA = "postgres"
#: The packages the index queue imports (procrastinate brings psycopg_pool).
PACKAGES = ("psycopg", "psycopg_pool", "procrastinate")


def require_queue_extra() -> None:
    """Raise ``BadInput`` naming the pip extra unless every package of :data:`PACKAGES`
    imports."""
    for name in PACKAGES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # absent, or psycopg without its libpq wrapper
            missing = getattr(exc, "name", None) or name
            raise BadInput(f"the index queue (CODERAG_INDEX_QUEUE=procrastinate) needs the PostgreSQL extra, "
                           f"which is not installed ({missing} is missing): pip install 'coderag[{EXTRA}]'") from None
