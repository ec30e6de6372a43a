"""Who knows this: CODEOWNERS first, then the people the history shows.

Ranking of one file, directory or line range (a symbol):

1. **Owners** from CODEOWNERS (last matching rule), in the file's order: they come first
   whatever the history says ("honours CODEOWNERS over history").
2. **Experts** by ``0.6 * blame share + 0.4 * history share`` (history only for a
   directory): the blame share is the part of the current lines (of the symbol, when
   one is asked) each person wrote, bots left out and reformatting/mass commits
   ignored; the history share is each person's part of
   ``sum(0.5 ** (age_days / CODERAG_EXPERTS_HALF_LIFE_DAYS) * log1p(lines changed))``
   over the counted commits touching it.

Reasons are sentences: "owns /src/payments/ in CODEOWNERS", "wrote 62% of the current
lines of `refund()`", "7 commits to src/payments/refund.py in the last year".
"""
from __future__ import annotations

import logging
import math
import subprocess
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from pathlib import Path
from typing import ClassVar, Collection, Sequence

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import sessionmaker

from common.settings import Settings
from ..graph.sql_models import CodeDefinition
from ..drift.models import KnowledgeRepo
from ..drift.service import knowledge_repos, upsert_repo
from ..sources import git
from .codeowners import owners_of, read_codeowners
from .history import blame, collect_changes
from .models import ExpertChange

log = logging.getLogger(__name__)

BLAME_WEIGHT = 0.6  # blame share vs history share; blame says who wrote what is there now


@dataclass
class Expert:
    """A person (or team) to ask: ``who`` is a name or a CODEOWNERS handle, ``email`` the
    Git e-mail (``""`` for a handle), ``score`` in 0..1 (owners get 1 + their order bonus),
    ``reasons`` one-line sentences, ``chat_user`` the mapped Slack/Teams user (or ``""``)."""

    who: str
    email: str = ""
    score: float = 0.0
    owner: bool = False
    reasons: list[str] = field(default_factory=list)
    chat_user: str = ""
    #: The evidence: current lines of the code this person wrote (blame), and their
    #: commits to it in the history window.
    lines: int = 0
    commits: int = 0

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class WhoResult:
    """The answer to ``who``: ``target`` as asked, ``kind`` (path, directory, symbol,
    question), the ``repo``/``path``/line range looked at, and the ranked ``experts``."""

    target: str
    kind: str
    repo: str = ""
    path: str = ""
    start_line: int | None = None
    end_line: int | None = None
    experts: list[Expert] = field(default_factory=list)
    #: For a question: the code the guess is anchored on (the best code hit's symbol).
    anchor: str = ""
    #: The bar of :attr:`clear`: current lines written, or commits made, by one person.
    CLEAR_LINES: ClassVar[int] = 5
    CLEAR_COMMITS: ClassVar[int] = 3

    @property
    def clear(self) -> bool:
        """Whether someone clearly owns it: a CODEOWNERS owner, or a person who wrote at
        least :data:`CLEAR_LINES` of its current lines or made at least
        :data:`CLEAR_COMMITS` commits to it in the history window. Below that the
        names are the closest people, not owners."""
        return any(e.owner or e.lines >= CLEAR_LINES or e.commits >= CLEAR_COMMITS for e in self.experts)

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d["experts"] = [e.to_dict() for e in self.experts]
        d["clear"] = self.clear
        return d


#: The evidence below which ``who`` says nobody clearly owns the code (see WhoResult.clear).
CLEAR_LINES, CLEAR_COMMITS = WhoResult.CLEAR_LINES, WhoResult.CLEAR_COMMITS


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _aware(d: datetime) -> datetime:
    return d if d.tzinfo else d.replace(tzinfo=timezone.utc)


