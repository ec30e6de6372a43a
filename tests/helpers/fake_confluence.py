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

import json
import re
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlparse


class FakeConfluence:
    def __init__(self, prefix: str = ""):
        self.prefix = prefix  # "/wiki" for a Cloud-like URL
        self.pages: dict[str, dict] = {}
        self.fail_429 = 0
        self.retry_after = 1
        self.requests: list[str] = []
        self.auth: str | None = None
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                fake._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}{self.prefix}"

    def start(self) -> "FakeConfluence":
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def put_page(self, pid: str, space: str, title: str, storage: str, *, version: int = 1,
                 modified: datetime | None = None, status: str = "current") -> None:
        when = (modified or datetime.now(timezone.utc)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        self.pages[pid] = {"id": pid, "type": "page", "status": status, "title": title, "space": space,
                           "storage": storage, "version": version, "when": when}

    # -- request handling ------------------------------------------------------------------
    def _send(self, h, code: int, obj=None, headers: dict | None = None) -> None:
        body = json.dumps(obj if obj is not None else {}).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h) -> None:
        with self.lock:
            self.requests.append(h.path)
            self.auth = h.headers.get("Authorization")
            if self.fail_429 > 0:
                self.fail_429 -= 1
                return self._send(h, 429, {"message": "rate limited"}, {"Retry-After": str(self.retry_after)})
        u = urlparse(h.path)
        path = u.path[len(self.prefix):] if u.path.startswith(self.prefix) else u.path
        q = {k: v[0] for k, v in parse_qs(u.query).items()}
        if path == "/rest/api/content/search":
            return self._search(h, q)
        m = re.match(r"^/rest/api/content/(\w+)$", path)
        if m:
            page = self.pages.get(m.group(1))
            if page is None:
                return self._send(h, 404, {"message": "No content found"})
            return self._send(h, 200, self._content(page, full=True))
        self._send(h, 404, {"message": f"unknown endpoint {path}"})

    def _content(self, p: dict, full: bool = False) -> dict:
        out = {"id": p["id"], "type": p["type"], "status": p["status"], "title": p["title"],
               "version": {"number": p["version"], "when": p["when"]},
               "space": {"key": p["space"]},
               "_links": {"webui": f"/spaces/{p['space']}/pages/{p['id']}", "base": self.url}}
        if full:
            out["body"] = {"storage": {"value": p["storage"], "representation": "storage"}}
            out["history"] = {"lastUpdated": {"when": p["when"]}}
        return out

    def _search(self, h, q: dict) -> None:
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
        self._send(h, 200, {"results": [self._content(p) for p in page], "start": start, "limit": limit,
                            "size": len(page), "_links": links})
