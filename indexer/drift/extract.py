"""Code references a doc makes, by section: the patterns drift checks.

A doc (Markdown, reStructuredText, a Confluence page converted to Markdown) is cut
into the same H2/H3 sections the index uses (:mod:`indexer.chunking.docs`); every
reference keeps its section's heading path and line range, so an answer citing that
section can say which of its references went stale.

The patterns, one kind each (``Reference.kind``):

========  ==========================================================  ===================
kind      where it is read                                            key (looked up)
========  ==========================================================  ===================
flag      ``--name`` / ``--name=value`` in inline code, shell blocks  ``name``
          and prose
env       ``$NAME``/``${NAME}`` anywhere; ``NAME=…``/``export NAME``  ``NAME``
          in shell; an UPPER_SNAKE name on a line that says
          "environment"/"env"; ``os.environ[…]``/``getenv(…)`` in
          Python blocks
config    a dotted lower-case key in inline code (``retry.backoff_ms``) ``retry.backoff_ms``
endpoint  ``GET|POST|PUT|PATCH|DELETE /path`` anywhere; the path of a  ``/v1/refunds/{}``
          ``curl`` URL in shell blocks
metric    a snake_case name ending in a Prometheus unit/suffix        ``name``
          (``_total``, ``_seconds``, ``_bytes``…), one inside
          ``rate(…)``/``increase(…)``, or any snake_case/CamelCase
          inline code on a line that says "metric", "alert", "gauge"
          or "counter"
symbol    ``name()``/``Class.method()``, CamelCase or snake_case      dotted name
          inline code, UPPER_SNAKE constants, Sphinx roles
          (``:func:``, ``:class:``, ``:meth:``, ``:attr:``, ``:mod:``…),
          and, through tree-sitter, the names a Python code block
          imports (``from pkg.mod import Name`` -> ``pkg.mod.Name``)
path      a relative file path (``scripts/rotate.sh``, ``deploy/``)   the path
target    ``make TARGET``; ``npm run NAME``                           ``TARGET``
========  ==========================================================  ===================

Flags of commands that are not the project's (``git``, ``pip``, ``docker``,
``kubectl``… see :data:`EXTERNAL_COMMANDS`) are kept with ``external=True``: they are
``ok`` when the code has them and ``unknown`` otherwise, never ``stale``. The same holds
for the well-known environment variables of :data:`EXTERNAL_ENV`.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..chunking.docs import chunk_markdown, chunk_rst

KINDS = ("flag", "env", "config", "endpoint", "metric", "symbol", "path", "target")

#: Programs whose flags and sub-commands are not defined by the indexed code.
EXTERNAL_COMMANDS = frozenset("""
git pip pip3 pipx uv poetry conda docker docker-compose podman kubectl helm curl wget ssh scp rsync sudo
apt apt-get yum dnf brew npm npx yarn pnpm node ls cd cat grep egrep rg sed awk tar unzip zip cp mv rm
mkdir chmod chown ln echo printf export source systemctl journalctl service psql mysql sqlite3 redis-cli
aws gcloud az terraform jq tail head less more kill pkill ps top watch env time nohup openssl gpg tox
nox virtualenv go cargo rustc java mvn gradle dotnet gh glab vault consul nc telnet dig nslookup ping
""".split())

#: Environment variables of the platform rather than of the project.
EXTERNAL_ENV = frozenset("""
PATH HOME USER SHELL PWD LANG LC_ALL TERM TMPDIR PYTHONPATH PYTHONHASHSEED PYTHONDONTWRITEBYTECODE
VIRTUAL_ENV LD_LIBRARY_PATH DYLD_LIBRARY_PATH JAVA_HOME GOPATH GOROOT NODE_ENV EDITOR HOSTNAME
KUBECONFIG AWS_REGION AWS_PROFILE AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY http_proxy https_proxy
HTTP_PROXY HTTPS_PROXY NO_PROXY CI GITHUB_TOKEN
""".split())

_SHELL_LANGS = {"sh", "bash", "shell", "console", "zsh", "shell-session", "sh-session", "text-sh", "ps1"}
_PY_LANGS = {"python", "py", "python3", "pycon", "ipython"}
_METRIC_SUFFIX = re.compile(
    r"_(?:total|seconds|milliseconds|ms|bytes|count|sum|bucket|ratio|percent|errors|failures|"
    r"requests|latency|duration|size|info|gauge|inflight|in_flight|celsius|hits|misses)$")
_METRIC_WORDS = re.compile(r"\b(?:metrics?|alerts?|alerting|gauges?|counters?|histograms?|dashboards?|prometheus|grafana)\b", re.I)
_ENV_WORDS = re.compile(r"\b(?:env(?:ironment)?(?:\s+var(?:iable)?s?)?|export)\b", re.I)
_HTTP = r"GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS"
_ENDPOINT = re.compile(rf"(?<![\w/])({_HTTP})\s+(/[\w\-./{{}}:<>%~]*)")
_FLAG = re.compile(r"(?<![\w\-/.])(--[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)(?:=\S*)?")
_DOLLAR_ENV = re.compile(r"\$\{?([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)\}?")
_UPPER_SNAKE = re.compile(r"(?<![\w.])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w.])")
_ASSIGN_ENV = re.compile(r"(?:^|\s|export\s+)([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=")
_ROLE = re.compile(r":(?:py:)?(func|meth|class|attr|exc|obj|data|mod|paramref|const):`([^`]+)`")
_MD_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_RST_SPAN = re.compile(r"``([^`\n]+)``")
_PROMQL = re.compile(r"\b(?:rate|irate|increase|sum|avg|max|min|histogram_quantile|count)\s*\(\s*(?:[\d.]+\s*,\s*)?"
                     r"(?:sum\s*\(\s*)?(?:rate\s*\(\s*)?([a-z_][a-z0-9_]*)")
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_CALL = re.compile(rf"^((?:{_IDENT}\.)*{_IDENT})\s*\(.*\)$")
_DOTTED = re.compile(rf"^(?:{_IDENT}\.)*{_IDENT}$")
_CONFIG = re.compile(r"^[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_-]*)+$")
_PATH = re.compile(r"^(?:\./)?(?:[\w.\-]+/)+[\w.\-]*$|^[\w.\-]+\.(?:py|go|js|ts|tsx|java|rb|rs|sh|yaml|yml|json|"
                   r"toml|ini|cfg|conf|sql|tf|proto|mk|properties|env)$")
_FILE_EXT = re.compile(r"\.(?:py|go|js|ts|tsx|jsx|java|kt|rb|rs|c|h|cc|cpp|hpp|cs|php|sh|bash|ya?ml|json|toml|"
                       r"ini|cfg|conf|sql|tf|proto|mk|properties|env|txt|md|rst|html|css|lock)$")
_CAMEL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$|^[A-Z][a-z]+[A-Z]\w*$")
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$")
_URL_PATH = re.compile(r"https?://[^/\s'\"]+(/[^\s'\"?#]*)")
_WORDS_NOT_CODE = frozenset("None True False null true false nil".split())


@dataclass(frozen=True)
class Reference:
    """One code reference of a doc.

    kind: one of :data:`KINDS`; ref: the reference as written (trimmed: ``--max-conn``,
    ``POST /v1/refunds``, ``refund()``); key: what is looked up in the code (see the
    module table); line: 1-based line in the doc; section: heading path of its section,
    whose lines are ``section_start``..``section_end`` (1-based, inclusive); external:
    the reference belongs to a program or platform other than the project, or is named
    in a context that is not a claim about the current code (never stale); context: why,
    when the text says so: ``history`` (a version-added/changed/deprecation note, a
    "removed in"/"renamed to" sentence), ``example`` (a name the doc's own example
    defines), "" otherwise.
    """

    kind: str
    ref: str
    key: str
    line: int
    section: str = ""
    section_start: int = 1
    section_end: int = 1
    external: bool = False
    context: str = ""


def is_doc_path(path: str) -> bool:
    """True for the repo files drift reads: Markdown and reStructuredText."""
    return path.lower().endswith((".md", ".markdown", ".mdx", ".rst"))


def normalize_route(path: str) -> str:
    """A route with its parameters blanked: ``/v1/refunds/{id}``, ``/v1/refunds/:id`` and
    ``/v1/refunds/<int:id>`` all give ``/v1/refunds/{}``; no query string or trailing ``/``."""
    path = path.split("?", 1)[0].split("#", 1)[0]
    path = re.sub(r"\{[^}/]*\}|<[^>/]*>|(?<=/):[A-Za-z_]\w*", "{}", path)
    path = path.rstrip(".,;:)")
    return path.rstrip("/") or "/"


def extract_references(path: str, text: str) -> list[Reference]:
    """Every reference of doc ``text`` (its repo path or index path decides Markdown vs
    RST: ``.rst`` is RST, anything else Markdown), in doc order, duplicates within one
    section dropped. Never raises on odd input; blank text gives ``[]``."""
    rst = path.lower().endswith(".rst")
    sections = (chunk_rst if rst else chunk_markdown)(path, text, max_chunk_lines=10**9)
    all_lines = text.splitlines()
    out: list[Reference] = []
    block_lines: list[str] = []
    for sec in sections:
        seen: set[tuple[str, str]] = set()
        for ref in _section_refs(all_lines, sec.start_line, sec.end_line, rst, block_lines):
            if (ref.kind, ref.key) in seen:
                continue
            seen.add((ref.kind, ref.key))
            out.append(Reference(ref.kind, ref.ref, ref.key, ref.line, sec.symbol, sec.start_line,
                                 sec.end_line, ref.external))
    read = example_env_reads(block_lines)
    if read:  # the doc's own code reads it: the example's variable, not the project's
        out = [Reference(r.kind, r.ref, r.key, r.line, r.section, r.section_start, r.section_end, True,
                         "example") if r.kind == "env" and r.key in read else r for r in out]
    local = example_names(block_lines)
    if local:
        out = [Reference(r.kind, r.ref, r.key, r.line, r.section, r.section_start, r.section_end, True,
                         "example") if _is_example(r, local) else r for r in out]
    history = history_lines(all_lines, rst)
    if history:
        out = [Reference(r.kind, r.ref, r.key, r.line, r.section, r.section_start, r.section_end, True,
                         "history") if r.line in history else r for r in out]
    return out


#: A sentence about the past or a deprecation: the names it holds are meant to be gone.
_HISTORY_WORDS = re.compile(
    r"\b(?:deprecated|deprecation|removed|renamed|no longer|used to be|formerly|previously|"
    r"obsolete|changed in version|added in version|versionadded|versionchanged|legacy)\b", re.I)
_RST_HISTORY = re.compile(r"^(\s*)\.\.\s+(?:versionadded|versionchanged|versionremoved|deprecated)::")


def history_lines(lines: list[str], rst: bool) -> set[int]:
    """1-based numbers of the lines that speak of the past: an RST ``versionadded``/
    ``versionchanged``/``versionremoved``/``deprecated`` directive and its indented body,
    and any line whose own words say deprecated/removed/renamed/no longer/formerly (a
    changelog-like sentence). References there name old things on purpose."""
    out: set[int] = set()
    body_indent: int | None = None
    for n, line in enumerate(lines, 1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if body_indent is not None:
            if not stripped or indent > body_indent:
                out.add(n)
                continue
            body_indent = None
        if rst:
            m = _RST_HISTORY.match(line)
            if m:
                body_indent = len(m.group(1))
                out.add(n)
                continue
        if _HISTORY_WORDS.search(line):
            out.add(n)
    return out


_EXAMPLE_DEF = re.compile(r"\b(?:class|def)\s+([A-Za-z_]\w*)|^\s*([A-Za-z_]\w*)\s*[:=](?!=)|[\"']([A-Za-z_]\w*)[\"']")


_ENV_READ = re.compile(r"(?:getenv|environ\.get|environ\[|Getenv|LookupEnv|process\.env\[)\(?\s*[\"']"
                       r"([A-Z][A-Z0-9_]*)[\"']")


def example_env_reads(block_lines: list[str]) -> set[str]:
    """Environment variables a doc's own code blocks read (``os.environ.get("NETRC")``):
    the reader's code reads them, so the project need not."""
    return {m.group(1) for line in block_lines for m in _ENV_READ.finditer(line)}


