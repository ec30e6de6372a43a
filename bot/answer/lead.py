"""The first sentences of an answer without an LLM, built from the code itself.

A PM reading a keyless answer should not have to read code to learn what was found. The
lead names the best definition (its name, kind and place) and says what it does in the
code's own words: the first sentence of its docstring or of the comment above it. When
the question asks about a setting ("which setting…", "how long…by default", "what is the
timeout"), the lead names the configuration key and its default value where the code
shows one (``"KEY": value`` in a defaults mapping, ``KEY = value``, ``environ.get("KEY",
default)`` (an environment look-up), a typed field ``name: int = 30``).

Every rule is about the shape of code in general (docstrings, comment blocks, upper-case
keys, environment look-ups), never about a particular repository.
"""
from __future__ import annotations

import re
from typing import Callable, Iterable, Sequence

#: Words that make a question about a setting (a key and its default), not a behaviour.
_CONFIG_WORDS = re.compile(r"\b(settings?|config(?:ure|ured|uration)?|env(?:ironment)?\s+var(?:iable)?s?|"
                           r"variable|default|defaults|flag|timeout|limit|max(?:imum)?|min(?:imum)?|how long|"
                           r"how many|how much|how often|ttl|interval|port|threshold|cache[sd]?)\b", re.I)
_KEY = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
#: A lower-case setting: a snake_case parameter or field given a default (``max_width: int = 80``,
#: ``auto_envvar_prefix=None``) or read from a config mapping (``config["max_width"]``).
_PARAM = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*(?::\s*[\w\[\], |.]+)?\s*=\s*(?!=)|"
                    r"""\[["']([a-z][a-z0-9]*(?:_[a-z0-9]+)+)["']\]""")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by can do does for from how i in is it of on or the this to what when "
                  "where which who why with we our you your by default set there get".split())
_ROLE = re.compile(r":[a-z:]+:`~?([^`]+)`")            # :func:`x`, :data:`~pkg.X` (reST roles)
_LITERAL = re.compile(r"``([^`]+)``")                    # ``x`` (reST literal)
_DOC_OPEN = re.compile(r'^\s*[rubRUB]{0,2}("""|\'\'\')')
_COMMENT = re.compile(r"^\s*(?:///?|#|\*|/\*\*?|--)\s?(.*?)\s*(?:\*/)?$")
_ATTRIBUTE = re.compile(r"^\s*#!?\[")  # Rust/C# attributes: #[derive(Debug)], #![allow(..)]
_DEF = re.compile(r"^\s*(?:@|async\s+def\b|def\b|class\b|func\b|fn\b|pub\b|public\b|private\b|protected\b|"
                  r"static\b|export\b|function\b|interface\b|type\b|struct\b|const\b|let\b|var\b|impl\b|module\b)")


def asks_for_setting(question: str) -> bool:
    """True when ``question`` asks about a configuration value (a key and its default)."""
    return bool(_CONFIG_WORDS.search(question))


def first_sentence(text: str, max_chars: int = 220) -> str:
    """The first sentence of a docstring or comment, reST roles and literals turned into
    backticked names, on one line, at most ``max_chars`` characters."""
    text = _LITERAL.sub(r"`\1`", _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1]}`", text))
    para = " ".join(text.strip().split("\n\n")[0].split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z`(\"'])", para)
    sentence = para[:m.start()] if m else para
    if len(sentence) > max_chars:
        sentence = sentence[:max_chars].rsplit(" ", 1)[0] + "…"
    return sentence


