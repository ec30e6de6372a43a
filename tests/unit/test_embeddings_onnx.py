"""The ONNX Runtime embedder gives the reference's vectors (sentence-transformers), is
exported once per CODERAG_HOME, and falls back to the reference when it cannot run."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from common.errors import BadInput
from common.settings import Settings
from indexer import make_embedder
from indexer.chunking import chunk_file
from indexer.documents import embedding_texts
from indexer.embeddings.local import LocalEmbedder
from indexer.embeddings.onnx import OnnxEmbedder, OnnxUnavailable, export_path

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def onnx_home(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx-home")


@pytest.fixture(scope="module")
def onnx_embedder(onnx_home):
    return OnnxEmbedder(onnx_home)


def _sample_texts() -> list[str]:
    """Real embedder inputs: chunks of this repository's own code and README, short to long
    (some beyond MiniLM's 256 word pieces, so truncation is compared too)."""
    texts: list[str] = []
    for rel in ("indexer/pipeline.py", "indexer/graph/sql_store.py", "README.md"):
        path = ROOT / rel
        for chunk in chunk_file(rel, path.read_text()):
            texts.extend(embedding_texts(chunk))
    texts = texts[:60]
    return texts + ["how are stale chunks deleted?", "x", ""]


def test_onnx_vectors_match_the_sentence_transformers_reference(onnx_embedder, local_embedder):
    texts = _sample_texts()
    assert max(len(t) for t in texts) > 2000  # some inputs are truncated at 256 word pieces
    ref = np.array(local_embedder.embed_documents(texts))
    got = np.array(onnx_embedder.embed_documents(texts))
    assert got.shape == ref.shape == (len(texts), 384)
    cos = (ref * got).sum(axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    assert cos.min() >= 0.999, f"worst cosine {cos.min():.5f} at {texts[int(cos.argmin())][:60]!r}"
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-4)
    q = "where is the call graph saved?"
    assert float(np.dot(onnx_embedder.embed_query(q), local_embedder.embed_query(q))) >= 0.999


def test_onnx_keeps_input_order_across_length_buckets(onnx_embedder):
    texts = _sample_texts()
    shuffled = texts[::-1]
    a = np.array(onnx_embedder.embed_documents(texts))
    b = np.array(onnx_embedder.embed_documents(shuffled))[::-1]
    np.testing.assert_allclose(a, b, atol=1e-5)
    assert onnx_embedder.embed_documents([]) == []


def test_export_is_made_once_and_cached_under_home(onnx_embedder, onnx_home):
    path = export_path(onnx_home)
    assert onnx_embedder.path == path and path.exists()
    assert path.is_relative_to(onnx_home / "models")
    before = path.stat().st_mtime_ns
    again = OnnxEmbedder(onnx_home)
    assert path.stat().st_mtime_ns == before
    assert again.embed_query("hello") == pytest.approx(onnx_embedder.embed_query("hello"), abs=1e-6)


def test_auto_runtime_uses_onnx_when_available(onnx_home, monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    emb = make_embedder(Settings.from_env(home=onnx_home, embedding_runtime="auto"))
    assert isinstance(emb, OnnxEmbedder) and emb.model_name == "all-MiniLM-L6-v2"


def test_auto_falls_back_to_sentence_transformers_with_one_warning(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime -> ImportError
    with caplog.at_level(logging.WARNING, logger="indexer.embeddings"):
        emb = make_embedder(Settings.from_env(home=tmp_path, embedding_runtime="auto"))
    assert isinstance(emb, LocalEmbedder)
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "\n" not in warnings[0].getMessage()
    assert "onnxruntime" in warnings[0].getMessage()
    with pytest.raises(OnnxUnavailable, match="onnxruntime is not installed"):
        make_embedder(Settings.from_env(home=tmp_path, embedding_runtime="onnx"))
    assert not (tmp_path / "models").exists()


def test_failed_export_falls_back(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    import torch

    def broken_export(*args, **kwargs):  # an exporter that cannot handle the model
        raise RuntimeError("unsupported operator aten::foo\nsecond line")

    monkeypatch.setattr(torch.onnx, "export", broken_export)
    with caplog.at_level(logging.WARNING, logger="indexer.embeddings"):
        emb = make_embedder(Settings.from_env(home=tmp_path, embedding_runtime="auto"))
    assert isinstance(emb, LocalEmbedder)
    assert "could not export the ONNX model (RuntimeError: unsupported operator aten::foo)" in caplog.text
    assert "second line" not in caplog.text
    assert not export_path(tmp_path).exists()


def test_runtime_setting_is_validated(monkeypatch):
    monkeypatch.setenv("CODERAG_EMBEDDING_RUNTIME", "tensorflow")
    with pytest.raises(BadInput, match="CODERAG_EMBEDDING_RUNTIME"):
        Settings.from_env()
    monkeypatch.setenv("CODERAG_EMBEDDING_RUNTIME", "sentence-transformers")
    assert Settings.from_env().embedding_runtime == "sentence-transformers"


def test_int8_precision_is_quantized_once_and_stays_close_to_the_reference(onnx_embedder, onnx_home,
                                                                           local_embedder, monkeypatch):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    emb = make_embedder(Settings.from_env(home=onnx_home, embedding_precision="int8"))
    # quantizing (first use) leaves the root logger as it was: no stray stderr handler
    assert root.handlers == handlers and root.level == level
    assert isinstance(emb, OnnxEmbedder) and emb.precision == "int8"
    path = export_path(onnx_home, "int8")
    assert emb.path == path and path.exists() and path != export_path(onnx_home)
    # the MatMul weights (~43 of the export's 90 MB) shrink to a quarter; the word-piece
    # embedding table (47 MB, a Gather) stays fp32
    assert path.stat().st_size < 0.75 * export_path(onnx_home).stat().st_size
    texts = _sample_texts()
    ref = np.array(local_embedder.embed_documents(texts))
    got = np.array(emb.embed_documents(texts))
    cos = (ref * got).sum(axis=1)
    # close, not identical: the measured worst case on real chunks is ~0.988. Activations are
    # quantized per batch at run time, so a vector depends a little on its batch; the two
    # degenerate inputs ("x" and the empty text, never a real chunk) vary most (0.968 seen)
    real = np.array([bool(t.strip()) and len(t) > 1 for t in texts])
    assert cos[real].min() >= 0.97 and cos[real].mean() >= 0.985, (cos[real].min(), cos[real].mean())
    assert cos[~real].min() >= 0.95, cos[~real]
    assert cos.mean() < 0.99999  # it really is another graph, not the fp32 one
    before = path.stat().st_mtime_ns
    OnnxEmbedder(onnx_home, precision="int8")
    assert path.stat().st_mtime_ns == before
    with pytest.raises(ValueError, match="precision"):
        OnnxEmbedder(onnx_home, precision="fp8")


def test_the_quantizer_filter_drops_only_its_advice():
    from indexer.embeddings import onnx

    def rec(msg, level=logging.WARNING, path="/x/onnxruntime/quantization/quantize.py"):
        return logging.LogRecord("root", level, path, 1, msg, None, None)

    assert not onnx._drop_quantizer_advice(rec("Please consider to run pre-processing before quantization."))
    assert onnx._drop_quantizer_advice(rec("disk almost full"))  # another warning of the same module
    assert onnx._drop_quantizer_advice(rec("Please consider to run pre-processing", path="/app/mine.py"))
    assert onnx._drop_quantizer_advice(rec("Please consider to run pre-processing", level=logging.ERROR))
    # the int8 file's name carries the quantization format, so a changed recipe is not reused
    assert export_path(Path("/h"), "int8").name == f"model.int8-q{onnx.QUANT_FORMAT}.onnx"


def test_precision_setting_is_validated(monkeypatch):
    monkeypatch.setenv("CODERAG_EMBEDDING_PRECISION", "fp16")
    with pytest.raises(BadInput, match="CODERAG_EMBEDDING_PRECISION"):
        Settings.from_env()


def test_quantizing_prints_nothing_and_leaves_logging_unconfigured(onnx_embedder, tmp_path):
    # outside pytest (which installs its own handlers) the quantizer's advice would be a
    # root-logger warning that also installs a stderr handler on the root logger
    import subprocess

    code = ("import logging, sys; from pathlib import Path; from indexer.embeddings.onnx import quantize_model; "
            "quantize_model(Path(sys.argv[1]), Path(sys.argv[2])); r = logging.getLogger(); "
            "print(len(r.handlers), r.level)")
    out = subprocess.run([sys.executable, "-c", code, str(onnx_embedder.path), str(tmp_path / "q.onnx")],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["0", str(logging.WARNING)]
    assert "pre-process" not in out.stderr and out.stderr.strip() == "", out.stderr[-2000:]
    assert (tmp_path / "q.onnx").stat().st_size > 1_000_000


def test_a_failed_quantization_falls_back_to_the_fp32_export(onnx_embedder, onnx_home, monkeypatch, caplog):
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    home = onnx_home / "broken-int8"
    (home / "models").mkdir(parents=True)
    fp32 = export_path(home)
    fp32.parent.mkdir(parents=True)
    fp32.symlink_to(onnx_embedder.path)
    monkeypatch.setitem(sys.modules, "onnxruntime.quantization", None)  # import -> ImportError
    for runtime in ("auto", "onnx"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="indexer.embeddings"):
            emb = make_embedder(Settings.from_env(home=home, embedding_precision="int8", embedding_runtime=runtime))
        assert isinstance(emb, OnnxEmbedder) and emb.precision == "fp32", runtime
        assert "could not quantize the ONNX model to int8 (" in caplog.text and "Error" in caplog.text
        assert "CODERAG_EMBEDDING_PRECISION=fp32" in caplog.text
    assert not export_path(home, "int8").exists()
