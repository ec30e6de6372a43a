"""What changed for a query (``coderag changes``, ``/coderag changes``, ``ask``'s "Recent
changes" note): the query resolved to files or one symbol of an indexed repository (a
path, a call-graph symbol, or a question's top search hits), then their commits in the
window read by :func:`indexer.history.commits_touching`."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Collection, Iterable

from .history import MAX_COMMITS, ChangesReport, commits_touching


def _definition_kind(sessions, repo: str, path: str, start: int) -> str:
    """The call graph's kind (``function``, ``method``, ``class``…) of the definition of
    ``repo``'s ``path`` starting at line ``start``; ``"definition"`` when it has none."""
    from sqlalchemy import select

    from .graph.sql_models import CodeDefinition

    try:
        with sessions() as s:
            kind = s.execute(select(CodeDefinition.kind).where(
                CodeDefinition.repo == repo, CodeDefinition.path == path,
                CodeDefinition.start_line == start).limit(1)).scalar()
    except Exception:  # noqa: BLE001 - a label only; the tree-sitter fallback has no row
        kind = None
    return kind or "definition"


def changes_report(sessions, settings, query: str, *, since: datetime, ref: str | None = None,
                   repo: str | None = None, allowed: Collection[str] | None = None,
                   locations: Iterable[tuple[str, str, int | None, int | None, str]] | None = None,
                   limit: int = MAX_COMMITS) -> ChangesReport | None:
    """What changed for ``query`` since ``since``: a path or folder of an indexed repo, a
    symbol of the call graph (its definition's file, only commits changing it), or, with
    ``locations`` (``(repo, path, start, end, label)`` of the question's top search hits),
    their files. ``None`` when ``query`` is neither a path nor a symbol and no
    ``locations`` are given (the caller retrieves them for the question)."""
    from .drift.service import knowledge_repos
    from .experts.service import resolve_target

    repos = knowledge_repos(sessions)
    report = ChangesReport(query=query, kind="question", since=since.astimezone(timezone.utc).isoformat())
    wanted: dict[str, list[str]] = {}
    symbol_of: dict[str, str] = {}
    if locations is None:
        names = [repo] if repo else sorted(allowed) if allowed is not None else [None]
        target = next((t for t in (resolve_target(sessions, query, n, settings=settings) for n in names) if t), None)
        if target is None or (allowed is not None and target[0] not in allowed):
            return None
        r, path, start, end, label = target
        report.kind = "path" if start is None else "symbol"
        wanted[r] = [path]
        if start is not None:
            symbol_of[r] = label.removesuffix("()")
        report.targets.append({"repo": r, "path": path, "start_line": start, "end_line": end,
                               "symbol": symbol_of.get(r, ""),
                               "kind": _definition_kind(sessions, r, path, start) if start is not None else ""})
    else:
        for r, path, start, end, label in locations:
            if r not in repos or (allowed is not None and r not in allowed):
                continue
            symbol = label if label and label != path else ""
            if path not in wanted.setdefault(r, []) and sum(map(len, wanted.values())) < 3:
                wanted[r].append(path)
                report.targets.append({"repo": r, "path": path, "start_line": start, "end_line": end,
                                       "symbol": symbol, "kind": "", "symbols": [symbol] if symbol else []})
                continue
            # another hit in a file already looked at: its definition is said too
            same = next((t for t in report.targets if t["repo"] == r and t["path"] == path), None)
            if same is not None and symbol and symbol not in same["symbols"] and len(same["symbols"]) < 3:
                same["symbols"].append(symbol)
    for r, paths in wanted.items():
        row = repos.get(r)
        if row is None:
            continue
        found = commits_touching(row.root, r, ref=ref or row.commit, since=since, paths=paths,
                                 symbol=symbol_of.get(r), limit=limit)
        report.commits += found.commits
        report.total += found.total
        report.exact = report.exact and found.exact
        for author, shas in found.authors.items():
            report.authors.setdefault(author, []).extend(shas)
    report.commits.sort(key=lambda c: datetime.fromisoformat(c.date), reverse=True)
    del report.commits[limit:]
    return report
