"""The ranking stage: re-score the hybrid query's (generous) candidate list with named,
weighted signals, then order it.

Weaviate's hybrid query (BM25F + vector, relative-score fusion) gives every candidate a
``hybrid`` score in [0, 1] (the best candidate scores 1). This module adds, per
candidate, the weighted value of each signal below and sorts by the sum::

    score = hybrid + sum(weight[s] * value[s] for s in enabled signals)

and orders by it. Every signal reads only the question, the chunk (path, symbol, kind,
lines, content) and, for ``call_hub``, the repository's own call graph, so it makes
sense for any codebase; none knows a repository. Signal values are mostly in [0, 1] (penalties with
negative weights; ``role_prior`` is -0.5 for a docs question's docs, ``file_diversity`` counts chunks).

Signals (``SIGNALS``; each can be switched off alone with :class:`RankingConfig`, and
each earned its place on ``shared/eval/dev.jsonl`` + ``bench/data/dev2.jsonl`` or on the
public benchmark, docs/benchmarks.md "Ablation"):

``quoted_phrase``
    The question quotes a message (``"next() called multiple times"``): 1.0 for the chunk
    whose content holds the exact phrase (case and whitespace folded), 0.7 x the share of
    its words for a chunk holding at least 75% of them (a format string). A keyword-only
    query for the phrase adds the chunks that contain its words.
``best_window``
    Long chunks are embedded as a mean of windows, which dilutes a mid-body match: the
    share of the question's content words found in the chunk's best 25-line window
    (every chunk has at least one window), so a function whose relevant part is mid-body
    still scores for it.
``role_prior``
    Tests, changelogs, docs and examples are demoted for code questions; a question
    about tests, docs ("documentation", "README", "guide", "recommend") or examples
    is not demoted for (and docs are promoted for a docs question). Localized copies of
    a resource (``messages_de.properties`` beside ``messages.properties`` or another
    language, :func:`_localized_copies`) get :data:`LOCALIZED_PENALTY`: they repeat the
    base file in other languages and crowd it out.
``call_hub``
    Query-dependent degree centrality in the call graph: among the top
    :data:`HUB_DEPTH` hybrid candidates, a code chunk that calls (or is called by) other
    candidates connects the pieces the question is about; architecture and behaviour
    questions ("how are routes registered", "what happens end to end") are answered by
    that orchestrating function rather than by one of the pieces. Value: the summed
    hybrid scores of its linked candidates (callees count fully, callers by
    :data:`HUB_CALLER_SHARE`) over :data:`HUB_SATURATION`, capped at 1. A candidate that
    calls exactly one other candidate is a wrapper that delegates (:data:`HUB_DELEGATION`):
    its link counts in full for the callee and not for itself, so ``ToMiddleware`` outranks
    ``BodyLimit`` -> ``BodyLimitWithConfig`` in front of it. The links come
    from the SQL call graph (:func:`indexer.read.graph_links`, one query per search); without
    a graph the signal is 0. The idea is Kleinberg's query-focused subgraph (HITS),
    scored by degree only (one hop: cheap and stable).

``symbol_definition``
    A question that is one identifier (``Semaphore``, ``Rack::Builder``): 1.0 for the
    chunk defining exactly that name as a class, 0.8 as a function, 0.5 for a chunk of
    the file named after it (``Monad.scala``). For such a question ``call_hub`` is off:
    the members and callers it lifts are not what was asked for.
``path_match``
    Share of the file name's words (a generic name such as ``mod.rs`` or ``index.ts``
    reads its folder's) the question uses; a word also counts when one abbreviates the
    other (``impls`` / "implementations").
``file_diversity``
    A greedy re-order after scoring: each chunk of a file beyond the first
    :data:`DIVERSITY_FREE` above it pays the (negative) weight, so the top results cover
    more files rather than one file's many chunks.

The last three were added on a public third-party benchmark (bench/public_eval.py, nine
of the fourteen languages the table-driven chunker added) and weighted so that dev +
dev2 stayed at the previous release's level; docs/benchmarks.md has both ablations.
``symbol_definition`` gains on the public set only; ``path_match`` on both (dev2 MRR,
public NDCG); ``file_diversity`` on both (dev2 recall@5, public NDCG) at a small dev
NDCG cost; ``best_window``, ``quoted_phrase`` and ``role_prior`` on the dev sets only
(``best_window`` costs the public set 0.003); ``call_hub`` mostly on the dev sets.
Tried and removed: ``file_evidence`` (the other candidates of a file lifting its best
chunk: -0.005 NDCG@10 on the public set, mixed on the dev sets), a stronger docs demotion
(no gain), a ``definition`` look-up by name (superseded by ``symbol_definition``), a
small-fragment demotion and a legacy-tree demotion.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Iterable, Sequence

import snowballstemmer

import indexer.read
from common.identifiers import split_identifier

from .query_analysis import QueryAnalysis

if TYPE_CHECKING:
    from indexer.read import StoredChunk

# Weights, in units of the hybrid score (the best hybrid candidate scores 1.0). Set on a
# grid over shared/eval/dev.jsonl + bench/data/dev2.jsonl and the public benchmark
# together (docs/benchmarks.md "Ablation";
# bench/retrieval_eval.py prints the ablation of each).
WEIGHTS: dict[str, float] = {
    "quoted_phrase": 0.8,
    "best_window": 0.3,
    "role_prior": -0.4,
    "call_hub": 0.2,
    "symbol_definition": 0.6,
    "path_match": 0.1,
    "file_diversity": -0.15,
}
SIGNALS = tuple(WEIGHTS)
# Every signal is on by default; ``--no-signal NAME`` switches one off.
DEFAULT_OFF: frozenset[str] = frozenset()

# Role values for role_prior (multiplied by its negative weight: 1.0 = full demotion).
ROLE_PENALTY = {"test": 1.0, "changelog": 1.0, "docs": 0.5, "example": 0.5, "code": 0.0}
# best_window: window length (lines), the same as the indexer's embedding sub-windows.
WINDOW_LINES = 25
# call_hub: links are looked up among this many top hybrid candidates; a caller link
# weighs HUB_CALLER_SHARE of a callee link (an orchestrator calls the pieces; a helper
# called by many is a piece); the summed linked scores saturate at HUB_SATURATION.
HUB_DEPTH = 30
HUB_CALLER_SHARE = 0.5
HUB_SATURATION = 1.5
HUB_KINDS = {"function", "method"}
# A candidate that calls exactly one other candidate delegates to it (a wrapper such as
# ``BodyLimit`` -> ``BodyLimitWithConfig`` -> ``ToMiddleware``): the link then counts
# for the callee in full and not for the wrapper, so the piece that does the work
# outranks the thin functions in front of it.
HUB_DELEGATION = True

_ASKS_TESTS = re.compile(r"\b(test|tests|tested|testing|spec|specs|coverage|fixture|fixtures)\b", re.I)
_ASKS_DOCS = re.compile(r"\b(doc|docs|documentation|documented|readme|guide|tutorial|recommends?|"
                        r"recommended|manual|changelog|release notes?)\b", re.I)
_ASKS_EXAMPLES = re.compile(r"\b(example|examples|sample|samples|demo)\b", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]+")
_SPACE = re.compile(r"\s+")

# Words too common in questions to carry meaning for window matching.
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
    def everything(cls) -> "RankingConfig":
        """Every signal on."""
        return cls(disabled=frozenset())

    def on(self, name: str) -> bool:
        return name not in self.disabled

    def weight(self, name: str) -> float:
        return dict(self.weights).get(name, WEIGHTS[name])


@dataclass
class Candidate:
    """One chunk under ranking. ``origin``: ``hybrid`` or ``phrase_lookup``;
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


