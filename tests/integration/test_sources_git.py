"""Reading a Git repository at HEAD: repo_root errors, list_files, read_blobs."""
import subprocess

import pytest

from helpers.gitrepo import commit_files, git, head_sha, make_git_repo
from common.errors import ExitCode, NotAGitRepository
from indexer.sources.git import dirty_paths, head_commit, list_files, read_blobs, repo_root


def test_repo_root_of_missing_path(tmp_path):
    with pytest.raises(NotAGitRepository, match="no such directory"):
        repo_root(tmp_path / "does-not-exist")


def test_repo_root_of_plain_folder(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(NotAGitRepository, match="is not a Git repository"):
        repo_root(tmp_path / "plain")


def test_repo_root_of_repo_without_commit(tmp_path):
    repo = tmp_path / "empty"
    repo.mkdir()
    git(repo, "init", "-q")
    with pytest.raises(NotAGitRepository, match="has no commit yet"):
        repo_root(repo)


def test_not_a_git_repository_exit_code():
    assert NotAGitRepository.exit_code == ExitCode.NOT_A_GIT_REPOSITORY == 9


def test_repo_root_from_subfolder_and_file(tmp_path):
    repo = make_git_repo(tmp_path, {"pkg/mod.py": "x = 1\n"})
    assert repo_root(repo / "pkg") == repo.resolve()
    assert repo_root(repo / "pkg" / "mod.py") == repo.resolve()


def test_head_commit_is_full_sha(tmp_path):
    repo = make_git_repo(tmp_path, {"a.txt": "a\n"})
    sha = head_commit(repo)
    assert len(sha) == 40 and sha == head_sha(repo)


def test_list_files_sorted_with_sizes_excluding_symlinks(tmp_path):
    repo = make_git_repo(tmp_path, {"b.py": "b = 2\n", "a/z.go": "package a\n", "a/y.md": "# y\n"})
    (repo / "link.py").symlink_to("b.py")
    sha = commit_files(repo, {}, "add symlink")
    files = list_files(repo, sha)
    assert [(f.path, f.size_bytes) for f in files] == [("a/y.md", 4), ("a/z.go", 10), ("b.py", 6)]
    assert all(len(f.blob) == 40 for f in files)


def test_paths_with_spaces_and_unicode(tmp_path):
    repo = make_git_repo(tmp_path, {"dir with space/naïve file.py": "x = 1\n"})
    files = list_files(repo, head_sha(repo))
    assert [f.path for f in files] == ["dir with space/naïve file.py"]
    assert [data for _f, data in read_blobs(repo, files)] == [b"x = 1\n"]


def test_committed_content_is_read_not_the_work_tree(tmp_path):
    repo = make_git_repo(tmp_path, {"app.py": "def committed():\n    return 1\n", "keep.py": "k = 1\n"})
    sha = head_sha(repo)
    (repo / "app.py").write_text("def uncommitted_edit():\n    return 2\n")
    (repo / "untracked.py").write_text("u = 1\n")
    files = list_files(repo, sha)
    assert [f.path for f in files] == ["app.py", "keep.py"]
    blobs = {f.path: data for f, data in read_blobs(repo, files)}
    assert blobs == {"app.py": b"def committed():\n    return 1\n", "keep.py": b"k = 1\n"}
    assert dirty_paths(repo) == ["app.py"]


def test_read_blobs_binary_and_empty_files_roundtrip(tmp_path):
    payload = bytes(range(256)) * 40 + b"\n\n"
    repo = make_git_repo(tmp_path, {"blob.bin": payload, "empty.txt": "", "z.txt": "last\n"})
    files = list_files(repo, head_sha(repo))
    got = list(read_blobs(repo, files))
    assert [(f.path, data) for f, data in got] == [("blob.bin", payload), ("empty.txt", b""), ("z.txt", b"last\n")]


def test_list_files_at_an_older_commit(tmp_path):
    repo = make_git_repo(tmp_path, {"a.py": "a = 1\n"})
    first = head_sha(repo)
    commit_files(repo, {"b.py": "b = 1\n"}, "second")
    assert [f.path for f in list_files(repo, first)] == ["a.py"]
    assert [f.path for f in list_files(repo, head_sha(repo))] == ["a.py", "b.py"]


def test_list_files_of_bad_commit_raises(tmp_path):
    repo = make_git_repo(tmp_path, {"a.py": "a = 1\n"})
    with pytest.raises(subprocess.CalledProcessError):
        list_files(repo, "0" * 40)
