"""A fake Bot Framework connector service (the ``serviceUrl`` of test activities):
``http.server`` in a thread recording every POST to ``/v3/conversations/{id}/activities``
and ``/v3/conversations/{id}/activities/{activityId}``."""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from urllib.parse import unquote

from .fake_http import FakeHTTPServer, Reply, Request


@dataclass
class Call:
    """One recorded request: ``conversation`` (URL-decoded), ``reply_to`` (the
    ``{activityId}`` path segment, None for send-to-conversation), the JSON ``body``."""

    path: str
    conversation: str
    reply_to: str | None
    body: dict
    headers: dict


class FakeConnector(FakeHTTPServer):
    def __init__(self):
        super().__init__()
        self.calls: list[Call] = []
        self._ids = itertools.count(1000)

    @property
    def url(self) -> str:
        return f"{self.root}/"

    def recorded(self) -> list:
        return [c.body for c in self.calls]

    def respond(self, request: Request) -> Reply:
        parts = request.path.strip("/").split("/")
        if (request.method != "POST" or len(parts) < 4 or parts[:2] != ["v3", "conversations"]
                or parts[3] != "activities"):
            return Reply(404)
        call = Call(path=request.path, conversation=unquote(parts[2]),
                    reply_to=unquote(parts[4]) if len(parts) > 4 else None,
                    body=request.json(), headers=dict(request.headers))
        with self.lock:
            self.calls.append(call)
        return Reply(200, {"id": f"reply-{next(self._ids)}"})

    def messages(self) -> list[Call]:
        """Recorded message activities (typing indicators left out)."""
        with self.lock:
            return [c for c in self.calls if c.body.get("type") == "message"]

    def wait_for(self, predicate, timeout: float = 15.0):
        """Poll until ``predicate()`` is truthy; returns its value (AssertionError on timeout)."""
        return super().wait_for(predicate, timeout)
