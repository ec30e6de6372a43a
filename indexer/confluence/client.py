"""Confluence REST (v1 content API) through atlassian-python-api.

Endpoints used (Cloud under ``https://SITE.atlassian.net/wiki``, Data Center under its
context path): ``GET rest/api/content/search?cql=&start=&limit=&expand=`` (pages of
results; the next page is ``_links.next``, relative to ``_links.base``) and
``GET rest/api/content/{id}?expand=body.storage,version,space,history.lastUpdated``.

Rate limits: the client retries 429 and 503 responses with urllib3's ``Retry``
(``backoff_and_retry``), honouring ``Retry-After`` (capped at 60 s), up to
``max_retries`` times; then ``requests.HTTPError`` propagates.
"""
from __future__ import annotations

from typing import Iterator
from urllib.parse import urljoin

from atlassian import Confluence

from common.settings import ConfluenceSettings

PAGE_EXPAND = "body.storage,version,space,history.lastUpdated"
SEARCH_LIMIT = 50


def connect(cfg: ConfluenceSettings) -> Confluence:
    """A client for ``cfg`` (Cloud basic auth with email + API token, or DC bearer PAT)."""
    common = dict(backoff_and_retry=True, retry_status_codes=[429, 503], max_backoff_retries=cfg.max_retries,
                  max_backoff_seconds=60, backoff_factor=0.5, backoff_jitter=0.0, retry_with_header=True,
                  timeout=60)
    if cfg.cloud:
        return Confluence(cfg.url, username=cfg.email, password=cfg.api_token, cloud=True, **common)
    return Confluence(cfg.url, token=cfg.pat, cloud=False, **common)


def search_pages(client: Confluence, cql: str, *, limit: int = SEARCH_LIMIT,
                 expand: str = "version,space") -> Iterator[dict]:
    """Every content item matching ``cql``, following ``_links.next`` page after page."""
    resp = client.get("rest/api/content/search", params={"cql": cql, "start": 0, "limit": limit,
                                                          "expand": expand})
    while True:
        yield from (resp or {}).get("results", [])
        links = (resp or {}).get("_links") or {}
        nxt = links.get("next")
        if not nxt:
            return
        base = links.get("base") or client.url
        url = nxt if nxt.startswith("http") else base.rstrip("/") + "/" + nxt.lstrip("/")
        resp = client.get(url, absolute=True)


def get_page(client: Confluence, page_id: str) -> dict:
    """One page with its storage body, version, space and last update."""
    return client.get(f"rest/api/content/{page_id}", params={"expand": PAGE_EXPAND})


def page_web_url(client: Confluence, page: dict) -> str:
    """Browser URL of ``page`` (``_links.base`` + ``_links.webui``), or ``""``."""
    links = page.get("_links") or {}
    webui = links.get("webui") or ""
    if not webui:
        return ""
    return urljoin((links.get("base") or client.url).rstrip("/") + "/", webui.lstrip("/"))
