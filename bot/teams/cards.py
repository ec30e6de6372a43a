"""Adaptive Cards (schema 1.5) for Teams: answers, impact reports, status; plus help text.

An answer card holds the answer text (snippets of extractive answers in monospace), a
**Sources** list where each citation is a markdown link to the file at the indexed commit
(``CODERAG_REPO_URLS`` templates, :func:`bot.chat.links.source_url`; the plain
``path:start-end@sha7`` label without a template), "repo@sha7 indexed 2 h ago", the notes
(warnings) and 👍/👎 ``Action.Submit`` buttons whose data is
``{"action": "feedback", "vote": 1|-1, "ref": <query ref>, "conversation": <key>, "message": <question id>}``.

Every text that comes from an answer, an indexed chunk, the index or the asker goes
through :func:`bot.chat.escape.inert` (target ``"teams"``, shared with Slack) so markdown
links and ``<at>`` tags in it stay inert; only the links built here are live.

Teams refuses messages over ~28 KB, so the answer text is cut at :data:`TEXT_LIMIT`
characters and at most :data:`MAX_LINES` citation / caller lines are shown.
"""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Sequence

from bot.answer.extractive import Citation, age_text
from bot.chat.escape import inert
from bot.chat.links import source_url
from bot.chat.render import (Markup, call_notes, citation_label, freshness_line, group_by_file, segments, source_row,
                             split_callers)

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
SCHEMA = "http://adaptivecards.io/schemas/adaptive-card.json"
VERSION = "1.5"
TEXT_LIMIT = 12000
MAX_LINES = 60
FEEDBACK_ACTION = "feedback"


def card(body: list[dict], actions: list[dict] | None = None) -> dict:
    """An Adaptive Card 1.5 (full width in Teams)."""
    out = {"type": "AdaptiveCard", "$schema": SCHEMA, "version": VERSION, "msteams": {"width": "Full"},
           "body": body}
    if actions:
        out["actions"] = actions
    return out


def attachment(content: dict) -> dict:
    """The message attachment carrying an Adaptive Card."""
    return {"contentType": CARD_CONTENT_TYPE, "content": content}


def text_block(text: str, **props) -> dict:
    """A wrapping TextBlock (``props``: ``weight``, ``isSubtle``, ``size``, ``color``, ``fontType``…)."""
    return {"type": "TextBlock", "text": text, "wrap": True, **props}


def md_link(url: str | None, label: str) -> str:
    """``[label](url)`` (brackets in the label and parentheses in the URL made safe), or
    the label alone without a URL."""
    if not url:
        return label
    label = label.replace("[", "(").replace("]", ")")
    return f"[{label}]({url.replace('(', '%28').replace(')', '%29').replace(' ', '%20')})"


def safe(text) -> str:
    """``text`` with its Teams markup made inert (:func:`bot.chat.escape.inert`)."""
    return inert(text, "teams")


def _cut(text: str, limit: int = TEXT_LIMIT) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def text_blocks(text: str) -> list[dict]:
    """Answer text → TextBlocks: prose as it is, 4-space-indented snippets as monospace
    blocks on an emphasis background."""
    out: list[dict] = []
    for kind, lines in segments(safe(_cut(text))):
        body = "\n".join(lines)
        if not body.strip():
            continue
        if kind == "code":
            out.append({"type": "Container", "style": "emphasis", "items": [
                text_block(body, fontType="Monospace", size="Small")]})
        else:
            # Adaptive Card markdown joins single newlines; a blank line keeps lines apart
            out.append(text_block("\n\n".join(line for line in lines if line.strip())))
    return out or [text_block("_(empty answer)_")]


#: Adaptive Card markdown for :func:`bot.chat.render.citation_label` and
#: :func:`~bot.chat.render.freshness_line`.
MARKUP = Markup(link=md_link, label=safe, symbol=safe, text=safe, sha=safe)


def citation_text(c: Citation, templates: dict[str, str], n: int | None = None) -> str:
    """``[n] [path:L10-L24](url) symbol · repo@sha7`` (plain label without a template)."""
    return citation_label(c, templates, MARKUP, n)


def freshness_text(citations: Sequence[Citation], now: datetime | None = None) -> str:
    """``repo@sha7 indexed 2 h ago`` for each (repo, commit) cited, joined by `` · ``."""
    return freshness_line(citations, MARKUP, now)


def feedback_data(vote: int, ref: str, conversation: str, message: str) -> dict:
    """The ``data`` of a feedback button (see the module docstring)."""
    return {"action": FEEDBACK_ACTION, "vote": vote, "ref": ref, "conversation": conversation, "message": message}


def feedback_actions(ref: str, conversation: str, message: str) -> list[dict]:
    """👍/👎 ``Action.Submit`` buttons (arrive as a message activity with ``value``)."""
    return [{"type": "Action.Submit", "title": "👍 Helpful", "data": feedback_data(1, ref, conversation, message)},
            {"type": "Action.Submit", "title": "👎 Not helpful",
             "data": feedback_data(-1, ref, conversation, message)}]