def refresh_history(sessions: sessionmaker, settings: Settings, repo: str, root: str | Path, commit: str) -> int:
    """**Hook** after ``repo`` is indexed at ``commit``: add the authorship of the new
    commits (since the last refreshed one when it is an ancestor; otherwise re-read the
    last ``CODERAG_EXPERTS_HISTORY_DAYS`` days) and prune older rows. Returns rows added."""
    upsert_repo(sessions, repo, root, commit)
    with sessions() as s:
        row = s.get(KnowledgeRepo, repo)
        base = row.history_commit if row else ""
    if base == commit:
        return 0
    if base and subprocess.run(["git", "-C", str(root), "merge-base", "--is-ancestor", base, commit],
                               capture_output=True).returncode != 0:
        base = ""
    rows = collect_changes(root, commit, bot_pattern=settings.experts_bot_pattern,
                           mass_files=settings.experts_mass_change_files,
                           since_days=settings.experts_history_days, base=base)
    cutoff = _now() - timedelta(days=settings.experts_history_days)
    with sessions.begin() as s:
        if not base:
            s.execute(delete(ExpertChange).where(ExpertChange.repo == repo))
        else:
            s.execute(delete(ExpertChange).where(ExpertChange.repo == repo, ExpertChange.committed_at < cutoff))
        for i in range(0, len(rows), 5000):
            s.execute(ExpertChange.__table__.insert(), [{**r, "repo": repo} for r in rows[i:i + 5000]])
        kr = s.get(KnowledgeRepo, repo)
        kr.history_commit = commit
    return len(rows)


@lru_cache(maxsize=16)
def _owners_cached(root: str, commit: str):
    return read_codeowners(root, commit)


@lru_cache(maxsize=16)
def _files_cached(root: str, commit: str) -> frozenset[str]:
    return frozenset(f.path for f in git.list_files(Path(root), commit))


def _mention(settings: Settings, email: str) -> str:
    return settings.experts_chat_users.get(email, "") if email else ""


def experts_for(sessions: sessionmaker, settings: Settings, repo: str, path: str, *,
                start_line: int | None = None, end_line: int | None = None, label: str = "",
                limit: int = 5) -> WhoResult:
    """Rank who knows ``path`` of ``repo`` (a file, or a directory ending in ``/``; lines
    ``start_line..end_line`` of it for a symbol). ``label`` names it in the reasons
    (default: the path). Raises ``BadInput`` for a repo drift/who does not know."""
    from common.errors import BadInput

    row = knowledge_repos(sessions).get(repo)
    if row is None:
        raise BadInput(f"repo {repo!r} has no history for `who` yet (index it first)")
    is_dir = path.endswith("/") or path == ""
    what = label or (f"{path}" if path else "the repo")
    kind = "symbol" if start_line else ("directory" if is_dir else "path")
    result = WhoResult(target=label or path, kind=kind, repo=repo, path=path, start_line=start_line, end_line=end_line)
    # 1. CODEOWNERS
    owners_file, rules = _owners_cached(row.root, row.commit)
    seen: dict[str, Expert] = {}
    for rule, owner in owners_of(rules, path or "x") if rules else []:
        email = owner.lower() if "@" in owner and not owner.startswith("@") else ""
        e = seen.get(owner.lower())
        if e is None:
            e = Expert(who=owner, email=email, owner=True, chat_user=_mention(settings, email))
            seen[owner.lower()] = e
            result.experts.append(e)
        e.reasons.append(f"owns {rule.pattern} in {owners_file}")
    # 2. history
    now = _now()
    with sessions() as s:
        q = select(ExpertChange).where(ExpertChange.repo == repo, ExpertChange.excluded == "")
        if path:
            q = q.where(ExpertChange.path.startswith(path, autoescape=True) if is_dir else ExpertChange.path == path)
        changes = list(s.execute(q).scalars())
        ignore = set(s.execute(select(ExpertChange.commit).where(
            ExpertChange.repo == repo, ExpertChange.excluded.in_(("reformat", "mass")))).scalars())
    hist: dict[str, float] = {}
    names: dict[str, str] = {}
    commits: dict[str, set[str]] = {}
    recent: dict[str, set[str]] = {}
    last: dict[str, datetime] = {}
    for c in changes:
        age = max(0.0, (now - _aware(c.committed_at)).total_seconds() / 86400)
        w = 0.5 ** (age / settings.experts_half_life_days) * math.log1p(max(c.lines, 1))
        hist[c.author_email] = hist.get(c.author_email, 0.0) + w
        names.setdefault(c.author_email, c.author_name)
        commits.setdefault(c.author_email, set()).add(c.commit)
        if age <= 365:
            recent.setdefault(c.author_email, set()).add(c.commit)
        if c.author_email not in last or _aware(c.committed_at) > last[c.author_email]:
            last[c.author_email] = _aware(c.committed_at)
    share: dict[str, float] = {}
    total_h = sum(hist.values())
    blame_share = None
    blame_lines: dict[str, int] = {}
    if not is_dir and path in _files_cached(row.root, row.commit):
        try:
            bs = blame(row.root, row.commit, path, start=start_line, end=end_line, ignore=ignore,
                       bot_pattern=settings.experts_bot_pattern)
        except subprocess.CalledProcessError as exc:
            log.warning("who: blame of %s failed: %s", path, exc.stderr[:200] if exc.stderr else exc)
            bs = None
        if bs is not None and bs.total:
            blame_share = {e: n / bs.total for e, n in bs.by_email.items()}
            blame_lines = dict(bs.by_email)
            for e, n in bs.names.items():
                names.setdefault(e, n)
    people = set(hist) | set(blame_share or {})
    for e in people:
        h = hist.get(e, 0.0) / total_h if total_h else 0.0
        share[e] = (BLAME_WEIGHT * blame_share.get(e, 0.0) + (1 - BLAME_WEIGHT) * h) if blame_share is not None else h
    ranked = sorted(people, key=lambda e: (-share[e], e))
    subject = f"`{label}`" if label and start_line else what
    for e in ranked:
        reasons = []
        if blame_share is not None and blame_share.get(e):
            reasons.append(f"wrote {round(100 * blame_share[e])}% of the current lines of {subject}")
        n_recent = len(recent.get(e, ()))
        if n_recent:
            reasons.append(f"{n_recent} commit{'s' if n_recent != 1 else ''} to {path or 'the repo'} in the last year")
        elif e in last:
            reasons.append(f"last changed {path or 'the repo'} {(now - last[e]).days} days ago")
        if not reasons:
            continue
        existing = seen.get(e)
        if existing is not None:  # an owner listed by e-mail who also wrote it
            existing.reasons += reasons
            existing.score += share[e]
            existing.lines, existing.commits = blame_lines.get(e, 0), len(commits.get(e, ()))
            continue
        result.experts.append(Expert(who=names.get(e, e), email=e, score=round(share[e], 4), reasons=reasons,
                                     chat_user=_mention(settings, e), lines=blame_lines.get(e, 0),
                                     commits=len(commits.get(e, ()))))
    for i, e in enumerate(result.experts):
        if e.owner:
            e.score = round(1.0 + e.score, 4)
    result.experts = result.experts[:limit]
    return result


