"""A bare mirror clone per repo under ``CODERAG_HOME/mirrors/<name>.git``.

``git clone --mirror`` once, then ``git fetch --prune`` (the mirror refspec
``+refs/*:refs/*`` follows force-pushes and deletions). When the configured ``url``
differs from the mirror's ``remote.origin.url`` (the repo's ``url`` was changed in
``CODERAG_REPOS``), the remote is re-pointed with ``git remote set-url`` and a warning
names both URLs (any password in them masked) before the fetch; the fetch then replaces
every ref with the new remote's (objects of the old one stay until git gc, so the
incremental re-index sees that the last indexed commit is not an ancestor of the new
head and runs in full). Files are read from commits (``indexer.sources.git.list_files``/
``read_blobs`` work on bare repos), never from a work tree. Errors: :class:`MirrorError` (a failed git command, with the
meaningful lines of git's stderr, :func:`git_error_text`).
Every message built here names the URL with its password/token masked (:func:`common.redact.redact_url`),
and git's own stderr is redacted too (:func:`common.redact.redact_text`).
"""
from __future__ import annotations

import logging
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from common.errors import CoderagError, ExitCode
from common.redact import redact_text, redact_url  # noqa: F401  (redact_url re-exported)

log = logging.getLogger(__name__)

ZERO_SHA = "0" * 40
_SHA = re.compile(r"^[0-9a-f]{40}$")


#: Characters of git's stderr a :class:`MirrorError` keeps (:func:`git_error_text`).
GIT_ERROR_CHARS = 800
# Lines of git's stderr that say nothing about a failure: progress, "Cloning into", hints.
_GIT_NOISE = re.compile(r"^(?:remote: )?(?:(?:Counting|Compressing|Receiving|Resolving|Enumerating|Writing|Unpacking)"
                        r" objects|Resolving deltas|Total \d)|^Cloning into |^hint: ")


def git_error_text(stderr: str, limit: int = GIT_ERROR_CHARS) -> str:
    """The meaningful part of a failed git command's ``stderr``, for an error message on
    one line: every line but progress, ``Cloning into`` and ``hint:`` lines and blank ones,
    joined with `` | ``, URL credentials and known secrets masked
    (:func:`common.redact.redact_text`), at most ``limit`` characters: when longer, its
    last lines (git says what failed last), the first ones dropped for ``…``."""
    lines = [ln.strip() for ln in re.split(r"[\r\n]+", redact_text(stderr or ""))]
    lines = [ln for ln in lines if ln and not _GIT_NOISE.match(ln)]
    kept: list[str] = []
    size = 0
    for ln in reversed(lines):
        if size + len(ln) + 3 > limit:
            if not kept:  # one line longer than the limit: its end
                kept.append("…" + ln[-(limit - 1):])
            else:
                kept.append("…")
            break
        kept.append(ln)
        size += len(ln) + 3
    return " | ".join(reversed(kept))


class MirrorError(CoderagError):
    """A git command on a mirror failed (clone, fetch, unknown branch). ``permanent``: no
    retry can help (the branch is missing); a failed clone or fetch may be transient."""

    exit_code = ExitCode.MIRROR_FAILED

    def __init__(self, message: str, *, permanent: bool = False):
        super().__init__(message)
        self.permanent = permanent


@dataclass(frozen=True)
class Change:
    """One line of ``git diff --name-status -M``: ``status`` is A, M, D, T or R/C (score
    dropped); ``path`` the new path (the old one for D); ``old_path`` set for R and C."""

    status: str
    path: str
    old_path: str = ""


