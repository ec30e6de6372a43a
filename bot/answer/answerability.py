"""Is the question answerable from the searched sources? A calibrated decision that
replaces the cosine-only guardrail.

Signals (each measured: docs/benchmarks.md, "No coverage"; ``bench/retrieval_eval.py`` prints the
trade-off):

1. **Vocabulary.** The question's distinctive terms, looked up in the searched sources'
   keyword index (``ChunkStore.query.keyword``, BM25 over content,
   identifiers, symbol and path words, so docs count too):
   - *strong* terms: code identifiers (backticks, ``snake_case``, ``camelCase``, dotted,
     ``foo()``), quoted strings (one chunk must hold :data:`QUOTED_MIN_SHARE` of their
     words: messages in code are format strings), and names that
     look like technologies or products (capitalised inside the sentence, inner capitals
     or digits, acronyms: ``Kafka``, ``GraphQL``, ``OAuth2``, ``JWT``);
   - *plain* words: the other content words (stop words and question words removed),
     covered when the word or a simple inflection of it (``webhooks`` ~ ``webhook``)
     is indexed.
2. **Support.** Whether retrieval found something the question names: a top-3 hit that
   holds a quoted phrase (ranking signal ``quoted_phrase``), or a covered identifier or
   quoted message.
3. **Similarity.** The best hit's cosine with the question (weak on its own with MiniLM).
4. **Margin** (measured, not used): the ranking score of the first candidate minus the
   fifth's separates answerable questions less well than the cosine (ROC AUC 0.80 vs
   0.94 on the dev sets; docs/benchmarks.md).

Decision (:func:`decide`, thresholds in :data:`THRESHOLDS`): refuse (no model call) when
a strong term is uncovered and nothing supports the question, or when at least
``min_uncovered_share`` of the plain words are uncovered and nothing supports it, or when
the best cosine is under ``min_cosine``, or (the gap rule) when a key word (a plain word
or a hyphenated compound) is uncovered, nothing supports the question and the best cosine
is under ``gap_cosine``: a word no source has, with nothing close in meaning either.
Otherwise answer; uncovered strong terms and compounds are named in the answer
("nothing in shop@1a2b3c4 mentions Kafka; the closest is ... [1]").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from common.corners import is_corner
from indexer.read import CHANGE_WORDS, asks_what_changed

from ..retrieval.ranking import STOPWORDS, normalize_text
from ..retrieval.retriever import SearchResult

# Shipped decision thresholds (docs/benchmarks.md shows the trade-off around them).
# Chosen on the answerable questions of dev.jsonl + dev2.jsonl and the no-answer questions
# of bench/data/noanswer.jsonl + noanswer_pm.jsonl, with the local embedding model:
# gap_cosine is the largest of the grid that refuses at most 1 in 30 answerable questions
# (3 / 103; 55 / 60 no-answer refused). Cosines depend on the model: with voyage-code-3
# these numbers are not calibrated.
THRESHOLDS = {"min_uncovered_share": 0.67, "min_cosine": 0.25, "strong_rule": True, "gap_cosine": 0.38}

_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#.\-]*[A-Za-z0-9+#]|[A-Za-z]")
_SENTENCE_START = re.compile(r"(^|[.!?:]\s+|\n)\s*[\"'`(]?$")
# Words a question is made of that say nothing about the code asked about.
QUESTION_WORDS = STOPWORDS | frozenset("""
app application project repo repository codebase product feature features system service
support supports supported allow allows allowed able possible currently today user users
customer customers someone anybody anyone way ways option options kind sort please know
wonder wondering thing stuff part parts handle handles handled handling happen there
implement implemented implementation provide provides available built built-in builtin
does did doing done go goes going cause causes anything something everything else yet
still already ever always never often also case cases exist exists existing specific
but yes isn aren doesn didn don won nothing somewhere say says
""".split())


@dataclass
class Term:
    """One distinctive question term: ``text`` as asked, ``kind`` ``identifier``,
    ``quoted``, ``name`` (technology/product-like) or ``word``; ``covered``: found in
    the searched sources' vocabulary."""

    text: str
    kind: str
    covered: bool = False
    #: When the only sources holding it are a corner (an example, a test, CI): one such path.
    corner: str = ""
    #: A compound one of whose words (4+ letters) the sources never use (``rate`` of ``rate-limit``).
    foreign_part: str = ""
    #: A technology-like name only documentation mentions (no code or configuration): one such doc.
    docs_only: str = ""

    @property
    def strong(self) -> bool:
        """An identifier, a quoted message or a technology-like name: uncovered, it refuses
        alone. A plain word or a hyphenated compound (``protocol-relative``) is a key word:
        it refuses with weak similarity (the gap rule), since questions that can be
        answered use such words too (``protocol-relative`` where the code says "scheme");
        a compound with a word the sources never use at all (``rate-limit`` where nothing
        says "rate") names something foreign and refuses alone."""
        return self.kind not in ("word", "compound") or bool(self.foreign_part)

    @property
    def label(self) -> str:
        """The term as an answer names it: ``Redis (except in examples/celery/README.md)``."""
        return f"{self.text} (except in {self.corner})" if self.corner else self.text


