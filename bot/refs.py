"""Named refs on the read side: which ref sources (``shop@v2.3``, kind ``git-ref``; see
:mod:`indexer.sources.refs`) a ``--ref`` option or a question names.

``--ref REF`` on ``search``, ``ask``, ``impact`` and ``who`` (and the chat and MCP
equivalents) reads every repository's ref ``REF`` instead of its default branch (with
``--repo``, that repository's). A question that names a version ("in v2.3", "on
release/4.x", "as of v1") is read at it when that names an indexed ref of a repository in
scope; the answer says which ref it read. An unknown ref is a one-line ``BadInput``
(exit 2) listing the indexed refs.

Two look-ups, one per store: :func:`resolve_ref` and :func:`ref_in_question` read the
source records (Weaviate), :func:`ref_graphs` the SQL state (``impact`` and ``who`` open
no Weaviate connection). Both name a ref source ``<repo>@<ref>``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Collection, Iterable, Sequence

from common.errors import BadInput, EmptyIndex

#: ``--ref`` at the end of a chat argument (``impact Cart.total --ref v2``).
_REF_OPTION = re.compile(r"(?:^|\s)--ref(?:\s+|=)(\S+)\s*$")
#: A version named in a question: "in v2.3", "on release/4.x", "as of v1", "for version
#: 2.3", "at tag v1.0": the preposition, an optional kind word, then the name.
_IN_QUESTION = re.compile(
    r"\b(?:in|on|at|for|from|as\s+of)\s+(?:the\s+)?(?:(version|release|tag|branch)\s+)?`?"
    r"([A-Za-z0-9][A-Za-z0-9._/+-]*[A-Za-z0-9]|[A-Za-z0-9])`?", re.IGNORECASE)


@dataclass(frozen=True)
class RefView:
    """A ref source as a reader names it: ``name`` (``shop@v2``), its ``base`` repository,
    the ``ref`` (tag or branch) and the ref's ``commit``."""

    name: str
    base: str
    ref: str
    commit: str

    def describe(self) -> str:
        """``v2 of shop (commit 1a2b3c4)``."""
        return f"{self.ref} of {self.base} (commit {self.commit[:7]})"


def ref_views(records: Iterable) -> list[RefView]:
    """The ref sources among ``records`` (:class:`~indexer.read.SourceRecord`), by name."""
    return sorted((RefView(r.name, r.base, r.ref, r.commit) for r in records if getattr(r, "base", "")),
                  key=lambda v: v.name)


