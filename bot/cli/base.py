"""What every ``coderag`` command module shares: the Typer apps, the two consoles and
the argument checks. Command modules (``index_cmds``, ``query_cmds``, ``serve_cmd``,
``admin_cmds``) are thin: they check arguments, call the indexer's public API or the
bot's services, and print.
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Collection, Iterator

import typer
from rich.console import Console

from common.errors import BadInput, EmptyIndex

if TYPE_CHECKING:  # start-up: the store, the embedder and retrieval load when a command needs them
    from common.settings import Settings
    from indexer import ChunkStore

    from ..retrieval.retriever import Retriever

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, rich_markup_mode="markdown",
                  help="coderag: answers questions about your code, citing path:line@sha.\n\n"
                       "With no WEAVIATE_URL set, coderag runs its own local Weaviate "
                       "(data in CODERAG_HOME, default ~/.local/share/coderag).")


def _version(value: bool) -> None:
    """``--version``: the installed package's version, read from its metadata."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            v = version("coderag")
        except PackageNotFoundError:  # a source tree that was never installed
            v = "unknown (not installed)"
        print(f"coderag {v}")
        raise typer.Exit()


@app.callback()
def _root(show_version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                            help="Print the version and exit.")) -> None:
    """coderag: answers questions about your code, citing path:line@sha."""


weaviate_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Manage the embedded local Weaviate server.")
app.add_typer(weaviate_app, name="weaviate")
db_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="The SQL database (call graph, query log): migrations, retention.")
app.add_typer(db_app, name="db")
feedback_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Feedback from the query log.")
app.add_typer(feedback_app, name="feedback")
sync_app = typer.Typer(no_args_is_help=True, rich_markup_mode="markdown", help="Bring a configured repo or Confluence space up to date now.")
app.add_typer(sync_app, name="sync")

err = Console(stderr=True, soft_wrap=True)
out = Console(soft_wrap=True)
MAX_TOP_K = 100


def check_top_k(top_k: int) -> int:
    if not 1 <= top_k <= MAX_TOP_K:
        raise BadInput(f"--top-k must be between 1 and {MAX_TOP_K}, got {top_k}")
    return top_k


@contextmanager
def progress_bars(enabled: bool) -> Iterator:
    """A ``progress(description, total) -> advance(n)`` factory backed by rich bars."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=err, transient=False) as bars:
        def factory(description: str, total: int):
            task = bars.add_task(description, total=total)
            return lambda n=1: bars.advance(task, n)
        yield factory


def retriever_for(settings: Settings, store: ChunkStore, expand_graph: bool = True,
                  no_signal: list[str] | None = None) -> Retriever:
    """The CLI's retriever: graph expansion unless ``expand_graph`` is False, the ranking
    signals minus ``no_signal`` (names of :data:`bot.retrieval.ranking.SIGNALS`;
    ``BadInput`` for an unknown one), Voyage rerank when ``VOYAGE_API_KEY`` is set."""
    from common.db import open_database
    from indexer import make_embedder

    from ..retrieval.ranking import ranking_config
    from ..retrieval.rerank import make_reranker
    from ..retrieval.retriever import Retriever

    return Retriever(store, make_embedder(settings),
                     sessions=open_database(settings) if expand_graph else None,
                     ranking=ranking_config(no_signal), reranker=make_reranker(settings))


def check_question(text: str, where: str = "QUESTION") -> str:
    """``text`` cleaned of lone surrogates; ``BadInput`` when empty or over
    ``MAX_QUESTION_CHARS`` characters (:mod:`bot.answer.question`)."""
    from ..answer.question import QuestionTooLong, check_question as _check

    if not text or not text.strip():
        raise BadInput(f"{where} is empty")
    try:
        return _check(text)
    except QuestionTooLong as exc:
        raise BadInput(f"{where}: {exc}") from None


def check_writable(path: Path | None) -> None:
    """Fail before the work, not after it, when an output file cannot be written."""
    if path is not None and not path.resolve().parent.is_dir():
        raise BadInput(f"{path}: folder {path.resolve().parent} does not exist")


def check_batch_repos(path: Path, lines: list[tuple[int, dict]], known: Collection[str],
                      default_repo: str | None = None, listed: Collection[str] | None = None) -> None:
    """Before the first search: every repo a batch line names (its ``repo``, else
    ``default_repo`` from ``--repo``) is indexed (``known``). Raises :class:`EmptyIndex`
    (as ``--repo`` with an unknown name does) naming the first bad line and the others,
    and listing ``listed`` (default ``known``: e.g. the repositories without their refs)."""
    wanted = [(n, obj.get("repo") or default_repo) for n, obj in lines]
    bad = [(n, repo) for n, repo in wanted if repo and repo not in known]
    if not bad:
        return
    (n, repo), rest = bad[0], bad[1:]
    more = f"; also line{'s' if len(rest) > 1 else ''} {', '.join(str(m) for m, _r in rest[:10])}" if rest else ""
    more += ", ..." if len(rest) > 10 else ""
    shown = sorted(known if listed is None else listed)
    raise EmptyIndex(f"{path}:{n}: no indexed repo named {repo} (indexed: {', '.join(shown) or 'none'}){more}")


def read_batch_lines(path: Path, *, golden: bool = False) -> list[tuple[int, dict]]:
    """``[(line number, item)]`` of a JSONL file of ``{id, question[, repo]}`` lines (with
    ``golden``, also ``expected: [{path, line}]``), blank lines skipped; every line is
    checked before any is returned. Raises :class:`BadInput` naming the bad line."""
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
        if not isinstance(obj["id"], (str, int)) or isinstance(obj["id"], bool):
            raise BadInput(f"{path}:{n}: \"id\" must be a string or a whole number")
        if obj.get("repo") is not None and not isinstance(obj["repo"], str):
            raise BadInput(f"{path}:{n}: \"repo\" must be a string (an indexed repo name)")
        obj["question"] = check_question(obj["question"], f"{path}:{n}: the question")
        if golden:
            exp = obj.get("expected", [])
            if not isinstance(exp, list) or not all(
                    isinstance(e, dict) and isinstance(e.get("path"), str) and isinstance(e.get("line"), int)
                    for e in exp):
                raise BadInput(f"{path}:{n}: \"expected\" must be a list of {{\"path\": str, \"line\": int}}")
        items.append((n, obj))
    return items
