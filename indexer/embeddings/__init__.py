"""Pick the embedder: Voyage when ``VOYAGE_API_KEY`` is set, else the local MiniLM."""
from __future__ import annotations

from common.settings import Settings
from .base import Embedder


def make_embedder(settings: Settings) -> Embedder:
    """The configured :class:`Embedder` (loading the local model takes a few seconds)."""
    if settings.voyage_api_key:
        from .voyage import VoyageEmbedder

        return VoyageEmbedder(settings.voyage_api_key, settings.voyage_model, base_url=settings.voyage_base_url)
    from .local import LocalEmbedder

    return LocalEmbedder()


__all__ = ["Embedder", "make_embedder"]
