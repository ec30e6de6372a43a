"""Operations commands: ``weaviate status|stop``, ``db upgrade|prune``, ``stats``,
``feedback export``."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

import typer

import indexer
from common.errors import BadInput

from .base import app, check_writable, db_app, err, feedback_app, out, weaviate_app
from .context import app_settings, core_settings


@weaviate_app.command("status")
def weaviate_status() -> None:
    """Show whether the embedded Weaviate is running, and where."""
    info = indexer.EmbeddedWeaviate(core_settings().home).running()
    out.print(f"running: pid {info.pid}, {info.url}, gRPC {info.grpc_port}, data {info.data_path}"
              if info else "not running")


@weaviate_app.command("stop")
def weaviate_stop() -> None:
    """Stop the embedded Weaviate (it starts again on the next command that needs it)."""
    stopped = indexer.EmbeddedWeaviate(core_settings().home).stop()
    out.print("stopped" if stopped else "not running")


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Option("head", "--revision", help="Target Alembic revision.")) -> None:
    """Migrate the database (CODERAG_DATABASE_URL, default SQLite in CODERAG_HOME) to REVISION."""
    from common.db import database_url, upgrade_to_head

    url = database_url(core_settings())
    upgrade_to_head(url, revision)
    from sqlalchemy.engine import make_url

    out.print(f"database {make_url(url).render_as_string(hide_password=True)} is at {revision}", highlight=False)


@db_app.command("prune")
def db_prune(days: Optional[int] = typer.Option(None, "--days", min=1,
                                                help="Keep text this many days (default: CODERAG_RETENTION_DAYS)."),
             as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Delete question/answer text older than the retention period; counts, latencies and votes stay."""
    from ..querylog.retention import prune

    days = days or app_settings().querylog.retention_days
    if days is None:
        raise BadInput("no retention period: set CODERAG_RETENTION_DAYS or pass --days N")
    from common.db import open_database  # sqlalchemy: loaded by the commands that use it
    result = prune(open_database(core_settings()), days)
    if as_json:
        print(json.dumps(result))
    else:
        out.print(f"Blanked the text of {result['queries']} queries and {result['comments']} comments "
                  f"older than {result['cutoff'][:19]} UTC.", highlight=False)


@app.command()
def stats(since: str = typer.Option("7d", "--since", help="Window start: 30m, 24h, 7d, 2w or an ISO date (2026-11-30) or date-time."),
          top: int = typer.Option(10, "--top", min=1, max=1000, help="Coverage gaps to list."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Query-log report: volume by source and channel, p50/p95 latency per stage, up/down vote rate,
    no-coverage share and the top coverage gaps (no-coverage or down-voted questions)."""
    from ..querylog.stats import compute_stats, parse_since, render_stats

    from common.db import open_database  # sqlalchemy: loaded by the commands that use it
    result = compute_stats(open_database(core_settings()), parse_since(since), top=top)
    if as_json:
        print(json.dumps(result))
    else:
        print(render_stats(result), end="")


@feedback_app.command("export")
def feedback_export(negative: bool = typer.Option(False, "--negative",
                                                  help="Only down-voted and no-coverage questions."),
                    out_file: Optional[Path] = typer.Option(None, "--out", help="Write here instead of stdout."),
                    since: Optional[str] = typer.Option(None, "--since", help="Only questions asked since: 30m, 24h, 7d, 2w or an ISO date.")) -> None:
    """Write questions as golden-set JSONL lines {"id", "question", "expected": []} to fill in."""
    from ..querylog.export import negative_questions, write_jsonl
    from ..querylog.stats import parse_since

    check_writable(out_file)
    from common.db import open_database  # sqlalchemy: loaded by the commands that use it
    items = negative_questions(open_database(core_settings()), negative=negative,
                               since=parse_since(since) if since else None)
    if out_file is None:
        write_jsonl(items, sys.stdout)
        return
    with out_file.open("w", encoding="utf-8") as fh:
        n = write_jsonl(items, fh)
    err.print(f"wrote {n} question(s) to {out_file}", highlight=False)


@app.command()
def doctor(repair: bool = typer.Option(False, "--repair", help="Fix what is found (delete orphan runs and "
                                       "superseded chunks, re-insert missing vectors, drop call-graph rows "
                                       "without chunks, of another commit or without a source)."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Check every indexed source: objects per run, orphan runs, chunks without vectors,
    call-graph rows without chunks, code_files rows whose source or commit is gone or whose
    file has no chunk. Exits 1 when problems remain (see docs/operating/doctor.md)."""
    from ..doctor import run_doctor

    raise typer.Exit(run_doctor(core_settings(), repair=repair, as_json=as_json))
