"""``coderag``: every job from one command line.

Expected failures (not a Git repo, Weaviate down, empty index, bad arguments) print one
line to stderr and exit non-zero; tracebacks are only for bugs (or ``CODERAG_DEBUG=1``).
"""
from __future__ import annotations

import getpass
import json
import logging
import os
import signal
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from indexer import (BadInput, ChunkStore, CoderagError, EmbeddedWeaviate, Settings,
                     index_repository, make_embedder, open_database)

from .answer.extractive import age_text
from .answer.service import AnswerService
from .evaluation import score_run
from .impact import DEFAULT_DEPTH, AmbiguousSymbol, format_report, impact_report
from .retrieval.ranking import DEFAULT_OFF, SIGNALS, ranking_config
from .retrieval.rerank import make_reranker
from .retrieval.retriever import Retriever

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="coderag: answers questions about your code, citing path:line@sha.\n\n"
                       "With no WEAVIATE_URL set, coderag runs its own local Weaviate "
                       "(data in CODERAG_HOME, default ~/.local/share/coderag).")
weaviate_app = typer.Typer(no_args_is_help=True, help="Manage the embedded local Weaviate server.")
app.add_typer(weaviate_app, name="weaviate")
db_app = typer.Typer(no_args_is_help=True, help="The SQL database (call graph, query log): migrations, retention.")
app.add_typer(db_app, name="db")
feedback_app = typer.Typer(no_args_is_help=True, help="Feedback from the query log.")
app.add_typer(feedback_app, name="feedback")

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
MAX_TOP_K = 100


def _check_top_k(top_k: int) -> int:
    if not 1 <= top_k <= MAX_TOP_K:
        raise BadInput(f"--top-k must be between 1 and {MAX_TOP_K}, got {top_k}")
    return top_k


@contextmanager
def _progress(enabled: bool) -> Iterator:
    """A ``progress(description, total) -> advance(n)`` factory backed by rich bars."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bars:
        def factory(description: str, total: int):
            task = bars.add_task(description, total=total)
            return lambda n=1: bars.advance(task, n)
        yield factory


@contextmanager
def _store(settings: Settings) -> Iterator[ChunkStore]:
    store = ChunkStore.open(settings)
    try:
        yield store
    finally:
        store.close()


@app.command()
def index(path: Path = typer.Argument(..., help="A folder inside a Git work tree; its HEAD commit is indexed."),
          name: Optional[str] = typer.Option(None, "--name", help="Repo name in the index (default: the folder name)."),
          as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
          force: bool = typer.Option(False, "--force", help="Replace a repo of the same name indexed from another folder.")) -> None:
    """Index a Git repository at its HEAD commit (re-running updates it in place)."""
    settings = Settings.from_env()
    sessions = open_database(settings)
    with _store(settings) as store, _progress(not as_json) as progress:
        _refuse_name_clash(store, path, name, force)
        summary = index_repository(path, name=name, settings=settings, store=store, progress=progress,
                                   sessions=sessions)
    if as_json:
        print(json.dumps(summary.to_dict()))
        return
    skipped = ", ".join(f"{n} {r}" for r, n in sorted(summary.skipped.items())) or "none"
    out.print(f"Indexed [bold]{summary.repo}[/] @ {summary.commit[:7]}: {summary.files_indexed} files, "
              f"{summary.chunks} chunks ({summary.embedded} embedded, {summary.reused_vectors} unchanged), "
              f"{summary.graph_definitions} definitions and {summary.graph_edges} call edges "
              f"in {summary.seconds_total:.1f}s; skipped: {skipped}.", highlight=False, soft_wrap=True)
    if summary.dirty_paths:
        out.print(f"Note: {len(summary.dirty_paths)} file(s) have uncommitted changes; the committed version was indexed.")


def _refuse_name_clash(store: ChunkStore, path: Path, name: str | None, force: bool) -> None:
    """A name already indexed from another folder is not silently overwritten."""
    from indexer.sources.git import repo_root

    root = repo_root(path)
    repo = name or root.name
    for s in store.sources():
        if s["name"] == repo and s.get("root") and s["root"] != str(root) and not force:
            raise BadInput(f"a repo named {repo!r} is already indexed from {s['root']}; pick another "
                           f"--name, or pass --force to replace it")


@app.command()
def remove(name: str = typer.Argument(..., help="Indexed repo (or space) name, as `coderag status` lists it."),
           yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Delete one indexed repo or space: its chunks, its source record, its call graph and
    its sync state (last indexed commit, errors), so a later sync starts from scratch."""
    from indexer.freshness.state import all_states, forget_sources
    from indexer.graph.sql_store import delete_repo_graph

    settings = Settings.from_env()
    sessions = open_database(settings)
    with _store(settings) as store:
        if name not in {s["name"] for s in store.sources()} and name not in all_states(sessions):
            raise BadInput(f"no indexed repo named {name!r} (see `coderag status`)")
        if not yes and not typer.confirm(f"Delete {name!r} from the index?"):
            raise typer.Exit(1)
        store.delete_repo(name)
    delete_repo_graph(sessions, name)
    forget_sources(sessions, [name])
    out.print(f"Removed {name}.")


