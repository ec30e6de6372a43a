"""Block Kit rendering: answers, impact reports, status and help.

Slack limits honoured here: a section's text is at most 3,000 characters
(:data:`SECTION_LIMIT`) and a message at most 50 blocks (:data:`MESSAGE_BLOCK_LIMIT`);
text is mrkdwn with ``&``, ``<`` and ``>`` escaped (:func:`escape`). Citations link to
the repository's web view pinned to the indexed commit when ``CODERAG_REPO_URLS`` has a
template for that repo, and show the plain ``path:start-end@sha`` label otherwise.
"""
from __future__ import annotations

import json
from datetime import datetime
from typing import Iterable, Sequence

from bot.answer.extractive import Citation, age_text
from bot.answer.service import Answer
from bot.chat.escape import inert
from bot.chat.links import source_url  # noqa: F401  (re-exported: bk.source_url)
from bot.chat.render import (Markup, apology_message, as_datetime, call_notes, citation_label, freshness_line,
                             group_by_file, segments, source_row, split_callers)

SECTION_LIMIT = 3000
MESSAGE_BLOCK_LIMIT = 50
FALLBACK_TEXT_LIMIT = 3000
FEEDBACK_BLOCK_ID = "coderag_feedback"
FEEDBACK_UP = "coderag_feedback_up"
FEEDBACK_DOWN = "coderag_feedback_down"
FENCE = "```"
#: The 👎 modal: its callback id and the reasons a user picks from.
FEEDBACK_MODAL = "coderag_feedback_reason"
FEEDBACK_REASONS = (("incorrect", "Incorrect"), ("incomplete", "Incomplete"),
                    ("wrong_place", "Points to the wrong place"), ("other", "Something else"))
MAX_FEEDBACK_TEXT = 2000


def feedback_modal(channel: str, ts: str, query_ref: str = "") -> dict:
    """The view ``views.open`` shows after a 👎: why (one of :data:`FEEDBACK_REASONS`) and
    optional free text; ``private_metadata`` carries the answer's key back."""
    return {
        "type": "modal", "callback_id": FEEDBACK_MODAL,
        "title": {"type": "plain_text", "text": "What went wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "private_metadata": json.dumps({"channel": channel, "ts": ts, "q": query_ref}),
        "blocks": [
            {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": "The answer is"},
             "element": {"type": "radio_buttons", "action_id": "choice",
                         "options": [{"text": {"type": "plain_text", "text": label}, "value": value}
                                     for value, label in FEEDBACK_REASONS]}},
            {"type": "input", "block_id": "details", "optional": True,
             "label": {"type": "plain_text", "text": "What should it have said? (optional)"},
             "element": {"type": "plain_text_input", "action_id": "text", "multiline": True,
                         "max_length": MAX_FEEDBACK_TEXT}},
        ],
    }


def feedback_comment(view: dict) -> tuple[dict, str]:
    """``(answer key, comment)`` of a submitted :func:`feedback_modal`: the key is the
    private metadata (``channel``, ``ts``, ``q``), the comment ``"reason: text"`` (the
    reason alone without text), cut to :data:`MAX_FEEDBACK_TEXT` characters."""
    try:
        key = json.loads(view.get("private_metadata") or "{}")
    except json.JSONDecodeError:
        key = {}
    values = (view.get("state") or {}).get("values") or {}
    choice = ((values.get("reason") or {}).get("choice") or {}).get("selected_option") or {}
    reason = choice.get("value") if choice.get("value") in dict(FEEDBACK_REASONS) else "other"
    text = (((values.get("details") or {}).get("text") or {}).get("value") or "").strip()
    comment = f"{reason}: {text}" if text else reason
    return key, comment[:MAX_FEEDBACK_TEXT]


def escape(text: str) -> str:
    """Escape mrkdwn control characters: ``&`` → ``&amp;``, ``<`` → ``&lt;``, ``>`` → ``&gt;``
    (:func:`bot.chat.escape.inert` for Slack, shared with Teams)."""
    return inert(text, "slack")


def section(text: str) -> dict:
    """A mrkdwn section block (``text`` must already be escaped and within the limit)."""
    assert len(text) <= SECTION_LIMIT, len(text)
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict:
    """A context block with one mrkdwn element."""
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_LIMIT]}]}