@dataclass
class Assessment:
    """The answerability evidence for one question (see the module doc)."""

    terms: list[Term] = field(default_factory=list)
    supported: bool = False
    best_cosine: float = 0.0
    margin: float = 0.0
    hits: int = 0

    def features(self) -> dict:
        """Plain dict for :func:`decide` and the benchmark's trade-off table."""
        strong = [t for t in self.terms if t.strong]
        words = [t for t in self.terms if not t.strong]
        return {"strong_uncovered": [t.label for t in strong if not t.covered],
                "strong_covered": [t.text for t in strong if t.covered],
                "words": len(words), "words_uncovered": [t.label for t in words if not t.covered],
                "supported": self.supported, "best_cosine": round(self.best_cosine, 4),
                "margin": round(self.margin, 4), "hits": self.hits}

    @property
    def refused(self) -> bool:
        return decide(self.features())[0]

    @property
    def uncovered_terms(self) -> list[str]:
        return decide(self.features())[1]


def question_terms(question: str, identifiers: Sequence[str], quoted: Sequence[str],
                   ignore: Sequence[str] = ()) -> list[Term]:
    """Distinctive terms of ``question`` (kinds as in :class:`Term`), in order, without
    repeats; words in ``ignore`` (e.g. the indexed sources' names) are left out."""
    skip = {w.lower() for w in ignore}
    out: list[Term] = []
    seen: set[str] = set()

    def add(text: str, kind: str) -> None:
        key = text.lower()
        if key and key not in seen and key not in skip:
            seen.add(key)
            out.append(Term(text, kind))

    for q in quoted:
        add(q.strip(), "quoted")
    for i in identifiers:
        add(i, "identifier")
    inside = " ".join(quoted)
    covered_by = " ".join(identifiers).lower()
    for m in _TOKEN.finditer(question):
        tok = m.group(0).strip(".-")
        low = tok.lower()
        if not tok or low in QUESTION_WORDS or len(low) < 3 and not tok.isupper():
            continue
        parts = low.split("-")
        if len(parts) > 1 and all(p.isalpha() for p in parts) and low not in GENERIC_COMPOUNDS \
                and sum(len(p) >= 3 for p in parts) >= 2:
            add(low, "compound")  # `rate-limit`, `multi-tenant`: names a feature, as a name does
            continue
        if tok in inside or (low in covered_by and low in {p.lower() for i in identifiers for p in re.split(r"[._]", i)}):
            continue
        if "." in tok:  # a dotted identifier is already an identifier; a host name is not code
            continue
        at_start = bool(_SENTENCE_START.search(question[:m.start()]))
        inner_caps = any(ch.isupper() for ch in tok[1:]) or any(ch.isdigit() for ch in tok)
        acronym = tok.isupper() and len(tok) >= 2
        if acronym or inner_caps or (tok[0].isupper() and not at_start):
            add(tok, "name")
        elif tok.isalpha() and len(low) >= 3:
            add(low, "word")
    return out


def _variants(word: str) -> list[str]:
    w = word.lower()
    out = [w]
    if w.endswith("ies") and len(w) > 4:
        out.append(w[:-3] + "y")
    if w.endswith("es") and len(w) > 4:
        out.append(w[:-2])
    if w.endswith("s") and len(w) > 3:
        out.append(w[:-1])
    if w.endswith("ing") and len(w) > 5:
        out += [w[:-3], w[:-3] + "e"]
    if w.endswith("ed") and len(w) > 4:
        out += [w[:-2], w[:-1]]
    if not w.endswith("s"):
        out.append(w + "s")
    return out