def _retriever(settings: Settings, store: ChunkStore, expand_graph: bool = True,
               no_signal: Optional[list[str]] = None, signal: Optional[list[str]] = None) -> Retriever:
    return Retriever(store, make_embedder(settings),
                     sessions=open_database(settings) if expand_graph else None,
                     ranking=ranking_config(no_signal, signal), reranker=make_reranker())


def _check_question(text: str, where: str = "QUESTION") -> str:
    if not text or not text.strip():
        raise BadInput(f"{where} is empty")
    return text


def _check_writable(path: Path | None) -> None:
    """Fail before the work, not after it, when an output file cannot be written."""
    if path is not None and not path.resolve().parent.is_dir():
        raise BadInput(f"{path}: folder {path.resolve().parent} does not exist")


def _read_batch(path: Path, *, golden: bool = False) -> list[dict]:
    """Lines of a JSONL file of ``{id, question[, repo]}`` (with ``golden``, also
    ``expected: [{path, line}]``). Raises :class:`BadInput` naming the bad line."""
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("question"), str):
            raise BadInput(f"{path}:{n}: each line needs an \"id\" and a \"question\" string")
        _check_question(obj["question"], f"{path}:{n}: the question")
        if golden:
            exp = obj.get("expected", [])
            if not isinstance(exp, list) or not all(
                    isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("line"), int)
                    for e in exp):
                raise BadInput(f"{path}:{n}: \"expected\" must be a list of {{\"path\": str, \"line\": int}}")
        items.append(obj)
    return items