def doc_of(content: str) -> str:
    """What a chunk says about itself: its first docstring (Python), else the comment block
    right above its first definition line (JSDoc, Go, Java, Rust, Ruby…); ``""`` if none."""
    lines = content.splitlines()
    for i, line in enumerate(lines):
        m = _DOC_OPEN.match(line)
        if m and i > 0 and any(_DEF.match(prev) for prev in lines[max(0, i - 3):i]):
            quote = m.group(1)
            rest = line[m.end():]
            if quote in rest:
                return rest.split(quote)[0]
            body = [rest]
            for nxt in lines[i + 1:]:
                if quote in nxt:
                    body.append(nxt.split(quote)[0])
                    break
                body.append(nxt)
            return "\n".join(s.strip() for s in body)
    block: list[str] = []
    leading = True  # the block so far opens the chunk
    for line in lines:
        if line.strip() == "*/":  # the end of a /** … */ block
            continue
        if block and _ATTRIBUTE.match(line):  # #[derive(Debug)] between the doc and the item
            continue
        c = _COMMENT.match(line)
        if c and not _DEF.match(line):
            text = c.group(1)
            # JSDoc/Javadoc tags (@param, @return) end the description
            block.append("" if text.startswith("@") else text)
            continue
        if block and _DEF.match(line):
            return "\n".join(block).strip()
        if line.strip():
            block, leading = [], False
    # the first window of a definition whose doc comment is longer than the window
    return "\n".join(block).strip() if leading else ""


def _terms(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) > 2}


def _default_of(key: str, texts: Iterable[str]) -> str | None:
    """The default value the code gives ``key`` in any of ``texts``, as written (``None``
    when none shows one)."""
    k = re.escape(key)
    patterns = [  # (pattern, flags)
        (rf"""["']{k}["']\s*:\s*([^,\n}}]+)""", re.M),                          # "KEY": value (a mapping)
        (rf"""(?:environ\.get|getenv|os\.Getenv|process\.env)\(?\s*["']{k}["']\s*,\s*([^)\n]+)\)""", re.M),
        # KEY = value, KEY: int = 3, f(key=None, other=1): the value ends at a top-level , ) or ;
        (rf"""\b{k}\b\s*(?::\s*[\w\[\], |.]+)?\s*=\s*(?!=)((?:[^\n#;,()\[\]{{}}]|\([^()\n]*\)|\[[^\[\]\n]*\]|"""
         rf"""\{{[^{{}}\n]*\}})+)""", re.M),
        (rf"""\b{k}\b\s*:\s*([^\n#,]+)$""", re.M),                               # KEY: value (YAML)
        # docs: the key, then within a few lines "Default: ``value``" / "defaults to `value`"
        (rf"""\b{k}\b(?:(?!\n\s*\n\s*\n).){{0,600}}?\b[Dd]efault(?:s to|:)\s*`*([^`\n]+?)`*\s*(?:[.\n]|$)""",
         re.M | re.S),
    ]
    for text in texts:
        for p, flags in patterns:
            m = re.search(p, text, flags)
            if m:
                value = m.group(1).strip().rstrip(",").strip()
                if value and len(value) <= 80:
                    return value
    return None


def abbreviates(word: str, qwords: Sequence[str]) -> bool:
    """``word`` is a contraction of consecutive words of the question: each of its parts
    (at least 3 letters, all but the last) begins a word, in order (``envvar`` for
    "environment variables", ``maxlen`` for "maximum length")."""
    if len(word) < 5:
        return False
    if word.endswith("s") and abbreviates(word[:-1], qwords):  # envvars
        return True
    for i in range(len(qwords) - 1):
        rest, j = word, i
        while rest and j < len(qwords):
            q = qwords[j]
            k = 0
            while k < min(len(rest), len(q)) and rest[k] == q[k]:
                k += 1
            if k < 3 and not (k == len(rest) and k >= 2):
                break
            rest, j = rest[k:], j + 1
        if not rest and j - i >= 2:
            return True
    return False


def _setting_sentence(question: str, hits: Sequence, lookup: Callable[[str], list[str]] | None) -> str:
    """``The setting is `KEY` (default `value`).`` for a setting question, naming the key
    among the top hits whose words best match the question; ``""`` when there is none."""
    qterms = _terms(question)
    qwords = [w for w in _WORD.findall(question.lower()) if w not in _STOP]
    best, best_score = None, 0.0
    for rank, hit in enumerate(hits[:5]):
        keys = set(_KEY.findall(hit.chunk.content))
        keys |= {a or b for a, b in _PARAM.findall(hit.chunk.content)}
        for key in keys:
            words = {w for w in key.lower().split("_") if w}
            score = len(words & qterms) + sum(0.5 for w in words for q in qterms if len(q) > 3 and
                                              w != q and (w.startswith(q[:4]) or q.startswith(w[:4])))
            score += sum(1.0 for w in words if w not in qterms and abbreviates(w, qwords))
            score -= rank * 0.1
            if score > best_score:
                best, best_score = key, score
    if best is None or best_score < 1.0:
        return ""
    texts = [h.chunk.content for h in hits]
    default = _default_of(best, texts)
    if default is None and lookup is not None:
        default = _default_of(best, lookup(best))
    return f"The setting is `{best}`" + (f" (default `{default}`)." if default else ".")


