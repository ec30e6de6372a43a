"""Read-side commands: ``search``, ``ask``, ``impact``, ``eval``."""
from __future__ import annotations

import getpass
import json
import sys
import time
from pathlib import Path
from typing import Optional

import typer

import indexer
from common.errors import BadInput, CoderagError

# Light modules only at start-up: retrieval, answers and the call graph load inside the
# command that needs them.
from ..impact import DEFAULT_DEPTH
from ..refs import record_bases, repo_at_ref, resolve_ref, unknown_repo
from ..retrieval.ranking import SIGNALS
from .base import (MAX_TOP_K, app, check_batch_repos, check_question, check_top_k, check_writable, err, out,
                   progress_bars, read_batch_lines, retriever_for)
from .context import app_settings


@app.command()
def search(question: Optional[str] = typer.Argument(None, help="The question (omit with --batch)."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only search this indexed repo."),
           ref: Optional[str] = typer.Option(None, "--ref", help="Read this indexed named ref (a release tag or branch of CODERAG_REPOS' refs) instead of the default branch."),
           top_k: int = typer.Option(10, "--top-k", help=f"Results to return (1-{MAX_TOP_K})."),
           as_json: bool = typer.Option(False, "--json", help="Print JSON (one line per question)."),
           batch: Optional[Path] = typer.Option(None, "--batch", help="JSONL file of {id, question[, repo]} lines."),
           alpha: Optional[float] = typer.Option(None, "--alpha", min=0.0, max=1.0,
                                                 help="Force hybrid alpha (0 keyword only, 1 vector only); default: chosen per question."),
           no_expand: bool = typer.Option(False, "--no-expand", help="Skip call-graph expansion."),
           no_signal: Optional[list[str]] = typer.Option(None, "--no-signal", metavar="NAME",
                                                         help=f"Switch one ranking signal off (repeatable, or a comma list): {', '.join(SIGNALS)}.")) -> None:
    """Hybrid search, the ranking stage, then call-graph expansion: the chunks that best answer QUESTION.

    With --json, results that came from expansion carry "origin": "expansion" and a
    "reason" (e.g. "callee of Session.send").
    """
    from ..answer.guardrails import staleness_notes

    check_top_k(top_k)
    if (question is None) == (batch is None):
        raise BadInput("give either a QUESTION or --batch FILE")
    lines = read_batch_lines(batch) if batch else [(0, {"id": "q", "question": check_question(question), "repo": repo})]
    items = [obj for _n, obj in lines]
    app = app_settings()
    settings = app.core
    with indexer.open_store(settings) as store:
        retriever = retriever_for(settings, store, expand_graph=not no_expand, no_signal=no_signal)
        records = store.sources.all()  # read once: the batch check, the ref, each search, the notes
        repo, ref = repo_at_ref(repo, ref, record_bases(records))  # --repo shop@v2: --repo shop --ref v2
        if repo and not batch and repo not in {s.name for s in records}:  # before any --ref (a batch: its lines)
            raise unknown_repo([repo], record_bases(records))
        if batch:  # every line's repo is checked before the first search prints anything
            check_batch_repos(batch, lines, {s.name for s in records}, default_repo=repo,
                              listed=record_bases(records))
        else:
            items[0]["repo"] = repo
        resolved = []  # every line's repo at --ref, before the first search prints anything
        for n, item in lines:
            repos = [item["repo"]] if item.get("repo") else ([repo] if repo else None)
            try:
                resolved.append((repos, resolve_ref(records, ref, repos=repos, sessions=retriever.sessions)
                                        if ref is not None else []))
            except BadInput as exc:
                raise (BadInput(f"{batch}:{n}: {exc}") if batch else exc) from None
        for item, (repos, views) in zip(items, resolved):
            if views:  # the ref sources of the repos (shop@v2): the base's unchanged files plus the ref's own
                repos = [v.name for v in views]
                if not (as_json or batch):
                    out.print("At " + "; ".join(v.describe() for v in views) + ":", highlight=False, soft_wrap=True)
            result = retriever.search(item["question"], top_k=top_k, repos=repos, alpha=alpha, records=records)
            if as_json or batch:
                line = {"id": item["id"], "results": [h.to_result() for h in result.hits]}
                if not batch:
                    line["alpha"] = result.alpha
                print(json.dumps(line), flush=True)
            else:
                from rich.markup import escape

                from ..answer.extractive import cited_symbol

                for h in result.hits:
                    c = h.chunk
                    why = f" [dim]← {h.reason}[/]" if h.reason else ""
                    # one citation format with `ask`: repo/path:start-end@sha, an operation with its spec version
                    out.print(f"{h.rank:>2}. {c.repo}/{c.path}:{c.start_line}-{c.end_line}@{c.commit[:7]} "
                              f"[bold]{escape(cited_symbol(c) or c.kind)}[/] ({h.score:.3f}){why}",
                              highlight=False, soft_wrap=True)
                # the same staleness notes as `ask` (CODERAG_STALE_HOURS, a moved HEAD, Confluence TTL)
                rows = [s.to_dict() for s in records]
                for note in staleness_notes(rows, {h.chunk.repo for h in result.hits},
                                            max_age_hours=app.chat.stale_hours,
                                            confluence_ttl_hours=app.confluence.ttl_hours):
                    out.print(note, highlight=False, markup=False, soft_wrap=True)


@app.command()
def ask(question: str = typer.Argument(..., help="A question about the indexed code."),
        repo: Optional[str] = typer.Option(None, "--repo", help="Only use this indexed repo."),
        ref: Optional[str] = typer.Option(None, "--ref", help="Read this indexed named ref (a release tag or branch of CODERAG_REPOS' refs) instead of the default branch."),
        top_k: int = typer.Option(5, "--top-k", help=f"Chunks to consider (1-{MAX_TOP_K})."),
        no_log: bool = typer.Option(False, "--no-log", help="Do not record the question in the query log."),
        as_json: bool = typer.Option(False, "--json", help='Print {"answer", "citations", "no_coverage", "uncovered_terms", "stale", "model", "usage"}.')) -> None:
    """Answer QUESTION from the index, citing path:start-end@sha (logged as source "cli")."""
    from ..answer.service import AnswerService

    check_top_k(top_k)
    question = check_question(question)
    app = app_settings()
    settings = app.core
    from common.db import open_database  # sqlalchemy: loaded by the commands that use it
    sessions = open_database(settings)
    with indexer.open_store(settings) as store:
        service = AnswerService(store, indexer.make_embedder(settings), top_k=top_k, sessions=sessions,
                                settings=app)
        answer = service.ask(question, repos=[repo] if repo else None, ref=ref)
    t0 = time.perf_counter()
    print(json.dumps(answer.to_json()) if as_json else answer.text, end="\n" if as_json else "", flush=True)
    post_ms = (time.perf_counter() - t0) * 1000
    if not no_log:
        from ..querylog.recorder import QueryLog

        try:
            QueryLog(sessions, settings=app.querylog).record_answer(answer, source="cli", post_ms=post_ms, user=getpass.getuser())
        except CoderagError:
            raise
        except Exception as exc:  # the answer is out; a logging failure must not hide it
            err.print(f"coderag: warning: the query was not logged ({str(exc).splitlines()[0][:200]})",
                      highlight=False, markup=False)


@app.command()
def impact(symbol: str = typer.Argument(..., help="Class.method, module.func, a bare name, or path:line."),
           repo: Optional[str] = typer.Option(None, "--repo", help="Only look in this indexed repo."),
           ref: Optional[str] = typer.Option(None, "--ref", help="The callers at this indexed named ref (a release tag or branch of CODERAG_REPOS' refs)."),
           depth: int = typer.Option(DEFAULT_DEPTH, "--depth", help="How many caller hops to follow (1 = direct callers)."),
           expand_possible: bool = typer.Option(
               False, "--expand-possible",
               help="Also follow the possible callers (calls of the name on a value of unknown type) "
                    "up to --depth; everything found that way stays a possible caller."),
           as_json: bool = typer.Option(False, "--json", help="Print the report as JSON.")) -> None:
    """Who calls SYMBOL (directly and transitively) and which tests exercise it."""
    from ..impact import AmbiguousSymbol, format_report, impact_report

    check_question(symbol, "SYMBOL")
    from common.db import open_database  # sqlalchemy: loaded by the commands that use it
    sessions = open_database(app_settings().core)
    try:
        report = impact_report(sessions, symbol, repo=repo, depth=depth, expand_possible=expand_possible, ref=ref)
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
        report = impact_report(sessions, f"{d.path}:{d.start_line}", repo=r, depth=depth,
                               expand_possible=expand_possible)
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
    from ..evaluation import score_run

    check_top_k(top_k)
    check_writable(results_out)
    lines = read_batch_lines(golden, golden=True)
    items = [obj for _n, obj in lines]
    settings = app_settings().core
    results: dict[str, list[dict]] = {}
    with indexer.open_store(settings) as store, progress_bars(not as_json) as progress:
        records = store.sources.all()
        check_batch_repos(golden, lines, {s.name for s in records}, listed=record_bases(records))
        retriever = retriever_for(settings, store, expand_graph=not no_expand)
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