@app.command()
def search(question: Optional[str] = typer.Argument(None, help="The question (omit with --batch)."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only search this indexed repo."),
           top_k: int = typer.Option(10, "--top-k", help=f"Results to return (1-{MAX_TOP_K})."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON (one line per question)."),
           batch: Optional[Path] = typer.Option(None, "--batch", help="JSONL file of {id, question[, repo]} lines."),
           alpha: Optional[float] = typer.Option(None, "--alpha", min=0.0, max=1.0,
                                                 help="Force hybrid alpha (0 keyword only, 1 vector only); default: chosen per question."),
           no_expand: bool = typer.Option(False, "--no-expand", help="Skip call-graph expansion."),
           no_signal: Optional[list[str]] = typer.Option(None, "--no-signal", metavar="NAME",
                                                         help=f"Switch one ranking signal off (repeatable): {', '.join(SIGNALS)}."),
           signal: Optional[list[str]] = typer.Option(None, "--signal", metavar="NAME",
                                                      help=f"Switch on a signal that is off by default (repeatable): {', '.join(sorted(DEFAULT_OFF))}.")) -> None:
    """Hybrid search, the ranking stage, then call-graph expansion: the chunks that best answer QUESTION.

    With --json, results that came from expansion carry "origin": "expansion" and a
    "reason" (e.g. "callee of Session.send").
    """
    _check_top_k(top_k)
    if (question is None) == (batch is None):
        raise BadInput("give either a QUESTION or --batch FILE")
    items = _read_batch(batch) if batch else [{"id": "q", "question": _check_question(question), "repo": repo}]
    settings = Settings.from_env()
    with _store(settings) as store:
        retriever = _retriever(settings, store, expand_graph=not no_expand, no_signal=no_signal, signal=signal)
        for item in items:
            repos = [item["repo"]] if item.get("repo") else ([repo] if repo else None)
            result = retriever.search(item["question"], top_k=top_k, repos=repos, alpha=alpha)
            if as_json or batch:
                line = {"id": item["id"], "results": [h.to_result() for h in result.hits]}
                if not batch:
                    line["alpha"] = result.alpha
                print(json.dumps(line), flush=True)
            else:
                out.print(f"[dim]alpha={result.alpha:.2f}[/]")
                for h in result.hits:
                    c = h.chunk
                    why = f" [dim]← {h.reason}[/]" if h.reason else ""
                    out.print(f"{h.rank:>2}. {c.path}:{c.start_line}-{c.end_line}@{c.commit[:7]} "
                              f"[bold]{c.symbol or c.kind}[/] ({h.score:.3f}){why}", highlight=False, soft_wrap=True)


@app.command()
def ask(question: str = typer.Argument(..., help="A question about the indexed code."),
        repo: Optional[str] = typer.Option(None, "--repo", help="Only use this indexed repo."),
        top_k: int = typer.Option(5, "--top-k", help=f"Chunks to consider (1-{MAX_TOP_K})."),
        no_log: bool = typer.Option(False, "--no-log", help="Do not record the question in the query log."),
        as_json: bool = typer.Option(False, "--json", help='Print {"answer", "citations", "no_coverage", "uncovered_terms", "stale", "model", "usage"}.')) -> None:
    """Answer QUESTION from the index, citing path:start-end@sha (logged as source "cli")."""
    _check_top_k(top_k)
    _check_question(question)
    settings = Settings.from_env()
    sessions = open_database(settings)
    with _store(settings) as store:
        service = AnswerService(store, make_embedder(settings), top_k=top_k, sessions=sessions)
        answer = service.ask(question, repos=[repo] if repo else None)
    t0 = time.perf_counter()
    print(json.dumps(answer.to_json()) if as_json else answer.text, end="\n" if as_json else "", flush=True)
    post_ms = (time.perf_counter() - t0) * 1000
    if not no_log:
        from .querylog.recorder import QueryLog

        try:
            QueryLog(sessions).record_answer(answer, source="cli", post_ms=post_ms, user=getpass.getuser())
        except CoderagError:
            raise
        except Exception as exc:  # the answer is out; a logging failure must not hide it
            err.print(f"coderag: warning: the query was not logged ({str(exc).splitlines()[0][:200]})",
                      highlight=False, markup=False)


@app.command()
def impact(symbol: str = typer.Argument(..., help="Class.method, module.func, a bare name, or path:line."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only look in this indexed repo."),
           depth: int = typer.Option(DEFAULT_DEPTH, "--depth", help="How many caller hops to follow (1 = direct callers)."),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Who calls SYMBOL (directly and transitively) and which tests exercise it."""
    _check_question(symbol, "SYMBOL")
    sessions = open_database(Settings.from_env())
    try:
        report = impact_report(sessions, symbol, repo=repo, depth=depth)
    except AmbiguousSymbol as exc:
        if as_json or not sys.stdin.isatty():
            raise
        err.print(str(exc).split("\n")[0], highlight=False, markup=False)
        for i, (r, d) in enumerate(exc.candidates, 1):
            err.print(f"  {i}. {d.path}:{d.start_line}  {d.symbol} ({d.kind}, repo {r})", highlight=False, markup=False)
        choice = typer.prompt("Which one", type=int)
        if not 1 <= choice <= len(exc.candidates):
            raise BadInput(f"choose a number from 1 to {len(exc.candidates)}") from None
        r, d = exc.candidates[choice - 1]
        report = impact_report(sessions, f"{d.path}:{d.start_line}", repo=r, depth=depth)
    if as_json:
        print(json.dumps(report))
    else:
        print(format_report(report), end="")


@app.command(name="eval")
def eval_cmd(golden: Path = typer.Argument(..., help="Golden JSONL: {id, question, repo?, expected: [{path, line}]}."),
             top_k: int = typer.Option(10, "--top-k", help="Results per question (>= 10 for MRR@10)."),
             alpha: Optional[float] = typer.Option(None, "--alpha", min=0.0, max=1.0, help="Force hybrid alpha."),
             results_out: Optional[Path] = typer.Option(None, "--results", help="Also write the raw results JSONL here."),
             no_expand: bool = typer.Option(False, "--no-expand", help="Skip call-graph expansion."),
             as_json: bool = typer.Option(False, "--json", help="Print the metrics as one JSON object.")) -> None:
    """Score retrieval on a golden set: symbol recall@1/5/10, file recall@5, MRR@10."""
    _check_top_k(top_k)
    _check_writable(results_out)
    items = _read_batch(golden, golden=True)
    settings = Settings.from_env()
    results: dict[str, list[dict]] = {}
    with _store(settings) as store, _progress(not as_json) as progress:
        retriever = _retriever(settings, store, expand_graph=not no_expand)
        advance = progress("Questions", len(items)) if progress else (lambda n=1: None)
        for item in items:
            res = retriever.search(item["question"], top_k=top_k,
                                   repos=[item["repo"]] if item.get("repo") else None, alpha=alpha)
            results[item["id"]] = [h.to_result() for h in res.hits]
            advance(1)
    if results_out:
        results_out.write_text("".join(json.dumps({"id": k, "results": v}) + "\n" for k, v in results.items()))
    metrics = score_run(items, results)
    if as_json:
        print(json.dumps(metrics))
    else:
        for k, v in metrics.items():
            print(f"{k}: {v}")


@app.command()
def status(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """List indexed repositories with their commit, chunk count and index age."""
    from indexer.freshness.status import freshness_status

    settings = Settings.from_env()
    with _store(settings) as store:
        sources = store.sources()
    sources = freshness_status(open_database(settings), sources)  # + next_run, last_error (SQL)
    if as_json:
        print(json.dumps(sources, default=str))
        return
    if not sources:
        out.print("Nothing indexed yet: run `coderag index PATH`.")
    for s in sources:
        if s.get("kind") == "confluence":
            what = f"Confluence · {s.get('files', 0)} pages (newest v{s.get('version') or '?'})"
        else:
            what = f"{(s.get('commit') or '-------')[:7]} · {s.get('files', 0)} files"
        line = (f"{s['name']}: {what} · {s.get('chunks', 0)} chunks · model {s.get('model') or '-'} · "
                f"indexed {age_text(s.get('indexed_at')) if s.get('indexed_at') else 'never'}")
        if s.get("next_run"):
            line += f" · next run {s['next_run']:%Y-%m-%d %H:%M} UTC"
        if s.get("last_error"):
            line += f" · last error: {s['last_error'][:200]}"
        out.print(line, highlight=False, soft_wrap=True)


sync_app = typer.Typer(no_args_is_help=True, help="Bring a configured repo or Confluence space up to date now.")
app.add_typer(sync_app, name="sync")


@sync_app.command("repo")
def sync_repo_cmd(name: str = typer.Argument(..., help="A repo name from CODERAG_REPOS."),
                  full: bool = typer.Option(False, "--full", help="Re-index every file, not just the changed ones."),
                  as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Fetch the repo's mirror and re-index what changed since the last indexed commit."""
    from indexer.freshness.incremental import sync_repo
    from indexer.freshness.runtime import FreshnessRuntime

    runtime = FreshnessRuntime.build()
    try:
        repo = runtime.config.repo(name)
        try:
            result = sync_repo(runtime.ctx, repo, force_full=full)
        except Exception as exc:  # noqa: BLE001 - recorded, then re-raised
            from indexer.freshness.state import record_error

            record_error(runtime.ctx.sessions, name, "git", str(exc))
            raise
    finally:
        runtime.stop()
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    why = f" ({result.reason})" if result.reason else ""
    out.print(f"{name}: {result.mode}{why} {result.base[:7] or '-'}..{result.commit[:7]}: {result.files_changed} "
              f"changed, {result.files_deleted} deleted, {result.embedded} chunks embedded, "
              f"{result.reused_vectors} reused in {result.seconds:.1f}s", highlight=False, soft_wrap=True)


@sync_app.command("confluence")
def sync_confluence_cmd(space: str = typer.Argument(..., help="A space key from CODERAG_CONFLUENCE_SPACES."),
                        reconcile: bool = typer.Option(False, "--reconcile", help="List every page and drop deleted ones."),
                        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Sync a Confluence space: changed pages since the last run (with --reconcile, all)."""
    from indexer.freshness.runtime import FreshnessRuntime

    runtime = FreshnessRuntime.build()
    try:
        result = runtime.sync_confluence(space, reconcile=True if reconcile else None)
    finally:
        runtime.stop()
    if as_json:
        print(json.dumps(result.to_dict()))
        return
    out.print(f"{space}: {result.mode}: {result.listed} pages listed, {result.indexed} indexed, {result.unchanged} "
              f"unchanged, {result.deleted} deleted, {result.embedded} chunks embedded in {result.seconds:.1f}s",
              highlight=False, soft_wrap=True)


@app.command()
def reset(yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Delete every indexed repository and space: all chunks and vectors, call graphs and
    sync state (query logs and feedback are kept)."""
    from indexer.freshness.state import forget_sources
    from indexer.graph.sql_store import delete_repo_graph, indexed_repos

    if not yes and not typer.confirm("Delete the whole index?"):
        raise typer.Exit(1)
    settings = Settings.from_env()
    with _store(settings) as store:
        store.reset()
    sessions = open_database(settings)
    for repo in indexed_repos(sessions):
        delete_repo_graph(sessions, repo)
    forget_sources(sessions)
    out.print("Index cleared.")


def _exit_on_sigterm(signum, _frame) -> None:
    raise SystemExit(128 + signum)


@app.command()
def serve(host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
          port: int = typer.Option(3000, "--port", min=1, max=65535, help="Port of the HTTP server (/slack/events, /api/messages, /healthz, ...).")) -> None:
    """Run the bot server: Slack (Socket Mode when SLACK_APP_TOKEN is set, else HTTP at
    /slack/events), Teams (/api/messages) and the other configured front ends, plus /healthz."""
    from .server import ServerContext, build_asgi, server_role
    from .slack.app import build_app
    from .slack.config import SlackSettings
    from .slack.server import serve as run_server

    from indexer.freshness.config import FreshnessConfig

    from .teams.routes import teams_enabled

    role = server_role()  # CODERAG_ROLE: bot | indexer | all (see bot.server.server_role)
    slack = SlackSettings.from_env()
    fresh = FreshnessConfig.from_env()
    # Teams (bot.teams): CODERAG_TEAMS_CLIENT_ID, or CODERAG_TEAMS=1 for anonymous local testing.
    use_teams = role != "indexer" and teams_enabled()
    # Slack is optional when another front end (Teams, webhooks, Confluence syncs) is configured.
    others = (role != "bot" and (fresh.webhooks_enabled or fresh.confluence is not None)) or use_teams
    use_slack = role != "indexer" and (bool(slack.bot_token) or not others)
    if use_slack:
        if not slack.bot_token and not others:
            raise BadInput("nothing to serve: configure Slack (SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET or "
                           "SLACK_APP_TOKEN), Teams (CODERAG_TEAMS_CLIENT_ID, ...), or webhooks (CODERAG_REPOS and "
                           "CODERAG_GITHUB_WEBHOOK_SECRET or CODERAG_GITLAB_WEBHOOK_TOKEN), or Confluence "
                           "(CODERAG_CONFLUENCE_URL)")
        slack.check()
    elif role == "indexer" and not others:
        raise BadInput("nothing to serve in the indexer role: configure CODERAG_REPOS with a webhook secret "
                       "(CODERAG_GITHUB_WEBHOOK_SECRET or CODERAG_GITLAB_WEBHOOK_TOKEN) or CODERAG_CONFLUENCE_URL")
    from .querylog.retention import retention_days_from_env, retention_job_provider

    retention_days = retention_days_from_env()  # a bad value fails here, before any start-up work
    scheduler_on = os.environ.get("CODERAG_SCHEDULER", "on").lower() != "off"
    # SIGTERM (docker/k8s/systemd stop) must unwind like Ctrl-C so the `finally` below
    # releases the scheduler lock; uvicorn re-raises it after its graceful shutdown.
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    settings = Settings.from_env()
    sessions = open_database(settings)
    with _store(settings) as store:
        service = AnswerService(store, make_embedder(settings), sessions=sessions)
        bolt_app = build_app(service, slack) if use_slack else None
        teams = None
        if use_teams:
            from .teams.routes import build_teams

            teams = build_teams(service, sessions=sessions)  # warns when anonymous
        ctx = ServerContext(service=service, sessions=sessions, settings=settings, slack_app=bolt_app,
                            socket_mode=slack.socket_mode and bolt_app is not None, teams=teams)
        ctx.extras["freshness_config"] = fresh
        mode = ("off" if bolt_app is None else
                "Socket Mode" if slack.socket_mode else f"HTTP on http://{host}:{port}/slack/events")
        asgi = build_asgi(ctx)
        runtime = ctx.extras.get("freshness")
        retention_scheduler = None
        if runtime is not None and role != "bot" and scheduler_on:
            try:  # refuses (SchedulerAlreadyRunning) if another one runs
                runtime.start_scheduler(extra_jobs=[retention_job_provider(retention_days)])
            except BaseException:
                runtime.stop()  # close its workers and Weaviate connection before the error
                raise
        elif retention_days and scheduler_on:
            # No freshness scheduler here (no repos/spaces, or the bot role): prune from an
            # in-memory one (idempotent, so one per replica is harmless).
            from apscheduler.schedulers.background import BackgroundScheduler

            from .querylog.retention import schedule_retention

            retention_scheduler = BackgroundScheduler(timezone="UTC")
            schedule_retention(retention_scheduler, sessions, retention_days)
            retention_scheduler.start()
        hooks = [p for p, on in (("/webhooks/github", fresh.github_secret), ("/webhooks/gitlab", fresh.gitlab_token))
                 if on and fresh.repos and role != "bot"]
        teams_mode = "off" if teams is None else (f"HTTP on http://{host}:{port}/api/messages"
                                                   + (" (ANONYMOUS: no token validation)" if teams.auth.anonymous else ""))
        sched_mode = ("on" if runtime is not None and runtime.scheduler is not None
                      else "retention only" if retention_scheduler is not None else "off")
        err.print(f"coderag serve ({role}): Slack {mode}; Teams {teams_mode}; webhooks {', '.join(hooks) or 'off'}; "
                  f"scheduler {sched_mode}; query-log retention "
                  f"{f'{retention_days} days' if retention_days and sched_mode != 'off' else 'off'}", highlight=False)
        try:
            run_server(asgi, bolt_app, slack if bolt_app is not None else None, host=host, port=port)
        finally:
            if retention_scheduler is not None:
                retention_scheduler.shutdown(wait=False)
            if runtime is not None:
                runtime.stop()


@weaviate_app.command("status")
def weaviate_status() -> None:
    """Show whether the embedded Weaviate is running, and where."""
    info = EmbeddedWeaviate(Settings.from_env().home).running()
    out.print(f"running: pid {info.pid}, {info.url}, gRPC {info.grpc_port}, data {info.data_path}"
              if info else "not running")


@weaviate_app.command("stop")
def weaviate_stop() -> None:
    """Stop the embedded Weaviate (it starts again on the next command that needs it)."""
    stopped = EmbeddedWeaviate(Settings.from_env().home).stop()
    out.print("stopped" if stopped else "not running")


@db_app.command("upgrade")
def db_upgrade(revision: str = typer.Option("head", "--revision", help="Target Alembic revision.")) -> None:
    """Migrate the database (CODERAG_DATABASE_URL, default SQLite in CODERAG_HOME) to REVISION."""
    from indexer.db import database_url, upgrade_to_head

    url = database_url(Settings.from_env())
    upgrade_to_head(url, revision)
    from sqlalchemy.engine import make_url

    out.print(f"database {make_url(url).render_as_string(hide_password=True)} is at {revision}", highlight=False)


@db_app.command("prune")
def db_prune(days: Optional[int] = typer.Option(None, "--days", min=1,
                                                help="Keep text this many days (default: CODERAG_RETENTION_DAYS)."),
             as_json: bool = typer.Option(False, "--json", help="Print the result as JSON.")) -> None:
    """Delete question/answer text older than the retention period; counts, latencies and votes stay."""
    from .querylog.retention import prune, retention_days_from_env

    days = days or retention_days_from_env()
    if days is None:
        raise BadInput("no retention period: set CODERAG_RETENTION_DAYS or pass --days N")
    result = prune(open_database(Settings.from_env()), days)
    if as_json:
        print(json.dumps(result))
    else:
        out.print(f"Blanked the text of {result['queries']} queries and {result['comments']} comments "
                  f"older than {result['cutoff'][:19]} UTC.", highlight=False)


@app.command()
def stats(since: str = typer.Option("7d", "--since", help="Window start: 7d, 24h, 30m, 2w or an ISO date."),
          top: int = typer.Option(10, "--top", min=1, max=1000, help="Coverage gaps to list."),
          as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Query-log report: volume by source and channel, p50/p95 latency per stage, 👍/👎 rate,
    no-coverage share and the top coverage gaps (no-coverage or 👎 questions)."""
    from .querylog.stats import compute_stats, parse_since, render_stats

    result = compute_stats(open_database(Settings.from_env()), parse_since(since), top=top)
    if as_json:
        print(json.dumps(result))
    else:
        print(render_stats(result), end="")


@feedback_app.command("export")
def feedback_export(negative: bool = typer.Option(False, "--negative",
                                                  help="Only 👎-voted and no-coverage questions."),
                    out_file: Optional[Path] = typer.Option(None, "--out", help="Write here instead of stdout."),
                    since: Optional[str] = typer.Option(None, "--since", help="Only questions asked since (7d, ISO date).")) -> None:
    """Write questions as golden-set JSONL lines {"id", "question", "expected": []} to fill in."""
    from .querylog.export import negative_questions, write_jsonl
    from .querylog.stats import parse_since

    _check_writable(out_file)
    items = negative_questions(open_database(Settings.from_env()), negative=negative,
                               since=parse_since(since) if since else None)
    if out_file is None:
        write_jsonl(items, sys.stdout)
        return
    with out_file.open("w", encoding="utf-8") as fh:
        n = write_jsonl(items, fh)
    err.print(f"wrote {n} question(s) to {out_file}", highlight=False)


def main() -> None:
    """Console-script entry point: run the app, turning expected errors into one line."""
    level = os.environ.get("CODERAG_LOG_LEVEL", "WARNING").strip().upper() or "WARNING"
    if level not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        print(f"coderag: error: CODERAG_LOG_LEVEL={level!r} is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL",
              file=sys.stderr)
        sys.exit(2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    try:
        rv = app(standalone_mode=False)
    except CoderagError as exc:
        if os.environ.get("CODERAG_DEBUG"):
            raise
        print(f"coderag: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except (typer.Abort, *_click_exceptions("Abort")):
        print("coderag: aborted", file=sys.stderr)
        sys.exit(130)
    except KeyboardInterrupt:
        print("coderag: interrupted", file=sys.stderr)
        sys.exit(130)
    except _click_exceptions("ClickException") as exc:  # usage errors (standalone_mode=False)
        exc.show()
        sys.exit(exc.exit_code)
    if isinstance(rv, int) and rv:  # typer.Exit(code) is returned, not raised, here
        sys.exit(rv)


def _click_exceptions(name: str) -> tuple[type, ...]:
    """``name`` from click and from typer's bundled copy of click (typer >= 0.26 raises
    the bundled one)."""
    import click

    found = [getattr(click.exceptions, name)]
    try:
        from typer._click import exceptions as bundled

        found.append(getattr(bundled, name))
    except (ImportError, AttributeError):
        pass
    return tuple(found)


if __name__ == "__main__":
    main()
