"""``coderag serve``: the options and the start-up line; what runs is decided and built
in one place, :mod:`bot.wiring`."""
from __future__ import annotations

import signal

import typer

from .base import app, err
from .context import app_settings


def _exit_on_sigterm(signum, _frame) -> None:
    raise SystemExit(128 + signum)


@app.command()
def serve(host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
          port: int = typer.Option(3000, "--port", min=1, max=65535, help="Port of the HTTP server (/slack/events, /api/messages, /healthz, ...).")) -> None:
    """Run the bot server: Slack (Socket Mode when SLACK_APP_TOKEN is set, else HTTP at
    /slack/events), Teams (/api/messages) and the other configured front ends, plus /healthz.
    CODERAG_ROLE (bot, indexer, all) picks what this process runs."""
    from ..wiring import build, plan

    settings = app_settings()
    the_plan = plan(settings)  # a bad setting or nothing to serve fails here, before any start-up work
    if the_plan.role == "indexer":  # a long-running indexer: a log collector's lines, as `coderag worker`
        from common.logs import use_one_line_logs

        use_one_line_logs()  # time (ISO 8601, UTC), level, logger, message; uvicorn's lines follow
    # SIGTERM (docker/k8s/systemd stop) must unwind like Ctrl-C so that closing releases
    # the scheduler lock; uvicorn re-raises it after its graceful shutdown.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    process = build(the_plan, host=host, port=port, settings=settings)
    err.print(process.banner(), highlight=False)
    process.run()


@app.command()
def mcp() -> None:
    """Serve the index to a coding agent (Claude Code, Cursor, any MCP client) over the
    Model Context Protocol on stdin/stdout, with the local user's full access.

    Tools: search, ask, impact, who, drift, status, read; resource coderag://sources.
    For a shared deployment use the HTTP transport of `coderag serve` (/mcp, bearer
    tokens in CODERAG_MCP_TOKENS) instead."""
    from ..mcp_server import Backend, run_stdio

    run_stdio(Backend(app_settings()))
