"""One interface for every embedder, local or remote."""
from __future__ import annotations

from typing import Protocol, Sequence


class Embedder(Protocol):
    """Turns texts into vectors.

    ``model_name`` is recorded in the index; vectors of two models are never mixed.
    ``embed_documents`` and ``embed_query`` return lists of ``dimensions`` floats per text,
    L2-normalised where the model allows (cosine distance is used in Weaviate).
    """

    model_name: str
    dimensions: int

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...
