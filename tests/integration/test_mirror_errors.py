"""A failed git command on a mirror says why: git spreads the reason over several lines
of stderr ("fatal: '…' does not appear to be a git repository", "fatal: Could not read
from remote repository.", "Please make sure you have the correct access rights", "and
the repository exists.") and the error kept only the last one. The meaningful lines are
kept, on one line, credentials masked, bounded in length."""
from __future__ import annotations

import pytest

from helpers.gitrepo import make_git_repo
from indexer.sources.mirror import GIT_ERROR_CHARS, Mirror, MirrorError, git_error_text


def test_a_failed_fetch_keeps_what_git_said_over_several_lines(tmp_path):
    up = make_git_repo(tmp_path / "up", {"a.py": "def a():\n    return 1\n"}, name="svc")
    Mirror(tmp_path / "home", "svc", str(up)).fetch()  # the mirror exists: the next run fetches
    gone = tmp_path / "moved-away"
    with pytest.raises(MirrorError) as err:
        Mirror(tmp_path / "home", "svc", str(gone)).fetch()
    text = str(err.value)
    assert text.startswith("git fetch --prune failed in svc.git: "), text
    assert "does not appear to be a git repository" in text and "Could not read from remote repository" in text
    assert "correct access rights" in text and "\n" not in text, text


def test_a_failed_clone_keeps_what_git_said(tmp_path):
    with pytest.raises(MirrorError) as err:
        Mirror(tmp_path / "home", "svc", str(tmp_path / "nowhere")).fetch()
    text = str(err.value)
    assert "does not exist" in text or "does not appear to be a git repository" in text, text


def test_git_error_text_drops_progress_masks_credentials_and_is_bounded():
    stderr = ("Cloning into bare repository 'x.git'...\n"
              "remote: Enumerating objects: 5, done.\n"
              "Receiving objects:  50% (2/4)\rReceiving objects: 100% (4/4), done.\n"
              "hint: use --force\n"
              "remote: HTTP Basic: Access denied for https://bob:hunter2secret@git.example/x.git\n"
              "fatal: Authentication failed for 'https://bob:hunter2secret@git.example/x.git/'\n")
    text = git_error_text(stderr)
    assert text == ("remote: HTTP Basic: Access denied for https://bob:***@git.example/x.git | "
                    "fatal: Authentication failed for 'https://bob:***@git.example/x.git/'"), text
    long = "\n".join(f"error: object {i:04d} is corrupt" for i in range(500)) + "\nfatal: the last word"
    text = git_error_text(long)
    assert len(text) <= GIT_ERROR_CHARS and text.startswith("… | ") and text.endswith("fatal: the last word"), text
    assert len(git_error_text("x" * 5000)) == GIT_ERROR_CHARS
    assert git_error_text("") == ""
