"""Write-side commands: ``index``, ``remove``, ``status``, ``sync repo|confluence``,
``reset``. Each is a thin call into the indexer's public API (:mod:`indexer.operations`)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

import indexer
import indexer.read
from common.db import bounded_postgres
from common.errors import BadInput, ExitCode

from .base import app, out, progress_bars, sync_app
from .context import app_settings, core_settings, freshness_config, live_freshness_config


@app.command()
def index(path: str = typer.Argument(..., help="A folder inside a Git work tree; its HEAD commit is indexed."),
          name: Optional[str] = typer.Option(None, "--name", help="Repo name in the index (default: the folder name)."),
          as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
          force: bool = typer.Option(False, "--force", help="Replace a repo of the same name indexed from another folder.")) -> None:
    """Index a Git repository at its HEAD commit (re-running updates it in place)."""
    if not path.strip():  # Path("") would be the current folder: never index that by accident
        raise BadInput("PATH is empty: give the folder of a Git repository (`coderag index .` for this one)")
    path = Path(path)
    root = _work_tree_root(path)
    if not as_json and root is not None and Path(path).resolve() != root:  # said before the minutes of work
        out.print(f"Note: {path} is a folder inside the Git repository {root}; the whole repository "
                  "is indexed (a repository is indexed as one source).", highlight=False, soft_wrap=True)
    with progress_bars(not as_json) as progress:
        summary = indexer.index_path(path, name=name, force=force, progress=progress,
                                     settings=core_settings(), repos=app_settings().freshness.repos)
    if as_json:
        print(json.dumps(summary.to_dict()))
        return
    skipped = ", ".join(f"{n} {r}" for r, n in sorted(summary.skipped.items())) or "none"
    out.print(f"Indexed [bold]{summary.repo}[/] @ {summary.commit[:7]}: {summary.files_indexed} files, "
              f"{summary.chunks} chunks ({summary.embedded} embedded, {summary.reused_vectors} unchanged"
              f"{_keyword_only(summary.keyword_only)}), "
              f"{summary.graph_definitions} definitions and {summary.graph_edges} call edges "
              f"in {summary.seconds_total:.1f}s; skipped: {skipped}.", highlight=False, soft_wrap=True)
    _print_parse_warnings(summary.parse_warnings)
    _print_refs(summary.refs)
    if summary.dirty_paths:
        out.print(f"Note: {len(summary.dirty_paths)} file(s) have uncommitted changes; the committed version was indexed.")


def _print_refs(refs: list) -> None:
    """One line per named ref a run kept (``shop@v2: full at 1a2b3c4, 12 files differ``)."""
    for r in refs:
        changed = r.mode in ("full", "incremental")
        what = ("removed" if r.mode == "removed" else f"not indexed: {r.reason}" if r.mode == "unresolved" else
                f"{r.mode} at {r.commit[:7]}, {r.differs} file(s) differ from the default branch"
                + (f" ({r.gained} more, {r.dropped} fewer)" if r.mode == "incremental" else "")
                + (f", {r.chunks_written} chunks written ({r.embedded} embedded)" if changed else ""))
        if r.mode == "unresolved" and r.reason.startswith("ref pattern "):  # a pattern that selects nothing
            what = None
        out.print(f"  {r.reason}" if what is None else f"  ref {r.name}: {what}", highlight=False, soft_wrap=True)


def _print_parse_warnings(n: int) -> None:
    """A note when ``n`` indexed files did not parse cleanly (syntax errors: chunked
    around them; a malformed OpenAPI spec: indexed as line windows); the log names them."""
    if n:
        out.print(f"Note: {n} file(s) had parse warnings (syntax errors, or an OpenAPI spec not split by "
                  "operation and indexed as line windows); the log names each.", highlight=False, soft_wrap=True)


def _keyword_only(n: int) -> str:
    """``", N keyword-only"`` for a summary line (chunks the embedding policy leaves
    without a vector), or ``""`` when there are none."""
    return f", {n} keyword-only" if n else ""


@app.command()
def remove(name: str = typer.Argument(..., help="Indexed repo (or space) name, as `coderag status` lists it."),
           yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Delete one indexed repo or space: its chunks, its source record, its call graph and
    its sync state (last indexed commit, errors), so a later sync starts from scratch."""
    def ask(_name: str) -> bool:  # asked once the name is known to exist
        _confirmable(yes, "remove " + name)
        return yes or typer.confirm(f"Delete {name!r} from the index?")

    if not indexer.remove_source(name, confirm=ask, settings=core_settings()):
        raise typer.Exit(ExitCode.FAILURE)
    out.print(f"Removed {name}.")


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List every indexed source (repos and Confluence spaces): commit or newest page
    version, chunk count, index age, vectors still to fill, drift counts, next run; with
    the index queue, its jobs waiting, running and failed."""
    indexer.require_queue_extra(app_settings().freshness)  # before anything opens: one line naming the extra
    with bounded_postgres(core_settings()):  # a frozen PostgreSQL: one line, not a hang
        sources = indexer.index_status(core_settings())  # records + next_run, last_error (SQL)
        config = freshness_config() if app_settings().freshness.index_queue == "procrastinate" else None
        queue = indexer.queue_status(config, core_settings()) if config is not None else None  # jobs per source
    if queue is not None:
        _add_queued_sources(sources, queue, config)
    if as_json:
        totals = None if queue is None else {"waiting": queue["todo"], "running": queue["doing"],
                                             "failed": queue["failed"]}
        print(json.dumps({"sources": sources, "queue": totals}, default=str))
        return
    if queue is not None:
        out.print(f"Index queue: {queue['todo']} waiting, {queue['doing']} running, {queue['failed']} failed"
                  + (" (`coderag sync retry` queues them again)" if queue["failed"] else ""), highlight=False)
    if not sources:
        out.print("Nothing indexed yet: run `coderag sync repo NAME` (a `coderag worker` indexes it) or "
                  "`coderag index PATH`." if queue is not None else "Nothing indexed yet: run `coderag index PATH`.",
                  highlight=False, soft_wrap=True)
    for s in sources:
        out.print(_status_line(s), highlight=False, soft_wrap=True)


#: Characters of a source's last error in the text ``coderag status`` (``--json``: all of it).
LAST_ERROR_CHARS = 200


def clip_words(text: str, limit: int) -> str:
    """``text`` if it fits in ``limit`` characters, else cut at the last word boundary
    before the limit, ending in ``…`` (the result is at most ``limit`` characters; a single
    word longer than the limit is cut inside it)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit - 1]
    if text[limit - 1] != " " and " " in head:  # the limit falls inside a word: drop that word
        head = head[:head.rindex(" ")]
    return head.rstrip(" ,;:.-") + "…"


