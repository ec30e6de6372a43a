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
#: The words that only say a question is about a setting; they match every key, so none.
_SETTING_WORDS = re.compile(r"\b(settings?|config(?:ure|ured|uration)?|defaults?)\b", re.I)
_KEY = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
#: A lower-case setting: a snake_case parameter or field given a default (``max_width: int = 80``,
#: ``auto_envvar_prefix=None``) or read from a config mapping (``config["max_width"]``).
_PARAM = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*(?::\s*[\w\[\], |.]+)?\s*=\s*(?!=)|"
                    r"""\[["']([a-z][a-z0-9]*(?:_[a-z0-9]+)+)["']\]""")
_FLAG = re.compile(r"""["'](--[a-z][a-z0-9]*(?:-[a-z0-9]+)*)["']""")
_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset("a an and are as at be by can do does for from how i in is it of on or the this to what when "
                  "where which who why with we our you your by default set there get".split())
_ROLE = re.compile(r":[a-z:]+:`~?([^`]+)`")            # :func:`x`, :data:`~pkg.X` (reST roles)
_LITERAL = re.compile(r"``([^`]+)``")                    # ``x`` (reST literal)
_DOC_OPEN = re.compile(r'^\s*[rubRUB]{0,2}("""|\'\'\')')
_COMMENT = re.compile(r"^\s*(?:///?|#|\*|/\*\*?|--)\s?(.*?)\s*(?:\*/)?$")
_UNDERLINE = re.compile(r"^\s*([=~\-^*#+])\1{2,}\s*$")
_PY_DEF = re.compile(r"^\s*(?:async\s+def|def|class)\b")
_ATTRIBUTE = re.compile(r"^\s*#!?\[")  # Rust/C# attributes: #[derive(Debug)], #![allow(..)]
_DEF = re.compile(r"^\s*(?:@|async\s+def\b|def\b|class\b|func\b|fn\b|pub\b|public\b|private\b|protected\b|"
                  r"static\b|export\b|function\b|interface\b|type\b|struct\b|const\b|let\b|var\b|impl\b|module\b)")


def asks_for_setting(question: str) -> bool:
    """True when ``question`` asks about a configuration value (a key and its default)."""
    return bool(_CONFIG_WORDS.search(question))