# --------------------------------------------------------------------------- splitting

def _hard_split(line: str, limit: int) -> list[str]:
    # never cut an escape entity (&amp; &lt; &gt;) in half
    out = []
    while len(line) > limit:
        cut = limit
        amp = line.rfind("&", max(0, cut - 4), cut)
        if amp != -1 and ";" in line[amp:amp + 5] and line.index(";", amp) >= cut:
            cut = amp
        out.append(line[:cut])
        line = line[cut:]
    out.append(line)
    return out


def _segments(text: str) -> list[tuple[str, list[str]]]:
    """Escaped text → ``("code"|"text", lines)`` runs (:func:`bot.chat.render.segments`)."""
    return segments(text)


def _pieces(kind: str, lines: list[str], limit: int) -> list[str]:
    """One segment as strings of at most ``limit`` characters (code keeps its fences)."""
    wrap = (lambda s: f"{FENCE}\n{s}\n{FENCE}") if kind == "code" else (lambda s: s)
    room = limit - (2 * len(FENCE) + 2 if kind == "code" else 0)
    out, cur = [], ""
    for line in lines:
        for part in _hard_split(line, room):
            cand = f"{cur}\n{part}" if cur else part
            if len(cand) > room and cur:
                out.append(wrap(cur))
                cand = part
            cur = cand
    if cur:
        out.append(wrap(cur))
    return out