def answer_card(answer, *, templates: dict[str, str], ref: str, conversation: str, message: str,
                now: datetime | None = None) -> dict:
    """An :class:`bot.answer.service.Answer` as one Adaptive Card.

    ``ref``: the query-log ref of this answer; ``conversation``/``message``: the feedback
    key (conversation key and the question's activity id).
    """
    prose = answer.prose
    body = text_blocks(prose or answer.text)
    if answer.citations:
        body.append(text_block("**Sources**", separator=True, spacing="Medium"))
        cites = answer.citations[:MAX_LINES]
        body.extend(text_block(citation_text(c, templates, i), spacing="Small") for i, c in enumerate(cites, 1))
        if len(answer.citations) > len(cites):
            body.append(text_block(f"…and {len(answer.citations) - len(cites)} more", isSubtle=True))
        body.append(text_block(freshness_text(answer.citations, now), isSubtle=True, size="Small"))
    if prose:  # otherwise the notes are already part of ``text``
        body.extend(text_block(f"⚠️ {safe(note)}", color="Warning", size="Small")
                    for note in getattr(answer, "notes", None) or [])
    return card(body, feedback_actions(ref, conversation, message))


def impact_card(report: dict, templates: dict[str, str]) -> dict:
    """``service.impact`` result → card: definitions, callers grouped by file, test
    callers apart as "Tests affected"."""
    repo, commit, symbol = report.get("repo", ""), report.get("commit", ""), report.get("symbol", "")

    def where(path: str, start: int, end: int | None = None) -> str:
        end = start if end is None else end
        label = f"{path}:L{start}" + (f"-L{end}" if end != start else "")
        url = source_url(templates, repo, commit, path, start, end)
        return md_link(url, label) if url else safe(label)

    body = [text_block(f"**Impact of** {safe(symbol)} in {safe(repo)}@{safe(commit[:7])}", size="Medium")]
    defs = report.get("definitions") or []
    if defs:
        body.append(text_block("**Defined at** " + ", ".join(
            where(d["path"], d["start_line"], d.get("end_line")) for d in defs)))
    code, tests = split_callers(report)
    budget = [MAX_LINES]

    def grouped(items: list[dict]) -> list[dict]:
        out = []
        for path, calls in group_by_file(items).items():
            lines = []
            for c in calls:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
                extra = call_notes(c)
                suffix = f" _({', '.join(extra)})_" if extra else ""
                lines.append(f"- {safe(c.get('symbol') or '?')} at {where(path, c.get('line', 0))}{suffix}")
            if lines:
                out.append(text_block(f"**{safe(path)}** ({len(calls)})\n" + "\n".join(lines), spacing="Small"))
        if budget[0] <= 0:
            out.append(text_block("…more callers left out; ask about a narrower symbol.", isSubtle=True))
        return out

    n_files = len({c.get("path") for c in code})
    body.append(text_block(f"**Callers**: {len(code)} call site(s) in {n_files} file(s)" if code
                           else "**Callers**: none found"))
    body.extend(grouped(code))
    if tests:
        body.append(text_block(f"**Tests affected**: {len(tests)} call site(s) in "
                               f"{len({c.get('path') for c in tests})} file(s)", separator=True))
        body.extend(grouped(tests))
    return card(body)


def status_card(sources: list[dict], *, stale_hours: float, now: datetime | None = None) -> dict:
    """Indexed sources with commit, chunks, index time and ⚠️ when older than ``stale_hours``."""
    if not sources:
        return card([text_block("Nothing is indexed yet: run `coderag index PATH` on the server.")])
    now = now or datetime.now(timezone.utc)
    body = [text_block(f"**Indexed sources** ({len(sources)})", size="Medium")]
    for s in sources[:MAX_LINES]:
        row = source_row(s, stale_hours, now)
        flag = " ⚠️ **stale**" if row.stale else ""
        body.append(text_block(f"**{safe(row.name)}** {safe(row.commit)} · {row.chunks} chunks · indexed {row.when} "
                               f"({age_text(row.at, now)}){flag}", spacing="Small"))
    if len(sources) > MAX_LINES:
        body.append(text_block("…more sources left out.", isSubtle=True))
    return card(body)


HELP_TEXT = """**coderag** answers questions about the indexed code, citing `path:line@sha`.

- `@coderag <question>` (or `ask <question>`) – answer a question; in a personal chat no mention is needed
- `@coderag impact <symbol>` – who calls this function/method, grouped by file; tests listed apart
- `@coderag status` – indexed repositories, their commit and how fresh the index is
- `@coderag drift [space]` – runbook steps naming flags, env vars, endpoints… the code dropped
- `@coderag who <path|symbol|question>` – who owns and who wrote that code
- `@coderag help` – this message"""


def help_text(error: str | None = None) -> str:
    """Markdown help (with ``error`` first when the command was not understood)."""
    return f"⚠️ {safe(error)}\n\n{HELP_TEXT}" if error else HELP_TEXT