def resolve_target(sessions: sessionmaker, query: str, repo: str | None = None, *,
                   settings: Settings) -> tuple[str, str, int | None, int | None, str] | None:
    """``(repo, path, start, end, label)`` when ``query`` is a path (file or directory)
    of a known repo or a definition's name/symbol in the call graph; ``None`` otherwise
    (a question: the caller retrieves the closest code)."""
    q = query.strip().strip("`")
    repos = knowledge_repos(sessions)
    names = [repo] if repo else _default_branches(sessions, repos)
    for name in names:
        row = repos.get(name)
        if row is None:
            continue
        files = _files_cached(row.root, row.commit)
        p = q.removeprefix("./")
        if p in files:
            return name, p, None, None, p
        d = p.rstrip("/") + "/"
        if any(f.startswith(d) for f in files):
            return name, d, None, None, d
    if " " in q or not q:
        return None
    sym = q.removesuffix("()")
    with sessions() as s:
        stmt = select(CodeDefinition).where(or_(CodeDefinition.symbol == sym, CodeDefinition.name == sym,
                                                CodeDefinition.symbol.endswith("." + sym, autoescape=True)))
        if repo:
            stmt = stmt.where(CodeDefinition.repo == repo)
        defs = [(d.repo, d.symbol, d.path, d.start_line, d.end_line, d.kind)
                for d in s.execute(stmt.limit(50)).scalars() if d.repo in repos and d.repo in names]
    if not defs:
        defs = _tree_sitter_defs(sessions, settings, repos, names, sym)
    if not defs:
        return None
    from ..graph.query import is_test_path

    r, symbol, path, start, end, kind = sorted(
        defs, key=lambda d: (d[1] != sym, is_test_path(d[2]), d[2], d[3]))[0]
    return r, path, start, end, symbol + "()" if kind != "class" else symbol


