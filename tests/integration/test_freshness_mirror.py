"""The per-repo mirror follows a change of the repo's configured ``url``."""
from __future__ import annotations

import logging

from helpers.gitrepo import commit_files, git, head_sha, make_git_repo


def test_mirror_follows_a_changed_url(tmp_path, caplog):
    from indexer.sources.mirror import Mirror

    first = make_git_repo(tmp_path, {"a.py": "def first():\n    return 1\n"}, name="first")
    second = make_git_repo(tmp_path, {"b.py": "def second():\n    return 2\n"}, name="second")
    commit_files(second, {"c.py": "def more():\n    return 3\n"}, "second upstream, 2nd commit")
    home = tmp_path / "home"

    m = Mirror(home, "api", str(first))
    m.fetch()
    old_head = m.head("main")
    assert old_head == head_sha(first)
    assert git(m.path, "config", "--get", "remote.origin.url").strip() == str(first)
    m.fetch()  # same url: nothing to change
    commit_files(first, {"a.py": "def first():\n    return 11\n"}, "first moves on")

    caplog.set_level(logging.WARNING, logger="indexer.freshness.mirror")
    moved = Mirror(home, "api", str(second))  # the user edited CODERAG_REPOS
    assert moved.path == m.path
    moved.fetch()
    assert moved.head("main") == head_sha(second) != head_sha(first)
    assert git(moved.path, "config", "--get", "remote.origin.url").strip() == str(second)
    assert moved.remote_url() == str(second)
    assert moved.has_commit(head_sha(second))
    # The branch is the second repo's history, and the old indexed commit is not in it
    # (so the incremental re-index falls back to a full one).
    assert not moved.is_ancestor(old_head, moved.head("main"))
    files = set(git(moved.path, "ls-tree", "-r", "--name-only", "main").split())
    assert files == {"b.py", "c.py"}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(first) in w and str(second) in w for w in warnings), warnings
    caplog.clear()
    moved.fetch()  # now in sync: no second warning
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_incremental_plan_is_full_after_url_change(tmp_path):
    from indexer.sources.repository import plan
    from indexer.sources.mirror import Mirror

    first = make_git_repo(tmp_path, {"a.py": "x = 1\n"}, name="first")
    second = make_git_repo(tmp_path, {"b.py": "y = 2\n"}, name="second")
    m = Mirror(tmp_path / "home", "api", str(first))
    m.fetch()
    base = m.head("main")
    m = Mirror(tmp_path / "home", "api", str(second))
    m.fetch()
    mode, reason = plan(m, base, m.head("main"))
    assert mode == "full" and reason


def test_url_change_warning_masks_credentials():
    from indexer.sources.mirror import redact_url

    assert redact_url("https://x-access-token:ghp_secret@github.com/o/r.git") == "https://x-access-token:***@github.com/o/r.git"
    assert "ghp_secret" not in redact_url("https://ghp_secret@github.com/o/r.git")
    for plain in ("/srv/git/r.git", "git@github.com:o/r.git", "https://github.com/o/r.git", "ssh://git@host/r.git"):
        assert redact_url(plain) == plain
