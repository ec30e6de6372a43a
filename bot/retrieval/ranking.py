"""The ranking stage: re-score the hybrid query's (generous) candidate list with named,
weighted signals, then order it with per-file diversity.

Weaviate's hybrid query (BM25F + vector, relative-score fusion) gives every candidate a
``hybrid`` score in [0, 1] (the best candidate scores 1). This module adds, per
candidate, the weighted value of each signal below and sorts by the sum::

    score = hybrid + sum(weight[s] * value[s] for s in enabled signals)

then picks the final order greedily, subtracting the ``diversity`` penalty for each chunk
already picked from the same file. Every signal reads only the question and the chunk
(path, symbol, kind, lines, content), so it makes sense for any codebase; none knows a
repository. Signal values are in [0, 1] (penalties in [0, 1] with negative weights).

Signals (``SIGNALS``; each can be switched off alone with :class:`RankingConfig`):

``definition`` (off by default, see :data:`DEFAULT_OFF`)
    The chunk defines a name the question mentions (a code identifier: backticks,
    ``snake_case``/``camelCase``, dotted, ``foo()``): 1.0 when its full dotted symbol is
    named, 0.8 when its last part is. Definitions that the hybrid query did not return are
    looked up by name (:meth:`indexer.ChunkStore.fetch_by_name`) and join the candidates;
    while the hybrid query applies Weaviate's name Boost (:data:`BOOSTED`) only those
    looked-up definitions score.
``symbol_query`` (off by default)
    The whole question is one identifier (``Context.Bind``, ``merge_setting``): the
    chunk defining exactly that name (case-sensitive) wins over its own methods, a
    lower-case twin or a helper that mentions it.
``quoted_phrase``
    The question quotes a message (``"next() called multiple times"``): 1.0 for the chunk
    whose content holds the exact phrase (case and whitespace folded), 0.7 x the share of
    its words for a chunk holding at least 75% of them (a format string). A keyword-only
    query for the phrase adds the chunks that contain its words.
``path_match``
    Share of the question's content words whose English stem equals the stem of a path
    component or of a word of the file stem (``dependency`` ~ ``dependencies/``,
    ``routing`` ~ ``router.go`` is not claimed: stems must be equal).
``file_coherence`` (off by default)
    A file with several strong candidates is likely the answer to an architecture
    question: its best chunk gains in proportion to the other candidates' hybrid scores
    in that file (capped).
``best_window``
    Long chunks are embedded as a mean of windows, which dilutes a mid-body match: the
    share of the question's content words found in the chunk's best 25-line window
    (every chunk has at least one window), so a function whose relevant part is mid-body
    still scores for it.
``small_fragment`` (off by default)
    Stubs (file headers, class signatures of split classes, other non-definition chunks
    of 2 lines or fewer, e.g. a heading-only section) are demoted so they do not crowd out bodies, unless they define a named name.
``role_prior``
    Tests, changelogs, docs and examples are demoted for code questions; a question
    about tests, docs ("documentation", "README", "guide", "recommend") or examples
    is not demoted for (and docs are promoted for a docs question).
``legacy`` (off by default)
    Paths under ``deprecated/``, ``legacy/``, ``compat/``, ``old/`` (or a ``vN/`` tree
    when a higher ``vM/`` tree is among the candidates) are demoted unless the question
    names that folder.
``call_hub``
    Query-dependent degree centrality in the call graph: among the top
    :data:`HUB_DEPTH` hybrid candidates, a code chunk that calls (or is called by) other
    candidates connects the pieces the question is about; architecture and behaviour
    questions ("how are routes registered", "what happens end to end") are answered by
    that orchestrating function rather than by one of the pieces. Value: the summed
    hybrid scores of its linked candidates (callees count fully, callers by
    :data:`HUB_CALLER_SHARE`) over :data:`HUB_SATURATION`, capped at 1. The links come
    from the SQL call graph (:func:`indexer.graph_links`, one query per search); without
    a graph the signal is 0. The idea is HITS/Kleinberg's query-focused subgraph, scored
    by degree only (one hop: cheap and stable).
``diversity`` (off by default)
    Applied while ordering: once :data:`DIVERSITY_FREE` chunks of a file are picked, each
    further one costs this much more, so one file does not fill the top 10.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

import snowballstemmer

from indexer import StoredChunk, file_role
from common.identifiers import IDENT_RE, split_identifier

from .query_analysis import QueryAnalysis

# Weights, in units of the hybrid score (the best hybrid candidate scores 1.0). Set on
# shared/eval/dev.jsonl and bench/data/dev2.jsonl together (README "Ranking stage";
# bench/retrieval_eval.py prints the ablation of each).
WEIGHTS: dict[str, float] = {
    "definition": 0.6,
    "symbol_query": 0.6,
    "quoted_phrase": 0.8,
    "path_match": 0.3,
    "file_coherence": 0.05,
    "best_window": 0.3,
    "small_fragment": -0.2,
    "role_prior": -0.4,
    "legacy": -0.3,
    "diversity": -0.05,
    "call_hub": 0.2,
}
SIGNALS = tuple(WEIGHTS)
# Signals built and tested but off by default because they did not earn their place in
# the ablation on dev.jsonl + bench/data/dev2.jsonl combined (95 questions, README
# "Ranking stage"): definition (the hybrid Boost already promotes named definitions, and
# every looked-up definition was already among the 100 candidates), symbol_query and
# legacy (no question of the two sets is a bare identifier or has a legacy tree: no
# effect), diversity (recall@5 -0.011, MRR -0.002), file_coherence (removing it: MRR
# +0.002) and small_fragment (removing it: recall@5 +0.010). ``--signal NAME`` turns one on.
DEFAULT_OFF = frozenset({"definition", "symbol_query", "legacy", "diversity", "file_coherence",
                         "small_fragment"})

# Role values for role_prior (multiplied by its negative weight: 1.0 = full demotion).
ROLE_PENALTY = {"test": 1.0, "changelog": 1.0, "docs": 0.5, "example": 0.5, "code": 0.0}
# file_coherence: the other candidates' hybrid scores in the file are summed over the top
# COHERENCE_DEPTH candidates and divided by COHERENCE_SATURATION (value capped at 1).
COHERENCE_DEPTH = 30
COHERENCE_SATURATION = 2.0
# best_window: window length (lines), the same as the indexer's embedding sub-windows.
WINDOW_LINES = 25
# small_fragment: non-definition chunks this short (lines) count as stubs.
STUB_LINES = 2
STUB_KINDS = {"file_header": 1.0, "class_signature": 0.7}
# diversity: chunks per file picked before the penalty starts (2 = the third chunk of a
# file pays it once, the fourth twice, ...).
DIVERSITY_FREE = 2
DEFINITION_KINDS = {"function", "method", "class", "class_signature"}
# call_hub: links are looked up among this many top hybrid candidates; a caller link
# weighs HUB_CALLER_SHARE of a callee link (an orchestrator calls the pieces; a helper
# called by many is a piece); the summed linked scores saturate at HUB_SATURATION.
HUB_DEPTH = 30
HUB_CALLER_SHARE = 0.5
HUB_SATURATION = 1.5
HUB_KINDS = {"function", "method"}
# True when the candidates' hybrid scores already carry Weaviate's name/role Boost
# (bot.retrieval.retriever.HYBRID_BOOSTS): then ``definition`` scores only looked-up
# definitions.
BOOSTED = True

_ASKS_TESTS = re.compile(r"\b(test|tests|tested|testing|spec|specs|coverage|fixture|fixtures)\b", re.I)
_ASKS_DOCS = re.compile(r"\b(doc|docs|documentation|documented|readme|guide|tutorial|recommends?|"
                        r"recommended|manual|changelog|release notes?)\b", re.I)
_ASKS_EXAMPLES = re.compile(r"\b(example|examples|sample|samples|demo)\b", re.I)
_LEGACY_DIRS = {"deprecated", "legacy", "compat", "old", "obsolete", "_legacy"}
_VERSION_DIR = re.compile(r"^v(\d+)$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_SPACE = re.compile(r"\s+")

# Words too common in questions to carry meaning for path/window matching.
STOPWORDS = frozenset("""
a an the and or not no nor of in on at to for from by with without into onto over under
is are was were be been being do does did done doing has have had having can could
should would will shall may might must it its this that these those there here what
which who whom whose when where why how all any each every some such than then so very
just also only own same too more most other about above after again against before
between both during few further once out up down off through until while we our you
your i me my he she they them their his her if else get gets got use used uses using
make makes made work works way happen happens happened need needs want wants like
code function method class file files one two new thing things see tell explain find
show describe does happen set sets call calls called return returns value values
""".split())

_stemmer = snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """English Snowball stem of a lower-cased word (``dependencies`` -> ``depend``); cached
    (the stemmer is pure Python and code repeats its words)."""
    return _stemmer.stemWord(word.lower())


@lru_cache(maxsize=200_000)
def _token_words(tok: str) -> tuple[str, ...]:
    return tuple(p for p in (split_identifier(tok) or [tok.lower()])
                 if len(p) >= 3 and p not in STOPWORDS)


def content_words(text: str) -> list[str]:
    """Lower-case words of ``text`` (identifiers split into parts) minus stop words,
    at least 3 letters, in order, without repeats."""
    out: dict[str, None] = {}
    for tok in _WORD.findall(text):
        for part in _token_words(tok):
            out.setdefault(part, None)
    return list(out)


@lru_cache(maxsize=200_000)
def _token_stems(tok: str) -> frozenset[str]:
    return frozenset(stem(p) for p in _token_words(tok))


@dataclass(frozen=True)
class RankingConfig:
    """Which signals run, and their weights.

    ``disabled``: signal names switched off (default :data:`DEFAULT_OFF`; unknown names
    raise ``ValueError`` so a typo is not a silent no-op). ``weights``: overrides of
    :data:`WEIGHTS`.
    """

    disabled: frozenset[str] = DEFAULT_OFF
    weights: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        unknown = set(self.disabled) - set(SIGNALS)
        unknown |= {k for k, _ in self.weights} - set(SIGNALS)
        if unknown:
            raise ValueError(f"unknown ranking signal(s): {', '.join(sorted(unknown))} "
                             f"(known: {', '.join(SIGNALS)})")

    @classmethod
    def without(cls, *names: str) -> "RankingConfig":
        """The default config with ``names`` switched off too."""
        return cls(disabled=DEFAULT_OFF | frozenset(names))

    @classmethod
    def with_(cls, *names: str) -> "RankingConfig":
        """The default config with the default-off signals ``names`` switched on."""
        return cls(disabled=DEFAULT_OFF - frozenset(names))

    @classmethod
    def everything(cls) -> "RankingConfig":
        """Every signal on."""
        return cls(disabled=frozenset())

    def on(self, name: str) -> bool:
        return name not in self.disabled

    def weight(self, name: str) -> float:
        return dict(self.weights).get(name, WEIGHTS[name])


@dataclass
class Candidate:
    """One chunk under ranking. ``origin``: ``hybrid``, ``name_lookup`` or ``phrase_lookup``;
    ``hybrid``: its fused hybrid score (0 for looked-up chunks); ``signals``: value per
    signal (before weighting); ``score``: the final ranking score."""

    chunk: StoredChunk
    hybrid: float
    origin: str = "hybrid"
    signals: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    # per-chunk signal values, which depend only on the question: computed once, reused
    # when the same candidates are ranked under several configs (the ablation)
    base: dict[str, float] | None = field(default=None, repr=False)


# ----------------------------------------------------------------------------- signals
def question_is_symbol(qa: QueryAnalysis) -> str | None:
    """The identifier when the whole question is one (backticks, ``()``, ``?`` allowed)."""
    q = qa.question.strip().strip("`'\"?!. ").removesuffix("()")
    if q and " " not in q and re.fullmatch(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*", q):
        return q
    return None


def _definition(c: StoredChunk, qa: QueryAnalysis, full_names: set[str]) -> float:
    if not c.symbol or c.kind not in DEFINITION_KINDS:
        return 0.0
    if c.symbol.lower() in full_names:
        return 1.0
    last = c.symbol.rsplit(".", 1)[-1].lower()
    return 0.8 if last in qa.names else 0.0


def _symbol_query(c: StoredChunk, ident: str | None) -> float:
    if not ident or not c.symbol or c.kind not in DEFINITION_KINDS:
        return 0.0
    if c.symbol == ident or c.symbol.endswith("." + ident):
        return 1.0
    if c.symbol.rsplit(".", 1)[-1] == ident.rsplit(".", 1)[-1]:
        return 0.5
    return 0.0


def normalize_text(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


_PHRASE_WORD = re.compile(r"[A-Za-z0-9]+")
# quoted_phrase: a chunk holding at least this share of a quoted message's words (not
# verbatim: messages in code are format strings) scores that share times PARTIAL_PHRASE.
PHRASE_MIN_SHARE = 0.75
PARTIAL_PHRASE = 0.7


def _quoted(c: StoredChunk, phrases: list[str]) -> float:
    if not phrases:
        return 0.0
    body = normalize_text(c.content)
    if any(p in body for p in phrases):
        return 1.0
    have = {w.lower() for w in _PHRASE_WORD.findall(c.content)}
    best = 0.0
    for p in phrases:
        words = {w.lower() for w in _PHRASE_WORD.findall(p)}
        if words:
            share = len(words & have) / len(words)
            if share >= PHRASE_MIN_SHARE:
                best = max(best, share * PARTIAL_PHRASE)
    return best


def path_stems(path: str) -> set[str]:
    """Stems of the path's folder names and of the words of its file stem."""
    parts = path.split("/")
    words: list[str] = []
    for d in parts[:-1]:
        words += split_identifier(d) or [d.lower()]
        words.append(d.lower())
    fname = parts[-1].split(".")[0]
    words += split_identifier(fname) or [fname.lower()]
    words.append(fname.lower())
    return {stem(w) for w in words if len(w) >= 3}


