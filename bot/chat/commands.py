"""Chat commands: ``ask <question>``, ``impact <symbol> [--ref REF]``, ``status``, ``help``,
``drift [space]``, ``who <path|symbol|question> [--ref REF]`` and
``changes <path|symbol|question> [--since 7d] [--ref REF]`` (``--ref`` of ``impact`` and
``who``: an indexed named ref, :mod:`bot.refs`; a question names its version in words).

Slack receives them as ``/coderag …``; Teams as the text of a message (after the bot's
mention is removed). Text that starts with no known subcommand is a question.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..refs import split_ref_option

SUBCOMMANDS = ("ask", "impact", "status", "help", "drift", "who", "changes")  # drift, who: bot/knowledge.py; changes: bot/changes.py
#: Longest argument of ``impact``, ``who``, ``changes`` and ``drift`` (a symbol, a path, a source name or a
#: short question); longer ones are refused, and never echoed whole.
MAX_ARG_CHARS = 300


@dataclass
class Command:
    """A parsed command; ``error`` (user-facing text) is set when it cannot run."""

    name: str
    arg: str = ""
    error: str | None = None

    @property
    def needs_work(self) -> bool:
        """True when answering needs the index (every command but ``help``)."""
        return self.error is None and self.name in ("ask", "impact", "status", "drift", "who", "changes")


def parse(text: str, invocation: str = "/coderag") -> Command:
    """Split ``text`` into a subcommand and its argument.

    ``invocation`` is how users call the bot (``/coderag`` in Slack, ``@coderag`` in
    Teams); it only appears in error messages. Empty text is ``help``; a subcommand
    needing an argument without one, or ``impact`` with more than one word, gets ``error``.
    """
    text = (text or "").strip()
    if not text:
        return Command("help")
    head, _, rest = text.partition(" ")
    name, rest = head.lower(), rest.strip()
    if name not in SUBCOMMANDS:
        return Command("ask", text)
    if name in ("ask", "impact", "who", "changes") and not rest:
        what = {"ask": "a question", "impact": "a function or method name",
                "who": "a path, a symbol or a question", "changes": "a path, a symbol or a question"}[name]
        return Command(name, error=f"`{name}` needs {what}: `{invocation} {name} …`")
    if name in ("impact", "who", "drift", "changes") and len(rest) > MAX_ARG_CHARS:
        return Command(name, rest[:40] + "…", error=f"`{name}` takes at most {MAX_ARG_CHARS} characters "
                                                    f"(got {len(rest)}): name one symbol, path or source")
    if name == "impact" and len(split_ref_option(rest)[0].split()) > 1:  # `impact Cart.total --ref v2` too
        return Command(name, rest, error=f"`impact` takes one symbol, e.g. `{invocation} impact Cart.total`")
    return Command(name, rest)