def _status_line(s: dict) -> str:
    """One source's line of the text ``coderag status``."""
    if s.get("kind") == "confluence":
        what = f"Confluence · {s.get('files', 0)} pages (newest v{s.get('version') or '?'})"
    elif s.get("base"):  # a named ref: its commit, and what it does not share with its base
        what = (f"ref {s.get('ref')} of {s['base']} at {(s.get('commit') or '-------')[:7]} · "
                f"{s.get('differs', 0)} files differ from {s['base']}")
    else:
        what = f"{(s.get('commit') or '-------')[:7]} · {s.get('files', 0)} files"
    line = (f"{s['name']}: {what} · {s.get('chunks', 0)} chunks · model {s.get('model') or '-'} · "
            f"indexed {_age_text(s.get('indexed_at')) if s.get('indexed_at') else 'never'}")
    if s.get("damaged"):
        line += f" · DAMAGED source record: {s['damaged']} (run `coderag doctor --repair`)"
    pct = indexer.read.vectors_percent(s)
    if pct is not None:  # a first index: keyword search works, vectors still coming
        line += f" · vectors {pct}% done"
    if s.get("next_run"):
        line += f" · next run {s['next_run']:%Y-%m-%d %H:%M} UTC"
    q = s.get("queue") or {}
    if q.get("todo") or q.get("doing") or q.get("failed"):
        line += f" · jobs: {q['todo']} waiting, {q['doing']} running, {q['failed']} failed"
    if s.get("last_error"):  # cut at a word, with an ellipsis (`--json` has it whole)
        line += f" · last error: {clip_words(s['last_error'], LAST_ERROR_CHARS)}"
    if s.get("drift", {}).get("stale"):
        line += f" · {s['drift']['stale']} stale doc reference(s) (coderag drift {s['name']})"
    return line


