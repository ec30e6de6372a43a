"""``/coderag`` slash command: parsing and the work behind each subcommand.

``ask <question>``, ``impact <symbol>``, ``status``, ``help``. Text that starts with no
known subcommand is taken as a question (``/coderag where is retry configured?``).
The ack (within Slack's 3 s) happens in ``app.py``; the functions here run in Bolt lazy
listeners and return what is sent back through ``respond``.
"""
from __future__ import annotations

import logging

from bot.chat import render
from bot.chat.commands import SUBCOMMANDS, Command  # noqa: F401  (re-exported)
from bot.chat.commands import parse as _parse

from . import blocks as bk

log = logging.getLogger(__name__)


def parse(text: str) -> Command:
    """Split the ``/coderag`` text into a subcommand and its argument (:func:`bot.chat.commands.parse`)."""
    return _parse(text, "/coderag")


def run_impact(service, symbol: str, templates: dict[str, str], allowed=None) -> dict:
    """The ``respond`` payload for ``impact <symbol>``, looked up only in ``allowed``
    sources (the channel's allow-list, :mod:`bot.tenancy`; ``None`` = all)."""
    found = render.lookup_impact(service, symbol, allowed)
    if found.message is not None:  # unknown/ambiguous symbol, or a failure
        return {"text": f":warning: {bk.escape(found.message)}", "response_type": "ephemeral"}
    report = found.value
    n = len(report.get("callers") or [])
    return {"text": f"Impact of {bk.escape(symbol)}: {n} call site(s)", "blocks": bk.impact_blocks(report, templates),
            "response_type": "ephemeral"}


def run_status(service, stale_hours: float, allowed=None) -> dict:
    """The ``respond`` payload for ``status``: only the sources in ``allowed`` (the
    channel's allow-list; ``None`` = all)."""
    found = render.lookup_status(service, allowed)
    if found.message is not None:
        return {"text": f":warning: {bk.escape(found.message)}", "response_type": "ephemeral"}
    sources = found.value
    return {"text": f"{len(sources)} indexed source(s)", "response_type": "ephemeral",
            "blocks": bk.status_blocks(sources, stale_hours=stale_hours)}


def help_payload(error: str | None = None) -> dict:
    """The ``help`` payload (also the reply to a command that cannot run)."""
    return {"text": bk.escape(error) if error else "coderag help", "blocks": bk.help_blocks(error),
            "response_type": "ephemeral"}
