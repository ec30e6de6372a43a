"""Making text inert in chat markup: the one escaping function of Slack and Teams.

Answer text, chunk text, symbols, notes and user input may hold markup — from an indexed
file, from the model's output, or from the asker — that the chat client would act on:
Slack's ``<!channel>``, ``<!here>``, ``<@U123>`` and masked links ``<https://x|label>``;
Teams' markdown links ``[label](https://x)`` and ``<at>…</at>`` mentions. Every text
field a front end sends (Slack's ``text`` and block texts, Teams' ``text`` and card
TextBlocks) goes through :func:`inert` for its target, so that markup is shown as typed
and does nothing.

* ``"slack"`` — mrkdwn control characters are escaped as Slack documents
  (https://api.slack.com/reference/surfaces/formatting#escaping): ``&`` → ``&amp;``,
  ``<`` → ``&lt;``, ``>`` → ``&gt;``. Slack shows the characters; no mention, broadcast or
  link is formed.
* ``"teams"`` — Adaptive Card TextBlocks and markdown messages do not decode HTML
  entities, so the syntax is broken with an invisible U+200B (zero-width space) instead:
  between ``]`` and ``(`` of a markdown link and after ``<`` of a tag (``<at>``, ``<a``,
  ``<https://…>`` autolinks). The text reads the same; a bare URL may still be shown as
  a plain link by the client, but nothing is masked behind a label.
"""
from __future__ import annotations

import re

ZWSP = "\u200b"
TARGETS = ("slack", "teams")
_MD_LINK = re.compile(r"\]\s*\(")
_TAG_OPEN = re.compile(r"<(?=[A-Za-z/!@#])")


def inert(text: str, target: str) -> str:
    """``text`` with the chat markup of ``target`` (``"slack"`` or ``"teams"``) made
    inert, as described in the module docstring. ``None`` becomes ``""``. Raises
    ``ValueError`` for another target."""
    text = "" if text is None else str(text)
    if target == "slack":
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if target == "teams":
        text = _MD_LINK.sub(lambda m: "]" + ZWSP + m.group(0)[1:], text)
        return _TAG_OPEN.sub("<" + ZWSP, text)
    raise ValueError(f"target must be one of {TARGETS}, got {target!r}")