def term_covered(store, term: Term, repos: Sequence[str] | None, *, visible=None, records=None) -> bool:
    """Is ``term`` in the vocabulary of ``repos`` (``None`` = all)? One BM25 query
    (a quoted phrase: the phrase must also occur verbatim, case and spacing folded; a
    compound ``rate-limit``: its parts adjacent, as ``rate limit``, ``rate_limit`` or
    ``RateLimit``). A name, compound or word found only in a corner of the sources (an
    example, a test, CI configuration) is not covered: the product has no such thing, and
    ``term.corner`` says where the word is. ``visible``, ``records``: the search's visible
    filter and source records (:class:`~bot.retrieval.retriever.SearchResult`), so the
    look-ups read the source records no second time."""
    read = {"repos": repos, "include_vector": False, "visible": visible, "records": records}
    if term.kind == "quoted":
        return any(phrase_share(term.text, c.content) >= QUOTED_MIN_SHARE
                   for c in store.query.keyword(term.text, limit=30, **read))
    if term.kind == "identifier":
        parts = [p for p in re.split(r"[.\s]", term.text.strip("`()")) if p]
        query = parts[-1] if parts else term.text
        return bool(store.query.keyword(query, limit=1, **read))
    if term.kind == "compound":
        parts = term.text.split("-")
        stem = parts[-1][:max(3, len(parts[-1]) - 2)]  # `rate-limiting` ~ `rate_limit`, `RateLimiter`
        adjacent = re.compile(r"[\s_\-]?".join(map(re.escape, parts[:-1] + [stem])), re.I)
        hits = [c for c in store.query.keyword(" ".join(parts), limit=CORNER_HITS, **read)
                if adjacent.search(c.content)]
        if not any(not is_corner(c.path) for c in hits):
            term.foreign_part = next((p for p in parts if len(p) >= 4 and not any(
                not is_corner(c.path) for c in store.query.keyword(" ".join(_variants(p)), limit=CORNER_HITS,
                                                                    **read))), "")
    else:
        query = " ".join(_variants(term.text)) if term.kind == "word" else term.text
        hits = store.query.keyword(query, limit=CORNER_HITS, **read)
    if not hits:
        return False
    product = [c for c in hits if not is_corner(c.path)]
    if product:
        if term.kind == "name" and all(_is_prose(c.path) for c in product):
            term.docs_only = product[0].path  # covered (docs can answer "how do I use X"), but said
        return True
    term.corner = hits[0].path
    return False


_PROSE = (".md", ".markdown", ".mdx", ".rst", ".txt", ".adoc")


def _is_prose(path: str) -> bool:
    """Documentation text (Markdown, RST, plain text, AsciiDoc), not code or configuration."""
    return path.lower().endswith(_PROSE)


def docs_only_note(terms: Sequence[Term], where: str) -> str:
    """``No product code in flask@2ac8988 mentions Redis; only its docs do (docs/patterns/celery.rst).``
    for the technology-like names only documentation mentions (empty without any)."""
    named = [t for t in terms if t.docs_only]
    if not named:
        return ""
    names = " or ".join(t.text for t in named)
    docs = ", ".join(dict.fromkeys(t.docs_only for t in named))
    return f"No product code in {where} mentions {names}; only its docs do ({docs})."


#: Keyword hits looked at to tell a corner-only term from a covered one.
CORNER_HITS = 20


#: Hyphenated words any text uses: not the name of a feature.
GENERIC_COMPOUNDS = frozenset("""
built-in real-time up-to-date end-to-end out-of-the-box third-party open-source so-called well-known
long-running high-level low-level step-by-step one-off follow-up opt-in opt-out read-only
non-blocking self-hosted multi-line single-page front-end back-end full-text user-facing
""".split())


SUPPORT_SIGNALS = ("quoted_phrase",)
# A quoted message is covered when one chunk holds at least this share of its words:
# messages in code are format strings ("%s conflicts with existing wildcard %s"), so the
# asker's filled-in copy rarely occurs verbatim. 0.6 keeps the dev sets' quoted error
# messages covered (their filled-in parts are at most 2 of 5+ words).
QUOTED_MIN_SHARE = 0.6
_PHRASE_WORD = re.compile(r"[A-Za-z0-9]+")


def phrase_share(phrase: str, content: str) -> float:
    """Share of the distinct words of ``phrase`` (case folded) that occur as words in
    ``content``; 1.0 when the phrase occurs verbatim (case and spacing folded)."""
    if normalize_text(phrase) in normalize_text(content):
        return 1.0
    words = {w.lower() for w in _PHRASE_WORD.findall(phrase)}
    if not words:
        return 0.0
    have = {w.lower() for w in _PHRASE_WORD.findall(content)}
    return len(words & have) / len(words)


