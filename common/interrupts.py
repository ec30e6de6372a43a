"""Ctrl-C around native code: hold it until the native step returns.

Python raises ``KeyboardInterrupt`` at the next bytecode of the main thread. When that
bytecode runs inside a callback of a C++ extension (torch's import and its modules,
ONNX Runtime), the exception can cross C++ code that cannot carry it, and the process
aborts (``terminate called after throwing an instance of 'pybind11::error_already_set'``,
exit -6) instead of printing one line. :func:`held_interrupt` makes such steps atomic
for Ctrl-C: the first Ctrl-C is noted (one line on stderr) and raised as
``KeyboardInterrupt`` as soon as the step returns; a second one ends the process at once
with the usual ``coderag: interrupted`` line and exit code 130. Steps wrapped are short
(one embedding batch, loading a model), so the wait is at most a few seconds.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Iterator

INTERRUPTED_EXIT = 130  # 128 + SIGINT, what a shell reports for Ctrl-C


@contextmanager
def held_interrupt(step: str) -> Iterator[None]:
    """Run the body with Ctrl-C held until it returns (see the module docstring).

    ``step`` names the work in the line printed on the first Ctrl-C ("stopping after
    ``step``"). Only acts in the main thread while Python's default SIGINT handler is
    installed (a CLI command); elsewhere (a server with its own handler, a worker thread,
    a nested hold) the body runs unchanged. Raises ``KeyboardInterrupt`` after the body
    when a Ctrl-C arrived during it; the body's own exception, if any, wins.
    """
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    pending: list[int] = []

    def note(signum, _frame) -> None:
        if pending:  # asked twice: stop now (index versions are crash-safe; a repository
            # lock left behind lapses after its heartbeat TTL)
            os.write(2, b"coderag: interrupted\n")
            os._exit(INTERRUPTED_EXIT)
        pending.append(signum)
        os.write(2, f"coderag: stopping after {step} (Ctrl-C again to stop at once)\n".encode())

    signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if pending:
        raise KeyboardInterrupt


def keep_interrupts_from_cleanup_callbacks() -> None:
    """Install a ``sys.unraisablehook`` that re-sends a Ctrl-C swallowed by a cleanup callback.

    A ``KeyboardInterrupt`` raised while a weakref callback or ``__del__`` runs (the garbage
    collector can run one at any bytecode) cannot propagate: Python prints "Exception
    ignored in ..." with a traceback and goes on, so the command finishes as if no Ctrl-C
    came. The hook sends SIGINT to this process again, so the interrupt reaches the
    command's own code at the next bytecode; other unraisable errors go to the hook that
    was installed before.
    """
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            resend = threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT))
            resend.daemon = True
            resend.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