def example_names(block_lines: list[str]) -> set[str]:
    """Names a doc's own code blocks define (``class User``, ``def f``, ``bio: Mapped[...]``,
    ``x = ...``) or quote (``Table("room_booking")``): a reference to one of them in the
    text names the doc's example, not the project's code."""
    names: set[str] = set()
    for line in block_lines:
        for m in _EXAMPLE_DEF.finditer(line):
            names.add(m.group(1) or m.group(2) or m.group(3))
    return names


def _is_example(ref: Reference, local: set[str]) -> bool:
    """Inline-code symbols/config keys/metrics whose name the doc's own example defines
    (Sphinx roles and imports are cross-references to the project: never examples)."""
    if ref.kind not in ("symbol", "config") or ref.ref.startswith((":", "from ", "import ")):
        return False
    return any(seg in local for seg in ref.key.split("."))


def _section_refs(lines: list[str], start: int, end: int, rst: bool, block_lines: list[str]):
    """References of lines ``start..end`` (1-based), tracking code blocks (whose lines
    are appended to ``block_lines``)."""
    block_lang: str | None = None  # language of the fenced/RST block we are in
    fence = ""
    rst_block_indent: int | None = None
    py_block: list[tuple[int, str]] = []
    pending_rst_lang: str | None = None
    for n in range(start, end + 1):
        line = lines[n - 1] if n - 1 < len(lines) else ""
        stripped = line.strip()
        # --- RST literal blocks: ".. code-block:: lang" or a paragraph ending in "::"
        if rst:
            if rst_block_indent is not None:
                indent = len(line) - len(line.lstrip())
                if stripped and indent <= rst_block_indent:
                    if block_lang in _PY_LANGS:
                        yield from _python_refs(py_block)
                    rst_block_indent, block_lang, py_block = None, None, []
                elif stripped:
                    block_lines.append(line)
                    yield from _block_line(block_lang or "", n, line, py_block)
                    continue
                else:
                    continue
            m = re.match(r"^(\s*)\.\.\s+(?:code-block|code|sourcecode)::\s*(\S*)", line)
            if m:
                pending_rst_lang = (m.group(2) or "text").lower()
                rst_block_indent = len(m.group(1))
                block_lang = pending_rst_lang
                continue
            if stripped.endswith("::") and not stripped.startswith(".."):
                rst_block_indent = len(line) - len(line.lstrip())
                block_lang = "pycon"  # sphinx's default highlight for literal blocks is Python
                yield from _prose_line(n, line[:-2] if line.endswith("::") else line, rst)
                continue
            if stripped.startswith(".. "):
                continue
        else:
            m = re.match(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+-]*)", line)
            if fence:
                if re.match(r"^\s{0,3}" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), line):
                    if block_lang in _PY_LANGS:
                        yield from _python_refs(py_block)
                    fence, block_lang, py_block = "", None, []
                else:
                    block_lines.append(line)
                    yield from _block_line(block_lang or "", n, line, py_block)
                continue
            if m:
                fence, block_lang = m.group(1), (m.group(2) or "").lower()
                continue
        yield from _prose_line(n, line, rst)
    if block_lang in _PY_LANGS and py_block:
        yield from _python_refs(py_block)