def first_sentence(text: str, max_chars: int = 220) -> str:
    """The first sentence of a docstring or comment, reST roles and literals turned into
    backticked names, on one line, at most ``max_chars`` characters."""
    lines = text.strip().splitlines()
    # an RST title (a line underlined with ~~~ / === / ---) names the module: not a sentence
    kept = [line for i, line in enumerate(lines)
            if not _UNDERLINE.match(line) and not (i + 1 < len(lines) and _UNDERLINE.match(lines[i + 1]))]
    text = "\n".join(kept)
    text = _LITERAL.sub(r"`\1`", _ROLE.sub(lambda m: f"`{m.group(1).split('.')[-1]}`", text))
    para = " ".join(text.strip().split("\n\n")[0].split())
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z`(\"'])", para)
    sentence = para[:m.start()] if m else para
    if len(sentence) > max_chars:
        sentence = sentence[:max_chars].rsplit(" ", 1)[0] + "…"
    return sentence


def doc_of(content: str, name: str = "") -> str:
    """What a chunk says about itself: its first docstring (Python; with ``name``, the
    docstring of the definition of that name, e.g. a method's in a chunk that opens
    with its class's line), else the comment block right above its first definition
    line (JSDoc, Go, Java, Rust, Ruby…); ``""`` if none."""
    lines = content.splitlines()
    # the chunk's own docstring: right after its first definition line (a signature may
    # span lines), never one of a later definition (a class without a docstring does not
    # borrow its first method's), or a module docstring opening the chunk
    named = re.compile(rf"^\s*(?:async\s+def|def|class)\s+{re.escape(name)}\b") if name else _PY_DEF
    first_def = next((i for i, line in enumerate(lines) if named.match(line)), None)
    for i, line in enumerate(lines):
        m = _DOC_OPEN.match(line)
        own = first_def is not None and first_def < i and \
            not any(_PY_DEF.match(prev) for prev in lines[first_def + 1:i])
        module_doc = not any(s.strip() and not s.lstrip().startswith("#") for s in lines[:i])
        if m and (own or module_doc):
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


_PASSED_ON = re.compile(r"(?:self|this|cls|ctx|context|options|opts|config|cfg|kwargs|args)\b\s*[.\[]")


def _default_of(key: str, texts: Iterable[str], prose: bool = False) -> str | None:
    """The default value the code gives ``key`` in any of ``texts``, as written (``None``
    when none shows one). ``prose``: only what a sentence states ("Default: ``30``")."""
    k = re.escape(key)
    patterns = [  # (pattern, flags)
        (rf"""["']{k}["']\s*:\s*([^,\n}}]+)""", re.M),                          # "KEY": value (a mapping)
        (rf"""(?:environ\.get|getenv|os\.Getenv|process\.env)\(?\s*["']{k}["']\s*,\s*([^)\n]+)\)""", re.M),
        # KEY = value, KEY: int = 3, f(key=None, other=1): the value ends at a top-level , ) or ;
        # (``export KEY=value`` in a message or a shell line is someone setting it: no default)
        (rf"""(?<!export )(?<!set )(?<!ENV )\b{k}\b\s*(?::\s*[\w\[\], |.]+)?\s*=\s*(?!=)((?:[^\n#;,()\[\]{{}}]|\([^()\n]*\)|\[[^\[\]\n]*\]|"""
         rf"""\{{[^{{}}\n]*\}})+)""", re.M),
        (rf"""\b{k}\b\s*:\s*([^\n#,]+)$""", re.M),                               # KEY: value (YAML)
        # a command-line option: its declaration's default=…
        (rf"""["']{k}["'](?:(?!add_argument|\n\s*\n).){{0,800}}?\bdefault\s*=\s*([^,\n)]+)""", re.S),
        # docs: the key, then within a few lines "Default: ``value``" / "defaults to `value`" /
        # "The default value is 0"
        (rf"""(?<![\w-]){k}\b(?:(?!\n\s*\n\s*\n).){{0,600}}?\b[Dd]efault(?:s to|:| value is| is)\s*`*([^`\n]+?)`*"""
         r"""\s*(?:[.\n]|$)""", re.M | re.S),
    ]
    if prose:
        patterns = patterns[-1:]
    for text in texts:
        for p, flags in patterns:
            for m in re.finditer(p, text, flags):
                value = m.group(1).strip().rstrip(",").strip()
                # ``key=self.key`` passes a value on; it is not where the default is set
                if value and len(value) <= 80 and not _PASSED_ON.match(value) and key not in value:
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


def _near(word: str, term: str) -> bool:
    """``word`` and ``term`` are forms of one word: one begins the other (``auto`` and
    "automatically", ``setting`` and "settings") or they share a 5-letter stem
    (``completion`` and "complete"); a 4-letter overlap (``context``/"controls") is not enough."""
    if word == term:
        return False
    if len(word) >= 3 and term.startswith(word):  # a key's short form: max, env, len, num
        return True
    if min(len(word), len(term)) < 4:
        return False
    return word.startswith(term) or (len(word) >= 5 and len(term) >= 5 and word[:5] == term[:5])


def _setting_candidates(chunk) -> list[str]:
    """The configuration keys a chunk shows, in order of appearance: upper-case keys,
    snake_case parameters or fields given a default, keys read from a mapping, and in a
    prose section the snake_case names it mentions (```auto_envvar_prefix```)."""
    found: dict[str, None] = {}
    text = chunk.content
    for m in _KEY.finditer(text):
        found.setdefault(m.group(0), None)
    for a, b in _PARAM.findall(text):
        found.setdefault(a or b, None)
    for m in _FLAG.finditer(text):  # a command-line option: '--timeout'
        found.setdefault(m.group(1), None)
    if chunk.kind in _DOC_KINDS:
        for name in code_names(text, limit=40):
            if "_" in name.strip("_") and name.lower() == name:
                found.setdefault(name, None)
    return list(found)


def _role(path: str) -> str:
    """The file's role (code, test, example, docs…) by its path, as the index labels it."""
    from indexer.read import file_role

    return file_role(path)


def _setting_sentence(question: str, hits: Sequence, lookup: Callable[[str], list[str]] | None) -> str:
    """``The setting is `KEY` (default `value`).`` for a setting question, naming the key
    among the top hits whose words best match the question; ``""`` when there is none.

    The words that only say the question is about a setting ("setting", "default",
    "config") count a quarter: every key is a setting, but ``CONFIG_DIR`` does answer
    "the configuration directory". A key's words that match nothing cost a little, so
    ``short_help`` beats ``add_help_option`` for "help"; an upper-case key (a constant, an
    environment variable) wins a tie with a lower-case name (often a local variable)."""
    generic = _terms(" ".join(m.group(0) for m in _SETTING_WORDS.finditer(question)))
    qterms = _terms(question)
    # two-letter words count when a key has them too (``CA`` of "CA bundle", ``ID``, ``DB``)
    specific = (qterms | {w for w in _WORD.findall(question.lower()) if len(w) == 2 and w not in _STOP}) - generic
    qwords = [w for w in _WORD.findall(question.lower()) if w not in _STOP]
    best, best_score = None, 0.0
    for rank, hit in enumerate(hits[:5]):
        for key in _setting_candidates(hit.chunk):
            words = [w for w in re.split(r"[_-]", key.lower()) if w]
            score, unmatched = 0.0, 0
            for w in words:
                if w in specific or abbreviates(w, qwords):
                    score += 1.0
                elif any(_near(w, q) for q in specific):
                    score += 0.5
                elif w in generic or any(_near(w, q) for q in generic):
                    score += 0.25
                else:
                    unmatched += 1
            if unmatched * 2 > len(words):
                continue  # most of the key is about something else (REQUESTS_CA_BUNDLE for "requests")
            score -= rank * 0.1 + unmatched * 0.05
            if key.isupper():  # a constant or an environment variable: what a user sets
                score += 0.1
            if score > best_score:
                best, best_score = key, score
    if best is None or best_score < 0.9:
        return ""
    # the code says what the default is; a prose section's example value is not one
    code = [h.chunk.content for h in hits if h.chunk.kind not in _DOC_KINDS and _role(h.chunk.path) == "code"]
    default = _default_of(best, code)
    if default is None and lookup is not None:
        default = _default_of(best, lookup(best))
    if default is None:
        default = _default_of(best, [h.chunk.content for h in hits if h.chunk.kind in _DOC_KINDS], prose=True)
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


#: What a reader calls a chunk kind (the index's own names are not for a PM).
_KIND_WORDS = {"class_signature": "class", "file_header": "file", "module": "file", "window": "code",
               "section": "section", "doc": "document", "api_operation": "API operation"}

#: The head of an OpenAPI operation chunk (indexer.chunking.openapi) and its labelled lines.
_API_HEAD = re.compile(r"OpenAPI operation (\S+ \S+) \(([^()\n]+), spec ([^()\n]*)\)(?::\s*(.*))?$")
_API_FIELD = re.compile(r"^(api|operationId|description|parameters|request|responses): (.*)$")


def _sentence(text: str) -> str:
    """``text`` with a capital first letter and a closing full stop."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?", "…")) else text + "."


def _operation_sentence(c) -> str:
    """```GET /pets/{id}` (operation getPet, api/openapi.yaml:12, spec 1.0.0): Find a pet.
    Returns a pet by its id.``: what an OpenAPI operation does, in the spec's own words
    (its summary, then the first sentence of its description); ``""`` when the chunk has
    no operation head."""
    lines = (c.content or "").splitlines()
    m = _API_HEAD.match(lines[0]) if lines else None
    if not m:
        return ""
    fields: dict[str, str] = {}
    for line in lines[1:8]:
        f = _API_FIELD.match(line)
        if not f:
            break
        fields[f.group(1)] = f.group(2).strip()
    summary = (m.group(4) or "").strip()
    described = first_sentence(fields.get("description", ""))
    said = " ".join(dict.fromkeys(x for x in (_sentence(summary), _sentence(described)) if x))
    op_id = fields.get("operationId", "")
    where = ", ".join(x for x in (f"operation {op_id}" if op_id else "operation", f"{c.path}:{c.start_line}",
                                  f"spec {m.group(3)}") if x)
    return f"`{m.group(1)}` ({where})" + (f": {said}" if said else ".")


def _definition_sentence(c) -> str:
    """```name` (kind, path:line): first sentence of its docstring.`` (or without one);
    for an OpenAPI operation, :func:`_operation_sentence`."""
    if c.kind == "api_operation":
        said = _operation_sentence(c)
        if said:
            return said
    said = first_sentence(doc_of(c.content, (c.symbol or "").rsplit(".", 1)[-1]))
    where = f"{c.path}:{c.start_line}"
    kind = _KIND_WORDS.get(c.kind, c.kind)
    if not said:
        return f"The closest match is `{c.symbol}` ({kind}, {where})."
    said = said[0].upper() + said[1:]
    if not said.endswith((".", "!", "?", "…")):
        said += "."
    return f"`{c.symbol}` ({kind}, {where}): {said}"


#: A question about what goes wrong: its answer is an error type, not the code that raises it.
_ASKS_ERROR = re.compile(r"\b(?:what|which)\s+(?:kind\s+of\s+)?(?:errors?|exceptions?)\b|"
                         r"\b(?:errors?|exceptions?)\s+(?:is|are|gets?|does)\s+(?:raised|thrown|returned|shown)\b|"
                         r"\bwhat\s+(?:is|gets)\s+(?:raised|thrown)\b", re.I)
_ERROR_NAME = re.compile(r"(?:Error|Exception|Fault|Failure|Panic)s?$")
_ERROR_FILE = re.compile(r"(?:^|[/_.-])(?:errors?|exceptions?|errs?|faults?)(?:\.[A-Za-z]+)$", re.I)
_TYPE_KINDS = ("class", "class_signature", "struct", "enum", "type", "interface")


def asks_for_error(question: str) -> bool:
    """True when ``question`` asks which error or exception the code raises or shows."""
    return bool(_ASKS_ERROR.search(question))


def is_error_type(chunk) -> bool:
    """An error type by its shape in any language: a class, struct or enum whose name or
    first base ends in Error/Exception/Failure/Fault/Panic, or any type defined in an
    errors/exceptions file (``exceptions.py``, ``errors.go``, ``error.rs``)."""
    if chunk.kind not in _TYPE_KINDS or not chunk.symbol:
        return False
    name = chunk.symbol.rsplit(".", 1)[-1]
    if _ERROR_NAME.search(name) or _ERROR_FILE.search(chunk.path):
        return True
    head = next((line for line in chunk.content.splitlines() if re.search(rf"\b{re.escape(name)}\b", line)), "")
    bases = re.search(rf"\b{re.escape(name)}\s*(?:\(|\bextends\b|:|<)\s*([\w.]+)", head)
    return bool(bases and _ERROR_NAME.search(bases.group(1)))


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
    if asks_for_error(question):
        error = next((h.chunk for h in hits[:5] if is_error_type(h.chunk)), None)
        if error is not None:
            return _definition_sentence(error)
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
        parts.append(f"The closest match is {top.path}:{top.start_line} ({_KIND_WORDS.get(top.kind, top.kind)}).")
    return " ".join(parts)
