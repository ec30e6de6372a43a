"""Build small real Git repositories for tests."""
from __future__ import annotations

import subprocess
from pathlib import Path

GIT_ID = ["-c", "user.name=coderag-tests", "-c", "user.email=tests@example.invalid",
          "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main"]


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (identity set by -c flags) and return stdout."""
    return subprocess.run(["git", *GIT_ID, "-C", str(repo), *args], check=True,
                          capture_output=True, text=True).stdout


def write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


def commit_files(repo: Path, files: dict[str, str | bytes], message: str = "update",
                 delete: tuple[str, ...] = ()) -> str:
    """Write ``files`` (and remove ``delete``) in ``repo``, commit, return the new HEAD sha."""
    write_files(repo, files)
    for rel in delete:
        git(repo, "rm", "-q", rel)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def make_git_repo(tmp_path: Path, files: dict[str, str | bytes], name: str = "repo") -> Path:
    """A fresh repository ``tmp_path/name`` with ``files`` committed on ``main``."""
    repo = Path(tmp_path) / name
    repo.mkdir(parents=True, exist_ok=False)
    git(repo, "init", "-q")
    commit_files(repo, files, "initial")
    return repo


def head_sha(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()
