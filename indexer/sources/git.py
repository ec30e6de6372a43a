"""Read a Git repository at its HEAD commit: the files, their bytes and the commit SHA.

Files are read from the commit itself (``git cat-file --batch``), not the work tree, so
that every ``path:line@sha`` citation is exact even when the checkout has local edits.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from common.errors import NotAGitRepository

from ..models import Document, Skips


@dataclass(frozen=True)
class RepoFile:
    """One blob at the indexed commit: repo-relative POSIX path, size in bytes, blob id."""

    path: str
    size_bytes: int
    blob: str


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def repo_root(path: str | Path) -> Path:
    """Top folder of the Git work tree that holds ``path``.

    Raises :class:`NotAGitRepository` if ``path`` is missing, not in a work tree, or the
    repository has no commit yet.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise NotAGitRepository(f"{path}: no such directory")
    try:
        top = _git(p if p.is_dir() else p.parent, "rev-parse", "--show-toplevel").strip()
    except (subprocess.CalledProcessError, FileNotFoundError):
        raise NotAGitRepository(f"{path} is not a Git repository (run `git init` and commit first)") from None
    try:
        _git(Path(top), "rev-parse", "--verify", "HEAD^{commit}")
    except subprocess.CalledProcessError:
        raise NotAGitRepository(f"{top} has no commit yet; commit the files to index them") from None
    return Path(top)


def head_commit(repo: Path) -> str:
    """Full 40-hex SHA of HEAD."""
    return _git(repo, "rev-parse", "HEAD").strip()


def remote_url(repo: Path) -> str | None:
    """``origin``'s URL, if any (used to build citation links)."""
    try:
        return _git(repo, "remote", "get-url", "origin").strip() or None
    except subprocess.CalledProcessError:
        return None


def dirty_paths(repo: Path) -> list[str]:
    """Tracked files with uncommitted changes (those changes are not indexed)."""
    out = _git(repo, "status", "--porcelain", "--untracked-files=no")
    return [line[3:] for line in out.splitlines() if line.strip()]


def list_files(repo: Path, commit: str, symlinks: list[str] | None = None) -> list[RepoFile]:
    """Every blob in ``commit``'s tree (submodules and symlinks excluded), sorted by path.

    ``symlinks``: when given, the paths of the symlinks left out are appended to it (so the
    caller can count them as skipped)."""
    out = subprocess.run(["git", "-C", str(repo), "ls-tree", "-r", "-l", "-z", commit],
                         check=True, capture_output=True).stdout.decode("utf-8", "replace")
    files = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        mode, typ, blob, size = meta.split()
        if typ == "blob" and mode == "120000" and symlinks is not None:
            symlinks.append(path)
        if typ != "blob" or mode == "120000":
            continue
        files.append(RepoFile(path=path, size_bytes=int(size), blob=blob))
    return sorted(files, key=lambda f: f.path)


def read_blobs(repo: Path, files: list[RepoFile]) -> Iterator[tuple[RepoFile, bytes]]:
    """Yield ``(file, bytes)`` for each file, through one ``git cat-file --batch`` process."""
    proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    try:
        for f in files:
            proc.stdin.write(f.blob.encode() + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                yield f, b""
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # trailing newline
            yield f, data
    finally:
        proc.stdin.close()
        proc.stdout.close()
        proc.wait()


def commit_documents(repo: Path, commit: str, files: list[RepoFile], max_file_bytes: int,
                     skips: Skips) -> tuple[Iterator[Document], int]:
    """The Git source: ``files`` of ``commit`` as :class:`~indexer.models.Document` objects
    (``version`` = the commit SHA), read lazily through ``git cat-file``.

    Binary, vendored, generated, lock, too large (over ``max_file_bytes`` bytes) and
    undecodable files are counted in ``skips`` by reason (:mod:`.filters`) instead.
    Returns ``(documents, number of files that will be read)``; the second sizes a
    progress bar (decode failures are found while reading).
    """
    from . import filters

    to_read = []
    for f in files:
        reason = filters.skip_reason_for_path(f.path, f.size_bytes, max_file_bytes)
        if reason:
            skips.add(reason, f.path)
        else:
            to_read.append(f)

    def documents() -> Iterator[Document]:
        for f, data in read_blobs(repo, to_read):
            text, reason = filters.decode_source(data)
            if reason:
                skips.add(reason, f.path)
            else:
                yield Document(path=f.path, text=text, version=commit)

    return documents(), len(to_read)
