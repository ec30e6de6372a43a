"""Stopping child processes that tests start (servers, workers, CLIs)."""

from __future__ import annotations

import signal
import subprocess


def stop_process(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> int | None:
    """Ask ``proc`` to stop with ``sig``, wait up to ``timeout`` seconds, then SIGKILL it.

    A process that has already exited is left alone. Returns its exit code (negative for a
    signal, as :class:`subprocess.Popen` reports it), or ``None`` if it could not be reaped
    within ``timeout`` seconds after SIGKILL either.
    """
    if proc.poll() is not None:
        return proc.returncode
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
