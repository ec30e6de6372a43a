"""``coderag drift`` and ``coderag who``: thin registrations; the bodies are in
:mod:`bot.knowledge`, which reads the indexer's public API."""
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
        as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Who knows this code: CODEOWNERS owners first, then the people who wrote it (git blame
    and recent commits, weighted by recency; bots and reformatting commits ignored)."""
    from ..knowledge import who_command

    who_command(query, repo, as_json, settings=core_settings())
