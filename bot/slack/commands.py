"""``/coderag`` slash command: parsing and the work behind each subcommand.

``ask <question>``, ``impact <symbol>``, ``status``, ``help``. Text that starts with no
known subcommand is taken as a question (``/coderag where is retry configured?``).
The ack (within Slack's 3 s) happens in ``app.py``; the functions here run in Bolt lazy
listeners and return what is sent back through ``respond``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from indexer import CoderagError

from . import blocks as bk

log = logging.getLogger(__name__)

SUBCOMMANDS = ("ask", "impact", "status", "help")
IMPACT_UNAVAILABLE = "Impact analysis is not available yet in this coderag version."


@dataclass
class Command:
    """A parsed ``/coderag`` invocation; ``error`` is set when it cannot run."""

    name: str
    arg: str = ""
    error: str | None = None

    @property
    def needs_work(self) -> bool:
        """True when answering needs the index (runs in a lazy listener)."""
        return self.error is None and self.name in ("ask", "impact", "status")


def parse(text: str) -> Command:
    """Split the command text into a subcommand and its argument."""
    text = (text or "").strip()
    if not text:
        return Command("help")
    head, _, rest = text.partition(" ")
    name, rest = head.lower(), rest.strip()
    if name not in SUBCOMMANDS:
        return Command("ask", text)
    if name in ("ask", "impact") and not rest:
        what = "a question" if name == "ask" else "a function or method name"
        return Command(name, error=f"`{name}` needs {what}: `/coderag {name} …`")
    if name == "impact" and len(rest.split()) > 1:
        return Command(name, rest, error="`impact` takes one symbol, e.g. `/coderag impact Cart.total`")
    return Command(name, rest)


def has_impact(service) -> bool:
    """True when the answer service offers ``impact(symbol)``."""
    return callable(getattr(service, "impact", None))


def run_impact(service, symbol: str, templates: dict[str, str], allowed=None) -> dict:
    """The ``respond`` payload for ``impact <symbol>``, looked up only in ``allowed``
    sources (the channel's allow-list, :mod:`bot.tenancy`; ``None`` = all)."""
    if not has_impact(service):
        return {"text": IMPACT_UNAVAILABLE, "response_type": "ephemeral"}
    try:
        report = service.impact(symbol) if allowed is None else service.impact(symbol, allowed=allowed)
    except CoderagError as exc:  # unknown or ambiguous symbol: the message is for the user
        return {"text": f":warning: {exc}", "response_type": "ephemeral"}
    except Exception:
        log.exception("impact(%r) failed", symbol)
        return {"text": bk.apology_text(), "response_type": "ephemeral"}
    n = len(report.get("callers") or [])
    return {"text": f"Impact of {symbol}: {n} call site(s)", "blocks": bk.impact_blocks(report, templates),
            "response_type": "ephemeral"}


def run_status(service, stale_hours: float, allowed=None) -> dict:
    """The ``respond`` payload for ``status``: only the sources in ``allowed`` (the
    channel's allow-list; ``None`` = all)."""
    try:
        sources = service.status() if allowed is None else service.status(allowed=allowed)
    except Exception as exc:
        log.exception("status failed")
        return {"text": bk.apology_text(exc), "response_type": "ephemeral"}
    return {"text": f"{len(sources)} indexed source(s)", "response_type": "ephemeral",
            "blocks": bk.status_blocks(sources, stale_hours=stale_hours)}


def help_payload(error: str | None = None) -> dict:
    """The ``help`` payload (also the reply to a command that cannot run)."""
    return {"text": error or "coderag help", "blocks": bk.help_blocks(error), "response_type": "ephemeral"}
