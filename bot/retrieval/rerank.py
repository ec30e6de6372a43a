"""Voyage rerank: when ``VOYAGE_API_KEY`` is set, the ranked candidates are re-ordered by
Voyage's reranker (``voyageai.Client.rerank``) before the context cap; without a key the
local ranking (:mod:`.ranking`) stands.

Only the top :data:`RERANK_DEPTH` candidates are sent (documents are the chunk's path,
symbol and source, cut to :data:`MAX_DOCUMENT_CHARS`); the rest keep their local order
after them. When Voyage fails (after the client's own retries), the local order is kept
and the failure is logged once per call: a rerank is a refinement, never a reason for no
answer.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Sequence

from .ranking import Candidate

if TYPE_CHECKING:
    from common.settings import Settings

log = logging.getLogger(__name__)

# Voyage's current general reranker; CODERAG_VOYAGE_RERANK_MODEL overrides it.
DEFAULT_RERANK_MODEL = "rerank-2.5"
# Candidates sent per question: the context cap is 18 and recall@10 is what matters, so
# 30 leaves room for the reranker to lift a chunk from below the cap.
RERANK_DEPTH = 30
# Per document: rerank-2.5 reads up to 32k tokens per query+document; code chunks are
# capped at ~150 lines, this keeps a request small.
MAX_DOCUMENT_CHARS = 4000


def document_text(c: Candidate) -> str:
    """What the reranker reads for one candidate: ``path symbol`` then the source."""
    ch = c.chunk
    head = f"{ch.path} {ch.symbol}".strip()
    return f"{head}\n{ch.content}"[:MAX_DOCUMENT_CHARS]


class VoyageReranker:
    """``rerank(question, candidates)`` through the ``voyageai`` client
    (``VOYAGE_BASE_URL`` points it elsewhere, e.g. a test server)."""

    def __init__(self, api_key: str, model: str | None = None, *, base_url: str | None = None,
                 depth: int = RERANK_DEPTH, max_retries: int = 3):
        """``base_url``: ``VOYAGE_BASE_URL`` (``None``: the client's own); ``model``:
        ``CODERAG_VOYAGE_RERANK_MODEL`` (``None``: :data:`DEFAULT_RERANK_MODEL`)."""
        import voyageai

        kwargs = {"api_key": api_key, "max_retries": max_retries}
        if base_url:
            kwargs["base_url"] = base_url
        self._client = voyageai.Client(**kwargs)
        self.model = model or DEFAULT_RERANK_MODEL
        self.depth = depth
        self.last_tokens = 0

    def rerank(self, question: str, candidates: Sequence[Candidate]) -> list[Candidate]:
        """``candidates`` (best first) re-ordered by Voyage's relevance score for the top
        ``depth``, the rest after them unchanged. Each reranked candidate gets
        ``signals["voyage_rerank"]`` (the relevance score, 0-1). Never raises for API
        errors: the input order is returned."""
        import voyageai.error

        head, tail = list(candidates[:self.depth]), list(candidates[self.depth:])
        if len(head) < 2:
            return list(candidates)
        try:
            res = self._client.rerank(question, [document_text(c) for c in head], model=self.model,
                                      top_k=None, truncation=True)
        except (voyageai.error.VoyageError, OSError) as exc:
            log.warning("Voyage rerank failed (%s); keeping the local ranking", type(exc).__name__)
            return list(candidates)
        self.last_tokens = getattr(res, "total_tokens", 0)
        order = []
        seen = set()
        for r in sorted(res.results, key=lambda r: -r.relevance_score):
            if 0 <= r.index < len(head) and r.index not in seen:
                seen.add(r.index)
                head[r.index].signals["voyage_rerank"] = float(r.relevance_score)
                order.append(head[r.index])
        order += [c for i, c in enumerate(head) if i not in seen]  # any the API left out
        return order + tail


def make_reranker(settings: Settings) -> VoyageReranker | None:
    """A :class:`VoyageReranker` when ``settings`` (the storage group, read once at
    start-up) has a ``VOYAGE_API_KEY``, else ``None``."""
    key = (settings.voyage_api_key or "").strip()
    if not key:
        return None
    return VoyageReranker(key, settings.voyage_rerank_model, base_url=settings.voyage_base_url)
