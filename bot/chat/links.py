"""Citation links: ``CODERAG_REPO_URLS`` templates → web URLs pinned to a commit.

``CODERAG_REPO_URLS`` is a JSON object ``{"repo": "url template"}`` (parsed and checked
by :class:`common.settings.ChatSettings`: ``repo_urls``); placeholders ``{commit}``,
``{path}`` (URL-quoted, ``/`` kept), ``{start}``, ``{end}`` (1-based lines) and
``{repo}``. Used by every chat front end.
"""
from __future__ import annotations

from urllib.parse import quote

# Examples of CODERAG_REPO_URLS templates. Placeholders: {commit}, {path}, {start}, {end}.
REPO_URL_EXAMPLES = {
    "github": "https://github.com/ORG/REPO/blob/{commit}/{path}#L{start}-L{end}",
    "gitlab": "https://gitlab.com/GROUP/REPO/-/blob/{commit}/{path}#L{start}-{end}",
    "bitbucket": "https://bitbucket.org/WORKSPACE/REPO/src/{commit}/{path}#lines-{start}:{end}",
}


def source_url(templates: dict[str, str], repo: str, commit: str, path: str, start: int, end: int) -> str | None:
    """The web URL of ``path`` lines ``start``-``end`` at ``commit``, from the repo's
    template (a named ref ``repo@ref`` without one of its own: its repository's), or
    None when no usable template is configured (``|`` is percent-encoded)."""
    tpl = templates.get(repo)
    if not tpl and "@" in repo:  # a named ref (shop@v2): its repository's template, at the ref's commit
        repo = repo.split("@", 1)[0]
        tpl = templates.get(repo)
    if not tpl:
        return None
    try:
        url = tpl.format_map({"commit": commit, "path": quote(path, safe="/"), "start": start,
                              "end": end, "repo": repo})
    except (KeyError, ValueError, IndexError):
        return None
    return url.replace("|", "%7C")
