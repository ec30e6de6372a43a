"""uvicorn in a background thread: the separate ``/metrics`` listener of ``coderag serve``
(:func:`bot.health.start_metrics_listener`), and the tests' and benchmarks' way to serve an
ASGI app on a free loopback port."""
from __future__ import annotations

import threading


class BackgroundServer:
    """uvicorn in a daemon thread on ``host:port`` (port 0 = a free port): the metrics
    listener, tests and the load benchmark. ``url`` is known once :meth:`start` returns.
    :meth:`start` raises ``RuntimeError`` when uvicorn cannot bind the port."""

    def __init__(self, asgi, host: str = "127.0.0.1", port: int = 0):
        import uvicorn

        self.server = uvicorn.Server(uvicorn.Config(asgi, host=host, port=port, log_level="warning",
                                                    lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="coderag-uvicorn")

    def start(self, timeout: float = 10.0) -> "BackgroundServer":
        """Start serving and wait until the socket is bound."""
        import time

        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)
        return self

    @property
    def url(self) -> str:
        """``http://host:port`` of the bound socket."""
        host, port = self.server.servers[0].sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        """Ask uvicorn to exit and join its thread."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
