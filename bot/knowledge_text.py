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


def _since_text(report: ChangesReport) -> str:
    return report.since[:16].replace("T", " ") + " UTC"


def _target_text(t: dict, kind: str) -> str:
    """A symbol as a symbol (```Invoice.tax` (method, shop/billing/invoice.py)``), a path
    as a path (``shop/billing/``)."""
    if kind == "symbol" and t.get("symbol"):
        return f"`{t['symbol']}` ({t.get('kind') or 'definition'}, {t['repo']}/{t['path']})"
    return f"{t['repo']}/{t['path']}"


def _authors(report: ChangesReport) -> str:
    """``dave (1a2b3c4), erin (2 commits: 9f8e7d6, 0a1b2c3)``: who made the window's commits
    (all counted ones, not only those listed), most first."""
    by = report.authors or {}
    if not by:  # a report built by hand: its listed commits
        for c in report.commits:
            by.setdefault(c.author, []).append(c.sha)
    ranked = sorted(by.items(), key=lambda kv: -len(kv[1]))
    return ", ".join(f"{a} ({len(s)} commits: {', '.join(x[:7] for x in s[:3])}{'…' if len(s) > 3 else ''})"
                     if len(s) > 1 else f"{a} ({s[0][:7]})" for a, s in ranked)


def _symbol_lines(report: ChangesReport) -> list[str]:
    """For a question's targets that are definitions: the commits that changed its lines
    (its definition on either side of the diff) and those that touched only its file; the
    definitions of a file no listed commit touched share one line."""
    lines = []
    for t in report.targets:
        syms = [s for s in (t.get("symbols") or [t.get("symbol")]) if s]
        if syms and not any(c.repo == t["repo"] and t["path"] in c.files for c in report.commits):
            names = ", ".join(f"`{s}`" for s in syms)
            lines.append(f"{names} ({t['repo']}/{t['path']}): no commit "
                         f"{'of the newest ' + str(len(report.commits)) + ' ' if report.truncated else ''}"
                         "touched the file.")
    for t, sym in ((t, sym) for t in report.targets for sym in (t.get("symbols") or [t.get("symbol")])):
        in_file = [c for c in report.commits if c.repo == t["repo"] and t["path"] in c.files]
        if not sym or not in_file:
            continue
        # its own lines or a member's (a class's methods are inside it)
        changed = [c for c in in_file if any((f.symbol == sym or f.symbol.startswith(sym + "."))
                                             and f.path == t["path"] for f in c.functions)]
        only_file = [c for c in in_file if c not in changed]
        said = (f"its lines changed in {_shas(changed)}" if changed else "no commit changed its lines")
        if only_file:
            said += f"; {_shas(only_file)} touched only its file"
        if report.truncated:
            said += f" (of the newest {len(report.commits)} commits)"
        lines.append(f"`{sym}` ({t['repo']}/{t['path']}): {said}.")
    return lines


def _shas(commits, shown: int = 5) -> str:
    """``1a2b3c4, 9f8e7d6`` (past ``shown``: ``… +3``)."""
    text = ", ".join(c.sha[:7] for c in commits[:shown])
    return text + (f" +{len(commits) - shown}" if len(commits) > shown else "")


#: Changed functions listed per commit in text; the rest are counted by kind of change.
FUNCTIONS_SHOWN = 10


def _more_functions(functions) -> str:
    """``    … and 7 more: 3 modified, 2 added, 2 deleted`` for the functions past
    :data:`FUNCTIONS_SHOWN`."""
    rest = functions[FUNCTIONS_SHOWN:]
    counts = {k: sum(1 for f in rest if f.change == k) for k in ("modified", "added", "deleted")}
    return f"    … and {len(rest)} more: " + ", ".join(f"{n} {k}" for k, n in counts.items() if n)


def format_changes(report: ChangesReport, *, limit: int = 20) -> str:
    """Plain text: what was looked at (a symbol as a symbol, paths as paths), how many
    commits the window holds and by whom (all of them), then one block per commit (the
    newest ``limit``; its commit date), its changed functions cited ``path:line@sha`` (a
    deleted one where it was, in the parent commit; past :data:`FUNCTIONS_SHOWN` counted).
    For a question, each definition found for it says which commits changed its lines
    and which touched only its file: a commit that touched a file did not necessarily
    touch that function."""
    since = _since_text(report)
    if report.kind == "symbol":
        where = " and ".join(_target_text(t, "symbol") for t in report.targets) or report.query
        verb = "changed"
    else:
        where = ", ".join(_target_text(t, "path") for t in report.targets) or report.query
        verb = "touched"
        if report.kind == "question" and report.targets:
            where += " (the files of the closest code)"
    total = max(report.total, len(report.commits))
    if not total:
        return f"No commits {verb} {where} since {since} (commit dates).\n"
    count = f"{total}{'' if report.exact else '+'} commit(s)"
    lines = [f"{count} {verb} {where} since {since} (commit dates), by {_authors(report)}:"]
    if report.kind == "question":
        lines += _symbol_lines(report)
    shown = report.commits[:limit]
    for c in shown:
        lines.append(f"- {c.sha[:7]} {c.date[:10]} {c.author}: {c.message}")
        for f in c.functions[:FUNCTIONS_SHOWN]:
            lines.append(f"    {f.change} {f.symbol} ({f.citation})")
        if len(c.functions) > FUNCTIONS_SHOWN:
            lines.append(_more_functions(c.functions))
        if not c.functions:
            lines.append(f"    files: {', '.join(c.files[:5])}" + (f" (+{len(c.files) - 5} more)"
                                                                  if len(c.files) > 5 else ""))
    if total > len(shown):
        lines.append(f"… and {total - len(shown)}{'' if report.exact else '+'} more")
    return "\n".join(lines) + "\n"