def _block_line(lang: str, n: int, line: str, py_block: list):
    """A line inside a code block of language ``lang``."""
    s = line.strip()
    if lang in _PY_LANGS or s.startswith((">>> ", "... ")):
        py_block.append((n, s[4:] if s.startswith((">>> ", "... ")) else line))
        return
    if lang in _SHELL_LANGS or lang == "" and s.startswith("$ "):
        yield from _shell_refs(n, s[2:] if s.startswith("$ ") else s)
        return
    if lang in ("", "text", "none") and s.startswith("$ "):
        yield from _shell_refs(n, s[2:])
    yield from _endpoint_refs(n, line)


def _prose_line(n: int, line: str, rst: bool):
    """A line of running text: Sphinx roles, inline code spans, endpoints, flags, $ENV."""
    rest = line
    for m in _ROLE.finditer(line):
        role, target = m.group(1), m.group(2).strip()
        if "<" in target and target.endswith(">"):
            target = target[target.rindex("<") + 1:-1]
        target = target.lstrip("~.!").removesuffix("()")
        if role == "paramref":
            target = target.split(".")[-1]
        if _DOTTED.match(target):
            yield Reference("symbol", m.group(0), target, n)
    rest = _ROLE.sub(" ", rest)
    spans = list((_RST_SPAN if rst else _MD_SPAN).finditer(rest))
    metricish = bool(_METRIC_WORDS.search(line))
    envish = bool(_ENV_WORDS.search(line))
    for m in spans:
        yield from _span_refs(n, m.group(1).strip(), metricish=metricish, envish=envish)
    prose = (_RST_SPAN if rst else _MD_SPAN).sub(" ", rest)
    yield from _endpoint_refs(n, prose)
    for m in _FLAG.finditer(prose):
        if len(m.group(1)) > 3:
            yield Reference("flag", m.group(1), m.group(1)[2:], n)
    for m in _DOLLAR_ENV.finditer(prose):
        yield Reference("env", "$" + m.group(1), m.group(1), n, external=m.group(1) in EXTERNAL_ENV)
    if envish:
        for m in _UPPER_SNAKE.finditer(prose):
            yield Reference("env", m.group(1), m.group(1), n, external=m.group(1) in EXTERNAL_ENV)
    for m in _PROMQL.finditer(prose):
        if _SNAKE.match(m.group(1)):
            yield Reference("metric", m.group(1), m.group(1), n)


