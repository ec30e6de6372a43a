"""A local fake Confluence REST server (http.server) with the endpoints coderag calls:

* ``GET /rest/api/content/search?cql=&start=&limit=&expand=``: pages of results with
  ``_links.next`` (relative, ``start``/``limit``) and ``_links.base``; the CQL is read for
  ``space = "KEY"`` and ``lastmodified >= "YYYY-MM-DD HH:MM"`` only;
* ``GET /rest/api/content/{id}?expand=...``: the page with ``body.storage``, ``version``,
  ``space``, ``history.lastUpdated`` and ``_links``.

``pages`` is editable by tests; ``fail_429`` makes the next N requests answer 429 with
``Retry-After: retry_after``; ``requests`` logs every path; ``auth`` the last
Authorization header. Deleted/archived pages: remove them or set ``status``.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from urllib.parse import urlencode

from .fake_http import FakeHTTPServer, Reply, Request


class FakeConfluence(FakeHTTPServer):
    def __init__(self, prefix: str = ""):
        super().__init__()
        self.prefix = prefix  # "/wiki" for a Cloud-like URL
        self.pages: dict[str, dict] = {}
        self.fail_429 = 0
        self.retry_after = 1
        self.requests: list[str] = []
        self.auth: str | None = None

    @property
    def url(self) -> str:
        return f"{self.root}{self.prefix}"

    def recorded(self) -> list:
        return list(self.requests)

    def put_page(self, pid: str, space: str, title: str, storage: str, *, version: int = 1,
                 modified: datetime | None = None, status: str = "current") -> None:
        when = (modified or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        self.pages[pid] = {"id": pid, "type": "page", "status": status, "title": title, "space": space,
                           "storage": storage, "version": version, "when": when}

    # -- request handling ------------------------------------------------------------------
    def respond(self, request: Request) -> Reply:
        with self.lock:
            self.requests.append(request.target)
            self.auth = request.headers.get("Authorization")
            if self.fail_429 > 0:
                self.fail_429 -= 1
                return Reply(429, {"message": "rate limited"}, {"Retry-After": str(self.retry_after)})
        path = request.path[len(self.prefix):] if request.path.startswith(self.prefix) else request.path
        if path == "/rest/api/content/search":
            return self._search(request.query)
        m = re.match(r"^/rest/api/content/(\w+)$", path)
        if m:
            page = self.pages.get(m.group(1))
            if page is None:
                return Reply(404, {"message": "No content found"})
            return Reply(200, self._content(page, full=True))
        return Reply(404, {"message": f"unknown endpoint {path}"})

    def _content(self, p: dict, full: bool = False) -> dict:
        out = {"id": p["id"], "type": p["type"], "status": p["status"], "title": p["title"],
               "version": {"number": p["version"], "when": p["when"]},
               "space": {"key": p["space"]},
               "_links": {"webui": f"/spaces/{p['space']}/pages/{p['id']}", "base": self.url}}
        if full:
            out["body"] = {"storage": {"value": p["storage"], "representation": "storage"}}
            out["history"] = {"lastUpdated": {"when": p["when"]}}
        return out

    def _search(self, q: dict) -> Reply:
        cql = q.get("cql", "")
        space = re.search(r'space\s*=\s*"?(\w+)"?', cql)
        since = re.search(r'lastmodified\s*>=\s*"([^"]+)"', cql)
        hits = [p for _, p in sorted(self.pages.items()) if p["status"] == "current"
                and (not space or p["space"] == space.group(1))]
        if since:
            t = datetime.strptime(since.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=timezone.utc)
            hits = [p for p in hits
                    if datetime.strptime(p["when"], "%Y-%m-%dT%H:%M:%S.000Z").replace(tzinfo=timezone.utc) >= t]
        start, limit = int(q.get("start", 0)), int(q.get("limit", 25))
        page = hits[start:start + limit]
        links = {"base": self.url, "context": self.prefix}
        if start + limit < len(hits):
            nq = dict(q, start=str(start + limit), limit=str(limit))
            links["next"] = "/rest/api/content/search?" + urlencode(nq)
        return Reply(200, {"results": [self._content(p) for p in page], "start": start, "limit": limit,
                           "size": len(page), "_links": links})