def _default_branches(sessions: sessionmaker, names) -> list[str]:
    """``names`` (sorted) without the named refs (ref sources ``repo@ref``): what a look-up
    that names no repository reads."""
    from ..store.sync_state import ref_sources

    refs = ref_sources(sessions)
    return sorted(n for n in names if n not in refs)


def looks_like_path(query: str) -> bool:
    """True when ``query`` is one word that reads as a file or folder path: it has a ``/``
    or a file extension coderag knows (``refund.py``, ``Makefile``), e.g. not
    ``RefundService.run`` or a question."""
    from ..chunking.languages import detect_language

    q = query.strip().strip("`").removeprefix("./")
    if not q or any(c.isspace() for c in q):
        return False
    return "/" in q or detect_language(q) is not None


def closest_symbols(sessions: sessionmaker, query: str, *, repo: str | None = None,
                    allowed: Collection[str] | None = None, limit: int = 3) -> tuple[list[str], list[tuple[str, str]]]:
    """For a symbol that is not in the index: ``(repos searched, [(repo, symbol)])``, the
    defined symbols nearest to ``query`` (by the whole dotted name or its last part), best
    first, at most ``limit``; only in ``repo``/``allowed``."""
    import difflib

    from sqlalchemy import func

    from ..graph.sql_models import CodeDefinition

    q = query.strip().strip("`").removesuffix("()")
    last = q.replace("::", ".").replace("#", ".").rsplit(".", 1)[-1]
    with sessions() as s:
        indexed = sorted(set(s.execute(select(CodeDefinition.repo).distinct()).scalars()))
    names = [n for n in ([repo] if repo else _default_branches(sessions, indexed))
             if n in indexed and (allowed is None or n in allowed)]
    with sessions() as s:
        pool: list[tuple[str, str]] = []
        for name in names:  # names sharing the first letters, so a large repo is not read whole
            pool += s.execute(select(CodeDefinition.repo, CodeDefinition.symbol).where(
                CodeDefinition.repo == name, func.lower(CodeDefinition.name).like(last[:2].lower() + "%"))
                .limit(20_000)).all()
    symbols = sorted({sym for _r, sym in pool})
    near = difflib.get_close_matches(q, symbols, n=limit, cutoff=0.6)
    lasts = {sym.rsplit(".", 1)[-1]: sym for sym in symbols}
    near += [lasts[t] for t in difflib.get_close_matches(last, sorted(lasts), n=limit, cutoff=0.7) if lasts[t] not in near]
    by_symbol = {sym: r for r, sym in pool}
    return names, [(by_symbol[sym], sym) for sym in near[:limit]]


def closest_paths(sessions: sessionmaker, query: str, *, repo: str | None = None,
                  allowed: Collection[str] | None = None, limit: int = 3) -> tuple[list[str], list[tuple[str, str]]]:
    """For a path that is not in the index: ``(repos searched, [(repo, path)])``, the
    indexed files and folders (``dir/``) nearest to ``query`` by the whole path or the
    file name alone, best first, at most ``limit`` and none much worse than the best. ``repo``/``allowed`` restrict the repos (a
    chat channel never sees another repo's paths)."""
    import difflib
    import posixpath

    q = query.strip().strip("`").removeprefix("./")
    repos = knowledge_repos(sessions)
    names = [n for n in ([repo] if repo else _default_branches(sessions, repos))
             if n in repos and (allowed is None or n in allowed)]
    is_dir = q.endswith("/")
    base = posixpath.basename(q.rstrip("/"))

    def tail(p: str) -> str:
        return posixpath.basename(p.rstrip("/"))

    def score(p: str) -> float:  # the whole path, or the file (folder) name alone
        return max(difflib.SequenceMatcher(None, q, p).ratio(), difflib.SequenceMatcher(None, base, tail(p)).ratio())

    found: list[tuple[float, str, str]] = []
    for name in names:
        row = repos[name]
        files = sorted(_files_cached(row.root, row.commit))
        pool = sorted({posixpath.dirname(f) + "/" for f in files if "/" in f}) if is_dir else files
        near = set(difflib.get_close_matches(q, pool, n=limit, cutoff=0.6))
        tails = set(difflib.get_close_matches(base, sorted({tail(p) for p in pool}), n=limit, cutoff=0.75))
        near |= {p for p in pool if tail(p) in tails}
        found += [(score(p), name, p) for p in near]
    found.sort(key=lambda x: (-x[0], x[2], x[1]))
    best = found[0][0] if found else 0.0  # near misses only: shared folders make every sibling look close
    return names, [(r, p) for s, r, p in found[:limit] if s >= best - 0.1]