def _endpoint_refs(n: int, text: str):
    for m in _ENDPOINT.finditer(text):
        route = normalize_route(m.group(2))
        if len(route) > 1:
            yield Reference("endpoint", f"{m.group(1)} {m.group(2).rstrip('.,;:)')}", f"{m.group(1)} {route}", n)


def _span_refs(n: int, s: str, *, metricish: bool, envish: bool):
    """Classify one inline code span (see the module table)."""
    if not s or s in _WORDS_NOT_CODE:
        return
    if " " in s.strip():
        if _ENDPOINT.search(s):
            yield from _endpoint_refs(n, s)
            return
        yield from _shell_refs(n, s)
        return
    if s.startswith("--"):
        m = _FLAG.match(s)
        if m and len(m.group(1)) > 3:
            yield Reference("flag", m.group(1), m.group(1)[2:], n)
        return
    m = _DOLLAR_ENV.fullmatch(s) or (re.fullmatch(r"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?:=\S*)?", s))
    if m:
        name = m.group(1)
        if s.startswith("$") or envish or "=" in s:
            yield Reference("env", s.split("=", 1)[0], name, n, external=name in EXTERNAL_ENV)
        else:
            yield Reference("symbol", s, name, n)
        return
    if s.startswith(("http://", "https://")):
        return
    if "/" in s and _PATH.match(s) and not s.startswith("/"):
        yield Reference("path", s, s.removeprefix("./"), n)
        return
    if s.startswith("/") and len(s) > 1 and re.fullmatch(r"/[\w\-./{}:<>]*", s) and metricish is False:
        return  # a bare "/something" is ambiguous (absolute file path or route): not checked
    if _SNAKE.match(s) and (_METRIC_SUFFIX.search(s) or metricish):
        yield Reference("metric", s, s, n)
        return
    if metricish and _CAMEL.match(s):
        yield Reference("metric", s, s, n)  # an alert name (PaymentsRefundFailing)
        return
    m = _CALL.match(s)
    if m:
        yield Reference("symbol", s, m.group(1), n)
        return
    if _FILE_EXT.search(s) and re.fullmatch(r"[\w.\-]+", s):
        yield Reference("path", s, s, n)
        return
    if _CONFIG.match(s):
        yield Reference("config", s, s, n)
        return
    if _DOTTED.match(s) and ("." in s or _CAMEL.match(s) or _SNAKE.match(s)):
        yield Reference("symbol", s, s, n)


