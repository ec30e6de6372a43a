"""How a chunk becomes Weaviate properties and embedder inputs (indexer.documents)."""
import pytest

from indexer.chunking.models import Chunk
from indexer.documents import (EMBED_WINDOW_LINES, chunk_content, embedding_text, embedding_texts,
                               file_role, path_terms, symbol_terms)


@pytest.mark.parametrize("path, role", [
    ("src/app.py", "code"),
    ("tests/test_app.py", "test"),
    ("pkg/server_test.go", "test"),
    ("web/a.spec.ts", "test"),
    ("src/conftest.py", "test"),
    ("lib/FooTest.java", "test"),
    ("CHANGELOG.md", "changelog"),
    ("HISTORY.rst", "changelog"),
    ("docs/guide.md", "docs"),
    ("README.md", "docs"),
    ("doc/conf.py", "docs"),
    ("examples/demo.py", "example"),
    ("src/testing_utils.py", "code"),
    ("extras/man/http.1", "docs"),
    ("share/man/man3/printf.3p", "docs"),
    ("src/v1.go", "code"),
    ("spec/rack/request_spec.rb", "test"),
    ("lib/rack/request_spec_helper.rb", "code"),
    ("test/plug/conn_test.exs", "test"),
    ("Sources/SessionTests.swift", "test"),
    ("core/src/test/scala/cats/MonadSuite.scala", "test"),
    ("src/ClientSpec.kt", "test"),
    ("src/Spec.kt", "code"),
    ("src/RetryPolicyTest.php", "test"),
    ("absl/strings/str_cat_test.cc", "test"),
    ("lua/telescope/finders_spec.lua", "test"),
    ("test/run.bats", "test"),
    ("src/Testing.cs", "code"),
])
def test_file_role(path, role):
    assert file_role(path) == role


def test_path_and_symbol_terms():
    assert path_terms("src/requests/sessions.py") == "src requests sessions py"
    assert path_terms("web/UserCache.tsx") == "web user cache tsx"
    assert symbol_terms("SessionRedirectMixin.rebuild_auth") == "session redirect mixin rebuild auth"
    assert symbol_terms("Runbook > Restarting the worker") == "runbook restarting the worker"
    assert symbol_terms("") == ""


def _chunk(lines: int, context: str = "") -> Chunk:
    text = "\n".join(f"    line_{i} = {i}" for i in range(lines))
    return Chunk(path="pkg/mod.py", language="python", kind="method", symbol="Cart.addItem",
                 start_line=1, end_line=lines, text=text, context=context)


def test_content_and_embedding_text_put_context_and_symbol_first():
    c = _chunk(2, context="class Cart:")
    assert chunk_content(c) == "class Cart:\n    line_0 = 0\n    line_1 = 1"
    assert embedding_text(c) == "cart add item - pkg/mod.py\nclass Cart:\n    line_0 = 0\n    line_1 = 1"


def test_short_chunk_has_one_embedding_text():
    c = _chunk(int(EMBED_WINDOW_LINES * 1.5))
    assert embedding_texts(c) == [embedding_text(c)]


def test_long_chunk_gets_windows_after_the_head():
    c = _chunk(80)
    texts = embedding_texts(c)
    # First text is the whole chunk (the model truncates it); then windows from line 25.
    assert len(texts) == 1 + len(range(EMBED_WINDOW_LINES, 80, EMBED_WINDOW_LINES))
    assert texts[0] == embedding_text(c)
    assert texts[1].splitlines()[0] == "cart add item - pkg/mod.py"
    assert texts[1].splitlines()[1] == f"    line_{EMBED_WINDOW_LINES} = {EMBED_WINDOW_LINES}"
    assert len(texts[1].splitlines()) == 1 + EMBED_WINDOW_LINES
    assert texts[-1].splitlines()[-1] == "    line_79 = 79"