def assess(result: SearchResult, store, sources: Sequence[dict] = ()) -> Assessment:
    """Gather the evidence for ``result`` (a finished search) from ``store``'s keyword
    index, searching the same repos. A question about history ("who touched the retry
    logic recently?": :func:`indexer.read.asks_what_changed`) leaves out the words that
    only ask who or when (``CHANGE_WORDS``): the commits answer those, not the code's
    vocabulary. Raises ``WeaviateUnavailable`` like any search."""
    qa = result.analysis
    names = [s.get("name", "") for s in sources]
    if asks_what_changed(qa.question):  # "who touched the retry logic recently?": answered from history
        names += sorted(CHANGE_WORDS)
    terms = question_terms(qa.question, qa.identifiers, qa.quoted, ignore=names)
    repos = result.repos
    for t in terms:
        t.covered = term_covered(store, t, repos, visible=result.visible, records=result.records)
    top = result.hits[:3]
    # support: retrieval found what the question names (a technology-like word that is
    # merely capitalised, "Signature", "HTTP", is no support)
    supported = any(h.signals.get(s) for h in top for s in SUPPORT_SIGNALS) or \
        any(t.covered for t in terms if t.kind in ("identifier", "quoted"))
    scores = result.ranked_scores
    margin = (scores[0] - scores[min(4, len(scores) - 1)]) if scores else 0.0
    return Assessment(terms=terms, supported=supported, best_cosine=result.best_cosine,
                      margin=margin, hits=len(result.hits))


def decide(f: dict, thresholds: dict | None = None) -> tuple[bool, list[str]]:
    """``(refuse, uncovered_terms)`` from :meth:`Assessment.features` output.

    ``uncovered_terms``: the terms the answer names as not found. For an answered
    question only the strong ones (technology names, identifiers, quoted messages): a
    plain English word the code never uses ("visitor", "but") is no gap worth telling a
    user about (31 of 103 answerable questions of the dev sets had one). A refusal names
    the plain words too, since they are then the reason."""
    t = {**THRESHOLDS, **(thresholds or {})}
    uncovered = list(f["strong_uncovered"]) + list(f["words_uncovered"])
    if not f["hits"]:
        return True, uncovered
    share = len(f["words_uncovered"]) / f["words"] if f["words"] else 0.0
    refuse = False
    if t["strong_rule"] and f["strong_uncovered"] and not f["supported"]:
        refuse = True
    if share >= t["min_uncovered_share"] and not f["supported"]:
        refuse = True
    if f["best_cosine"] < t["min_cosine"]:
        refuse = True
    if f["words_uncovered"] and not f["supported"] and f["best_cosine"] < t.get("gap_cosine", 0.0):
        refuse = True  # the gap rule: a key word no source has, and nothing close in meaning
    named = list(f["strong_uncovered"]) + [w for w in f["words_uncovered"] if "-" in w.split(" (")[0]]
    return refuse, (uncovered if refuse else named)


def tradeoff(rows: Sequence[dict]) -> list[dict]:
    """Refusal counts over a grid of thresholds: each row ``{thresholds...,
    answerable_refused, noanswer_refused, answerable, noanswer}``. ``rows``: features
    dicts with an ``answerable`` flag."""
    grid = []
    ans = [r for r in rows if r["answerable"]]
    no = [r for r in rows if not r["answerable"] and not r.get("partial")]
    for strong in (False, True):
        for share in (0.34, 0.5, 0.67, 1.01):
            for cos in (0.0, 0.15, 0.25, 0.3):
                for gap in (0.0, 0.33, 0.35, 0.37, 0.38, 0.39, 0.42):
                    th = {"strong_rule": strong, "min_uncovered_share": share, "min_cosine": cos,
                          "gap_cosine": gap}
                    grid.append({**th, "answerable": len(ans), "noanswer": len(no),
                                 "answerable_refused": sum(decide(r, th)[0] for r in ans),
                                 "noanswer_refused": sum(decide(r, th)[0] for r in no)})
    return grid


def coverage_note(uncovered: Sequence[str], where: str) -> str:
    """``Nothing in shop@1a2b3c4 mentions Kafka or Avro.`` (empty without terms)."""
    if not uncovered:
        return ""
    names = [f"\u201c{u}\u201d" if " " in u else u for u in uncovered]
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    return f"Nothing in {where} mentions {listed}."
