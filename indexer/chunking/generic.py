"""Table-driven definitions for the languages beyond the first five: Rust, C, C++, C#,
Kotlin, Swift, Ruby, PHP, Scala, Lua, Elixir, Haskell, Bash and Zig.

One walker (:func:`definitions`) finds the definitions of a file in any of these
grammars from a small :class:`GenericLanguage` table: which node types are functions,
which are classes (anything with members: classes, structs, traits, impls, modules,
protocols, objects), which are transparent wrappers to look through (namespaces,
templates, ``export``), how a definition is named when the grammar has no ``name``
field. The chunker (:func:`chunk_generic`) and the call-graph facts
(``indexer.graph.extract_generic``) both read its output, so a chunk's symbol is the
graph's symbol.

The rules, the same for every language:

* a definition's range starts at the comments (and attributes: ``#[derive]``,
  ``@doc``, Haskell type signatures) right above it;
* consecutive definitions with the same name are one definition (Haskell equations,
  Elixir function clauses, a signature and its body);
* a class longer than ``max_class_lines`` (a function too, when it holds nested
  definitions: Zig's ``fn List(T) type { return struct {...} }``) is split into its
  members plus a ``class_signature`` outline (its own lines and each member's first
  line); members are named ``Class.member`` and carry the class's first line as context;
* imports, package and module lines before the first definition form the
  ``file_header`` chunk; every other line no chunk covers goes into a window.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from tree_sitter import Node

from ..syntax import parse
from .models import (
    KIND_CLASS, KIND_CLASS_SIGNATURE, KIND_FUNCTION, KIND_HEADER, KIND_METHOD, KIND_WINDOW, Chunk,
)
from .windows import slice_text, split_lines, window_ranges

_IDENT_TYPES = frozenset({"identifier", "type_identifier", "simple_identifier", "field_identifier",
                          "name", "word", "constant", "IDENTIFIER", "variable", "alias",
                          "property_identifier", "qualified_identifier", "scoped_identifier"})


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


@dataclass(frozen=True)
class GenericLanguage:
    """Node types of one grammar, as :func:`definitions` needs them.

    ``classify(node, text)``: for grammars whose definitions are not node types of
    their own (Elixir ``def`` is a call, Zig's ``const X = struct {}``), returns
    ``(kind, name)`` or ``None``; it runs before the type tables.
    """

    grammar: str
    comment_types: frozenset[str]
    function_types: frozenset[str] = frozenset()
    class_types: frozenset[str] = frozenset()
    transparent_types: frozenset[str] = frozenset()  # namespaces, templates: look inside
    header_types: frozenset[str] = frozenset()       # imports, package, module lines
    prefix_types: frozenset[str] = frozenset()       # attributes that belong to the next definition
    call_types: frozenset[str] = frozenset()         # call expressions (for the call graph)
    classify: Callable[[Node, Callable[[Node], str]], tuple[str, str] | None] | None = None
    name_of: Callable[[Node, Callable[[Node], str]], str] | None = None
    # Look for definitions inside functions too (Zig builds types in functions).
    nested_in_functions: bool = False


@dataclass
class Definition:
    """One definition found by :func:`definitions`. Rows are 0-based and inclusive;
    ``start_row`` includes the leading comments; ``symbol`` is dotted
    (``Client.send``); ``kind`` is ``function``, ``method`` or ``class``; ``context``
    is the enclosing class's first line; ``members`` are its nested definitions."""

    kind: str
    name: str
    symbol: str
    node: Node
    start_row: int
    end_row: int
    doc: str = ""
    context: str = ""
    members: list["Definition"] = field(default_factory=list)
    class_symbol: str = ""


def _last_row(node: Node) -> int:
    row = node.end_point.row
    if node.end_point.column == 0 and row > node.start_point.row:
        row -= 1
    return row


def _first_ident(node: Node, text: Callable[[Node], str]) -> str:
    """Text of the first identifier-like named child (breadth first, two levels)."""
    for child in node.named_children:
        if child.type in _IDENT_TYPES:
            return text(child)
    for child in node.named_children:
        for grand in child.named_children:
            if grand.type in _IDENT_TYPES:
                return text(grand)
    return ""


def _declarator_name(node: Node, text: Callable[[Node], str]) -> str:
    """C/C++: follow ``declarator`` fields down to the declared name (``Widget::resize``
    -> ``Widget.resize``)."""
    cur = node
    for _ in range(8):
        nxt = cur.child_by_field_name("declarator")
        if nxt is None:
            break
        cur = nxt
        if cur.type in ("identifier", "field_identifier", "qualified_identifier", "destructor_name",
                        "operator_name", "type_identifier"):
            return text(cur).replace("::", ".")
    name = node.child_by_field_name("name")
    if name is not None:
        return text(name).replace("::", ".")
    return ""


def _c_name(node: Node, text: Callable[[Node], str]) -> str:
    return _declarator_name(node, text)


def _kotlin_name(node: Node, text: Callable[[Node], str]) -> str:
    if node.type == "companion_object":
        return _first_ident(node, text) or "Companion"
    return _first_ident(node, text)


def _rust_name(node: Node, text: Callable[[Node], str]) -> str:
    if node.type == "impl_item":
        typ = node.child_by_field_name("type")
        return re.sub(r"<.*", "", text(typ)) if typ is not None else "impl"
    name = node.child_by_field_name("name")
    return text(name) if name is not None else ""


def _lua_name(node: Node, text: Callable[[Node], str]) -> str:
    name = node.child_by_field_name("name")
    return text(name).replace(":", ".") if name is not None else ""


def _lua_classify(node: Node, text: Callable[[Node], str]) -> tuple[str, str] | None:
    """``M.fn = function() ... end`` / ``local f = function() end``: a function."""
    target = node
    if node.type == "variable_declaration" and node.named_children:
        target = node.named_children[0]
    if target.type != "assignment_statement":
        return None
    names = [c for c in target.named_children if c.type == "variable_list"]
    values = [c for c in target.named_children if c.type == "expression_list"]
    if len(names) == 1 and len(values) == 1 and len(values[0].named_children) == 1 \
            and values[0].named_children[0].type == "function_definition":
        return KIND_FUNCTION, text(names[0]).replace(":", ".")
    return None


_ELIXIR_CLASSES = _f("defmodule", "defprotocol", "defimpl")
_ELIXIR_FUNCTIONS = _f("def", "defp", "defmacro", "defmacrop", "defguard", "defguardp", "defdelegate")


def _elixir_classify(node: Node, text: Callable[[Node], str]) -> tuple[str, str] | None:
    if node.type != "call":
        return None
    target = node.child_by_field_name("target") or (node.named_children[0] if node.named_children else None)
    if target is None or target.type != "identifier":
        return None
    word = text(target)
    if word not in _ELIXIR_CLASSES and word not in _ELIXIR_FUNCTIONS:
        return None
    args = next((c for c in node.named_children if c.type == "arguments"), None)
    head = args.named_children[0] if args is not None and args.named_children else None
    while head is not None and head.type == "binary_operator":  # def f(x) when is_integer(x)
        head = head.child_by_field_name("left")
    if head is None:
        name = word
    elif head.type == "call":
        inner = head.child_by_field_name("target") or head.named_children[0]
        name = text(inner)
    else:
        name = text(head)
    return (KIND_CLASS if word in _ELIXIR_CLASSES else KIND_FUNCTION), name


def _zig_classify(node: Node, text: Callable[[Node], str]) -> tuple[str, str] | None:
    if node.type != "Decl":
        return None
    for child in node.named_children:
        if child.type == "FnProto":
            return KIND_FUNCTION, _first_ident(child, text)
        if child.type == "VarDecl":
            name = _first_ident(child, text)
            stack = list(child.named_children)
            for _ in range(6):  # VarDecl -> ErrorUnionExpr -> SuffixExpr -> ContainerDecl
                if not stack:
                    break
                if any(s.type == "ContainerDecl" for s in stack):
                    return KIND_CLASS, name
                stack = [g for s in stack if s.type in ("ErrorUnionExpr", "SuffixExpr") for g in s.named_children]
    return None


def _zig_name(node: Node, text: Callable[[Node], str]) -> str:
    return _first_ident(node, text)


_C_COMMON = dict(
    comment_types=_f("comment"),
    function_types=_f("function_definition"),
    header_types=_f("preproc_include", "preproc_def", "using_declaration", "alias_declaration"),
    transparent_types=_f("preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif",
                         "linkage_specification", "declaration_list", "template_declaration"),
    call_types=_f("call_expression"),
    name_of=_c_name,
)

#: Language name -> table. ``EXTENSIONS`` in ``languages.py`` maps files to these names.
GENERIC_LANGUAGES: dict[str, GenericLanguage] = {
    "rust": GenericLanguage(
        grammar="rust", comment_types=_f("line_comment", "block_comment"),
        function_types=_f("function_item", "function_signature_item", "macro_definition"),
        class_types=_f("struct_item", "enum_item", "trait_item", "impl_item", "mod_item", "union_item"),
        header_types=_f("use_declaration", "extern_crate_declaration", "mod_item"),
        prefix_types=_f("attribute_item", "inner_attribute_item"),
        call_types=_f("call_expression", "macro_invocation"), name_of=_rust_name),
    "c": GenericLanguage(
        grammar="c", class_types=_f("struct_specifier", "enum_specifier", "union_specifier"), **_C_COMMON),
    # C++ namespaces are looked through (a class in one is `Widget`, a free function a
    # function), as C# and PHP namespaces are
    "cpp": GenericLanguage(
        grammar="cpp",
        class_types=_f("class_specifier", "struct_specifier", "enum_specifier", "union_specifier"),
        **{**_C_COMMON, "transparent_types": _C_COMMON["transparent_types"] | _f("namespace_definition")}),
    "csharp": GenericLanguage(
        grammar="csharp", comment_types=_f("comment"),
        function_types=_f("method_declaration", "constructor_declaration", "destructor_declaration",
                          "operator_declaration", "local_function_statement"),
        class_types=_f("class_declaration", "struct_declaration", "interface_declaration",
                       "enum_declaration", "record_declaration", "record_struct_declaration"),
        transparent_types=_f("namespace_declaration", "file_scoped_namespace_declaration", "declaration_list"),
        header_types=_f("using_directive", "extern_alias_directive"),
        call_types=_f("invocation_expression", "object_creation_expression")),
    "kotlin": GenericLanguage(
        grammar="kotlin", comment_types=_f("line_comment", "multiline_comment", "comment"),
        function_types=_f("function_declaration", "secondary_constructor"),
        class_types=_f("class_declaration", "object_declaration", "companion_object"),
        header_types=_f("package_header", "import_list", "import_header"),
        call_types=_f("call_expression"), name_of=_kotlin_name),
    "swift": GenericLanguage(
        grammar="swift", comment_types=_f("comment", "multiline_comment"),
        function_types=_f("function_declaration", "protocol_function_declaration", "init_declaration",
                          "deinit_declaration", "subscript_declaration"),
        class_types=_f("class_declaration", "protocol_declaration"),
        header_types=_f("import_declaration"),
        call_types=_f("call_expression")),
    "ruby": GenericLanguage(
        grammar="ruby", comment_types=_f("comment"),
        function_types=_f("method", "singleton_method"),
        class_types=_f("class", "module"),
        # `class << self ... end`: its methods are the enclosing class's (class methods)
        transparent_types=_f("body_statement", "singleton_class"),
        call_types=_f("call")),
    "php": GenericLanguage(
        grammar="php", comment_types=_f("comment"),
        function_types=_f("function_definition", "method_declaration"),
        class_types=_f("class_declaration", "interface_declaration", "trait_declaration", "enum_declaration"),
        transparent_types=_f("namespace_definition", "compound_statement"),
        header_types=_f("php_tag", "namespace_use_declaration", "namespace_definition"),
        prefix_types=_f("attribute_list"),
        call_types=_f("function_call_expression", "member_call_expression", "scoped_call_expression",
                      "object_creation_expression", "nullsafe_member_call_expression")),
    "scala": GenericLanguage(
        grammar="scala", comment_types=_f("comment", "block_comment"),
        function_types=_f("function_definition", "function_declaration"),
        class_types=_f("class_definition", "object_definition", "trait_definition", "enum_definition"),
        transparent_types=_f("package_object"),
        header_types=_f("package_clause", "import_declaration"),
        prefix_types=_f("annotation"),
        call_types=_f("call_expression")),
    "lua": GenericLanguage(
        grammar="lua", comment_types=_f("comment"),
        function_types=_f("function_declaration"),
        call_types=_f("function_call"), classify=_lua_classify, name_of=_lua_name),
    "elixir": GenericLanguage(
        grammar="elixir", comment_types=_f("comment"),
        prefix_types=_f("unary_operator"),  # @doc, @spec, @impl
        transparent_types=_f("do_block"),
        call_types=_f("call"), classify=_elixir_classify),
    "haskell": GenericLanguage(
        grammar="haskell", comment_types=_f("comment", "haddock", "pragma"),
        function_types=_f("function", "signature", "bind"),
        class_types=_f("class", "instance", "data_type", "newtype", "type_family"),
        transparent_types=_f("declarations", "class_declarations", "instance_declarations"),
        header_types=_f("header", "imports", "import"),
        call_types=_f("apply")),
    "bash": GenericLanguage(
        grammar="bash", comment_types=_f("comment"),
        function_types=_f("function_definition"),
        call_types=_f("command")),
    "zig": GenericLanguage(
        grammar="zig", comment_types=_f("line_comment", "doc_comment", "container_doc_comment"),
        function_types=_f(), class_types=_f(),
        transparent_types=_f("ContainerDecl", "ErrorUnionExpr", "SuffixExpr", "VarDecl", "Statement",
                             "Block", "AssignExpr"),
        call_types=_f("SuffixExpr", "FieldOrFnCall"), classify=_zig_classify, name_of=_zig_name, nested_in_functions=True),
}


class _Walker:
    def __init__(self, spec: GenericLanguage, src: bytes):
        self.spec, self.src = spec, src

    def text(self, node: Node | None) -> str:
        return "" if node is None else self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    def kind_and_name(self, node: Node) -> tuple[str, str] | None:
        spec = self.spec
        if spec.classify is not None:
            found = spec.classify(node, self.text)
            if found is not None:
                return found
        if node.type in spec.function_types:
            kind = KIND_FUNCTION
        elif node.type in spec.class_types:
            kind = KIND_CLASS
        else:
            return None
        if spec.name_of is not None:
            name = spec.name_of(node, self.text)
        else:
            named = node.child_by_field_name("name")
            name = self.text(named) if named is not None else _first_ident(node, self.text)
        # a name is one token: a grammar without a name field may offer a whole clause
        name = name.split()[0] if name and name.split() else ""
        return kind, name or "<anonymous>"

    def doc(self, comments: list[Node]) -> str:
        out = []
        for c in comments:
            t = self.text(c).strip()
            if c.type in self.spec.prefix_types:
                m = re.match(r'@(?:doc|moduledoc)\s+(?:~[sS])?("""|")(.*?)(?:\1|$)', t, re.S)
                if m:
                    out.append(m.group(2).strip())
                continue
            t = re.sub(r"^/\*+!?|\*+/$", "", t)
            out.extend(re.sub(r"^\s*(?:///?[/!]?|--+\s*\|?|#+!?|\*)\s?", "", line).rstrip()
                       for line in t.split("\n"))
        text = "\n".join(out).strip()
        return re.sub(r"</?(?:summary|remarks|returns|para|param|c|see)\b[^>]*>", "", text).strip()  # C# XML docs

    def find(self, nodes, prefix: str, context: str, in_class: bool, depth: int = 0) -> list[Definition]:
        """Definitions among ``nodes`` (looking through non-definition nodes, never into
        a definition's body), with their leading comments and attributes."""
        out: list[Definition] = []
        pending: list[Node] = []
        for n in nodes:
            if not n.is_named:
                continue
            if n.type in self.spec.comment_types or n.type in self.spec.prefix_types:
                if pending and _last_row(pending[-1]) < n.start_point.row - 1:
                    pending = []
                pending.append(n)
                continue
            found = self.kind_and_name(n)
            if found is None:
                pending = []
                if depth < 12 and n.named_child_count and (
                        n.type in self.spec.transparent_types or n.type == "ERROR" or
                        not self._is_leafish(n)):
                    out.extend(self.find(n.children, prefix, context, in_class, depth + 1))
                continue
            kind, name = found
            lead = pending if pending and _last_row(pending[-1]) >= n.start_point.row - 1 else []
            if not lead:
                lead = self._swallowed_comments(n)
            pending = []
            start = lead[0].start_point.row if lead else n.start_point.row
            symbol = prefix + name
            if kind == KIND_FUNCTION and in_class:
                kind = KIND_METHOD
            d = Definition(kind, name, symbol, n, start, _last_row(n), self.doc(lead), context,
                           class_symbol=prefix[:-1] if in_class else "")
            own_context = " ".join(self.text(n).split("\n", 1)[0].split())[:200]
            if kind == KIND_CLASS or self.spec.nested_in_functions:
                d.members = self.find(n.children, symbol + ".", own_context, kind == KIND_CLASS, depth + 1)
            if out and out[-1].name == name and out[-1].kind == d.kind and \
                    out[-1].end_row >= d.start_row - 2 and not d.members and not out[-1].members:
                out[-1].end_row = max(out[-1].end_row, d.end_row)  # one more clause of it
                continue
            out.append(d)
        return out

    def _swallowed_comments(self, node: Node) -> list[Node]:
        """The comments right above ``node`` that the grammar put at the end of the
        preceding construct (Kotlin's import list, Haskell's imports, a Ruby module's
        line before its body): the trailing comment nodes of the previous sibling (or of
        an ancestor's previous sibling) that end on the row above or touch each other."""
        prev, cur = None, node
        for _ in range(4):
            prev = cur.prev_named_sibling
            if prev is not None:
                break
            cur = cur.parent
            if cur is None:
                return []
        found: list[Node] = []
        row = node.start_point.row
        while prev is not None:
            if prev.type in self.spec.comment_types:
                if _last_row(prev) < row - 1:
                    break
                found.insert(0, prev)
                row = prev.start_point.row
                prev = prev.prev_named_sibling
            elif prev.named_children:
                prev = prev.named_children[-1]
            else:
                break
        return found

    def _is_leafish(self, node: Node) -> bool:
        """Expressions and statements inside which no definition is looked for (a
        function's body is never entered: see :meth:`find`)."""
        return node.type.endswith(("expression", "_statement", "literal", "arguments", "argument_list",
                                   "string", "block")) and node.type not in self.spec.transparent_types


def definitions(language: str, text: str) -> tuple[list[Definition], list[Node], Node]:
    """Top-level definitions of a file in a :data:`GENERIC_LANGUAGES` language, with
    nested members in ``Definition.members``; the header nodes (imports, package) that
    come before the first definition; the tree's root (kept alive for the nodes).

    Raises ``KeyError`` for another language.
    """
    spec = GENERIC_LANGUAGES[language]
    src = text.encode("utf-8", "surrogatepass")
    root = parse(spec.grammar, src).root_node
    walker = _Walker(spec, src)
    defs = walker.find(root.children, "", "", False)
    first = min((d.start_row for d in defs), default=None)
    header = [n for n in root.named_children if n.type in spec.header_types
              and (first is None or n.start_point.row < first)]
    return defs, header, root


def walk(defs: list[Definition]):
    """Every definition in ``defs`` and their members, depth first."""
    for d in defs:
        yield d
        yield from walk(d.members)


class _GenericChunker:
    def __init__(self, path: str, language: str, text: str, max_class_lines: int, max_chunk_lines: int):
        self.path, self.language = path, language
        self.lines = split_lines(text)
        self.max_class_lines, self.max_chunk_lines = max_class_lines, max_chunk_lines

    def _range(self, kind: str, symbol: str, s: int, e: int, **kw) -> list[Chunk]:
        """Rows ``s..e`` (0-based) as one chunk, or windows when longer than the cap."""
        if e - s + 1 <= self.max_chunk_lines:
            return [Chunk(self.path, self.language, kind, symbol, s + 1, e + 1,
                          slice_text(self.lines, s + 1, e + 1), **kw)]
        out = []
        for i, (a, b) in enumerate(window_ranges(s + 1, e + 1), 1):
            extra = {"part": i}
            out.append(Chunk(self.path, self.language, kind, symbol, a, b, slice_text(self.lines, a, b),
                             context=kw.get("context", ""), signature=kw.get("signature", ""),
                             docstring=kw.get("docstring", "") if i == 1 else "", extra=extra))
        return out

    def _assembled(self, kind: str, symbol: str, rows: list[int], end_before: int | None = None,
                   **kw) -> list[Chunk]:
        """One chunk of the given rows (those within ``max_chunk_lines`` lines of the first), its
        line ranges in ``extra["ranges"]``. Its cited ``end_line`` is the last row before
        ``end_before`` (a class outline cites its own header, as the members cite
        themselves), else the last row."""
        rows = sorted(set(r for r in rows if 0 <= r < len(self.lines) and self.lines[r].strip()))
        if not rows:
            return []
        # at most max_chunk_lines lines from the first (the rest, if any, become windows)
        rows = [r for r in rows if r < rows[0] + self.max_chunk_lines]
        ranges: list[list[int]] = []
        for r in rows:
            if ranges and r == ranges[-1][1]:
                ranges[-1][1] = r + 1
            else:
                ranges.append([r + 1, r + 1])
        text = "\n".join(slice_text(self.lines, s, e) for s, e in ranges)
        before = [r for r in rows if end_before is None or r < end_before] or rows[:1]
        return [Chunk(self.path, self.language, kind, symbol, ranges[0][0], before[-1] + 1, text,
                      extra={"ranges": ranges}, **kw)]

    def _signature(self, d: Definition) -> str:
        return " ".join(self.lines[d.node.start_point.row].split())[:200] if self.lines else ""

    def def_chunks(self, d: Definition) -> list[Chunk]:
        size = d.end_row - d.start_row + 1
        split = d.members and (size > self.max_class_lines if d.kind == KIND_CLASS
                               else size > self.max_chunk_lines)
        kw = dict(context=d.context, signature=self._signature(d), docstring=d.doc)
        if not split:
            return self._range(d.kind, d.symbol, d.start_row, d.end_row, **kw)
        chunks: list[Chunk] = []
        member_rows: set[int] = set()
        firsts: list[int] = []
        for m in d.members:
            chunks += self.def_chunks(m)
            member_rows.update(range(m.start_row, m.end_row + 1))
            firsts.append(m.node.start_point.row)
        own = [r for r in range(d.start_row, d.end_row + 1) if r not in member_rows]
        outline_kind = KIND_CLASS_SIGNATURE if d.kind == KIND_CLASS else d.kind
        first_member = min(m.start_row for m in d.members)
        return self._assembled(outline_kind, d.symbol, own + firsts, end_before=first_member, **kw) + chunks

    def chunk(self, defs: list[Definition], header: list[Node]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for d in defs:
            chunks += self.def_chunks(d)
        if header:
            rows = [r for n in header for r in range(n.start_point.row, _last_row(n) + 1)]
            stem = re.sub(r"\.[^.]*$", "", self.path.rsplit("/", 1)[-1])
            chunks = self._assembled(KIND_HEADER, stem, rows) + chunks
        chunks += self._uncovered(chunks)
        chunks.sort(key=lambda c: c.start_line)
        return chunks

    def _uncovered(self, chunks: list[Chunk]) -> list[Chunk]:
        covered: set[int] = set()
        for c in chunks:
            for s, e in c.extra.get("ranges", [[c.start_line, c.end_line]]):
                covered.update(range(s, e + 1))
        runs: list[list[int]] = []
        for no, line in enumerate(self.lines, 1):
            if no in covered or not line.strip():
                continue
            if runs and not any(n in covered for n in range(runs[-1][1] + 1, no)):
                runs[-1][1] = no
            else:
                runs.append([no, no])
        out: list[Chunk] = []
        for s, e in runs:
            out += self._range(KIND_WINDOW, "", s - 1, e - 1)
        return out


def chunk_generic(path: str, language: str, text: str, *, max_class_lines: int = 80,
                  max_chunk_lines: int = 150) -> list[Chunk]:
    """Chunk ``text`` of a :data:`GENERIC_LANGUAGES` language: one chunk per function,
    method and class (split into members when long), a ``file_header`` chunk, windows
    for the rest. Chunks are sorted by ``start_line`` (1-based, inclusive). Raises
    ``KeyError`` for another language; other failures propagate (the caller falls back
    to windows)."""
    defs, header, _root = definitions(language, text)
    return _GenericChunker(path, language, text, max_class_lines, max_chunk_lines).chunk(defs, header)
