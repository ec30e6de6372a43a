"""A tiny deterministic embedder for tests that need a *different model* (not a database mock)."""
from __future__ import annotations

import hashlib


class HashEmbedder:
    """384-dimensional unit vectors derived from sha256 of the text."""

    model_name = "fake-hash-model"
    dimensions = 384

    def _vec(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        raw = [((digest[i % 32] + i) % 17) - 8.0 for i in range(self.dimensions)]
        norm = sum(x * x for x in raw) ** 0.5 or 1.0
        return [x / norm for x in raw]

    def embed_documents(self, texts):
        return [self._vec(t) for t in texts]

    def embed_query(self, text):
        return self._vec(text)
