"""indexer.streaming: overlapping parse/embed/write stages with bounded memory."""
from __future__ import annotations

import threading
import time

import pytest

from indexer.chunking.models import Chunk
from indexer.streaming import stream_chunks


def _files(n_files: int, per_file: int, seen: list | None = None):
    for f in range(n_files):
        if seen is not None:
            seen.append(f)
        yield [Chunk(path=f"pkg/m{f}.py", language="python", kind="function", symbol=f"f{i}",
                     start_line=i * 3 + 1, end_line=i * 3 + 3, text=f"def f{i}():\n    return {f * 1000 + i}\n")
               for i in range(per_file)]


def test_every_chunk_is_embedded_and_written_once_in_order():
    written: list = []
    stats = stream_chunks(_files(50, 7), embed=lambda cs: [[float(len(c.text))] for c in cs],
                          write=lambda pairs: written.extend(pairs) or len(pairs), batch=16, depth=2)
    assert stats.written == len(written) == 350 and stats.embedded == 350 and stats.reused == 0
    assert [(c.path, c.symbol) for c, _ in written] == [(f"pkg/m{f}.py", f"f{i}") for f in range(50) for i in range(7)]
    assert all(v == [float(len(c.text))] for c, v in written)
    assert stats.dimensions == 1


def test_chunks_in_flight_are_bounded_whatever_the_repository_size():
    """A slow writer must hold back the parser: at most 2 * depth + 3 batches alive."""
    batch, depth = 10, 2
    bound = (2 * depth + 3) * batch + 5  # + one file's chunks beyond a full batch
    for n_files in (20, 400):
        stats = stream_chunks(_files(n_files, 5), embed=lambda cs: [[1.0]] * len(cs),
                              write=lambda pairs: time.sleep(0.002) or len(pairs), batch=batch, depth=depth)
        assert stats.written == n_files * 5
        assert stats.max_chunks_in_flight <= bound, (n_files, stats.max_chunks_in_flight)
    assert stats.max_chunks_in_flight < n_files * 5 / 4


def test_reused_and_keyword_only_chunks_are_not_embedded():
    embedded: list = []

    def embed(cs):
        embedded.extend(cs)
        return [None if c.symbol == "f0" else [2.0] for c in cs]

    reuse = lambda cs: {c.content_hash: [9.0] for c in cs if c.symbol == "f1"}  # noqa: E731
    out: list = []
    stats = stream_chunks(_files(4, 3), embed=embed, reuse=reuse,
                          write=lambda pairs: out.extend(pairs) or len(pairs), batch=5)
    assert {c.symbol for c in embedded} == {"f0", "f2"}
    assert (stats.reused, stats.embedded, stats.written) == (4, 4, 12)
    vec = {(c.path, c.symbol): v for c, v in out}
    assert vec[("pkg/m0.py", "f0")] is None and vec[("pkg/m0.py", "f1")] == [9.0]


@pytest.mark.parametrize("stage", ["parse", "embed", "write"])
def test_a_failing_stage_stops_the_others_and_raises(stage):
    seen: list = []

    def files():
        for i, fc in enumerate(_files(10_000, 2, seen)):
            if stage == "parse" and i == 30:
                raise ValueError("parse broke")
            yield fc

    def embed(cs):
        if stage == "embed" and len(seen) > 30:
            raise ValueError("embed broke")
        return [[1.0]] * len(cs)

    def write(pairs):
        if stage == "write" and len(seen) > 30:
            raise ValueError("write broke")
        return len(pairs)

    before = threading.active_count()
    with pytest.raises(ValueError, match=f"{stage} broke"):
        stream_chunks(files(), embed=embed, write=write, batch=4, depth=2)
    assert len(seen) < 200  # stopped early, not after reading all 10,000 files
    assert threading.active_count() == before  # no stage thread left running
