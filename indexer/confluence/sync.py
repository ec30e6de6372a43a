"""Index one Confluence space (or CQL page set) incrementally.

A run lists pages by CQL with their version only (``expand=version``):

* incremental: ``<base cql> and lastmodified >= "<cursor - overlap>"`` where ``cursor``
  is the start of the last successful run (UTC, minute precision; the overlap window,
  ``CODERAG_CONFLUENCE_OVERLAP_MINUTES``, default 1440, also absorbs the server's
  time-zone offset and clock skew);
* reconcile (first run, and every ``CODERAG_CONFLUENCE_RECONCILE_HOURS``): the whole
  page set; pages stored but no longer listed (deleted, trashed, archived, moved out,
  access removed) are removed from the index.

Pages whose version equals the stored one are skipped without being fetched. Changed
pages are fetched in storage format, converted (:mod:`.convert`), split at H2/H3
(:func:`indexer.chunking.docs.chunk_markdown`) and written as chunks with
``repo`` = the source name (space key), ``path`` = ``confluence/<space>/<id>-<slug>.md``,
``kind`` = ``section``, ``commit`` = ``v<version>``; page id, title, URL, version, last
modified and space are kept in ``confluence_pages``. Vectors of unchanged sections are
reused by content hash. The source record gets ``kind`` ``confluence`` and ``indexed_at``
(the answer layer's TTL check).
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import delete, select

from common.settings import ConfluenceSettings
from common.sources import SpaceConfig

from ..models import GRAPH_NONE, KIND_CONFLUENCE, REPLACE_PATHS, Document, SourceBatch
from ..store import sync_state as state
from ..pipeline import IndexingPipeline
from ..results import PipelineResult, RunCounters
from ..store.repo_lock import repo_index_lock
from ..store.sql_models import ConfluencePage
from ..store.weaviate_store import utcnow
from . import client as api
from .convert import page_markdown

log = logging.getLogger(__name__)


@dataclass
class SpaceSyncResult(RunCounters):
    """What one run did (``coderag sync confluence --json``, keys :attr:`KEYS`): pages
    ``listed``, ``indexed`` (fetched and written), ``unchanged`` (same version, skipped),
    ``deleted``; chunk and embedding counts are those of ``run``, the
    :class:`~indexer.pipeline.PipelineResult`."""

    source: str
    mode: str
    listed: int = 0
    indexed: int = 0
    unchanged: int = 0
    deleted: int = 0
    errors: list = field(default_factory=list)
    seconds: float = 0.0
    run: PipelineResult | None = None

    KEYS = ("source", "mode", "listed", "indexed", "unchanged", "deleted", "chunks_written", "embedded", "errors",
            "seconds")


def slug(title: str) -> str:
    """``"Deploy the API (prod)"`` -> ``"deploy-the-api-prod"`` (at most 60 characters)."""
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] or "page"


def page_path(space: str, page_id: str, title: str) -> str:
    return f"confluence/{space}/{page_id}-{slug(title)}.md"


def base_cql(space: SpaceConfig) -> str:
    return f"({space.cql}) and type = page" if space.cql else f'space = "{space.key}" and type = page'


def sync_space(ctx: IndexingPipeline, cfg: ConfluenceSettings, space: SpaceConfig, *,
               reconcile: bool | None = None, client=None) -> SpaceSyncResult:
    """One run for ``space`` (see the module docstring); ``reconcile=None`` decides by the
    stored state. Raises ``requests.HTTPError`` (after retries), ``WeaviateUnavailable``,
    ``RepoIndexBusy`` (another run of the space held the index lock too long)."""
    # crash safety: one run per source at a time
    with repo_index_lock(ctx.sessions, space.key, ttl_s=ctx.settings.index_lock_ttl):
        return _sync_space_locked(ctx, cfg, space, reconcile, client)


def _sync_space_locked(ctx: IndexingPipeline, cfg: ConfluenceSettings, space: SpaceConfig,
                       reconcile: bool | None, client) -> SpaceSyncResult:
    t0 = time.perf_counter()
    started = utcnow()
    client = client or api.connect(cfg)
    row = state.get_state(ctx.sessions, space.key)
    if reconcile is None:
        last = state.aware(row.last_reconciled_at) if row else None
        reconcile = (row is None or row.cursor is None or last is None
                     or started - last > timedelta(hours=cfg.reconcile_hours))
    cql = base_cql(space)
    if not reconcile:
        since = state.aware(row.cursor) - timedelta(minutes=cfg.overlap_minutes)
        cql += f' and lastmodified >= "{since:%Y-%m-%d %H:%M}"'
    ctx.store.sources.check_model(ctx.embedder.model_name)  # before listing: fail fast
    res = SpaceSyncResult(space.key, "reconcile" if reconcile else "incremental")
    with ctx.sessions() as s:
        stored = {p.page_id: p for p in s.execute(select(ConfluencePage).where(
            ConfluencePage.source == space.key)).scalars()}
    seen: set[str] = set()
    changed: list[tuple[dict, str]] = []  # (page, path)
    for item in api.search_pages(client, cql):
        if item.get("type", "page") != "page" or item.get("status", "current") != "current":
            continue
        pid = str(item["id"])
        seen.add(pid)
        res.listed += 1
        version = int((item.get("version") or {}).get("number") or 0)
        old = stored.get(pid)
        if old is not None and version and old.version == version:
            res.unchanged += 1
            continue
        page = api.get_page(client, pid)
        if page.get("status", "current") != "current":
            seen.discard(pid)
            continue
        changed.append((page, page_path(space.key, pid, page.get("title") or pid)))
    documents, rows, replaced = [], [], set()
    for page, path in changed:
        pid = str(page["id"])
        storage = ((page.get("body") or {}).get("storage") or {}).get("value") or ""
        version = int((page.get("version") or {}).get("number") or 0)
        title, url = page.get("title") or pid, api.page_web_url(client, page)
        markdown = page_markdown(title, storage)
        documents.append(Document(path=path, text=markdown, version=f"v{version}", title=title, url=url))
        replaced.add(path)
        if pid in stored and stored[pid].path != path:
            replaced.add(stored[pid].path)  # renamed page: its old path goes
        rows.append(dict(source=space.key, page_id=pid, title=title, path=path, url=url, version=version,
                         last_modified=str(((page.get("history") or {}).get("lastUpdated") or {}).get("when")
                                           or (page.get("version") or {}).get("when") or ""),
                         space=str((page.get("space") or {}).get("key") or space.key), indexed_at=started))
        res.indexed += 1
    gone = [p for pid, p in stored.items() if reconcile and pid not in seen]
    replaced |= {p.path for p in gone}
    res.deleted = len(gone)

    def save_pages() -> None:
        """The page table follows the committed run (after the source record, before the
        cursor): a crash before it makes the next run fetch these pages again."""
        with ctx.sessions.begin() as s:
            ids = [r["page_id"] for r in rows] + [p.page_id for p in gone]
            if ids:
                s.execute(delete(ConfluencePage).where(ConfluencePage.source == space.key,
                                                       ConfluencePage.page_id.in_(ids)))
            for r in rows:
                s.add(ConfluencePage(**r))

    batch = SourceBatch(name=space.key, kind=KIND_CONFLUENCE, root=cfg.url, commit="", documents=documents,
                        replace=REPLACE_PATHS, graph=GRAPH_NONE, replaced_paths=replaced,
                        deleted_paths=replaced - {d.path for d in documents},
                        document_count=len(documents), state_mode=res.mode, state_cursor=started,
                        state_reconciled=reconcile, after_commit=save_pages)
    res.run = ctx.run(batch)  # runbook drift re-checks the changed pages: a pipeline subscriber
    res.seconds = time.perf_counter() - t0
    log.info("confluence %s: %s run, %d listed, %d indexed, %d unchanged, %d deleted in %.1fs", space.key,
             res.mode, res.listed, res.indexed, res.unchanged, res.deleted, res.seconds)
    return res


def run_and_record_space(ctx: IndexingPipeline, cfg: ConfluenceSettings, space: SpaceConfig, **kwargs):
    """:func:`sync_space`, recording a failure as the space's last error (then re-raising)."""
    try:
        return sync_space(ctx, cfg, space, **kwargs)
    except Exception as exc:
        log.exception("confluence %s: sync failed", space.key)
        state.record_error(ctx.sessions, space.key, "confluence", f"{type(exc).__name__}: {str(exc)[:500]}")
        raise
