"""voyage-code-3 through the official ``voyageai`` client, used whenever VOYAGE_API_KEY is set."""
from __future__ import annotations

from typing import Iterator, Sequence

from common.errors import EmbeddingUnavailable

# Voyage's documented request limits for voyage-code-3: at most 1,000 texts and
# 120,000 tokens per request. We stay well under both; tokens are estimated at
# 3 characters each (code tokenises densely), which over-counts, so batches stay legal.
MAX_TEXTS_PER_BATCH = 128
MAX_TOKENS_PER_BATCH = 100_000
CHARS_PER_TOKEN_ESTIMATE = 3
# voyage-code-3's default output dimension.
VOYAGE_CODE_3_DIMENSIONS = 1024


def batches(texts: Sequence[str], max_texts: int = MAX_TEXTS_PER_BATCH,
            max_tokens: int = MAX_TOKENS_PER_BATCH) -> Iterator[list[str]]:
    """Split ``texts`` into request-sized lists, keeping order."""
    batch: list[str] = []
    tokens = 0
    for t in texts:
        cost = len(t) // CHARS_PER_TOKEN_ESTIMATE + 1
        if batch and (len(batch) >= max_texts or tokens + cost > max_tokens):
            yield batch
            batch, tokens = [], 0
        batch.append(t)
        tokens += cost
    if batch:
        yield batch


class VoyageEmbedder:
    """Remote embedder. ``input_type`` is ``"document"`` for chunks and ``"query"`` for questions.

    Retries on 429 and transient errors are the voyageai client's own (``max_retries``).
    ``VOYAGE_BASE_URL`` points the client elsewhere (tests, gateways).
    """

    def __init__(self, api_key: str, model: str = "voyage-code-3", max_retries: int = 5,
                 base_url: str | None = None):
        """``base_url``: ``VOYAGE_BASE_URL`` of the caller's settings
        (:func:`indexer.embeddings.make_embedder` passes it; ``None``: the client's own)."""
        import voyageai

        kwargs = {"api_key": api_key, "max_retries": max_retries}
        if base_url:
            kwargs["base_url"] = base_url
        self._client = voyageai.Client(**kwargs)
        self.model_name = model
        self.dimensions = VOYAGE_CODE_3_DIMENSIONS

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        """Raises :class:`EmbeddingUnavailable` when Voyage refuses or cannot be reached
        (after the client's own retries)."""
        import voyageai.error

        out: list[list[float]] = []
        for batch in batches(texts):
            try:
                result = self._client.embed(batch, model=self.model_name, input_type=input_type,
                                            truncation=True)
            except voyageai.error.VoyageError as exc:
                first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
                raise EmbeddingUnavailable(f"Voyage embedding failed ({type(exc).__name__}): {first}") from None
            out.extend(result.embeddings)
        if out:
            self.dimensions = len(out[0])
        return out

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> list[float]:
        return self._embed([text], "query")[0]
