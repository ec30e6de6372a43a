"""``coderag``: every job from one command line.

Expected failures (not a Git repo, Weaviate down, empty index, bad arguments) print one
line to stderr and exit non-zero; tracebacks are only for bugs (or ``CODERAG_DEBUG=1``).
"""
from __future__ import annotations

import json
import logging
import os
import sys
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
from .retrieval.retriever import Retriever

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="coderag: answers questions about your code, citing path:line@sha.\n\n"
                       "With no WEAVIATE_URL set, coderag runs its own local Weaviate "
                       "(data in CODERAG_HOME, default ~/.local/share/coderag).")
weaviate_app = typer.Typer(no_args_is_help=True, help="Manage the embedded local Weaviate server.")
app.add_typer(weaviate_app, name="weaviate")

err = Console(stderr=True)
out = Console()
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
          as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON.")) -> None:
    """Index a Git repository at its HEAD commit (re-running updates it in place)."""
    settings = Settings.from_env()
    sessions = open_database(settings)
    with _store(settings) as store, _progress(not as_json) as progress:
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


def _retriever(settings: Settings, store: ChunkStore) -> Retriever:
    return Retriever(store, make_embedder(settings))


def _read_batch(path: Path) -> list[dict]:
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    items = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or "id" not in obj or not isinstance(obj.get("question"), str):
            raise BadInput(f"{path}:{n}: each line needs an \"id\" and a \"question\" string")
        items.append(obj)
    return items


@app.command()
def search(question: Optional[str] = typer.Argument(None, help="The question (omit with --batch)."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only search this indexed repo."),
           top_k: int = typer.Option(10, "--top-k", help=f"Results to return (1-{MAX_TOP_K})."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON (one line per question)."),
           batch: Optional[Path] = typer.Option(None, "--batch", help="JSONL file of {id, question[, repo]} lines."),
           alpha: Optional[float] = typer.Option(None, "--alpha", min=0.0, max=1.0,
                                                 help="Force hybrid alpha (0 keyword only, 1 vector only); default: chosen per question.")) -> None:
    """Hybrid search: the chunks that best answer QUESTION, best first."""
    _check_top_k(top_k)
    if (question is None) == (batch is None):
        raise BadInput("give either a QUESTION or --batch FILE")
    items = _read_batch(batch) if batch else [{"id": "q", "question": question, "repo": repo}]
    settings = Settings.from_env()
    with _store(settings) as store:
        retriever = _retriever(settings, store)
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
                    out.print(f"{h.rank:>2}. {c.path}:{c.start_line}-{c.end_line}@{c.commit[:7]} "
                              f"[bold]{c.symbol or c.kind}[/] ({h.score:.3f})", highlight=False)


@app.command()
def ask(question: str = typer.Argument(..., help="A question about the indexed code."),
        repo: Optional[str] = typer.Option(None, "--repo", help="Only use this indexed repo."),
        top_k: int = typer.Option(5, "--top-k", help=f"Chunks to consider (1-{MAX_TOP_K}).")) -> None:
    """Answer QUESTION from the index, citing path:start-end@sha."""
    _check_top_k(top_k)
    settings = Settings.from_env()
    with _store(settings) as store:
        service = AnswerService(store, make_embedder(settings), top_k=top_k)
        answer = service.ask(question, repos=[repo] if repo else None)
    print(answer.text, end="")


@app.command()
def impact(symbol: str = typer.Argument(..., help="Class.method, module.func, a bare name, or path:line."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only look in this indexed repo."),
           depth: int = typer.Option(DEFAULT_DEPTH, "--depth", help="How many caller hops to follow (1 = direct callers)."),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Who calls SYMBOL (directly and transitively) and which tests exercise it."""
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
             as_json: bool = typer.Option(False, "--json", help="Print the metrics as one JSON object.")) -> None:
    """Score retrieval on a golden set: symbol recall@1/5/10, file recall@5, MRR@10."""
    _check_top_k(top_k)
    items = _read_batch(golden)
    settings = Settings.from_env()
    results: dict[str, list[dict]] = {}
    with _store(settings) as store, _progress(not as_json) as progress:
        retriever = _retriever(settings, store)
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
    settings = Settings.from_env()
    with _store(settings) as store:
        sources = store.sources()
    if as_json:
        print(json.dumps(sources, default=str))
        return
    if not sources:
        out.print("Nothing indexed yet: run `coderag index PATH`.")
    for s in sources:
        out.print(f"{s['name']}: {s['commit'][:7]} · {s['chunks']} chunks · {s['files']} files · "
                  f"model {s['model']} · indexed {age_text(s.get('indexed_at'))}", highlight=False)


@app.command()
def reset(yes: bool = typer.Option(False, "--yes", help="Do not ask for confirmation.")) -> None:
    """Delete every indexed repository (all chunks and vectors)."""
    if not yes and not typer.confirm("Delete the whole index?"):
        raise typer.Exit(1)
    settings = Settings.from_env()
    with _store(settings) as store:
        store.reset()
    out.print("Index cleared.")


@app.command()
def serve(host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on."),
          port: int = typer.Option(3000, "--port", help="Port of /slack/events and /healthz.")) -> None:
    """Run the Slack bot: Socket Mode when SLACK_APP_TOKEN is set, else HTTP at /slack/events."""
    from .slack.app import build_app
    from .slack.config import SlackSettings
    from .slack.server import serve as run_server

    slack = SlackSettings.from_env()
    slack.check()
    settings = Settings.from_env()
    with _store(settings) as store:
        service = AnswerService(store, make_embedder(settings))
        mode = "Socket Mode" if slack.socket_mode else f"HTTP on http://{host}:{port}/slack/events"
        err.print(f"coderag serve: {mode}", highlight=False)
        run_server(build_app(service, slack), slack, host=host, port=port)


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


def main() -> None:
    """Console-script entry point: run the app, turning expected errors into one line."""
    logging.basicConfig(level=os.environ.get("CODERAG_LOG_LEVEL", "WARNING"),
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        app(standalone_mode=False)
    except CoderagError as exc:
        if os.environ.get("CODERAG_DEBUG"):
            raise
        print(f"coderag: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        err.print("coderag: aborted")
        sys.exit(130)
    except KeyboardInterrupt:
        err.print("coderag: interrupted")
        sys.exit(130)
    except Exception as exc:  # click usage errors arrive here in standalone_mode=False
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
