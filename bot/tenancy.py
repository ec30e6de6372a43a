"""Which sources a chat channel may read: the channel → sources allow-list.

Every repository and Confluence space is a *filtered partition* of the one ``CodeChunk``
collection (its ``repo`` property); see docs/operating/security.md for why this and not
Weaviate's native multi-tenancy (measured by ``bench/tenancy_bench.py``).

``CODERAG_CHANNEL_SOURCES`` is a JSON object mapping a Slack channel id (``C…``, ``G…``,
``D…`` for DMs) to the source names it may retrieve from; the key ``"*"`` is the default
for channels not listed::

    {"C0123": ["payments-api", "runbooks"], "C0456": ["web"], "*": ["runbooks"]}

Rules:

* variable unset or empty → no policy: every channel may read every source (``None``).
* channel listed → exactly its list; not listed → the ``"*"`` list; no ``"*"`` → nothing.
* an empty list means the channel may read nothing (the bot answers "no coverage").

The allow-list is enforced in :meth:`bot.retrieval.retriever.Retriever.search` (the hybrid
filter, graph expansion and a final check on every hit), in ``AnswerService.status`` and
``AnswerService.impact``; front ends only look up :meth:`ChannelPolicy.allowed` and pass
the result on as ``allowed=``.

``coderag serve`` seeds this allow-list into the database and reads it from there at each
question (:class:`bot.runconfig.policy.RuntimePolicy`, same rules), so the admin page can
change it while the bot runs; :class:`ChannelPolicy` is what the environment says.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Collection, Iterable, Mapping

from common.errors import BadInput
from common.settings import ChatSettings

ENV_VAR = "CODERAG_CHANNEL_SOURCES"
DEFAULT_KEY = "*"


@dataclass(frozen=True)
class ChannelPolicy:
    """The parsed allow-list. ``rules`` is ``None`` when no policy is configured."""

    rules: Mapping[str, frozenset[str]] | None = None
    _empty: frozenset[str] = field(default=frozenset(), repr=False)

    @classmethod
    def parse(cls, raw: str | None) -> "ChannelPolicy":
        """Parse the JSON text of ``CODERAG_CHANNEL_SOURCES``.

        Raises :class:`common.errors.BadInput` when it is not a JSON object of string → list of
        strings (the bot refuses to start rather than run with a policy it misread).
        """
        if raw is None or not raw.strip():
            return cls(None)
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{ENV_VAR} is not valid JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise BadInput(f'{ENV_VAR} must be a JSON object {{"CHANNEL_ID": ["source", ...], "*": [...]}}')
        rules: dict[str, frozenset[str]] = {}
        for channel, sources in data.items():
            if not isinstance(sources, list) or not all(isinstance(s, str) and s for s in sources):
                raise BadInput(f"{ENV_VAR}[{channel!r}] must be a list of source names")
            rules[str(channel)] = frozenset(sources)
        return cls(rules)

    @classmethod
    def from_settings(cls, chat: ChatSettings) -> "ChannelPolicy":
        """The policy in ``CODERAG_CHANNEL_SOURCES`` of the chat group read at start-up."""
        return cls.parse(chat.channel_sources or None)

    @property
    def enabled(self) -> bool:
        return self.rules is not None

    def allowed(self, channel: str | None) -> frozenset[str] | None:
        """Sources ``channel`` may read: ``None`` = all (no policy), else a set (maybe empty)."""
        if self.rules is None:
            return None
        if channel and channel in self.rules:
            return self.rules[channel]
        return self.rules.get(DEFAULT_KEY, self._empty)


def scope(repos: Iterable[str] | None, allowed: Collection[str] | None) -> list[str] | None:
    """The sources a query may touch: the requested ``repos`` within ``allowed``.

    ``None`` = no restriction at all. ``[]`` = nothing may be read (distinct from ``None``).
    Order follows ``repos`` when given, else sorted ``allowed``.
    """
    if allowed is None:
        return list(repos) if repos else None
    if repos:
        return [r for r in repos if r in allowed]
    return sorted(allowed)