def _path_match(c: StoredChunk, qstems: list[str]) -> float:
    if not qstems:
        return 0.0
    ps = path_stems(c.path)
    return sum(1 for s in qstems if s in ps) / len(qstems)


def _best_window(c: StoredChunk, qstems: list[str]) -> float:
    if not qstems:
        return 0.0
    want = frozenset(qstems)
    # per line, the question stems it holds; then the best run of WINDOW_LINES lines
    per_line = []
    for line in c.content.split("\n"):
        found: set[str] = set()
        for tok in _WORD.findall(line):
            found |= _token_stems(tok) & want
        per_line.append(found)
    best = 0
    step = max(1, WINDOW_LINES // 2)
    for i in range(0, max(1, len(per_line) - WINDOW_LINES + step), step):
        got = set().union(*per_line[i:i + WINDOW_LINES])
        best = max(best, len(got))
        if best == len(want):
            break
    return best / len(want)


def _small_fragment(c: StoredChunk, defined: float) -> float:
    if defined:
        return 0.0
    lines = c.end_line - c.start_line + 1
    value = STUB_KINDS.get(c.kind, 0.0)
    if lines <= STUB_LINES and c.kind not in ("function", "method", "class"):
        value = 1.0  # a heading-only section, a one-line window: a small function is a body
    return value


def role_value(path: str, question: str) -> float:
    """Penalty value in [0, 1] for the file's role given what the question asks for
    (negative for a docs file and a docs question: a promotion)."""
    role = file_role(path)
    if role == "test" and _ASKS_TESTS.search(question):
        return 0.0
    if role in ("docs", "changelog") and _ASKS_DOCS.search(question):
        return -0.5 if role == "docs" else 0.0
    if role == "example" and _ASKS_EXAMPLES.search(question):
        return 0.0
    return ROLE_PENALTY.get(role, 0.0)


def _legacy(c: StoredChunk, question_lower: str, max_version: int) -> float:
    for d in c.path.lower().split("/")[:-1]:
        if d in _LEGACY_DIRS and not re.search(rf"\b{re.escape(d)}\b", question_lower):
            return 1.0
        m = _VERSION_DIR.match(d)
        if m and int(m.group(1)) < max_version and d not in question_lower.split():
            return 1.0
    return 0.0


def _max_version(cands: Iterable[Candidate]) -> int:
    best = 0
    for c in cands:
        for d in c.chunk.path.lower().split("/")[:-1]:
            m = _VERSION_DIR.match(d)
            if m:
                best = max(best, int(m.group(1)))
    return best


# ----------------------------------------------------------------------------- ranking
def hub_candidates(candidates: Sequence[Candidate]) -> list[tuple[str, str, str]]:
    """``(repo, path, symbol)`` of the code chunks among the top :data:`HUB_DEPTH` hybrid
    candidates: the definitions whose call links ``call_hub`` needs."""
    top = sorted((c for c in candidates if c.origin == "hybrid"), key=lambda x: -x.hybrid)[:HUB_DEPTH]
    return [(c.chunk.repo, c.chunk.path, c.chunk.symbol) for c in top
            if c.chunk.symbol and c.chunk.kind in HUB_KINDS]


def _hub_values(cands: Sequence[Candidate], links: Iterable[tuple[str, str, str, str, str]]) -> dict[str, float]:
    """call_hub value per candidate uuid from ``links`` = ``(repo, caller_path,
    caller_symbol, callee_path, callee_symbol)`` among :func:`hub_candidates`."""
    best: dict[tuple[str, str, str], Candidate] = {}
    for c in sorted((c for c in cands if c.origin == "hybrid"), key=lambda x: -x.hybrid)[:HUB_DEPTH]:
        if c.chunk.symbol and c.chunk.kind in HUB_KINDS:
            best.setdefault((c.chunk.repo, c.chunk.path, c.chunk.symbol), c)
    total: dict[str, float] = {}
    for repo, cp, cs, ep, es in links:
        caller, callee = best.get((repo, cp, cs)), best.get((repo, ep, es))
        if caller is None or callee is None or caller is callee:
            continue
        total[caller.chunk.uuid] = total.get(caller.chunk.uuid, 0.0) + callee.hybrid
        total[callee.chunk.uuid] = total.get(callee.chunk.uuid, 0.0) + HUB_CALLER_SHARE * caller.hybrid
    return {u: min(1.0, v / HUB_SATURATION) for u, v in total.items()}


def rank(qa: QueryAnalysis, candidates: Sequence[Candidate], config: RankingConfig = RankingConfig(),
         *, limit: int | None = None,
         links: Iterable[tuple[str, str, str, str, str]] = ()) -> list[Candidate]:
    """Score and order ``candidates`` (any order; duplicates by uuid are merged, the
    hybrid origin kept) for the question read as ``qa``. Returns at most ``limit``
    candidates (all when ``None``), best first, each with ``signals`` and ``score`` set.
    ``links``: call edges among :func:`hub_candidates` as ``(repo, caller_path,
    caller_symbol, callee_path, callee_symbol)`` (signal ``call_hub``; empty = 0).
    Looked-up candidates (``origin != "hybrid"``) are dropped when the signal that
    looked them up is disabled."""
    byid: dict[str, Candidate] = {}
    for c in candidates:
        if c.origin == "name_lookup" and not (config.on("definition") or config.on("symbol_query")):
            continue
        if c.origin == "phrase_lookup" and not config.on("quoted_phrase"):
            continue
        prev = byid.get(c.chunk.uuid)
        if prev is None or (prev.origin != "hybrid" and c.origin == "hybrid"):
            byid[c.chunk.uuid] = c
    cands = list(byid.values())
    question_lower = qa.question.lower()
    full_names = {i.lower() for i in qa.identifiers if "." in i}
    ident = question_is_symbol(qa)
    phrases = [normalize_text(p) for p in qa.quoted if len(p.strip()) >= 6]
    qstems = list(dict.fromkeys(stem(w) for w in content_words(qa.question)))
    max_version = _max_version(cands)
    by_file: dict[tuple[str, str], list[Candidate]] = {}
    for c in sorted(cands, key=lambda x: -x.hybrid)[:COHERENCE_DEPTH]:
        by_file.setdefault((c.chunk.repo, c.chunk.path), []).append(c)

    for c in cands:
        if c.base is not None:
            c.signals = dict(c.base)
            continue
        ch = c.chunk
        s: dict[str, float] = {}
        # the hybrid query's Boost already promotes the definitions it returned
        # (retriever.HYBRID_BOOSTS); this signal lifts those it missed, looked up by name
        s["definition"] = _definition(ch, qa, full_names) if c.origin == "name_lookup" or not BOOSTED else 0.0
        s["symbol_query"] = _symbol_query(ch, ident)
        s["quoted_phrase"] = _quoted(ch, phrases)
        s["path_match"] = _path_match(ch, qstems)
        s["best_window"] = _best_window(ch, qstems)
        s["small_fragment"] = _small_fragment(ch, s["definition"] or s["symbol_query"])
        s["role_prior"] = role_value(ch.path, qa.question)
        s["legacy"] = _legacy(ch, question_lower, max_version)
        s["file_coherence"] = 0.0
        s["call_hub"] = 0.0
        c.signals = s
    if any(c.base is None for c in cands):
        for uuid, v in _hub_values(cands, links).items():
            byid[uuid].signals["call_hub"] = v
        for group in by_file.values():
            if len(group) < 2:
                continue
            best = max(group, key=lambda x: x.hybrid)
            others = sum(x.hybrid for x in group if x is not best)
            best.signals["file_coherence"] = min(1.0, others / COHERENCE_SATURATION)
        for c in cands:
            c.base = dict(c.signals)
    for c in cands:
        c.score = c.hybrid + sum(config.weight(n) * v for n, v in c.signals.items() if config.on(n))
    return diversify(cands, config, limit=limit)


def diversify(cands: Sequence[Candidate], config: RankingConfig = RankingConfig(),
              *, limit: int | None = None) -> list[Candidate]:
    """Greedy order by ``score`` minus ``|diversity weight|`` times the number of chunks
    already picked from the same file beyond :data:`DIVERSITY_FREE` - 1 (ties: the
    earlier candidate). Sets
    ``signals["diversity"]`` to that count for each picked candidate."""
    pool = sorted(cands, key=lambda x: -x.score)
    want = len(pool) if limit is None else min(limit, len(pool))
    if not config.on("diversity"):
        for c in pool:
            c.signals["diversity"] = 0.0
        return pool[:want]
    w = abs(config.weight("diversity"))
    picked: list[Candidate] = []
    per_file: dict[tuple[str, str], int] = {}
    while pool and len(picked) < want:
        best_i, best_v = 0, None
        for i, c in enumerate(pool):
            v = c.score - w * max(0, per_file.get((c.chunk.repo, c.chunk.path), 0) - DIVERSITY_FREE + 1)
            if best_v is None or v > best_v:
                best_i, best_v = i, v
            if i > 60:  # far enough: nothing below can overtake by more than the penalty
                break
        c = pool.pop(best_i)
        key = (c.chunk.repo, c.chunk.path)
        c.signals["diversity"] = float(per_file.get(key, 0))
        per_file[key] = per_file.get(key, 0) + 1
        picked.append(c)
    return picked


def ranking_config(no_signal: Sequence[str] | None, signal: Sequence[str] | None = None) -> RankingConfig:
    """The config for ``--no-signal NAME`` / ``--signal NAME`` options (repeatable, comma
    lists allowed): the default, minus ``no_signal``, plus ``signal``. Raises
    :class:`indexer.BadInput` naming an unknown signal."""
    from indexer import BadInput

    def names(items):
        return {n.strip() for item in (items or []) for n in item.split(",") if n.strip()}

    try:
        return RankingConfig(disabled=(DEFAULT_OFF - names(signal)) | names(no_signal))
    except ValueError as exc:
        raise BadInput(str(exc)) from None
