"""``coderag drift``, ``coderag who`` and ``coderag changes``: thin registrations; the bodies are in
:mod:`bot.knowledge` and :mod:`bot.changes`, which read the indexer's public API."""
from __future__ import annotations

from typing import Optional

import typer

from .base import app
from .context import core_settings


@app.command()
def drift(source: Optional[str] = typer.Argument(None, help="Only this repo or Confluence space (default: all)."),
          as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Runbook drift: code references in the indexed docs (flags, env vars, endpoints, metrics,
    functions, paths, make targets) that the code dropped, per doc and section, with the
    commit that removed each one and its likely new name."""
    from ..knowledge import drift_command

    drift_command(source, as_json, settings=core_settings())


@app.command()
def who(query: str = typer.Argument(..., help="A path (file or folder/), a symbol (Class.method) or a question."),
        repo: Optional[str] = typer.Option(None, "--repo", help="Only look in this indexed repo."),
        ref: Optional[str] = typer.Option(None, "--ref", help="At this indexed named ref (a release tag or branch "
                                                             "of CODERAG_REPOS' refs): its history up to the ref."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Who knows this code: CODEOWNERS owners first, then the people who wrote it (git blame
    and recent commits, weighted by recency; bots and reformatting commits ignored)."""
    from ..knowledge import who_command

    who_command(query, repo, as_json, settings=core_settings(), ref=ref)


@app.command()
def changes(query: str = typer.Argument(..., help="A path (file or folder/), a symbol (Class.method) or a question."),
            since: Optional[str] = typer.Option(None, "--since", help="Window, by commit date: 30m, 24h, 7d, 2w, today, "
                                                "yesterday, this/last week|month or an ISO date (2026-11-30) "
                                                "or date-time. Default: the window the "
                                                "question names (today, this week, since last month: UTC "
                                                "calendar), else 7d."),
            ref: Optional[str] = typer.Option(None, "--ref", help="Read history from this ref (default: the indexed commit)."),
            repo: Optional[str] = typer.Option(None, "--repo", help="Only look in this indexed repo."),
            as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """What changed: the commits in the window that touched the matching files or symbol, with
    author, commit date, message and the functions each changed (cited path:line@sha; a
    deleted one at the parent commit). The commit date decides the window and the order."""
    from ..changes import changes_command

    changes_command(query, since, ref, repo, as_json, settings=core_settings())
