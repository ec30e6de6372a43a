"""Pick the embedder: Voyage when ``VOYAGE_API_KEY`` is set, else the local MiniLM
(ONNX Runtime or sentence-transformers, per ``CODERAG_EMBEDDING_RUNTIME``)."""
from __future__ import annotations

import logging

from common.settings import Settings
from .base import Embedder

log = logging.getLogger(__name__)


def make_embedder(settings: Settings) -> Embedder:
    """The configured :class:`Embedder` (loading the local model takes a few seconds; the
    first ONNX use also exports the model once, ~10 s, into ``CODERAG_HOME/models``).

    ``settings.embedding_runtime``: ``auto`` falls back to sentence-transformers with a
    one-line warning when onnxruntime is missing or the export fails; ``onnx`` raises
    :class:`~indexer.embeddings.onnx.OnnxUnavailable` instead.
    """
    if settings.voyage_api_key:
        from .voyage import VoyageEmbedder

        return VoyageEmbedder(settings.voyage_api_key, settings.voyage_model, base_url=settings.voyage_base_url)
    if settings.embedding_runtime != "sentence-transformers":
        from .onnx import OnnxEmbedder, OnnxUnavailable

        try:
            return OnnxEmbedder(settings.home, precision=settings.embedding_precision)
        except OnnxUnavailable as exc:
            if settings.embedding_runtime == "onnx":
                raise
            log.warning("ONNX embedding runtime unavailable, using sentence-transformers: %s", exc)
    from .local import LocalEmbedder

    return LocalEmbedder()


__all__ = ["Embedder", "make_embedder"]
