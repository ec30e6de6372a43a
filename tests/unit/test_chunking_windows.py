"""Tests for the window fallback and language detection."""
import pytest

from indexer.chunking import chunk_file, detect_language
from indexer.chunking.windows import (
    SMALL_FILE_LINES, WINDOW_LINES, WINDOW_OVERLAP, split_lines, window_chunks, window_ranges,
)


def numbered(n: int) -> str:
    return "\n".join(f"line {i}" for i in range(1, n + 1)) + "\n"


def test_design_card_constants():
    assert (WINDOW_LINES, WINDOW_OVERLAP, SMALL_FILE_LINES) == (100, 20, 50)


@pytest.mark.parametrize("n, expected", [
    (230, [(1, 100), (81, 180), (161, 230)]),
    (180, [(1, 100), (81, 180)]),  # 161-180 would sit inside 81-180
    (181, [(1, 100), (81, 180), (161, 181)]),
    (101, [(1, 100), (81, 101)]),
    (100, [(1, 100)]),
    (1, [(1, 1)]),
    (0, []),
])
def test_window_ranges(n, expected):
    assert window_ranges(1, n) == expected


def test_window_ranges_offset_start():
    assert window_ranges(11, 250) == [(11, 110), (91, 190), (171, 250)]


def test_window_ranges_rejects_bad_sizes():
    with pytest.raises(ValueError):
        window_ranges(1, 10, size=20, overlap=20)


def test_230_line_file_windows():
    text = numbered(230)
    chunks = window_chunks("data.txt", "text", text)
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("window", 1, 100), ("window", 81, 180), ("window", 161, 230)]
    assert chunks[1].text.split("\n")[0] == "line 81"
    assert chunks[2].text.split("\n")[-1] == "line 230"
    assert all(c.symbol == "" for c in chunks)


def test_small_file_is_one_chunk():
    chunks = window_chunks("a.yaml", "yaml", numbered(49))
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [("file", 1, 49)]
    assert chunks[0].text == numbered(49).rstrip("\n")


def test_fifty_lines_is_a_window():
    chunks = window_chunks("a.yaml", "yaml", numbered(50))
    assert [(c.kind, c.start_line, c.end_line) for c in chunks] == [("window", 1, 50)]


@pytest.mark.parametrize("text", ["", "\n", "   \n\n\t\n"])
def test_blank_files_give_no_chunks(text):
    assert window_chunks("a.txt", "text", text) == []
    assert chunk_file("a.txt", text) == []


def test_split_lines():
    assert split_lines("") == []
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\r\n\n") == ["a\r", ""]


def test_chunk_file_uses_windows_for_other_languages():
    chunks = chunk_file("conf/settings.toml", numbered(120))
    assert [(c.language, c.kind, c.start_line, c.end_line) for c in chunks] == [
        ("toml", "window", 1, 100), ("toml", "window", 81, 120)]
    unknown = chunk_file("blob.xyz", "hello\n")
    assert [(c.language, c.kind, c.text) for c in unknown] == [("text", "file", "hello")]


@pytest.mark.parametrize("path, language", [
    ("a/b.py", "python"), ("x.go", "go"), ("x.ts", "typescript"), ("x.tsx", "tsx"),
    ("x.js", "javascript"), ("x.mjs", "javascript"), ("x.cjs", "javascript"),
    ("x.jsx", "javascript"), ("X.java", "java"), ("README.md", "markdown"),
    ("doc.markdown", "markdown"), ("index.rst", "rst"), ("c.yaml", "yaml"),
    ("c.yml", "yaml"), ("p.toml", "toml"), ("p.json", "json"), ("setup.cfg", "ini"),
    ("run.sh", "bash"), ("lib.rs", "rust"), ("m.c", "c"), ("UPPER.PY", "python"),
    ("Dockerfile", "dockerfile"), ("noext", None), ("weird.zzz", None),
])
def test_detect_language(path, language):
    assert detect_language(path) == language
