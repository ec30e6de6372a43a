"""Read a question for the signals that decide how to search it.

A question that names code (`merge_setting`, Context.ShouldBindBodyWith, a path, a quoted
error message) is best served by keyword matching; a question in plain words ("does it
retry on connection failure?") by the vector. :func:`analyze` finds those signals and
:func:`choose_alpha` turns them into Weaviate's hybrid ``alpha``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from common.identifiers import IDENT_RE, is_compound, split_identifier

_BACKTICK = re.compile(r"`([^`\n]{1,200})`")
# Single quotes double as apostrophes and as quotes of short names ('Leo' ... 'leo'): a
# single-quoted message must open after a non-word character, close before one, and
# neither start nor end with a space (else the text *between* two quoted names, or
# between "doesn't" and "it's", would read as a message).
_QUOTED = re.compile(r"\"([^\"\n]{6,300})\"|(?<!\w)'(?!\s)([^'\n]{12,300})(?<!\s)'(?!\w)"
                     r"|\u201c([^\u201d\n]{6,300})\u201d")
_DOTTED = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+\b")
_PATH = re.compile(r"\b[\w.-]+/[\w./-]+\.\w+\b|\b[\w-]+\.(?:py|go|ts|tsx|js|java|md|rst|yaml|yml|toml)\b")
_CALL = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)\(\)")

# alpha = share of the vector score in Weaviate's hybrid fusion (0 keyword only, 1 vector
# only). Chosen on a grid over the dev sets and the public benchmark together (plain
# questions 0.8 -> 0.65 there): see docs/benchmarks.md "Ablation".
ALPHA_NATURAL = 0.65
ALPHA_IDENTIFIER = 0.65
ALPHA_ERROR_MESSAGE = 0.5


@dataclass
class QueryAnalysis:
    """Signals found in one question.

    identifiers: code names, in order of appearance (``Session.send``, ``merge_setting``).
    names: lower-case last dotted parts of those, for the exact-name boost.
    quoted: quoted strings that look like messages. paths: file paths named.
    keyword_query: the question plus split identifier words, for BM25.
    """

    question: str
    identifiers: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    quoted: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    keyword_query: str = ""

    @property
    def has_code_signal(self) -> bool:
        return bool(self.identifiers or self.paths)


# Dotted words that are host names, not code: ``example.com``, ``api.internal.io``.
_HOST_TAILS = frozenset({"com", "org", "net", "io", "dev", "co", "uk", "de", "local", "internal", "example"})


def _looks_like_identifier(token: str) -> bool:
    if "." in token:
        if token.rsplit(".", 1)[-1].lower() in _HOST_TAILS:
            return False
        head, _, tail = token.rpartition(".")
        return bool(head) and bool(tail) and not tail.isdigit() and not token.lower().startswith(("e.g", "i.e"))
    return is_compound(token) or token.endswith("()")


def analyze(question: str) -> QueryAnalysis:
    """Find identifiers, paths and quoted messages in ``question`` (any language)."""
    qa = QueryAnalysis(question=question)
    seen: set[str] = set()

    def add(ident: str) -> None:
        ident = ident.strip().rstrip("()").strip(".")
        if ident and ident not in seen:
            seen.add(ident)
            qa.identifiers.append(ident)

    for m in _BACKTICK.finditer(question):
        inner = m.group(1).strip()
        if " " in inner:
            qa.quoted.append(inner)
        for tok in IDENT_RE.findall(inner) if " " in inner else [inner]:
            if " " not in inner or IDENT_RE.fullmatch(tok.split(".")[-1] or ""):
                if " " in inner and not is_compound(tok):
                    continue
                add(tok)
    for m in _PATH.finditer(question):
        qa.paths.append(m.group(0))
    for m in _DOTTED.finditer(question):
        if m.group(0) not in qa.paths and _looks_like_identifier(m.group(0)) and not _in_path(m.group(0), qa.paths):
            add(m.group(0))
    for m in _CALL.finditer(question):
        add(m.group(1))
    for tok in IDENT_RE.findall(question):
        if is_compound(tok) and tok not in seen and not any(tok in i for i in qa.identifiers):
            add(tok)
    for m in _QUOTED.finditer(question):
        text = next(g for g in m.groups() if g)
        if " " not in text.strip():  # a URL, path or single word, not a message
            continue
        if text not in qa.quoted:
            qa.quoted.append(text)
    names = []
    for ident in qa.identifiers:
        last = ident.rsplit(".", 1)[-1].lower()
        if last and last not in names:
            names.append(last)
    qa.names = names
    extra = [" ".join(split_identifier(part)) for i in qa.identifiers for part in i.split(".")]
    extra += [" ".join(split_identifier(p.replace("/", "_").replace(".", "_"))) for p in qa.paths]
    qa.keyword_query = " ".join([question, *extra]).strip()
    return qa


def _in_path(token: str, paths: list[str]) -> bool:
    return any(token in p for p in paths)


def choose_alpha(qa: QueryAnalysis, default: float | None = None) -> float:
    """Hybrid ``alpha`` for this question: lower (more keyword) when it names code.

    A quoted error message is the strongest keyword signal (its exact words are in the
    code), identifiers and paths next; plain-language questions lean on the vector.
    ``default`` overrides everything (``--alpha`` on the CLI).
    """
    if default is not None:
        return default
    if qa.quoted:
        return ALPHA_ERROR_MESSAGE
    if qa.has_code_signal:
        return ALPHA_IDENTIFIER
    return ALPHA_NATURAL
