"""Source records read over Weaviate's REST API, without the Python client.

``coderag status`` only needs the one object per source of the ``CoderagSource``
collection; loading the Weaviate client (gRPC, pydantic models) costs about half a second,
more than the rest of the command. This module reads the same objects with one HTTP GET
per page and turns them into :class:`~indexer.models.SourceRecord` exactly as
:meth:`ChunkStore.sources` does.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime

from common.errors import WeaviateUnavailable
from common.redact import redact_url
from common.settings import Settings

from ..models import SourceRecord

#: The collection of source records (one definition: :mod:`.schema` takes it from here, so
#: this module stays free of the Weaviate client).
SOURCE_COLLECTION = "CoderagSource"
PAGE = 500


def parse_weaviate_url(url: str) -> tuple[str, int, bool]:
    """``(host, port, secure)`` of ``WEAVIATE_URL``. Raises ``WeaviateUnavailable`` when it
    is not a URL with a valid host and port."""
    try:
        u = urllib.parse.urlparse(url)
        host, secure = u.hostname, u.scheme == "https"
        port = u.port or (443 if secure else 8080)
    except ValueError:
        host = None
    if not host:
        raise WeaviateUnavailable(f"WEAVIATE_URL={redact_url(url)!r} is not a URL with a valid host and port")
    return host, port, secure


def base_url(settings: Settings) -> tuple[str, str]:
    """``(HTTP base URL, how to name it in an error)`` of the Weaviate that
    :func:`indexer.store.weaviate_store.connect` would use; starts the embedded server
    when that is the one and it is not running. Raises ``WeaviateUnavailable``."""
    if settings.weaviate_url:
        host, port, secure = parse_weaviate_url(settings.weaviate_url)
        return f"{'https' if secure else 'http'}://{host}:{port}", redact_url(settings.weaviate_url)
    from .weaviate_server import EmbeddedWeaviate

    info = EmbeddedWeaviate(settings.home, settings.weaviate_binary, settings.weaviate_log_level).ensure()
    return info.url.rstrip("/"), f"embedded Weaviate at {info.url}"


def source_properties(props: dict) -> dict:
    """The stored properties as :meth:`SourceRecord.from_properties` takes them: JSON
    text fields decoded, dates parsed (REST returns RFC 3339 text).

    Validated on read: a JSON field that does not decode to its type (a damaged record)
    becomes empty and ``damaged`` says which, so the damage stays with its own source
    (readers then show only its newest generation, ``status``/``doctor``//readyz report
    it, ``doctor --repair`` rewrites it) instead of failing every command."""
    p = dict(props)
    damaged = []
    for raw_key, key, empty in (("skipped_json", "skipped", {}), ("replaced_json", "replaced", []),
                                ("differs_json", "differs", [])):
        raw = p.pop(raw_key, None)
        try:
            value = json.loads(raw) if raw else type(empty)()
        except (TypeError, ValueError):
            value = None
        if not isinstance(value, type(empty)):
            damaged.append(f"{raw_key} is not valid JSON")
            value = type(empty)()
        p[key] = value
    if damaged:
        p["damaged"] = "; ".join(damaged)
    when = p.get("indexed_at")
    if isinstance(when, str) and when:
        p["indexed_at"] = datetime.fromisoformat(when.replace("Z", "+00:00"))
    return p


def read_sources(settings: Settings, *, timeout_s: float = 10.0) -> list[SourceRecord]:
    """Every source record, sorted by name, over REST (``[]`` when the collection does
    not exist yet). Raises ``WeaviateUnavailable`` with a one-line reason."""
    base, where = base_url(settings)
    out: list[SourceRecord] = []
    after = None
    while True:
        query = {"class": SOURCE_COLLECTION, "limit": str(PAGE)}
        if after:
            query["after"] = after
        url = f"{base}/v1/objects?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(url, timeout=timeout_s) as resp:
                page = json.loads(resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code in (404, 422):  # no such class yet: nothing indexed
                return []
            raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise WeaviateUnavailable(f"cannot reach Weaviate ({where}): {reason}") from None
        objects = page.get("objects") or []
        out.extend(SourceRecord.from_properties(source_properties(o.get("properties") or {})) for o in objects)
        if len(objects) < PAGE:
            break
        after = objects[-1].get("id")
    return sorted(out, key=lambda r: r.name)