def _shell_refs(n: int, line: str):
    """A shell command line: ``make`` targets, flags, env assignments, paths, URLs."""
    line = line.split(" #", 1)[0]
    for m in _DOLLAR_ENV.finditer(line):
        yield Reference("env", "$" + m.group(1), m.group(1), n, external=m.group(1) in EXTERNAL_ENV)
    for m in _ASSIGN_ENV.finditer(line):
        yield Reference("env", m.group(1), m.group(1), n, external=m.group(1) in EXTERNAL_ENV)
    for u in _URL_PATH.finditer(line):
        method = re.search(r"-X\s*(" + _HTTP + r")\b", line)
        route = normalize_route(u.group(1))
        if len(route) > 1:
            verb = method.group(1) if method else ("POST" if re.search(r"\s(-d|--data)\b", line) else "GET")
            yield Reference("endpoint", f"{verb} {u.group(1)}", f"{verb} {route}", n)
    for part in re.split(r"\|\||&&|[|;]", line):
        try:
            words = shlex.split(part, comments=False)
        except ValueError:
            words = part.split()
        while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in ("sudo", "env", "export", "time", "nohup")):
            words = words[1:]
        if not words:
            continue
        cmd = words[0].rsplit("/", 1)[-1]
        external = cmd in EXTERNAL_COMMANDS or (cmd.startswith("python") and words[1:3] == ["-m", "pip"])
        if cmd == "make":
            for w in words[1:]:
                if not w.startswith("-") and "=" not in w and re.fullmatch(r"[\w.\-/]+", w):
                    yield Reference("target", f"make {w}", w, n)
        elif cmd in ("npm", "yarn", "pnpm") and len(words) > 2 and words[1] == "run":
            yield Reference("target", f"{cmd} run {words[2]}", words[2], n)
        if ("/" in words[0] or _FILE_EXT.search(words[0])) and _PATH.match(words[0].removeprefix("./")):
            if not words[0].startswith("/"):
                yield Reference("path", words[0], words[0].removeprefix("./"), n)
        for w in words[1:]:
            m = _FLAG.fullmatch(w)
            if m and len(m.group(1)) > 3:
                yield Reference("flag", m.group(1), m.group(1)[2:], n, external=external)


