"""``coderag``: every job from one command line.

The commands live in thin modules by concern: :mod:`.index_cmds` (write side, through
the indexer's public API), :mod:`.query_cmds` (search, ask, impact, eval),
:mod:`.serve_cmd` (``serve``, wired by :mod:`bot.wiring`) and :mod:`.admin_cmds`
(weaviate, db, stats, feedback); :mod:`.base` holds the Typer apps and shared checks.
:func:`main` reads every setting once and hands the :class:`~common.settings.AppSettings`
to the commands through the click context (:mod:`.context`).

Expected failures (not a Git repo, Weaviate down, empty index, bad arguments or
settings) print one line to stderr and exit with their :class:`common.errors.ExitCode`;
tracebacks are only for bugs. ``CODERAG_DEBUG=1`` adds the traceback of an expected
failure to stderr before its line; the exit code stays the failure's own.
"""
from __future__ import annotations

import os
import signal
import sys


def _interrupted_while_starting(_signum, _frame) -> None:
    """Ctrl-C before :func:`main` runs (while modules load): one line, exit 130, no traceback."""
    os.write(2, b"coderag: interrupted\n")
    os._exit(130)


if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

import logging  # noqa: E402
import traceback  # noqa: E402

import typer

from common.logs import say_interrupted
from common.notices import set_sink as set_notice_sink
from common.interrupts import keep_interrupts_from_cleanup_callbacks
from common.errors import BadInput, CoderagError, ExitCode, WeaviateUnavailable, as_coderag_error
from common.redact import install_log_redaction, redact_text
from common.settings import AppSettings, debug_requested, install, load

# Imported for their side effect (registering commands), in the order `--help` lists them.
from . import index_cmds, query_cmds, knowledge_cmds, serve_cmd, admin_cmds  # noqa: F401, I001
from .base import app
from .help_text import flags_without_a_type

flags_without_a_type()  # `--json`, not `--json <bool>`

__all__ = ["app", "main"]


def main() -> None:
    """Console-script entry point: validate every setting once (a malformed one is a
    one-line error naming the variable, exit code ``USAGE``), run the app, turning
    expected errors into one line and their exit code."""
    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # from here Ctrl-C unwinds normally
    keep_interrupts_from_cleanup_callbacks()  # and is not lost in a garbage-collector callback
    try:
        settings: AppSettings = load()
    except BadInput as exc:
        if debug_requested():  # the settings that hold CODERAG_DEBUG just failed to load
            _print_traceback()
        print(f"coderag: error: {exc}", file=sys.stderr)
        sys.exit(ExitCode.USAGE)
    logging.basicConfig(level=settings.process.log_level, format="%(levelname)s %(name)s: %(message)s")
    # Slow first-run steps (starting Weaviate, preparing the model) say so at once, on stderr.
    set_notice_sink(lambda text: print(f"coderag: {text}", file=sys.stderr, flush=True))
    install_log_redaction()  # no URL password or known secret in any log line or traceback
    install(settings)  # for the scheduler job bodies a job store calls by name
    try:
        rv = app(standalone_mode=False, obj=settings)  # commands take it from the context (.context)
    except CoderagError as exc:
        if settings.process.debug:
            _print_traceback()
        # Our own errors keep their lines (an ambiguous `impact` name lists the candidates
        # on the lines after the first); a Weaviate error may carry a gRPC dump: one line.
        text = redact_text(str(exc))
        if isinstance(exc, WeaviateUnavailable):
            text = one_line(text)
        print(f"coderag: error: {text}", file=sys.stderr)
        sys.exit(int(exc.exit_code))
    except (typer.Abort, *_click_exceptions("Abort")):
        print("coderag: aborted", file=sys.stderr)
        sys.exit(ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        say_interrupted()
        sys.exit(ExitCode.INTERRUPTED)
    except _click_exceptions("ClickException") as exc:  # usage errors (standalone_mode=False)
        exc.show()
        sys.exit(exc.exit_code)
    except Exception as exc:  # a library error that stands for an expected failure (Weaviate down)
        if _interrupted(exc):  # Ctrl-C inside a library that wrapped it (torch's import: RuntimeError)
            say_interrupted()
            sys.exit(ExitCode.INTERRUPTED)
        known = as_coderag_error(exc)
        if known is None:
            raise
        if settings.process.debug:
            _print_traceback()
        print(f"coderag: error: {one_line(redact_text(str(known)))}", file=sys.stderr)
        sys.exit(int(known.exit_code))
    if isinstance(rv, int) and rv:  # typer.Exit(code) is returned, not raised, here
        if rv == ExitCode.INTERRUPTED:  # typer turns Ctrl-C into a returned 130, silently
            say_interrupted()
        sys.exit(rv)


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was caused by a Ctrl-C: a ``KeyboardInterrupt`` in its chain of
    causes and contexts (a library that catches it and raises its own error)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _print_traceback() -> None:
    """``CODERAG_DEBUG=1``: the traceback of the exception being handled, on stderr, secrets
    masked (the caller then prints the one-line error and exits with its code)."""
    print(redact_text(traceback.format_exc()).rstrip("\n"), file=sys.stderr)


def one_line(text: str) -> str:
    """The first non-empty line of ``text`` (an error message), stripped; a multi-line
    dump (e.g. a gRPC status) is cut to it."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""


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

