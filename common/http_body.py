"""Bounded reading of HTTP request bodies, shared by the webhooks (``indexer``) and
``/slack/events`` (``bot``): a body over its cap is refused (413) by its headers or as
soon as the cap is passed, never read whole; a malformed ``Content-Length`` is a 400."""
from __future__ import annotations

from starlette.requests import Request


class BodyRefused(Exception):
    """A request body that is not read: ``status`` is the HTTP answer (413 or 400)."""

    status = 400


class BodyTooLarge(BodyRefused):
    """The request body is (or declares itself) larger than the cap."""

    status = 413

    def __init__(self, limit: int, declared: int | None = None):
        self.limit = limit
        self.declared = declared
        what = f"Content-Length {declared}" if declared is not None else "body"
        super().__init__(f"{what} exceeds the limit of {limit} bytes")


class BadContentLength(BodyRefused):
    """The ``Content-Length`` header is not a non-negative integer."""

    def __init__(self, raw: str):
        self.raw = raw
        super().__init__("malformed Content-Length")


def check_content_length(request: Request, limit: int) -> None:
    """Refuse a request by its headers alone, before any of its body is read.

    ``limit``: the cap in bytes. Raises :class:`BodyTooLarge` when ``Content-Length``
    exceeds ``limit`` and :class:`BadContentLength` when it is malformed; a missing
    header (chunked body) passes, :func:`read_body_capped` then enforces the cap.
    """
    raw = request.headers.get("content-length")
    if raw is None:
        return
    try:
        declared = int(raw.strip())
    except ValueError:
        raise BadContentLength(raw) from None
    if declared < 0:
        raise BadContentLength(raw)
    if declared > limit:
        raise BodyTooLarge(limit, declared)


async def read_body_capped(request: Request, limit: int) -> bytes:
    """The request body (bytes), at most ``limit`` bytes of it.

    Checks ``Content-Length`` first (:func:`check_content_length`), then streams the body
    with ``request.stream()`` and raises :class:`BodyTooLarge` as soon as more than
    ``limit`` bytes have arrived, without reading the rest. Raises
    :class:`BadContentLength` for a malformed header; a client that disconnects mid-body
    raises Starlette's ``ClientDisconnect``.
    """
    check_content_length(request, limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(limit)
        if chunk:
            chunks.append(chunk)
    return b"".join(chunks)