def _python_refs(block: list[tuple[int, str]]):
    """Imported names and environment reads of a Python code block, through tree-sitter
    (a block that does not parse still yields what parsed)."""
    if not block:
        return
    src = "\n".join(t for _, t in block)
    rows = [n for n, _ in block]
    try:
        from tree_sitter_language_pack import get_parser

        tree = get_parser("python").parse(src.encode("utf-8"))
    except Exception:  # noqa: BLE001 - no grammar: imports are not checked
        return
    data = src.encode("utf-8")

    def text(node) -> str:
        return data[node.start_byte:node.end_byte].decode("utf-8", "replace")

    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        row = rows[min(node.start_point[0], len(rows) - 1)]
        if node.type == "import_from_statement":
            mod = node.child_by_field_name("module_name")
            module = text(mod) if mod is not None else ""
            if module.startswith("."):
                continue
            for child in node.children_by_field_name("name"):
                name_node = child.child_by_field_name("name") if child.type == "aliased_import" else child
                name = text(name_node)
                yield Reference("symbol", f"from {module} import {name}", f"{module}.{name}", row)
            continue
        if node.type == "import_statement":
            for child in node.children_by_field_name("name"):
                name_node = child.child_by_field_name("name") if child.type == "aliased_import" else child
                yield Reference("symbol", f"import {text(name_node)}", text(name_node), row)
            continue
        if node.type in ("subscript", "call"):
            t = text(node)
            m = re.match(r"os\.(?:environ(?:\.get)?\s*[\[(]|getenv\s*\()\s*['\"]([A-Z][A-Z0-9_]*)['\"]", t)
            if m:
                yield Reference("env", m.group(1), m.group(1), row, external=m.group(1) in EXTERNAL_ENV)
        stack.extend(reversed(node.children))