def _add_queued_sources(sources: list[dict], queue: dict, config) -> None:
    """Give each source its jobs (``"queue": {"todo", "doing", "failed"}``), and add a row
    for each source that has jobs but nothing indexed nor any sync state yet (its first run
    is waiting), so a queued first index shows as such, not as "nothing indexed".
    ``config``: the freshness settings (which names are Confluence spaces)."""
    by_source = queue.get("by_source") or {}
    names = {s["name"] for s in sources}
    confluence = config.confluence
    spaces = {sp.key for sp in (confluence.spaces if confluence else ())}
    for name in sorted(set(by_source) - names):
        sources.append({"name": name, "kind": "confluence" if name in spaces else "git", "commit": None, "chunks": 0,
                        "files": 0, "model": "", "indexed_at": None, "last_error": None, "last_attempt_at": None,
                        "next_run": None, "drift": {"ok": 0, "stale": 0, "unknown": 0}, "vectors_percent": None})
    sources.sort(key=lambda s: s["name"])
    for s in sources:
        s["queue"] = by_source.get(s["name"], {"todo": 0, "doing": 0, "failed": 0})


@sync_app.command("repo")
def sync_repo_cmd(name: str = typer.Argument(..., help="A repo name from CODERAG_REPOS."),
                  full: bool = typer.Option(False, "--full", help="Re-index every file, not just the changed ones."),
                  as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Fetch the repo's mirror and re-index what changed since the last indexed commit."""
    indexer.require_queue_extra(app_settings().freshness)  # with the queue: before the database opens
    with _bounded_if_queued():
        result = indexer.sync_repo_now(name, config=freshness_config(), settings=core_settings(), full=full)
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    if _queued(result):
        return
    _print_repo_sync(name, result)


def _print_repo_sync(name: str, result) -> None:
    """A repository's sync run as text, for ``sync repo`` and each repository of ``sync --all``:
    one line for the default branch, then one per named ref it added, moved, removed or could
    not index."""
    why = f" ({result.reason})" if getattr(result, "reason", "") else ""
    run = getattr(result, "run", None)
    out.print(f"{name}: {result.mode}{why} {result.base[:7] or '-'}..{result.commit[:7]}: {result.files_changed} "
              f"changed, {result.files_deleted} deleted, {result.embedded} chunks embedded, "
              f"{result.reused_vectors} reused{_keyword_only(run.keyword_only if run else 0)}"
              f" in {result.seconds:.1f}s", highlight=False, soft_wrap=True)
    _print_parse_warnings(run.parse_warnings if run else 0)
    _print_refs(getattr(result, "refs", None) or [])


@sync_app.command("confluence")
def sync_confluence_cmd(space: str = typer.Argument(..., help="A space key from CODERAG_CONFLUENCE_SPACES."),
                        reconcile: bool = typer.Option(False, "--reconcile", help="List every page and drop deleted ones."),
                        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Sync a Confluence space: changed pages since the last run (with --reconcile, all)."""
    indexer.require_queue_extra(app_settings().freshness)  # with the queue: before the database opens
    with _bounded_if_queued():
        result = indexer.sync_confluence_now(space, config=freshness_config(), settings=core_settings(),
                                             reconcile=reconcile)
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    if _queued(result):
        return
    out.print(f"{space}: {result.mode}: {result.listed} pages listed, {result.indexed} indexed, {result.unchanged} "
              f"unchanged, {result.deleted} deleted, {result.embedded} chunks embedded in {result.seconds:.1f}s",
              highlight=False, soft_wrap=True)


def _bounded_if_queued():
    """:func:`common.db.bounded_postgres` for a ``coderag sync`` that only queues (the index
    queue on): it waits for PostgreSQL a few seconds at most. A sync that indexes here
    (the embedded default) runs long statements: its connections only get the connect
    timeout."""
    if app_settings().freshness.index_queue == "procrastinate":
        return bounded_postgres(core_settings())
    return bounded_postgres(core_settings(), statement_s=0)


@sync_app.callback(invoke_without_command=True)
def sync_all_cmd(ctx: typer.Context,
                 every: bool = typer.Option(False, "--all", help="Every configured repository: queued for the "
                                                                 "workers with the index queue, else run here in "
                                                                 "turn."),
                 full: bool = typer.Option(False, "--full", help="With --all: re-index every file."),
                 as_json: bool = typer.Option(False, "--json", help="With --all: print one JSON line per "
                                                                    "repository.")) -> None:
    """Bring a configured repo or Confluence space up to date now (`--all`: every repository)."""
    if ctx.invoked_subcommand is not None:
        if every or full or as_json:
            raise BadInput("--all, --full and --json go after the subcommand (`coderag sync repo NAME --full`), "
                           "or alone with --all (`coderag sync --all`)")
        return
    if not every:
        out.print(ctx.get_help())
        raise typer.Exit(ExitCode.USAGE)
    indexer.require_queue_extra(app_settings().freshness)
    failed = []

    def each(name: str, result) -> None:
        if isinstance(result, Exception):
            failed.append(name)
            text = " ".join(str(result).split())[:300]
            if as_json:
                print(json.dumps({"source": name, "error": f"{type(result).__name__}: {text}"}))
            else:
                out.print(f"{name}: failed: {type(result).__name__}: {text}", highlight=False, soft_wrap=True)
        elif as_json:
            print(json.dumps(result.to_dict()))
        elif not _queued(result):
            _print_repo_sync(name, result)

    with _bounded_if_queued():
        indexer.sync_all_now(config=freshness_config(), settings=core_settings(), full=full, each=each)
    if failed:
        raise typer.Exit(ExitCode.FAILURE)


def _queued(result) -> bool:
    """Print what ``coderag sync`` queued (index queue on) and say so; ``False`` for a run."""
    if getattr(result, "to_dict", lambda: {})().get("mode") != "queued":
        return False
    if result.job is None:
        out.print(f"{result.source}: a run is already waiting in the index queue; it will include this.")
    elif getattr(result, "upgraded", False):  # --full: the waiting incremental run was made full
        out.print(f"{result.source}: a run was already waiting in the index queue (job {result.job}); it is now a "
                  "full re-index, which includes this request.", highlight=False, soft_wrap=True)
    elif getattr(result, "waiting", False):
        out.print(f"{result.source}: a full re-index is already waiting in the index queue (job {result.job}); "
                  "it will include this.", highlight=False, soft_wrap=True)
    else:
        what = " (a full re-index)" if getattr(result, "full", False) else ""
        out.print(f"{result.source}: queued as job {result.job}{what}; a `coderag worker` runs it (`coderag status` "
                  "shows the queue).", highlight=False, soft_wrap=True)
    return True


@sync_app.command("retry")
def sync_retry_cmd(name: str = typer.Argument(None, help="Only this repo or space (default: every failed job)."),
                   ) -> None:
    """Queue the failed index jobs again (index queue only: CODERAG_INDEX_QUEUE=procrastinate).
    `coderag status` shows each failed source's last error."""
    indexer.require_queue_extra(app_settings().freshness)  # before the database opens
    with bounded_postgres(core_settings()):
        n = indexer.retry_failed_jobs(freshness_config(), core_settings(), name)
    out.print(f"{n} failed job(s) queued again." if n else "No failed job to retry.")


@app.command()
def worker(concurrency: int = typer.Option(1, "--concurrency", min=1, help="Jobs at once in this process."),
           name: str = typer.Option(None, "--name", help="This worker's name in the queue (default: worker)."),
           stalled_after: float = typer.Option(60.0, "--stalled-after", min=2.0,
                                               help="Seconds without a worker's heartbeat after which its jobs "
                                                    "go back in the queue for another worker."),
           heartbeat: float = typer.Option(10.0, "--heartbeat", min=0.5, help="Seconds between heartbeats."),
           keep_jobs: bool = typer.Option(False, "--keep-jobs", help="Keep finished jobs and their events "
                                                                     "(default: a successful job is deleted)."),
           keep_finished_hours: int = typer.Option(168, "--keep-finished-hours", min=1,
                                                   help="Hours a finished job (succeeded, failed, aborted) and "
                                                        "its events stay in the queue tables; pruned hourly.")
           ) -> None:
    """Run index jobs from the queue (CODERAG_INDEX_QUEUE=procrastinate on PostgreSQL):
    pushes, scheduled re-fetches, Confluence TTL syncs and `coderag sync` requests. Start
    any number, on any machines; one repository is indexed by one worker at a time, and a
    killed worker's job goes to another. A database that is down (at the start, or lost
    later) is tried again with backoff, one log line per attempt.
    Stops on Ctrl-C or SIGTERM after the job in hand (procrastinate's graceful shutdown;
    a second signal stops at once), with exit status 143 after SIGTERM and 130 after Ctrl-C."""
    from common.logs import use_one_line_logs

    from .. import metrics
    from ..health import start_metrics_listener

    use_one_line_logs()  # a log collector's lines: time, level, logger, message; no multi-line traceback
    indexer.check_worker_timing(heartbeat=heartbeat, stalled_after=stalled_after)  # before any connection
    indexer.check_worker_setup(app_settings().freshness, core_settings())  # the queue, PostgreSQL, WEAVIATE_URL
    # PostgreSQL not up yet (or restarting): wait for it as after a restart, until Ctrl-C/SIGTERM
    signum = indexer.wait_for_queue_database(core_settings())
    if signum:
        raise typer.Exit(128 + signum)
    # the sources are read from the database at each job: one added on the admin page needs no restart
    config, settings = live_freshness_config(), core_settings()
    if config.index_queue == "procrastinate":  # else run_index_worker says what is missing
        # /metrics (CODERAG_METRICS_PORT): the queue's jobs per source and its depth, for an
        # autoscaler; its listener is also what the deployment's probes check. One bounded
        # read (about 2 s at most) serves both gauges of a scrape, however PostgreSQL behaves.
        read = indexer.queue_status_reader(config, settings)
        metrics.watch_index_jobs(read)
        metrics.watch_webhook_queue(lambda: read()["todo"])
    server = start_metrics_listener(settings) if config.index_queue == "procrastinate" else None
    try:
        signum = indexer.run_index_worker(config, settings, concurrency=concurrency, name=name,
                                          stalled_after=stalled_after, heartbeat=heartbeat, keep_jobs=keep_jobs,
                                          keep_finished_hours=keep_finished_hours)
    finally:
        if server is not None:
            server.stop()
    if signum:  # the shell's convention, 128 + the signal: 143 (SIGTERM), 130 (SIGINT)
        raise typer.Exit(128 + signum)


@app.command()
def reset(yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Delete every indexed repository and space: all chunks and vectors, call graphs and
    sync state (query logs and feedback are kept)."""
    _confirmable(yes, "reset")
    if not yes and not typer.confirm("Delete the whole index?"):
        raise typer.Exit(ExitCode.FAILURE)
    indexer.reset_index(core_settings())
    out.print("Index cleared.")


def _age_text(then) -> str:
    """How long ago ``then`` was, as the answers say it (``3 h ago``)."""
    from ..answer.extractive import age_text

    return age_text(then)


def _work_tree_root(path: Path) -> Path | None:
    """The top of the Git work tree holding ``path`` (``None`` when there is none: the
    index call then says why)."""
    import subprocess

    try:
        top = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(top.stdout.strip()).resolve() if top.returncode == 0 and top.stdout.strip() else None


def _confirmable(yes: bool, command: str) -> None:
    """Without ``--yes`` a destructive command asks on the terminal; with no terminal to
    ask on (a script, CI, a pipe) it fails before doing anything, saying how to confirm."""
    import sys

    if not yes and not sys.stdin.isatty():
        raise BadInput(f"no terminal to confirm on: run `coderag {command} --yes` to delete without asking")
