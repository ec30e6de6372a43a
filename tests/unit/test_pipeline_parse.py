"""parse_repository (list, filter, read, chunk) without Weaviate or an embedder."""
import logging

import pytest

from helpers import sample_repo
from helpers.gitrepo import head_sha, make_git_repo
from common.errors import NotAGitRepository
from common.settings import Settings
from indexer.sources.repository import parse_repository


@pytest.fixture
def settings(monkeypatch, tmp_path):
    monkeypatch.setenv("CODERAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODERAG_MAX_FILE_BYTES", "100000")
    return Settings.from_env()


def test_parse_sample_repo(tmp_path, settings, caplog):
    repo = make_git_repo(tmp_path, sample_repo.FILES, name="shop")
    with caplog.at_level(logging.WARNING):
        parsed = parse_repository(repo, None, settings)
    s = parsed.summary
    assert (s.repo, s.commit, parsed.commit) == ("shop", head_sha(repo), head_sha(repo))
    assert (s.files_seen, s.files_indexed, s.chunks) == (11, 5, len(parsed.chunks))
    assert dict(s.skipped) == {"binary": 2, "vendored": 1, "too_large": 1, "generated": 2}
    assert s.skipped_examples == {"binary": "assets/logo.png", "vendored": "vendor/lib/vendored.go",
                                  "too_large": "big/huge.py", "generated": "package-lock.json"}
    assert {c.path for c in parsed.chunks} == {"pricing/tax.py", "server/health.go", "web/user.ts",
                                               "docs/runbook.md", "broken/bad_syntax.py"}
    # The broken file does not stop the run: it is chunked from what tree-sitter recovered.
    assert any(c.path == "broken/bad_syntax.py" for c in parsed.chunks)
    assert "broken/bad_syntax.py: tree-sitter found syntax errors" in caplog.text


def test_default_repo_name_and_explicit_name(tmp_path, settings):
    repo = make_git_repo(tmp_path, {"a.py": "def a():\n    return 1\n"}, name="my-project")
    assert parse_repository(repo, None, settings).summary.repo == "my-project"
    assert parse_repository(repo / ".", "renamed", settings).summary.repo == "renamed"


def test_max_file_bytes_setting_is_honoured(tmp_path, monkeypatch, settings):
    repo = make_git_repo(tmp_path, {"a.py": "x = 1\n" * 100})  # 600 bytes
    monkeypatch.setenv("CODERAG_MAX_FILE_BYTES", "599")
    assert dict(parse_repository(repo, None, Settings.from_env()).summary.skipped) == {"too_large": 1}
    monkeypatch.setenv("CODERAG_MAX_FILE_BYTES", "600")
    assert dict(parse_repository(repo, None, Settings.from_env()).summary.skipped) == {}


def test_not_a_repo(tmp_path, settings):
    with pytest.raises(NotAGitRepository):
        parse_repository(tmp_path, None, settings)


def test_progress_callback_counts_read_files(tmp_path, settings):
    repo = make_git_repo(tmp_path, sample_repo.FILES, name="shop")
    calls = []

    def progress(description, total):
        calls.append((description, total))
        return lambda n=1: calls.append(n)

    parse_repository(repo, None, settings, progress)
    # 11 files, 4 skipped by path (png, vendored, too large, lock file): 7 read.
    assert calls[0] == ("Chunking files", 7)
    assert sum(c for c in calls[1:]) == 7


def test_parse_warnings_are_counted(tmp_path, settings):
    repo = make_git_repo(tmp_path, {"bad.py": sample_repo.BROKEN, "ok.py": "def ok():\n    return 1\n"})
    assert parse_repository(repo, None, settings).summary.parse_warnings == 1
