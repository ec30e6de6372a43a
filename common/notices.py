"""One-line notices about slow steps a user should know are happening.

Library code (starting the embedded Weaviate, exporting the embedding model) calls
:func:`notice`; the process decides where the line goes. ``coderag`` sends notices to
stderr (never stdout, so ``--json`` output and the MCP stdio channel stay clean); a
process that sets no sink gets them as INFO log records.
"""
from __future__ import annotations

import logging
from typing import Callable

log = logging.getLogger("coderag.notices")
_sink: Callable[[str], None] | None = None


def set_sink(sink: Callable[[str], None] | None) -> None:
    """Send notices to ``sink(text)`` from now on (``None``: back to logging)."""
    global _sink
    _sink = sink


def notice(text: str) -> None:
    """Tell the user about a slow step now starting (one line, ends with "…")."""
    if _sink is not None:
        _sink(text)
    else:
        log.info("%s", text)