# A localized copy of a resource: ``messages_de.properties``, ``strings-pt_BR.json``,
# ``README.de.md`` (Java ResourceBundle / Rails / i18next-style names: stem, an ISO 639-1
# language code, optional region, a resource or text extension). Counted as one only when
# a sibling candidate (same folder, stem and extension) is the base file or another
# language: the copies then say what the base says, in other languages, and crowd it out.
# Code files never count (``path_js.go``, ``setup_de.py``, ``model_pb.py`` are code).
_LOCALIZED = re.compile(r"^(?P<stem>.+?)[._-](?P<lang>[a-z]{2})(?:[_-][A-Z]{2}|[_-][A-Z][a-z]{3})?"
                        r"(?P<ext>\.(?:properties|json|ya?ml|po|strings|xml|resx|arb|xlf|xliff|ini|toml|"
                        r"md|rst|txt|adoc|html?))$")
# ISO 639-1 two-letter language codes (the 184 of ISO 639-1:2002).
ISO_639_1 = frozenset("""
aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv
cy da de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr
ht hu hy hz ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw
ky la lb lg li ln lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv
ny oc oj om or os pa pi pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr
ss st su sv sw ta te tg th ti tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi
yo za zh zu
""".split())
LOCALIZED_PENALTY = 0.5