def split_mrkdwn(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Plain answer text → escaped mrkdwn chunks, each at most ``limit`` characters.

    Chunks break between lines (a single over-long line is cut); indented snippets are
    fenced as code and a snippet split across chunks is fenced in each.
    """
    chunks, cur = [], ""
    for kind, lines in _segments(escape(text)):
        for piece in _pieces(kind, lines, limit):
            cand = f"{cur}\n{piece}" if cur else piece
            if len(cand) > limit:
                chunks.append(cur)
                cand = piece
            cur = cand
    if cur.strip():
        chunks.append(cur)
    return [c for c in chunks if c.strip()]


def pack_lines(lines: Iterable[str], limit: int = SECTION_LIMIT) -> list[str]:
    """Join already-escaped ``lines`` into texts of at most ``limit`` characters."""
    out, cur = [], ""
    for line in lines:
        for part in _hard_split(line, limit):
            cand = f"{cur}\n{part}" if cur else part
            if len(cand) > limit:
                out.append(cur)
                cand = part
            cur = cand
    if cur:
        out.append(cur)
    return out


# --------------------------------------------------------------------------- links

def link(url: str | None, label: str) -> str:
    """``<url|label>`` (both escaped), or the escaped label in backticks without a URL."""
    if not url:
        return f"`{escape(label)}`"
    return f"<{escape(url)}|{escape(label).replace('|', '¦')}>"


def _symbol(name: str) -> str:
    return f"`{escape(name)}`"


#: Block Kit mrkdwn for :func:`bot.chat.render.citation_label` and :func:`~bot.chat.render.freshness_line`.
MARKUP = Markup(link=link, label=lambda text: link(None, text), symbol=_symbol, text=escape, sha=str)


def citation_line(c: Citation, templates: dict[str, str], n: int | None = None) -> str:
    """``[n] <url|path:L10-L24> symbol · repo@sha7`` or the plain label without a template."""
    return citation_label(c, templates, MARKUP, n)


def freshness_text(citations: Sequence[Citation], now: datetime | None = None) -> str:
    """``repo@sha7 indexed 2 h ago`` for each (repo, commit) cited."""
    return freshness_line(citations, MARKUP, now)


# --------------------------------------------------------------------------- answers

def feedback_value(channel: str, ts: str, query_ref: str = "") -> str:
    """The button value: the query key (channel and question ts) as JSON, plus ``q``, the
    query log's ``queries.ref`` of this answer, when there is one."""
    data = {"channel": channel, "ts": ts}
    if query_ref:
        data["q"] = query_ref
    return json.dumps(data, separators=(",", ":"))


def feedback_block(channel: str, ts: str, query_ref: str = "") -> dict:
    """👍/👎 buttons; clicks arrive as block actions ``coderag_feedback_up/down``."""
    value = feedback_value(channel, ts, query_ref)
    return {"type": "actions", "block_id": FEEDBACK_BLOCK_ID, "elements": [
        {"type": "button", "action_id": FEEDBACK_UP, "value": value,
         "text": {"type": "plain_text", "text": "👍 Helpful", "emoji": True}},
        {"type": "button", "action_id": FEEDBACK_DOWN, "value": value,
         "text": {"type": "plain_text", "text": "👎 Not helpful", "emoji": True}},
    ]}


def fallback_text(text: str) -> str:
    """Notification / screen-reader text of a message: escaped (Slack parses the ``text``
    field as mrkdwn too, so ``<!channel>`` there would notify the channel), shortened to
    :data:`FALLBACK_TEXT_LIMIT` characters without cutting an escape entity."""
    text = escape(text.strip())
    if len(text) <= FALLBACK_TEXT_LIMIT:
        return text
    return _hard_split(text, FALLBACK_TEXT_LIMIT - 1)[0] + "…"


def answer_messages(answer: Answer, *, templates: dict[str, str], channel: str, query_ts: str,
                    now: datetime | None = None, query_ref: str = "") -> list[list[dict]]:
    """An :class:`Answer` as one or more messages' blocks (usually one).

    Answer sections first (the model's ``prose`` when there is one, else ``text``), then a
    divider, a "Sources" section with a numbered link per citation (matching the ``[n]``
    markers), a context line with index freshness, the answer's notes (warnings), and the
    feedback buttons (carrying ``query_ref``, the query-log id). A message never
    holds more than 50 blocks: longer answers continue in further messages, and the
    sources and buttons always close the last one.
    """
    # A model-written answer carries its prose alone in ``prose`` (``text`` then repeats the
    # sources and notes as plain text); extractive answers only have ``text``.
    prose = answer.prose
    body = [section(t) for t in split_mrkdwn(prose or answer.text)] or [section("_(empty answer)_")]
    tail: list[dict] = []
    if answer.citations:
        lines = ["*Sources*"] + [citation_line(c, templates, i) for i, c in enumerate(answer.citations, 1)]
        tail.append({"type": "divider"})
        tail.extend(section(t) for t in pack_lines(lines))
        tail.append(context(freshness_text(answer.citations, now)))
    if prose:  # notes are already part of ``text`` otherwise
        for note in getattr(answer, "notes", None) or []:
            tail.append(context(escape(note)))
    tail.append(feedback_block(channel, query_ts, query_ref))
    return _paginate(body, tail)


def _paginate(body: list[dict], tail: list[dict]) -> list[list[dict]]:
    limit = MESSAGE_BLOCK_LIMIT
    messages: list[list[dict]] = []
    for i in range(0, len(body), limit):
        messages.append(body[i:i + limit])
    if messages and len(messages[-1]) + len(tail) <= limit:
        messages[-1].extend(tail)
    else:
        messages.append(list(tail[:limit]))
    return messages


def apology_text(exc: BaseException | None = None) -> str:
    """The short message posted when answering failed."""
    return f":warning: {escape(apology_message(exc))}"


# --------------------------------------------------------------------------- impact

def _capped(blocks: list[dict], note: str) -> list[dict]:
    if len(blocks) <= MESSAGE_BLOCK_LIMIT:
        return blocks
    return blocks[:MESSAGE_BLOCK_LIMIT - 1] + [context(note)]


def impact_blocks(report: dict, templates: dict[str, str]) -> list[dict]:
    """``service.impact`` result → blocks: definitions, callers grouped by file, and
    test callers listed apart as "tests affected"."""
    repo, commit = report.get("repo", ""), report.get("commit", "")
    symbol = report.get("symbol", "")

    def where(path: str, start: int, end: int | None = None) -> str:
        end = start if end is None else end
        label = f"{path}:L{start}" + (f"-L{end}" if end != start else "")
        return link(source_url(templates, repo, commit, path, start, end), label)

    head = f"*Impact of* `{escape(symbol)}` in {escape(repo)}@{commit[:7]}"
    lines = [head]
    defs = report.get("definitions") or []
    if defs:
        lines.append("*Defined at* " + ", ".join(where(d["path"], d["start_line"], d.get("end_line")) for d in defs))
    code, tests = split_callers(report)

    def grouped(items: list[dict]) -> list[str]:
        out = []
        for path, calls in group_by_file(items).items():
            out.append(f"*{escape(path)}* ({len(calls)})")
            for c in calls:
                extra = call_notes(c)
                suffix = f" _({', '.join(extra)})_" if extra else ""
                out.append(f"    • `{escape(c.get('symbol') or '?')}` at {where(path, c.get('line', 0))}{suffix}")
        return out

    n_files = len({c.get("path") for c in code})
    lines.append(f"*Callers*: {len(code)} call site(s) in {n_files} file(s)" if code else "*Callers*: none found")
    lines.extend(grouped(code))
    blocks = [section(t) for t in pack_lines(lines)]
    if tests:
        tlines = [f"*Tests affected*: {len(tests)} call site(s) in {len({c.get('path') for c in tests})} file(s)"]
        tlines.extend(grouped(tests))
        blocks.append({"type": "divider"})
        blocks.extend(section(t) for t in pack_lines(tlines))
    return _capped(blocks, "…more callers left out (Slack's 50-block limit); ask about a narrower symbol.")


# --------------------------------------------------------------------------- status / help

_as_datetime = as_datetime


def status_blocks(sources: list[dict], *, stale_hours: float, now: datetime | None = None) -> list[dict]:
    """Indexed sources with commit, index time and staleness (older than ``stale_hours``)."""
    from datetime import timezone

    if not sources:
        return [section("Nothing is indexed yet: run `coderag index PATH` on the server.")]
    now = now or datetime.now(timezone.utc)
    lines = [f"*Indexed sources* ({len(sources)})"]
    for s in sources:
        row = source_row(s, stale_hours, now)
        flag = " :warning: *stale*" if row.stale else ""
        lines.append(f"• *{escape(row.name)}* `{escape(row.commit)}` · "
                     f"{row.chunks} chunks · indexed {row.when} ({age_text(row.at, now)}){flag}")
    return _capped([section(t) for t in pack_lines(lines)], "…more sources left out.")


HELP_TEXT = """*coderag* answers questions about the indexed code, citing `path:line@sha`.
• `/coderag ask <question>` – answer a question (also: mention me in a channel, DM me, or reply in a thread I answered)
• `/coderag impact <symbol>` – who calls this function/method, grouped by file; tests listed apart
• `/coderag status` – indexed repositories, their commit and how fresh the index is
• `/coderag drift [space]` – runbook steps naming flags, env vars, endpoints… the code dropped
• `/coderag who <path|symbol|question>` – who owns and who wrote that code
• `/coderag changes <path|symbol|question> [--since 7d]` – the commits that touched it, and the functions they changed
• `/coderag help` – this message"""


def help_blocks(error: str | None = None) -> list[dict]:
    """Usage of ``/coderag`` (with ``error`` first when the command was not understood)."""
    blocks = [section(f":warning: {escape(error)}")] if error else []
    return blocks + [section(HELP_TEXT)]