class Mirror:
    """The mirror of one repository. ``url``: clone URL or local path."""

    def __init__(self, home: Path, name: str, url: str):
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name)
        self.path = Path(home) / "mirrors" / f"{safe}.git"
        self.url = url

    def _git(self, *args: str, timeout: float = 600) -> str:
        try:
            return subprocess.run(["git", "-C", str(self.path), *args], check=True, capture_output=True,
                                  text=True, timeout=timeout).stdout
        except subprocess.CalledProcessError as exc:
            said = git_error_text(exc.stderr)
            raise MirrorError(f"git {' '.join(args[:2])} failed in {self.path.name}: "
                              f"{said or f'exit status {exc.returncode}'}") from None
        except subprocess.TimeoutExpired:
            # TimeoutExpired's text holds the whole command line (a URL with its password)
            raise MirrorError(f"git {' '.join(args[:2])} timed out after {timeout:g}s in {self.path.name}") from None

    def remote_url(self) -> str:
        """The mirror's ``remote.origin.url`` (``""`` when unset). Raises
        :class:`MirrorError` when the mirror is not a git repository."""
        try:
            return self._git("config", "--get", "remote.origin.url", timeout=60).strip()
        except MirrorError:
            if subprocess.run(["git", "-C", str(self.path), "rev-parse", "--git-dir"],
                              capture_output=True).returncode != 0:
                raise MirrorError(f"{self.path} is not a git repository") from None
            return ""  # git config exits 1 when the key is unset

    def sync_remote_url(self) -> bool:
        """Point ``origin`` at the configured ``url`` if the existing mirror fetches from
        another one (the repo's ``url`` was changed); logs a warning naming both URLs.
        Returns True when the URL was changed. Raises :class:`MirrorError` on git failure."""
        current = self.remote_url()
        if current == self.url:
            return False
        log.warning("mirror %s: remote URL changed from %s to %s (configured url); updating origin, "
                    "refs will be replaced by the new remote's", self.path.name, redact_url(current) or "(none)",
                    redact_url(self.url))
        if current:
            self._git("remote", "set-url", "origin", self.url, timeout=60)
        else:
            self._git("config", "remote.origin.url", self.url, timeout=60)
        return True

    def fetch(self) -> None:
        """Clone the mirror if missing, else fetch every ref (pruning deleted ones), after
        re-pointing ``origin`` if the configured ``url`` changed (:meth:`sync_remote_url`).
        Raises :class:`MirrorError` when clone or fetch fails."""
        if not (self.path / "HEAD").exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                subprocess.run(["git", "clone", "--mirror", "--quiet", self.url, str(self.path)], check=True,
                               capture_output=True, text=True, timeout=3600)
            except subprocess.CalledProcessError as exc:
                raise MirrorError(f"git clone --mirror {redact_url(self.url)} failed: "
                                  f"{git_error_text(exc.stderr) or f'exit status {exc.returncode}'}") from None
            except subprocess.TimeoutExpired:
                raise MirrorError(f"git clone --mirror {redact_url(self.url)} timed out after 3600s") from None
            return
        self.sync_remote_url()
        self._git("fetch", "--prune", "--quiet", "origin")

    def head(self, branch: str) -> str:
        """40-hex SHA of ``branch``. Raises :class:`MirrorError` if the branch is missing."""
        try:
            return self._git("rev-parse", "--verify", f"refs/heads/{branch}^{{commit}}").strip()
        except MirrorError:
            raise MirrorError(f"branch {branch!r} not found in {redact_url(self.url)}", permanent=True) from None

    def point_head(self, branch: str) -> None:
        """Make the mirror's ``HEAD`` the indexed branch, so the answer layer's staleness
        check (``git rev-parse HEAD`` in the source's ``root``) compares the right branch."""
        self._git("symbolic-ref", "HEAD", f"refs/heads/{branch}")

    def has_commit(self, sha: str) -> bool:
        """True when ``sha`` is a full SHA whose commit object exists in the mirror."""
        if not sha or not _SHA.match(sha) or sha == ZERO_SHA:
            return False
        return subprocess.run(["git", "-C", str(self.path), "cat-file", "-e", f"{sha}^{{commit}}"],
                              capture_output=True).returncode == 0

    def is_ancestor(self, base: str, head: str) -> bool:
        """True when ``base`` is reachable from ``head`` (false after a force-push)."""
        return subprocess.run(["git", "-C", str(self.path), "merge-base", "--is-ancestor", base, head],
                              capture_output=True).returncode == 0

    def diff(self, base: str, head: str) -> list[Change]:
        """``git diff --name-status -M base head`` as :class:`Change` rows."""
        out = subprocess.run(["git", "-C", str(self.path), "diff", "--name-status", "-M", "-z",
                              base, head],
                             check=True, capture_output=True).stdout.decode("utf-8", "replace")
        parts = out.split("\0")
        changes: list[Change] = []
        i = 0
        while i < len(parts) and parts[i]:
            status = parts[i][0]
            if status in "RC":
                changes.append(Change(status, parts[i + 2], parts[i + 1]))
                i += 3
            else:
                changes.append(Change(status, parts[i + 1]))
                i += 2
        return changes