def _localized_name(name: str) -> re.Match | None:
    """The :data:`_LOCALIZED` match of a file name whose language part is an ISO 639-1 code."""
    m = _LOCALIZED.match(name)
    return m if m and m.group("lang") in ISO_639_1 else None


def _localized_copies(paths: Iterable[str]) -> set[str]:
    """The paths among ``paths`` that are localized copies (see :data:`_LOCALIZED`) with a
    sibling in ``paths`` from the same family (the base file or another language)."""
    families: dict[tuple[str, str, str], set[str]] = {}
    localized: set[str] = set()
    for p in set(paths):
        folder, _, name = p.rpartition("/")
        m = _localized_name(name)
        if m:
            localized.add(p)
            stem, ext = m.group("stem"), m.group("ext")
        else:
            stem, dot, ext = name.rpartition(".")
            stem, ext = (stem, dot + ext) if dot else (name, "")
        families.setdefault((folder, stem, ext), set()).add(p)
    return {p for fam in families.values() if len(fam) > 1 for p in fam if p in localized}


def role_value(path: str, question: str) -> float:
    """Penalty value in [0, 1] for the file's role given what the question asks for
    (negative for a docs file and a docs question: a promotion)."""
    role = indexer.read.file_role(path)
    if role == "test" and _ASKS_TESTS.search(question):
        return 0.0
    if role in ("docs", "changelog") and _ASKS_DOCS.search(question):
        return -0.5 if role == "docs" else 0.0
    if role == "example" and _ASKS_EXAMPLES.search(question):
        return 0.0
    return ROLE_PENALTY.get(role, 0.0)