#: Code names a prose section mentions: ``backticked``, CamelCase with two humps, snake_case.
_CODE_NAME = re.compile(r"`([A-Za-z_][A-Za-z0-9_]*)(?:\(\))?`|\b([A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*|[a-z]+_[a-z0-9_]+)\b")
_DOC_KINDS = ("doc", "section", "text")
_DEF_KINDS = ("class", "class_signature", "function", "method")


def code_names(text: str, limit: int = 12) -> list[str]:
    """The code names a prose section mentions, in order of first appearance, at most
    ``limit``: backticked identifiers, CamelCase words with two humps (``CliRunner``),
    snake_case words (``auto_envvar_prefix``)."""
    out: dict[str, None] = {}
    for m in _CODE_NAME.finditer(text):
        out.setdefault(m.group(1) or m.group(2), None)
        if len(out) >= limit:
            break
    return list(out)


def _defined_in_section(top, hits: Sequence, defines) -> object | None:
    """The definition a prose section is about: the first code name it mentions that a
    code chunk defines, among the other hits first, then through ``defines``."""
    names = code_names(top.content)
    if not names:
        return None
    by_symbol = {}
    for h in hits[1:]:
        c = h.chunk
        if c.kind in _DEF_KINDS and c.symbol:
            by_symbol.setdefault(c.symbol.rsplit(".", 1)[-1] if c.kind == "method" else c.symbol, c)
    for name in names:
        if name in by_symbol:
            return by_symbol[name]
    if defines is None:
        return None
    try:
        found = [c for c in defines(top.repo, names) if c.kind in _DEF_KINDS]
    except Exception:  # noqa: BLE001 - the lead is a courtesy; the sources follow anyway
        return None
    for name in names:
        for c in found:
            if c.symbol == name:
                return c
    return None


def _definition_sentence(c) -> str:
    """```name` (kind, path:line): first sentence of its docstring.`` (or without one)."""
    said = first_sentence(doc_of(c.content))
    where = f"{c.path}:{c.start_line}"
    if not said:
        return f"The closest match is `{c.symbol}` ({c.kind}, {where})."
    said = said[0].upper() + said[1:]
    if not said.endswith((".", "!", "?", "…")):
        said += "."
    return f"`{c.symbol}` ({c.kind}, {where}): {said}"


def lead(question: str, hits: Sequence, *, lookup: Callable[[str], list[str]] | None = None,
         defines: Callable[[str, Sequence[str]], list] | None = None) -> str:
    """One or two sentences that answer ``question`` from its top ``hits`` (best first).

    ``lookup(key)``: texts of other chunks that mention a configuration key (a keyword
    search), where its default may be set. ``defines(repo, names)``: the chunks of
    ``repo`` defining any of ``names`` (exact symbols), for a top hit that is a prose
    section: the lead then names the code the section is about. ``""`` when there are no
    hits.
    """
    if not hits:
        return ""
    top = hits[0].chunk
    parts = []
    if asks_for_setting(question):
        setting = _setting_sentence(question, hits, lookup)
        if setting:
            parts.append(setting)
    if top.kind in _DOC_KINDS:
        heading = top.symbol or top.path
        subject = _defined_in_section(top, hits, defines)
        if subject is not None:
            parts.append(_definition_sentence(subject))
            parts.append(f"The section “{heading}” of {top.path} describes it.")
        else:
            parts.append(f"The closest match is the section “{heading}” of {top.path}.")
        return " ".join(parts)
    if top.symbol:
        parts.append(_definition_sentence(top))
    else:
        parts.append(f"The closest match is {top.path}:{top.start_line} ({top.kind}).")
    return " ".join(parts)
