"""The answer pipeline every front end shares (CLI, Slack, Teams).

``AnswerService.ask`` = retrieval -> (graph expansion) -> answer generation, timed per
stage. Generation: no-coverage guardrail (no model call) -> Claude (when
``ANTHROPIC_API_KEY`` is set) with citation and symbol checks -> extractive fallback;
staleness warnings on every answer. Front ends only turn events into ``ask``/``impact``/``status`` calls and turn the
:class:`Answer` into text, Block Kit or Adaptive Cards.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Collection, Sequence

from common.db import open_database
from common.errors import CoderagError
from common.settings import AppSettings, ClaudeSettings, defaults
from indexer.read import ChunkReader, Embedder, SourceRecord, asks_what_changed

from ..impact import DEFAULT_DEPTH, impact_report

from ..refs import (allow_refs, listed_refs, record_bases, ref_in_question, repo_at_ref, resolve_ref,
                    unindexed_version, unknown_repo, without_version)
from ..retrieval.rerank import make_reranker
from ..retrieval.retriever import Retriever, SearchHit
from ..tenancy import scope
from .citations import unverified_symbols, validate_citations
from .answerability import Assessment, assess, coverage_note, decide, docs_only_note
from .claude import (ClaudeUnavailable, build_request, generate,
                     judge_answerability, make_client)
from .extractive import Citation, age_text, citation_for, extractive_answer
from .guardrails import no_coverage_text, source_at_commit, staleness_notes
from .question import MAX_QUESTION_CHARS, check_question, clean_question
from ..knowledge import answer_notes
from .prompt import SYSTEM_PROMPT, fit_sources, format_source, normalize_persona, question_block

EXTRACTIVE_MODEL = "extractive"


@dataclass
class Turn:
    """One earlier message of a chat thread: ``role`` is ``"user"`` or ``"assistant"``."""

    role: str
    text: str


@dataclass
class Answer:
    """What a front end renders.

    text: the answer (plain text with ``[n]`` citation markers where a model wrote it,
    then the sources with their index age, then notes and warnings).
    citations: sources in marker order (``[n]`` is ``citations[n-1]``).
    no_coverage: retrieval found nothing relevant (the model was not called).
    latency_ms: per stage (``retrieve``, ``expand``, ``generate``), milliseconds.
    notes: notices and warnings also appended to ``text`` (fallback, staleness, unverified).
    invalid_citations: ``[n]`` markers the model wrote for sources it was not given (stripped).
    unverified_symbols: code names in the answer found in no given chunk and not in the index.
    stale: a cited source is known to be behind its repo (or past its Confluence TTL).
    persona: who the answer was pitched to (``dev``, ``pm``, ``qa``).
    prose: the model's answer alone (validated markers, no sources list or notes); empty
    for extractive answers. usage: the API's token usage (including prompt-cache reads; the
    answerability judgement's tokens added in). uncovered_terms: question terms the searched
    sources do not mention (see :mod:`.answerability`; Claude's judgement may add parts).
    """

    question: str
    text: str
    citations: list[Citation]
    hits: list[SearchHit]
    no_coverage: bool
    model: str
    latency_ms: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    invalid_citations: int = 0
    unverified_symbols: list[str] = field(default_factory=list)
    stale: bool = False
    persona: str = ""
    prose: str = ""
    usage: dict = field(default_factory=dict)
    uncovered_terms: list[str] = field(default_factory=list)
    coverage: str = ""
    #: The named refs the answer read (``--ref``, or a version the question names): the
    #: sources' ``{"name", "base", "ref", "commit"}``; rendered first ("Read at v2 of shop…").
    refs: list[dict] = field(default_factory=list)
    #: A version the question named that is no indexed ref ("in 8.1.3"): the answer read
    #: the default branch and says so first.
    unindexed_ref: str = ""

    @property
    def ref_line(self) -> str:
        """``Read at v2 of shop (commit 1a2b3c4).`` for an answer read at named refs; ``""``."""
        if not self.refs:
            return ""
        return "Read at " + "; ".join(f"{r['ref']} of {r['base']} (commit {r['commit'][:7]})" for r in self.refs) + "."

    def to_json(self) -> dict:
        """The ``coderag ask --json`` object: answer, citations (n, path, start_line,
        end_line, commit, indexed_at as ISO 8601 or null), no_coverage, uncovered_terms,
        stale, model, usage; ``refs`` when the answer read named refs, ``unindexed_ref``
        when the question named a version that is not indexed."""
        return {
            "answer": self.text,
            "citations": [{"n": i, "repo": c.repo, "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                           "commit": c.commit,
                           "indexed_at": c.indexed_at.isoformat() if c.indexed_at else None}
                          for i, c in enumerate(self.citations, 1)],
            "no_coverage": self.no_coverage, "uncovered_terms": list(self.uncovered_terms),
            "stale": self.stale, "model": self.model, "usage": dict(self.usage),
            **({"refs": [dict(r) for r in self.refs]} if self.refs else {}),
            **({"unindexed_ref": self.unindexed_ref} if self.unindexed_ref else {}),
        }


def sources_list(citations: Sequence[Citation]) -> str:
    """``[n] path:start-end@sha7 symbol (indexed 3 h ago)`` lines."""
    lines = []
    for i, c in enumerate(citations, 1):
        sym = f" {c.symbol}" if c.symbol else ""
        lines.append(f"[{i}] {c.ref}{sym} (indexed {age_text(c.indexed_at)})")
    return "\n".join(lines)


class AnswerService:
    """Retrieval plus answer generation over one index.

    Claude writes the answer when ``ANTHROPIC_API_KEY`` is set (see :mod:`.claude`);
    otherwise, or when the API stays down, the extractive answer is given.
    """

    def __init__(self, store: ChunkReader, embedder: Embedder, *, top_k: int = 8, sessions=None,
                 settings: AppSettings | None = None):
        """``sessions``: SQL session factory (call graph for expansion and ``impact``);
        when ``None`` the configured database is opened on first use of ``impact``.
        ``settings``: what the composition root read at start-up (Claude, Voyage rerank,
        staleness hours); ``None``: every setting at its default (no Claude, no rerank).
        Questions never re-read the environment."""
        self.store = store
        self.sessions = sessions
        self.settings = settings if settings is not None else defaults()
        self.retriever = Retriever(store, embedder, sessions=sessions, reranker=make_reranker(self.settings.core))
        self.top_k = top_k
        self._clients: dict[tuple, object] = {}

    def _claude(self, cfg: ClaudeSettings):
        """One SDK client per (retries, timeout) setting, reused across questions."""
        key = (cfg.max_retries, cfg.timeout)
        if key not in self._clients:
            self._clients[key] = make_client(cfg)
        return self._clients[key]

    def ask(self, question: str, *, repos: Sequence[str] | None = None,
            history: Sequence[Turn] = (), persona: str | None = None,
            allowed: Collection[str] | None = None, ref: str | None = None) -> Answer:
        """Answer ``question``. ``history`` are earlier thread turns (sent to Claude as prior
        messages; they also sharpen retrieval of short follow-ups). ``persona`` is ``dev``,
        ``pm`` or ``qa``; ``None`` infers it from the wording. ``allowed``: the sources
        the asking channel may read (:mod:`bot.tenancy`, ``None`` = all); no chunk, source
        name or commit from outside it appears in the answer.

        ``ref``: read the repositories' named ref ``ref`` (a release tag or branch indexed
        as a ref source, :mod:`bot.refs`) instead of their default branch; without it, a
        version the question names ("in v2.3") that is an indexed ref is read. The answer
        says which ref it read (``Answer.refs``).

        Raises :class:`bot.answer.question.QuestionTooLong` (a ``BadInput``) for a question
        over ``MAX_QUESTION_CHARS`` characters, before any retrieval or model call; lone
        surrogates are replaced (:func:`bot.answer.question.clean_question`). An unknown
        ``ref`` raises ``BadInput`` listing the indexed refs.
        Raises ``EmptyIndex`` / ``WeaviateUnavailable`` from retrieval, ``ValueError`` for
        an unknown persona. API failures do not raise: they fall back to the extractive answer.
        """
        question = check_question(question)  # QuestionTooLong before any work; no lone surrogates
        history = [Turn(t.role, clean_question(t.text)) for t in history]
        t0 = time.perf_counter()
        who = normalize_persona(persona, question)
        read = self._records_or_none()  # read once: for the ref, the search and the wording
        records = read or []
        query = question
        views, missing = [], None
        if (repos and len(repos) == 1) or (not repos and ref and "@" in ref):
            # --repo shop@v2 (or --ref shop@v2) reads as --repo shop --ref v2
            bases = record_bases(records)
            repo, ref = repo_at_ref(repos[0] if repos else None, ref, bases)
            repos = [repo] if repo else repos
            if repo and read is not None and allowed is None and repo not in {r.name for r in records}:
                raise unknown_repo([repo], bases)  # before any --ref: the repository is what is unknown
        if ref is not None:
            views = resolve_ref(records, ref, repos=repos, allowed=allowed, sessions=self.sessions)
            query = without_version(question, {v.ref for v in views})  # "in v10" is no term the code has
        elif any(r.base for r in records):  # "how is tax computed in v1?": read v1 when it is indexed
            found = ref_in_question(question, records, repos=repos, allowed=allowed)
            if found is not None:
                views, query = found
            else:  # "what did echo do in 8.1.3?" with 8.1.3 not indexed: say so, read the default branch
                missing = unindexed_version(question, records, repos=repos, allowed=allowed)
                if missing is not None:  # nor is the version's name a term the code has
                    query = without_version(question, [missing[0]])
        if views:
            repos, allowed = [v.name for v in views], allow_refs(allowed, views)
        if history and len(question.split()) < 8:
            prev = [t.text for t in history if t.role == "user"]
            if prev:
                query = f"{prev[-1][-MAX_QUESTION_CHARS:]}\n{query}"
        result = self.retriever.search(query, top_k=self.top_k, repos=repos, allowed=allowed, records=read)
        # the searched versions: a named ref only when it is read (never beside its default branch)
        sources = [s.to_dict() for s in records if (allowed is None or s.name in allowed)
                   and (not s.base or s.name in (repos or ()))]
        answer = self._answer(question, result, sources, repos, allowed, history, who, t0)
        if missing is not None:  # first in the text, and among the notes chat front ends show
            answer.unindexed_ref = missing[0]
            note = self._unindexed_note(missing[0], missing[1], records)
            answer.text = note + "\n\n" + answer.text
            answer.notes.insert(0, note)
        if views:  # say which ref was read: first in the text, and among the notes chat front ends show
            answer.refs = [{"name": v.name, "base": v.base, "ref": v.ref, "commit": v.commit} for v in views]
            answer.text = answer.ref_line + "\n\n" + answer.text
            answer.notes.insert(0, answer.ref_line)
        return answer

    def _answer(self, question: str, result, sources: list[dict], repos, allowed, history, who: str,
                t0: float) -> Answer:
        """The rest of :meth:`ask` once retrieval is done (``result``), in ``sources``."""
        t1 = time.perf_counter()
        # Expansion runs inside the retriever's search: its time is reported apart.
        latency = {"retrieve": (t1 - t0) * 1000 - result.expand_ms, "expand": result.expand_ms}

        assessment = self._assess(result, sources)
        refuse, uncovered = decide(assessment.features())
        if refuse or not result.hits:  # never ask the model about nothing
            return self._no_coverage(question, result, sources, repos, uncovered,
                                     {**latency, "generate": 0.0}, who,
                                     closest=any(t.covered for t in assessment.terms))
        # answered: name the strong terms nothing mentions (plain words are too noisy)
        uncovered = [t.text for t in assessment.terms if t.strong and not t.covered]

        answer = None
        notes: list[str] = []
        if self.settings.claude.enabled:
            try:
                answer = self._claude_answer(question, result, history, who, sources, uncovered)
            except ClaudeUnavailable as exc:
                notes.append(f"Notice: Claude is unavailable ({exc}); showing the most relevant "
                             "code from the index instead.")
            if answer is not None and answer.no_coverage:  # Claude judged it not answerable
                answer.latency_ms = {**latency, "generate": (time.perf_counter() - t1) * 1000}
                return answer
        if answer is None:
            text, cites = extractive_answer(result, max_cited=self.top_k,
                                            lookup=self._setting_lookup(scope(repos, allowed)),
                                            defines=self._definitions)
            answer = Answer(question=question, text=text, citations=cites, hits=result.hits,
                            no_coverage=False, model=EXTRACTIVE_MODEL, persona=who, prose=text)
        answer.notes = notes + answer.notes
        answer.uncovered_terms = list(dict.fromkeys([*uncovered, *answer.uncovered_terms]))
        if answer.uncovered_terms:
            answer.coverage = coverage_note(answer.uncovered_terms, _where(sources, repos, answer))
        code_gap = docs_only_note(assessment.terms, _where(sources, repos, answer))
        if code_gap:  # "Which file configures the Redis cache?" where only a docs page names Redis
            answer.coverage = " ".join(x for x in (answer.coverage, code_gap) if x)
        cited_repos = {c.repo for c in answer.citations} or {h.chunk.repo for h in result.hits}
        stale = staleness_notes(sources, cited_repos, max_age_hours=self.settings.chat.stale_hours,
                                confluence_ttl_hours=self.settings.confluence.ttl_hours)
        answer.stale = bool(stale)
        answer.notes += stale
        answer.notes += answer_notes(self.sessions, answer, result, settings=self.settings.core,
                                     allowed=allowed)  # drift, owners, who to ask
        if self.sessions is not None and asks_what_changed(question):  # "what changed in billing?"
            from ..changes import recent_changes_note

            note = recent_changes_note(self.sessions, self.settings.core, question, result.hits, allowed=allowed)
            if note:
                answer.notes.append(note)
        answer.text = self._render(answer)
        answer.latency_ms = {**latency, "generate": (time.perf_counter() - t1) * 1000}
        return answer

    def _unindexed_note(self, version: str, views: Sequence, records: Sequence[SourceRecord]) -> str:
        """``8.1.3 is not an indexed ref (indexed refs of click: 8.1.7, 8.1.8); this answer
        reads the default branch of click (main, commit 1a2b3c4).``"""
        commits = {r.name: r.commit for r in records if not r.base}
        branches = {r.name: r.branch for r in self.settings.freshness.repos}
        read = []
        for base in sorted({v.base for v in views}):
            what = ", ".join(x for x in (branches.get(base, ""), f"commit {commits[base][:7]}" if commits.get(base)
                                         else "") if x)
            read.append(f"{base} ({what})" if what else base)
        return (f"{version} is not an indexed ref ({listed_refs((v.base, v.ref) for v in views)}); this answer "
                f"reads the default branch of {', '.join(read)}.")

    def _definitions(self, repo: str, names: Sequence[str]) -> list:
        """Committed chunks of ``repo`` (a repo the answer already cites, so within the
        asker's scope) whose symbol is one of ``names``; ``[]`` when the store fails."""
        try:
            return self.store.query.by_symbol(repo, list(names), limit=20)
        except CoderagError:
            return []

    def _setting_lookup(self, repos: Sequence[str] | None):
        """``key -> texts`` of a few committed chunks that mention a configuration key, in
        ``repos`` only (the asker's scope), for the default value an answer names."""
        if repos is not None and not repos:
            return None

        def lookup(key: str) -> list[str]:
            from indexer.read import file_role

            try:
                found = self.store.query.keyword(key, limit=20, repos=repos, include_vector=False)
            except CoderagError:
                return []
            # the code that declares a default; never an example, a test or prose, whose
            # values are examples
            return [c.content for c in found
                    if c.kind not in ("doc", "section", "text") and file_role(c.path) == "code"]

        return lookup

    def _assess(self, result, sources: list[dict]) -> Assessment:
        """Answerability evidence; a failed vocabulary lookup counts as "covered" (the
        search itself worked, so the answer is still given)."""
        try:
            return assess(result, self.store, sources)
        except Exception:  # noqa: BLE001 - the vocabulary check is a refinement only
            return Assessment(supported=True, best_cosine=result.best_cosine, hits=len(result.hits))

    def _no_coverage(self, question: str, result, sources: list[dict], repos, uncovered: list[str],
                     latency: dict, who: str, model: str = EXTRACTIVE_MODEL, usage: dict | None = None,
                     closest: bool = True) -> Answer:
        """The refusal: which versions were searched, which terms none of them mentions,
        and (when part of the question is covered and there are hits) the closest chunk,
        cited as [1]; with nothing covered, the plain no-coverage text."""
        cites: list[Citation] = []
        if uncovered and result.hits and closest:
            best = result.hits[0]
            cites = [citation_for(best)]
            c = best.chunk
            what = f"`{c.symbol}` in {c.path}" if c.symbol else c.path
            where = _where(sources, repos)
            text = (f"{coverage_note(uncovered, where)} The closest is {what} [1], which may not be "
                    "what you asked about, so I won't guess.\n\nSources:\n" + sources_list(cites) + "\n")
        elif uncovered:  # nothing covered: say which terms none of the searched versions has
            text = (f"{coverage_note(uncovered, _where(sources, repos))} "
                    + no_coverage_text(result, sources, repos) + "\n")
        else:
            text = no_coverage_text(result, sources, repos) + "\n"
        answer = Answer(question=question, text=text, citations=cites, hits=result.hits, no_coverage=True,
                        model=model, latency_ms=latency, persona=who, uncovered_terms=list(uncovered),
                        usage=usage or {})
        extra = answer_notes(self.sessions, answer, result, settings=self.settings.core)  # who to ask
        if extra:
            answer.notes += extra
            answer.text = answer.text.rstrip("\n") + "\n\n" + "\n".join(extra) + "\n"
        return answer

    def _sources(self) -> list[dict]:
        """The source records as dicts (the rows the wording and freshness helpers take);
        ``[]`` when they cannot be read."""
        return [s.to_dict() for s in self._records_or_empty()]

    def _records_or_empty(self) -> list[SourceRecord]:
        """The source records; ``[]`` when they cannot be read (they serve wording,
        freshness and named refs; retrieval reports an unreachable index itself)."""
        return self._records_or_none() or []

    def _records_or_none(self) -> list[SourceRecord] | None:
        """The source records; ``None`` when they cannot be read (the search then reads
        them itself and reports an unreachable index)."""
        try:
            return list(self.store.sources.all())
        except Exception:  # noqa: BLE001
            return None

    def _claude_answer(self, question: str, result, history: Sequence[Turn], persona: str,
                       sources: list[dict], uncovered: Sequence[str] = ()) -> Answer:
        cfg = self.settings.claude
        hits = result.hits
        blocks = [format_source(i, h) for i, h in enumerate(hits, 1)]
        hist = list(history)
        budget = fit_sources(system=SYSTEM_PROMPT, history_texts=[t.text for t in hist],
                             question_text=question_block(question, persona),
                             source_blocks=blocks, input_budget=cfg.input_budget)
        given = hits[:budget.kept]
        request = build_request(cfg, question=question, persona=persona,
                                source_blocks=blocks[:budget.kept],
                                history=hist[budget.history_dropped:])
        client = self._claude(cfg)
        judged = judge_answerability(client, request)
        if judged.answerable == "no":  # the model read the sources and found nothing: no answer written
            terms = list(dict.fromkeys([*uncovered, *judged.uncovered]))
            return self._no_coverage(question, result, sources, result.repos, terms, {}, persona,
                                     model=request["model"], usage=judged.usage)
        extra = list(dict.fromkeys([*uncovered, *(judged.uncovered if judged.answerable == "partly" else [])]))
        if extra:
            request["messages"][-1]["content"].append(
                {"type": "text", "text": "Not covered by the sources (say so plainly, do not guess): "
                                         + "; ".join(extra)})
        gen = generate(client, request)
        gen.usage = _add_usage(judged.usage, gen.usage)
        check = validate_citations(gen.text, len(given))
        cites = [citation_for(given[i]) for i in check.sources_used]
        notes = []
        if budget.dropped:
            notes.append(f"{budget.dropped} lower-ranked source(s) left out to fit the model's context.")
        unverified = unverified_symbols(check.text, [h.chunk for h in given], self.store,
                                        {h.chunk.repo for h in hits})
        if unverified:
            names = ", ".join(f"`{n}`" for n in unverified)
            notes.append(f"Unverified: {names} not found in the cited sources or the index; "
                         "treat as unconfirmed.")
        if check.invalid:
            notes.append(f"Removed {check.invalid} citation(s) to sources the model was not given.")
        return Answer(question=question, text=check.text, citations=cites, hits=hits,
                      no_coverage=False, model=gen.model, notes=notes,
                      invalid_citations=check.invalid, unverified_symbols=unverified,
                      persona=persona, prose=check.text, usage=gen.usage,
                      uncovered_terms=[u for u in extra if u not in uncovered])

    @staticmethod
    def _render(answer: Answer) -> str:
        """Final text: extractive text or prose + sources list, then notes."""
        parts = [answer.coverage] if answer.coverage else []
        notices = [n for n in answer.notes if n.startswith("Notice:")]
        if notices:
            parts.append("\n".join(notices))
        if answer.prose:
            parts.append(answer.prose.strip())
            if answer.citations:
                parts.append("Sources:\n" + sources_list(answer.citations))
        else:
            parts.append(answer.text.rstrip())
        rest = [n for n in answer.notes if not n.startswith("Notice:")]
        if rest:
            parts.append("\n".join(rest))
        return "\n\n".join(parts) + "\n"

    def impact(self, symbol: str, *, repo: str | None = None, depth: int = DEFAULT_DEPTH,
               allowed: Collection[str] | None = None, ref: str | None = None) -> dict:
        """Callers of ``symbol`` (see :func:`bot.impact.impact_report` for the dict shape),
        looked up only in ``allowed`` sources (``None`` = all), at the named ref ``ref``
        when given. Raises ``UnknownSymbol`` / ``AmbiguousSymbol`` (user-facing messages),
        ``BadInput`` for an unknown ``ref``."""
        if self.sessions is None:
            self.sessions = open_database(self.settings.core)
        return impact_report(self.sessions, symbol, repo=repo, depth=depth, allowed=allowed, ref=ref)

    def status(self, allowed: Collection[str] | None = None) -> list[dict]:
        """Indexed sources: name, kind, commit, indexed_at, chunks, files, model — only
        those in ``allowed`` (``None`` = all); one dict per source record (its fields), the
        rows the front ends show. Raises ``WeaviateUnavailable``."""
        return [s.to_dict() for s in self.records(allowed)]

    def records(self, allowed: Collection[str] | None = None) -> list[SourceRecord]:
        """The :class:`~indexer.read.SourceRecord` of each indexed source in ``allowed``
        (``None`` = all; a named ref is in it when its repository is), sorted by name.
        Raises ``WeaviateUnavailable``."""
        return [s for s in self.store.sources.all()
                if allowed is None or s.name in allowed or (s.base and s.base in allowed)]


def _where(sources: Sequence[dict], repos: Sequence[str] | None, answer: Answer | None = None) -> str:
    """``shop@1a2b3c4, api@9f8e7d6``: the searched sources (those cited, when given); a ref
    source, already ``name@ref``, as ``shop@v2 at commit 1a2b3c4``."""
    names = set(repos or [s.get("name") for s in sources])
    if answer is not None and answer.citations:
        names = {c.repo for c in answer.citations}
    picked = [s for s in sources if s.get("name") in names]
    return ", ".join(source_at_commit(s["name"], str(s.get("commit", ""))[:7]) for s in picked) or "the index"



def _add_usage(a: dict, b: dict) -> dict:
    """Token counts of two calls summed (non-numeric fields from ``b``)."""
    out = dict(b)
    for k, v in a.items():
        if isinstance(v, (int, float)) and isinstance(b.get(k, 0), (int, float)):
            out[k] = b.get(k, 0) + v
    return out


__all__ = ["Answer", "AnswerService", "Citation", "Turn", "citation_for", "sources_list"]