# symbol_definition: a question that is one identifier (``Semaphore``, ``Rack::Builder``,
# ``basic_memory_buffer``), as people type into code search.
_SYMBOL_QUERY = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*(?:(?:::|\.|#|->)[A-Za-z_][A-Za-z0-9_]*)*)\s*(?:\(\))?\s*$")
_DEFINITION_KINDS = {"class": 1.0, "class_signature": 1.0, "function": 0.8, "method": 0.8}
# path_match: file stems that say nothing of what the file holds; their folder names it.
GENERIC_STEMS = frozenset({"mod", "lib", "index", "__init__", "main", "init", "core", "common", "base",
                           "util", "utils", "helpers", "types", "package", "default"})


def symbol_query(question: str) -> str | None:
    """The identifier a one-identifier question names (its last part: ``Rack::Builder`` ->
    ``Builder``), else ``None``."""
    m = _SYMBOL_QUERY.match(question)
    if not m:
        return None
    return re.split(r"::|\.|#|->", m.group(1))[-1]


def _symbol_definition(c: StoredChunk, name: str | None) -> float:
    """1.0 (a class) / 0.8 (a function) for the chunk defining exactly ``name`` (its
    symbol's last part, case-sensitive), 0.5 for a chunk of the file named after it
    (``Monad.scala``, ``flat_hash_map.h``), else 0."""
    if not name:
        return 0.0
    if c.symbol and re.split(r"[.:#]", c.symbol)[-1] == name:
        return _DEFINITION_KINDS.get(c.kind, 0.0)
    stem = c.path.rsplit("/", 1)[-1].split(".", 1)[0]
    return 0.5 if stem == name else 0.0


@lru_cache(maxsize=50_000)
def _file_words(path: str) -> frozenset[str]:
    """Stems of the words of a file's name (``body_proxy.rb`` -> ``body``, ``proxi``); for a
    generic name (``mod.rs``, ``index.ts``, ``__init__.py``) its folder's name instead."""
    parts = path.split("/")
    base = parts[-1].split(".", 1)[0]
    if base.lower() in GENERIC_STEMS and len(parts) > 1:
        base = parts[-2]
    return frozenset(stem(w) for w in (split_identifier(base) or [base.lower()])
                     if len(w) >= 3 and w not in STOPWORDS)


def _path_match(c: StoredChunk, qstems: frozenset[str]) -> float:
    """Share of the file name's words the question uses (all of them = 1.0). A word also
    counts when one is a prefix of the other, at least 4 letters (file names abbreviate:
    ``impls`` for "implementations", ``auth`` for "authentication")."""
    words = _file_words(c.path)
    if not words or not qstems:
        return 0.0
    hit = 0
    for w in words:
        if w in qstems or (len(w) >= 4 and any(q.startswith(w) or (len(q) >= 4 and w.startswith(q))
                                               for q in qstems)):
            hit += 1
    return hit / len(words)


# file_diversity: this many chunks of a file are placed before the penalty starts.
DIVERSITY_FREE = 2
# path_match applies to questions of at most this many content words (None: all):
# a file name answers a short, search-style query ("multipart form data parsing");
# in a long question its words are incidental.
PATH_MATCH_MAX_WORDS: int | None = None


def _diversify(ordered: list[Candidate], weight: float) -> list[Candidate]:
    """Re-order so that the k-th chunk of a file (counting from 1, in the new order)
    pays ``weight`` (negative) times ``k - DIVERSITY_FREE`` when that is positive: the
    first :data:`DIVERSITY_FREE` chunks of a file are free, each further one pays more,
    and the top results cover more files instead of one file's many chunks. Greedy,
    stable for ties; the penalty is added to ``score`` and its multiplier recorded as the
    ``file_diversity`` signal."""
    placed: dict[tuple[str, str], int] = {}
    pending = list(ordered)
    out: list[Candidate] = []
    while pending:
        best_i, best = 0, None
        for i, c in enumerate(pending):
            if best is not None and c.score < best:  # sorted by score: nothing later can win
                break
            adj = c.score + weight * max(0, placed.get((c.chunk.repo, c.chunk.path), 0) - DIVERSITY_FREE + 1)
            if best is None or adj > best:
                best_i, best = i, adj
        c = pending.pop(best_i)
        key = (c.chunk.repo, c.chunk.path)
        c.signals["file_diversity"] = float(max(0, placed.get(key, 0) - DIVERSITY_FREE + 1))
        c.score = best
        placed[key] = placed.get(key, 0) + 1
        out.append(c)
    return out


# ----------------------------------------------------------------------------- ranking
def _hub_top(candidates: Sequence[Candidate]) -> dict[tuple[str, str, str], Candidate]:
    """The code chunks (functions, methods) among the top :data:`HUB_DEPTH` hybrid
    candidates, by ``(repo, path, symbol)``, best first."""
    top: dict[tuple[str, str, str], Candidate] = {}
    for c in sorted((c for c in candidates if c.origin == "hybrid"), key=lambda x: -x.hybrid)[:HUB_DEPTH]:
        if c.chunk.symbol and c.chunk.kind in HUB_KINDS:
            top.setdefault((c.chunk.repo, c.chunk.path, c.chunk.symbol), c)
    return top


def hub_candidates(candidates: Sequence[Candidate]) -> list[tuple[str, str, str]]:
    """``(repo, path, symbol)`` of the code chunks among the top :data:`HUB_DEPTH` hybrid
    candidates: the definitions whose call links ``call_hub`` needs."""
    return list(_hub_top(candidates))


def _hub_values(cands: Sequence[Candidate], links: Iterable[tuple[str, str, str, str, str]]) -> dict[str, float]:
    """call_hub value per candidate uuid from ``links`` = ``(repo, caller_path,
    caller_symbol, callee_path, callee_symbol)`` among :func:`hub_candidates`."""
    best = _hub_top(cands)
    pairs: dict[str, tuple[Candidate, dict[str, Candidate]]] = {}
    for repo, cp, cs, ep, es in links:
        caller, callee = best.get((repo, cp, cs)), best.get((repo, ep, es))
        if caller is None or callee is None or caller is callee:
            continue
        pairs.setdefault(caller.chunk.uuid, (caller, {}))[1][callee.chunk.uuid] = callee
    total: dict[str, float] = {}
    for caller, callees in pairs.values():
        delegates = HUB_DELEGATION and len(callees) == 1
        for callee in callees.values():
            if not delegates:
                total[caller.chunk.uuid] = total.get(caller.chunk.uuid, 0.0) + callee.hybrid
            share = 1.0 if delegates else HUB_CALLER_SHARE
            total[callee.chunk.uuid] = total.get(callee.chunk.uuid, 0.0) + share * caller.hybrid
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
        if c.origin == "phrase_lookup" and not config.on("quoted_phrase"):
            continue
        prev = byid.get(c.chunk.uuid)
        if prev is None or (prev.origin != "hybrid" and c.origin == "hybrid"):
            byid[c.chunk.uuid] = c
    cands = list(byid.values())
    phrases = [normalize_text(p) for p in qa.quoted if len(p.strip()) >= 6]
    qstems = list(dict.fromkeys(stem(w) for w in content_words(qa.question)))
    qstem_set = frozenset(qstems)
    sym = symbol_query(qa.question)
    localized = _localized_copies(c.chunk.path for c in cands)
    for c in cands:
        if c.base is not None:
            c.signals = dict(c.base)
            continue
        ch = c.chunk
        s: dict[str, float] = {}
        s["quoted_phrase"] = _quoted(ch, phrases)
        s["best_window"] = _best_window(ch, qstems)
        s["role_prior"] = role_value(ch.path, qa.question)
        if ch.path in localized:
            s["role_prior"] = max(s["role_prior"], LOCALIZED_PENALTY)
        s["call_hub"] = 0.0
        s["symbol_definition"] = _symbol_definition(ch, sym)
        s["path_match"] = _path_match(ch, qstem_set)
        c.signals = s
    if any(c.base is None for c in cands):
        # a one-identifier question wants the definition, not the code around it: the
        # call graph's hubs (members and callers of the class) are not asked for
        for uuid, v in (() if sym else _hub_values(cands, links).items()):
            byid[uuid].signals["call_hub"] = v
        for c in cands:
            c.base = dict(c.signals)
    path_on = PATH_MATCH_MAX_WORDS is None or len(qstems) <= PATH_MATCH_MAX_WORDS
    for c in cands:
        c.signals.pop("file_diversity", None)
        c.score = c.hybrid + sum(config.weight(n) * v for n, v in c.signals.items()
                                 if config.on(n) and (path_on or n != "path_match"))
    ordered = sorted(cands, key=lambda x: -x.score)  # stable: ties keep the earlier candidate
    if config.on("file_diversity"):
        ordered = _diversify(ordered, config.weight("file_diversity"))
    return ordered if limit is None else ordered[:limit]


def ranking_config(no_signal: Sequence[str] | None) -> RankingConfig:
    """The config for ``--no-signal NAME`` options (repeatable, comma lists allowed): the
    default minus ``no_signal``. Raises :class:`common.errors.BadInput` naming an unknown
    signal."""
    from common.errors import BadInput

    names = {n.strip() for item in (no_signal or []) for n in item.split(",") if n.strip()}
    try:
        return RankingConfig(disabled=DEFAULT_OFF | names)
    except ValueError as exc:
        raise BadInput(str(exc)) from None
