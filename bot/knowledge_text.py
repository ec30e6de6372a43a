"""Chat and terminal text of the knowledge features: the drift report, one stale-reference
note, the ``who`` list and its one-line "who to ask", the commits of ``changes``. The
indexer gives the facts (:func:`indexer.read.drift_report`, :class:`indexer.read.WhoResult`,
:class:`indexer.read.ChangesReport`); how they read is decided here,
on the read side, with the other answer text."""
from __future__ import annotations

from indexer.read import ChangesReport, WhoResult


def stale_note(ref: dict) -> str:
    """One sentence for an answer or a digest: "names `--max-conn`, which the code dropped
    in 1a2b3c4; now `--max-connections` (cli/flags.go:88@…)"."""
    text = f"names `{ref['ref']}`, which the code dropped in {ref['removed_commit'][:7]}"
    if ref.get("new_name"):
        text += f"; it is now `{ref['new_name']}` ({ref['new_evidence']})"
    return text


def format_drift(report: dict, *, limit: int = 50) -> str:
    """Plain text of a :func:`drift_report`: counts, then per doc and section each stale
    reference with its evidence (at most ``limit`` references)."""
    c = report["counts"]
    lines = [f"{c['found']} code references checked: {c['ok']} ok, {c['stale']} stale, {c['unknown']} unknown."]
    shown = 0
    for src in report["sources"]:
        for doc in src["docs"]:
            lines.append(f"\n{src['source']}: {doc['title'] or doc['doc']}" + (f" <{doc['url']}>" if doc["url"] else ""))
            for sec in doc["sections"]:
                lines.append(f"  § {sec['section'] or '(top)'}")
                for r in sec["stale"]:
                    if shown >= limit:
                        break
                    shown += 1
                    when = f" on {r['removed_at'][:10]}" if r.get("removed_at") else ""
                    line = (f"    line {r['line']}: {r['kind']} `{r['ref']}` — dropped in "
                            f"{r['removed_commit'][:7]}{when} ({r['removed_summary'][:80]})")
                    if r["new_name"]:
                        line += f"; now `{r['new_name']}` ({r['new_evidence']})"
                    lines.append(line)
    if c["stale"] > shown:
        lines.append(f"\n… and {c['stale'] - shown} more (coderag drift --json lists them all).")
    return "\n".join(lines) + "\n"


def format_who(result: WhoResult | None, *, mention: str = "") -> str:
    """Plain text: ``1. Alice Author <alice@…> — owns src/ in CODEOWNERS; wrote 62% …``.
    ``mention="slack"`` writes mapped users as ``<@U…>``."""
    if result is None or not result.experts:
        return "No owner or author found for that code.\n"
    where = result.path + (f":{result.start_line}-{result.end_line}" if result.start_line else "")
    if result.kind == "question":  # no path or symbol was named: say what the answer rests on
        lines = [f"A guess: no file or symbol was named, so these are the people who know the code closest to "
                 f"the question, {result.anchor or where} ({result.repo}: {where}):"]
    else:
        lines = [f"Who knows {result.target} ({result.repo}: {where}):"]
    if not result.clear:
        lines.append(f"Nobody has clear ownership: no CODEOWNERS entry, and nobody wrote {result.CLEAR_LINES} or more of "
                     f"its current lines or made {result.CLEAR_COMMITS} or more commits to it. The closest people:")
    for i, e in enumerate(result.experts, 1):
        name = e.who + (f" <{e.email}>" if e.email and e.email != e.who.lower() else "")
        if e.chat_user:
            name += f" ({'<@' + e.chat_user + '>' if mention == 'slack' and e.chat_user.startswith(('U', 'W')) else '@' + e.chat_user})"
        lines.append(f"{i}. {name} — {'; '.join(e.reasons)}")
    return "\n".join(lines) + "\n"


def ask_line(result: WhoResult | None, mention: str = "") -> str:
    """One line for the end of a weak answer: "Who to ask: Alice (…), Bob (…)"."""
    if result is None or not result.experts:
        return ""
    people = []
    for e in result.experts[:2]:
        name = e.who
        if e.chat_user:
            name = f"<@{e.chat_user}>" if mention == "slack" and e.chat_user.startswith(("U", "W")) else f"@{e.chat_user}"
        people.append(f"{name} ({e.reasons[0]})")
    return "Who to ask: " + ", ".join(people) + "."


def format_changes(report: ChangesReport, *, limit: int = 20) -> str:
    """Plain text: one block per commit, its changed functions cited ``path:line@sha``."""
    where = ", ".join(f"{t['repo']}/{t['symbol'] or t['path']}" for t in report.targets) or report.query
    if not report.commits:
        return f"No commits touched {where} since {report.since[:16].replace('T', ' ')} UTC.\n"
    lines = [f"{len(report.commits)} commit(s) touched {where} since {report.since[:16].replace('T', ' ')} UTC:"]
    for c in report.commits[:limit]:
        lines.append(f"- {c.sha[:7]} {c.date[:10]} {c.author}: {c.message}")
        for f in c.functions[:10]:
            lines.append(f"    {f.change} {f.symbol} ({f.path}:{f.line}@{c.sha[:7]})")
        if not c.functions:
            lines.append(f"    files: {', '.join(c.files[:5])}")
    if len(report.commits) > limit:
        lines.append(f"… and {len(report.commits) - limit} more")
    return "\n".join(lines) + "\n"