def _tree_sitter_defs(sessions, settings: Settings, repos, names, sym) -> list[tuple]:
    """Definitions named ``sym`` found by tree-sitter in repos without a stored call graph."""
    from ..graph import extract_file

    out = []
    last = sym.split(".")[-1]
    for name in names:
        row = repos.get(name)
        if row is None:
            continue
        from ..drift.service import code_index

        idx = code_index(sessions, row, settings)
        paths = {p for _, p, _ in idx.defs.get(last, [])}
        for f, data in git.read_blobs(Path(row.root), [f for f in git.list_files(Path(row.root), row.commit)
                                                      if f.path in paths]):
            facts = extract_file(f.path, data.decode("utf-8", "replace"))
            for d in (facts.definitions if facts else ()):
                if d.name == last and (d.symbol == sym or d.symbol.endswith("." + sym) or d.name == sym):
                    out.append((name, d.symbol, f.path, d.start_line, d.end_line, d.kind))
    return out


def who(sessions: sessionmaker, settings: Settings, query: str, *, repo: str | None = None,
        limit: int = 5) -> WhoResult | None:
    """``who PATH|SYMBOL``: the ranked owners and experts, or ``None`` when ``query`` is
    neither (see :func:`resolve_target`)."""
    target = resolve_target(sessions, query, repo, settings=settings)
    if target is None:
        return None
    r, path, start, end, label = target
    res = experts_for(sessions, settings, r, path, start_line=start, end_line=end,
                      label=label if start else "", limit=limit)
    res.target = query
    return res


def experts_for_locations(sessions: sessionmaker, settings: Settings, target: str,
                          locations: Sequence[tuple[str, str, int, int, str]], *, limit: int = 5) -> WhoResult:
    """Who knows the code at ``locations`` (``(repo, path, start, end, label)``, best
    first; e.g. the top search hits of a question): each location's experts weighted
    1, 1/2, 1/3..., reasons from the best location a person appears in."""
    known = knowledge_repos(sessions)
    merged: dict[str, Expert] = {}
    order: list[str] = []
    for rank, (repo, path, start, end, label) in enumerate(locations[:3], 1):
        if repo not in known:
            continue
        try:
            res = experts_for(sessions, settings, repo, path, start_line=start, end_line=end, label=label, limit=limit)
        except Exception as exc:  # noqa: BLE001 - one unreadable location must not hide the others
            log.warning("who: %s:%s: %s", repo, path, exc)
            continue
        for e in res.experts:
            key = (e.email or e.who).lower()
            if key not in merged:
                merged[key] = Expert(e.who, e.email, 0.0, e.owner, list(e.reasons), e.chat_user)
                order.append(key)
            merged[key].score += e.score / rank
            if rank == 1:  # the evidence of the code the guess is anchored on
                merged[key].lines, merged[key].commits = e.lines, e.commits
    # CODEOWNERS owners first, as for a path or a symbol; then by score
    experts = sorted((merged[k] for k in order), key=lambda e: (not e.owner, -e.score))
    for e in experts:
        e.score = round(e.score, 4)
    first = next(((r, p, s, e, label) for r, p, s, e, label in locations if r in known), ("", "", None, None, ""))
    return WhoResult(target=target, kind="question", repo=first[0], path=first[1], start_line=first[2],
                     end_line=first[3], experts=experts[:limit], anchor=first[4] or "")


def owners_line(sessions: sessionmaker, repo: str, path: str) -> str:
    """The CODEOWNERS owners of one source path, e.g. ``"@payments-team"`` (``""`` when
    the repo has no CODEOWNERS or nothing matches); cheap enough for every citation."""
    row = knowledge_repos(sessions).get(repo)
    if row is None:
        return ""
    try:
        _, rules = _owners_cached(row.root, row.commit)
    except Exception:  # noqa: BLE001
        return ""
    return " ".join(o for _, o in owners_of(rules, path)) if rules else ""


def forget_repo(sessions: sessionmaker, repo: str) -> None:
    """**Hook** when a repo is removed: its authorship rows go."""
    with sessions.begin() as s:
        s.execute(delete(ExpertChange).where(ExpertChange.repo == repo))