def _version_key(text: str) -> list:
    """Sort key that orders ``8.1.10`` after ``8.1.9`` (digit runs compare as numbers)."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text) if p]


def listed_refs(pairs: Iterable[tuple[str, str]]) -> str:
    """The indexed refs ``(repository, ref)`` as an error lists them, in the form ``--ref``
    takes: ``indexed refs of click: 8.1.7, 8.1.8`` (one repository), ``indexed refs: api:
    v1; shop: v1, v2.3`` (several), ``indexed refs: none``."""
    by_base: dict[str, set[str]] = {}
    for base, ref in pairs:
        by_base.setdefault(base, set()).add(ref)
    if not by_base:
        return "indexed refs: none"
    parts = {b: ", ".join(sorted(refs, key=_version_key)) for b, refs in sorted(by_base.items())}
    if len(parts) == 1:
        ((base, refs),) = parts.items()
        return f"indexed refs of {base}: {refs}"
    return "indexed refs: " + "; ".join(f"{b}: {refs}" for b, refs in parts.items())


def _in_scope(view: RefView, repos: Collection[str] | None, allowed: Collection[str] | None) -> bool:
    if allowed is not None and view.base not in allowed and view.name not in allowed:
        return False
    return repos is None or view.base in repos or view.name in repos


def resolve_ref(records: Iterable, ref: str, *, repos: Collection[str] | None = None,
                allowed: Collection[str] | None = None, sessions=None) -> list[RefView]:
    """The ref sources named ``ref`` of the repositories ``repos`` (``None``: of every
    repository), within ``allowed`` (a ref is readable where its repository is; ``None``:
    all). Raises :class:`BadInput` (exit 2) when there is none, listing the indexed refs
    (those in scope); with ``sessions``, a configured ref that could not be indexed (a tag
    of a tree, a failed run) is named with the reason ``coderag status`` gives."""
    ref = (ref or "").strip()
    if not ref:
        raise BadInput("empty --ref: give a tag or branch name (--ref v2)")
    views = [v for v in ref_views(records) if _in_scope(v, None, allowed)]
    found = [v for v in views if v.ref == ref and _in_scope(v, repos, None)]
    if not found:
        of = f" of {', '.join(sorted(repos))}" if repos else ""
        listed = listed_refs((v.base, v.ref) for v in views if _in_scope(v, repos, None))
        why = _ref_problem(sessions, ref, repos, allowed)
        if why:
            raise BadInput(f"ref {ref!r}{of} is configured but not indexed: {why} ({listed})")
        raise BadInput(f"no indexed ref {ref!r}{of} ({listed}){_at_hint(ref)}")
    return found


def _ref_problem(sessions, ref: str, repos: Collection[str] | None, allowed: Collection[str] | None) -> str:
    """Why ``ref`` of a repository in scope is not indexed (its sync-state error, without
    the "not indexed:" its run put first), or ``""``."""
    if sessions is None:
        return ""
    from indexer.read import ref_problems

    try:
        problems = ref_problems(sessions)
    except Exception:  # noqa: BLE001 - an explanation only: the error stands without it
        return ""
    for name, error in sorted(problems.items()):
        base, _, name_ref = name.partition("@")
        if name_ref == ref and (repos is None or base in repos) and (allowed is None or base in allowed):
            return error.removeprefix("not indexed: ").strip()
    return ""


def _at_hint(ref: str) -> str:
    """A hint for a ``--ref`` written ``repo@ref`` whose repository is not indexed."""
    if "@" not in ref:
        return ""
    name = ref.partition("@")[2]
    return f"; --ref takes the tag or branch name alone ({f'--ref {name}' if name else 'as --ref v2, no repo@'})"


def ref_in_question(question: str, records: Iterable, *, repos: Collection[str] | None = None,
                    allowed: Collection[str] | None = None) -> tuple[list[RefView], str] | None:
    """``(ref sources, question without the phrase)`` when ``question`` names a version
    ("in v2.3", "on release/4.x", "as of v1") that is an indexed ref of a repository in
    scope (``repos``/``allowed`` as for :func:`resolve_ref`); ``None`` otherwise. A name
    matches a ref exactly, or with a ``v`` in front or without it ("version 2.3" → ``v2.3``,
    "v2.3" → ``2.3``: a leading ``v`` is insignificant), or under
    its kind word ("release 4.x" → ``release/4.x``)."""
    views = [v for v in ref_views(records) if _in_scope(v, repos, allowed)]
    if not views or not question:
        return None
    by_ref: dict[str, list[RefView]] = {}
    for v in views:
        by_ref.setdefault(v.ref, []).append(v)
    for m in _IN_QUESTION.finditer(question):
        kind, name = (m.group(1) or "").lower(), m.group(2)
        for cand in (name, f"v{name}", _unv(name), f"{kind}/{name}" if kind else "", f"{kind}-{name}" if kind else ""):
            if cand and cand in by_ref:
                return by_ref[cand], _without(question, m)
    return None


def _without(question: str, m: re.Match) -> str:
    """``question`` without the phrase ``m`` ("how is tax computed in v1?" → "how is tax
    computed?"); ``question`` itself when nothing else is left."""
    rest = (question[:m.start()] + question[m.end():]).strip()
    rest = re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s{2,}", " ", rest)).lstrip(" ,;:")
    return rest or question


def without_version(question: str, versions: Collection[str]) -> str:
    """``question`` without the phrase naming one of ``versions`` ("in v10", "as of
    release 5"; a name as :func:`unindexed_version` gives it, or a ref read with
    ``--ref``), so that its search and the terms its answer checks are about the code:
    no source mentions the name of a version ("Nothing in shop@1a2b3c4 mentions v10"
    would be said of every question naming one). Unchanged when none is named."""
    wanted = {v.lower() for v in versions if v}
    for m in _IN_QUESTION.finditer(question or ""):
        kind, name = (m.group(1) or "").lower(), m.group(2).rstrip(".")
        if _UNIT_AFTER.match(question[m.end():]):
            continue  # "in 2 seconds" is no v2
        cands = {name, _unv(name)} | ({f"{kind}/{name}", f"{kind}-{name}", f"{kind} {name}"} if kind else set()) \
            | ({f"v{name}"} if kind == "version" else set())
        if any(c.lower() in wanted for c in cands if c):
            return _without(question, m)
    return question


def _unv(name: str) -> str:
    """``v2.1.2`` → ``2.1.2`` (a leading ``v`` before a digit is insignificant); ``""`` for
    a name without one."""
    return name[1:] if len(name) > 1 and name[0] in "vV" and name[1].isdigit() else ""


def _shape(name: str) -> str:
    """``8.1.7`` → ``0.0.0``, ``v2.3`` → ``v0.0``, ``release/4.x`` and ``2.1.x`` → ``release/0.0``
    and ``0.0.0`` (an ``x`` component of a release line stands for any number)."""
    return re.sub(r"\d+", "0", re.sub(r"(?<=\.)[xX*](?=$|[.\-/])", "0", name.lower()))


def _prefix(name: str) -> str:
    """What comes before the first digit: ``v`` of ``v2.3``, ``release/`` of ``release/4.x``."""
    return re.split(r"\d", name.lower(), maxsplit=1)[0]


def unindexed_version(question: str, records: Iterable, *, repos: Collection[str] | None = None,
                      allowed: Collection[str] | None = None) -> tuple[str, list[RefView]] | None:
    """``(version, the indexed refs in scope)`` when ``question`` names a version ("in
    8.1.3", "as of v2", "on release/5.x", "in version 2.3") that no indexed ref of a
    repository in scope is, but that is written like one of them or like a version at
    all; ``None`` otherwise (a question naming an indexed ref is :func:`ref_in_question`'s,
    and a repository without indexed refs gets no note).

    Conservative: only the name right after "in", "on", "at", "for", "from" or "as of"
    (and a kind word) counts, it must hold a digit, be no address ("at 10.0.0.1") and no
    quantity ("in 2 seconds", "in 1.5 ms"), and either have the shape of an indexed ref
    (digit runs aside, and an ``x`` component of a release line, and a leading ``v``:
    ``8.1.3`` like ``8.1.7``, ``2.0.1`` like ``2.1.x``) or share its non-numeric prefix
    (``v3`` like ``v1.2``, ``release/5.x`` like ``release/4.x``), or be a leading part of
    an indexed version (``2.1`` of ``2.1.2``; a leading ``v`` is insignificant), or be
    written as a version whatever the indexed refs are (:data:`_VERSION_FORM`: ``v1``,
    ``2.0.1``, ``release/4.x``; or a digit after "version", "release" or "tag"). A bare
    number or a two-component one ("for 3 items", "in 3.10") beside refs of another form,
    "Python 3.10", "HTTP 2", "V8" or "port 8080" are never versions."""
    views = [v for v in ref_views(records) if _in_scope(v, repos, allowed)]
    if not views or not question:
        return None
    shapes = {_shape(v.ref) for v in views}
    bare_shapes = {_shape(_unv(v.ref) or v.ref) for v in views}  # a leading v is insignificant
    prefixes = {_prefix(v.ref) for v in views} - {""}
    known = {v.ref for v in views}
    for m in _IN_QUESTION.finditer(question):
        kind, name = (m.group(1) or "").lower(), m.group(2).rstrip(".")
        if not any(c.isdigit() for c in name) or _ADDRESS.fullmatch(name) or name.lower() in _NOT_VERSIONS \
                or _UNIT_AFTER.match(question[m.end():]):
            continue  # no version: "for the API", "at 10.0.0.1", "in 1.5 seconds"
        cands = [name] + ([f"v{name}"] if kind == "version" else []) + \
            ([f"{kind}/{name}", f"{kind}-{name}"] if kind in ("release", "branch") else [])
        if any(c in known or _unv(c) in known or f"v{c}" in known for c in cands):
            continue
        bare = _unv(name) or name
        for cand in cands:  # written as an indexed ref is
            if _shape(cand) in shapes or _prefix(cand) in prefixes:
                return cand, views
        for cand in cands:  # or so but for a leading v (a dotted version only: "for 3 items" is none)
            if "." in cand and _shape(_unv(cand) or cand) in bare_shapes:
                return cand, views
        if "." in bare and any((_unv(k) or k).startswith(bare + ".") for k in known):  # "2.1" of 2.1.2: not one version
            return name, views
        if _looks_like_version(name, kind):  # "in v1", "on release/4.x" beside 2.1.x only
            return (f"{kind} {name}" if kind and not _VERSION_FORM.fullmatch(name) else name), views
    return None


#: A name written as a version whatever the indexed refs are: ``v1``, ``v2.3``, ``V10``,
#: ``2.0.1`` and ``2.1.x`` (three or more components), ``release/4.x``, ``hotfix-2.1``
#: (a release-branch prefix and a digit). Two-component numbers ("3.10", "1.5") are no
#: version alone: they count only written like an indexed ref (:func:`unindexed_version`).
_VERSION_FORM = re.compile(
    r"[vV]\d+(?:\.(?:\d+|[xX*]))*(?:[-+][0-9A-Za-z.]+)?"
    r"|\d+(?:\.(?:\d+|[xX*])){2,}(?:[-+][0-9A-Za-z.]+)?"
    r"|(?:release|releases|rel|branch|hotfix|maint|maintenance|stable|support)[/-][A-Za-z0-9._-]*\d[A-Za-z0-9._-]*",
    re.IGNORECASE)
#: Names written as a version that are something else ("does it run in V8?").
_NOT_VERSIONS = frozenset({"v8"})
#: A dotted quad is an address ("at 10.0.0.1"), not a version.
_ADDRESS = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
#: A unit after a number makes it a quantity ("in 2 seconds", "in 1.5.0 ms" is none either).
_UNIT_AFTER = re.compile(
    r"`?\s*(?:%|(?:ms|s|secs?|seconds?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?|times?|items?|"
    r"bytes?|[kmgt]i?b|percent|px|lines?|steps?|retries|attempts?|requests?|calls?|rows?|records?|users?)\b)",
    re.IGNORECASE)


def _looks_like_version(name: str, kind: str) -> bool:
    """``name`` (after the kind word ``kind``) is written as a version: :data:`_VERSION_FORM`,
    or any name holding a digit after "version", "release" or "tag" ("in version 3")."""
    return bool(_VERSION_FORM.fullmatch(name)) or (kind in ("version", "release", "tag")
                                                   and any(c.isdigit() for c in name))


def split_ref_option(arg: str) -> tuple[str, str | None]:
    """``"Cart.total --ref v2"`` → ``("Cart.total", "v2")``; no ``--ref``: ``(arg, None)``."""
    m = _REF_OPTION.search(arg or "")
    if not m:
        return arg, None
    return arg[:m.start()].strip(), m.group(1)


def allow_refs(allowed: Collection[str] | None, views: Sequence[RefView]) -> frozenset[str] | None:
    """``allowed`` plus the ref sources of ``views`` whose repository it allows (``None``
    stays ``None``: every source)."""
    if allowed is None:
        return None
    return frozenset(allowed) | {v.name for v in views if v.base in allowed}


def ref_graphs(sessions, ref: str, *, repo: str | None = None, allowed: Collection[str] | None = None) -> list[str]:
    """The ref sources named ``ref`` in the SQL state (call graph, history), of repository
    ``repo`` (``None``: of every repository), within ``allowed``; the read of ``impact
    --ref`` and ``who --ref``. Raises :class:`BadInput` (exit 2) listing the indexed refs
    when there is none, and :class:`EmptyIndex` (exit 4) for a ``repo`` that is not an
    indexed repository."""
    from indexer.read import ref_sources

    ref = (ref or "").strip()
    refs = {n: c for n, c in ref_sources(sessions).items() if c}  # a ref never indexed has no graph
    every = sql_bases(sessions)
    if repo and (repo not in every or (allowed is not None and repo not in allowed)):
        # an unknown repository is that, whatever the ref (a forbidden one looks the same)
        raise unknown_repo([repo], [b for b in every if allowed is None or b in allowed])
    bases = [repo] if repo else every
    names = [f"{b}@{ref}" for b in bases if f"{b}@{ref}" in refs and (allowed is None or b in allowed)]
    if not names:
        of = f" of {repo}" if repo else ""
        pairs = [split_source_name(n, every) for n in refs]
        listed = listed_refs((b, r) for b, r in pairs if (not repo or b == repo) and (allowed is None or b in allowed))
        why = _ref_problem(sessions, ref, [repo] if repo else None, allowed)
        if why:
            raise BadInput(f"ref {ref!r}{of} is configured but not indexed: {why} ({listed})")
        raise BadInput(f"no indexed ref {ref!r}{of} ({listed}){_at_hint(ref)}")
    return names


def repo_at_ref(repo: str | None, ref: str | None, bases: Collection[str]) -> tuple[str | None, str | None]:
    """``(repo, ref)`` of a ``--repo``/``--ref`` pair, a ref source written as either read
    as the two: ``--repo shop@v2`` and ``--ref shop@v2`` are ``--repo shop --ref v2`` when
    ``shop`` is one of the indexed repositories ``bases``. Anything else is returned as
    given. Raises :class:`BadInput` when the two name different refs or repositories."""
    bases = set(bases)
    if repo and repo not in bases and "@" in repo:
        base, at = split_source_name(repo, bases)
        if base in bases and at:
            if ref is not None and ref.strip() not in (at, repo):
                raise BadInput(f"--repo {repo} names the ref {at} and --ref names {ref}: give one of them")
            return base, at
    if ref and "@" in ref:
        base, at = split_source_name(ref.strip(), bases)
        if base in bases and at:
            if repo is not None and repo != base:
                raise BadInput(f"--ref {ref} is a ref of {base}, not of --repo {repo}")
            return base, at
    return repo, ref


def unknown_repo(names: Iterable[str], bases: Iterable[str], what: str = "repo") -> EmptyIndex:
    """The error for repository ``names`` nothing was indexed under (exit 4, the same for
    every command and checked before any ``--ref``), listing the indexed repositories
    ``bases`` (never their named refs)."""
    return EmptyIndex(f"no indexed {what} named {', '.join(names)} (indexed: {', '.join(sorted(bases)) or 'none'})")


def record_bases(records: Iterable) -> list[str]:
    """The names of the sources among ``records`` that are no named ref (the repositories
    and spaces a ``--repo`` names)."""
    return sorted(r.name for r in records if not getattr(r, "base", ""))


def sql_bases(sessions) -> list[str]:
    """The repositories with a call graph or history in the SQL state, without the named
    refs (what ``impact --repo`` and ``who --repo`` take)."""
    from indexer.read import indexed_repos, knowledge_repos, ref_sources

    return sorted((set(indexed_repos(sessions)) | set(knowledge_repos(sessions))) - set(ref_sources(sessions)))


def split_source_name(name: str, bases: Iterable[str]) -> tuple[str, str]:
    """``("shop", "v2")`` for the ref source ``shop@v2`` of one of the repositories
    ``bases`` (the longest that fits); else split at the first ``@``."""
    fits = [b for b in bases if name.startswith(f"{b}@")]
    if fits:
        base = max(fits, key=len)
        return base, name[len(base) + 1:]
    base, _, ref = name.partition("@")
    return base, ref


def default_repos(names: Iterable[str], sessions) -> list[str]:
    """``names`` without the ref sources (what a read without ``--ref`` looks in)."""
    from indexer.read import ref_sources

    refs = ref_sources(sessions)
    return [n for n in names if n not in refs]
