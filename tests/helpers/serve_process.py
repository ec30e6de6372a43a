"""``coderag serve`` as a real process for end-to-end tests: started on a free loopback
port, waited for until ``/healthz`` answers, stopped on exit."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import httpx

from helpers.processes import stop_process

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of the call."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_process(env: dict[str, str], *, port: int | None = None, stdout: IO | int = subprocess.PIPE,
                  stderr: IO | int = subprocess.STDOUT, timeout: float = 120,
                  output=None) -> Iterator[tuple[subprocess.Popen, str]]:
    """Run ``python -m bot.cli serve --port PORT`` with ``env`` and yield ``(process, base_url)``
    once ``/healthz`` answers 200.

    ``output`` (a callable returning text) supplies what the assertion prints when the
    process dies or does not come up within ``timeout`` seconds; by default its piped stdout.
    The process gets SIGTERM on exit, SIGKILL if it has not stopped 30 s later.
    """
    port = port or free_port()
    proc = subprocess.Popen([sys.executable, "-m", "bot.cli", "serve", "--port", str(port)], cwd=ROOT, env=env,
                            stdout=stdout, stderr=stderr, text=True)
    base = f"http://127.0.0.1:{port}"

    def said() -> str:
        if output is not None:
            return output()
        return proc.stdout.read() if proc.stdout and proc.poll() is not None else "(still running)"

    try:
        deadline = time.monotonic() + timeout
        while True:
            assert proc.poll() is None, said()
            try:
                if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, f"coderag serve did not come up: {said()}"
            time.sleep(0.2)
        yield proc, base
    finally:
        stop_process(proc)
