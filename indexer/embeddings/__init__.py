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
    :class:`~indexer.embeddings.onnx.OnnxUnavailable` instead. When only the int8
    quantization fails (``settings.embedding_precision="int8"``), the fp32 export is used,
    with a one-line warning, under either setting.
    """
    if settings.voyage_api_key:
        from .voyage import VoyageEmbedder

        return VoyageEmbedder(settings.voyage_api_key, settings.voyage_model, base_url=settings.voyage_base_url)
    if settings.embedding_runtime != "sentence-transformers":
        from .onnx import OnnxEmbedder, OnnxQuantizationFailed, OnnxUnavailable

        # int8 that cannot be made or loaded falls back to the fp32 export it came from
        for precision in dict.fromkeys((settings.embedding_precision, "fp32")):
            try:
                return OnnxEmbedder(settings.home, precision=precision)
            except OnnxQuantizationFailed as exc:
                log.warning("%s; using the fp32 ONNX model (set CODERAG_EMBEDDING_PRECISION=fp32 to "
                            "silence this)", exc)
            except OnnxUnavailable as exc:
                if settings.embedding_runtime == "onnx":
                    raise
                log.warning("ONNX embedding runtime unavailable, using sentence-transformers: %s", exc)
                break
    from .local import LocalEmbedder

    return LocalEmbedder()


__all__ = ["Embedder", "make_embedder"]
