"""uvicorn in a background thread: the tests' and benchmarks' way to serve an ASGI app
(``coderag serve``'s, a webhook app, ...) on a free loopback port."""
from __future__ import annotations

from bot.background_server import BackgroundServer  # noqa: F401  (re-exported for tests)


def build_http_app(bolt_app, *, socket_mode: bool = False):
    """The ``coderag serve`` ASGI app around one Bolt app (``/slack/events`` omitted when
    ``bolt_app`` is None or in Socket Mode; health routes always)."""
    from bot.server import ServerContext, build_asgi

    return build_asgi(ServerContext(service=None, slack_app=bolt_app, socket_mode=socket_mode))
