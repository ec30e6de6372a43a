"""Tree-sitter chunking of source code: one chunk per function, method and class.

See :func:`chunk_code`. The node-type tables live in ``languages.py``; this module
only knows the shape of the algorithm:

* top-level items are definitions (chunks of their own), header pieces (imports,
  package clause, constants, module docstring, free comments; assembled into one
  ``file_header`` chunk) or leftovers (other statements; ``window`` chunks);
* a definition's range starts at its contiguous leading comments and decorators;
* a class longer than ``max_class_lines`` is split into one chunk per method (and,
  recursively, per nested class) plus an assembled ``class_signature`` outline;
* anything longer than ``max_chunk_lines`` is cut into overlapping windows;
* finally every non-blank line not yet in a chunk goes into a ``window`` chunk.
"""
from __future__ import annotations

import ast
import inspect
import logging
import os
import re
from dataclasses import dataclass, field

from tree_sitter import Node

from ..syntax import parse
from .languages import CODE_LANGUAGES, CodeLanguage
from .models import (
    KIND_CLASS, KIND_CLASS_SIGNATURE, KIND_FUNCTION, KIND_HEADER, KIND_METHOD,
    KIND_WINDOW, Chunk,
)
from .windows import slice_text, split_lines, window_ranges

log = logging.getLogger(__name__)

# Item kinds besides the chunk kinds.
_HEADER, _OTHER, _COMMENT, _FIELD = "header", "other", "comment", "field"
_DEF_KINDS = (KIND_FUNCTION, KIND_CLASS, KIND_METHOD)

# Go grammar: the specs inside a ``type_declaration``.
_GO_TYPE_SPECS = frozenset({"type_spec", "type_alias"})
GROUP_DELIMITER = re.compile(r"\s*((type|var|const)\s*\(|\))\s*")


def _last_row(node: Node) -> int:
    """Last 0-based row that holds text of ``node`` (not a bare trailing newline)."""
    row = node.end_point.row
    if node.end_point.column == 0 and row > node.start_point.row:
        row -= 1
    return row


@dataclass
class _Item:
    """One statement/member with its leading comments."""

    kind: str
    node: Node  # outermost node (decorated_definition, export_statement, ...)
    start_row: int  # 0-based, includes leading comments
    end_row: int
    comments: list[Node] = field(default_factory=list)
    defn: Node | None = None  # node with the name and body (unwrapped)
    decl: Node | None = None  # node where the signature text starts
    name: str = ""


class _CodeChunker:
    def __init__(self, path: str, language: str, text: str, spec: CodeLanguage,
                 max_class_lines: int, max_chunk_lines: int):
        self.path, self.language, self.spec = path, language, spec
        self.lines = split_lines(text)
        self.src = text.encode("utf-8", "surrogatepass")
        self.max_class_lines, self.max_chunk_lines = max_class_lines, max_chunk_lines
        self.go_types: dict[str, str] = {}  # Go type name -> "type Name struct"

    # ---- small helpers -------------------------------------------------------------
    def _text(self, start: int, end: int) -> str:
        return self.src[start:end].decode("utf-8", "replace")

    def _node_text(self, node: Node | None) -> str:
        return "" if node is None else self._text(node.start_byte, node.end_byte)

    def _chunk(self, kind: str, symbol: str, start_row: int, end_row: int, **kw) -> Chunk:
        s, e = start_row + 1, end_row + 1
        return Chunk(self.path, self.language, kind, symbol, s, e,
                     slice_text(self.lines, s, e), **kw)

    def _range_chunks(self, kind: str, symbol: str, start_row: int, end_row: int,
                      signature: str = "", docstring: str = "", context: str = "") -> list[Chunk]:
        """One chunk for the rows, or 100/20 windows with ``extra["part"]`` if too long."""
        if end_row - start_row + 1 <= self.max_chunk_lines:
            return [self._chunk(kind, symbol, start_row, end_row, context=context,
                                signature=signature, docstring=docstring)]
        return [
            self._chunk(kind, symbol, s - 1, e - 1, context=context, signature=signature,
                        docstring=docstring if i == 1 else "", extra={"part": i})
            for i, (s, e) in enumerate(window_ranges(start_row + 1, end_row + 1), 1)
        ]

    def _assembled(self, kind: str, symbol: str, pieces: list[tuple[int, int]],
                   end_limit_row: int | None = None, **kw) -> list[Chunk]:
        """Chunks whose text concatenates the row ranges ``pieces`` (0-based, inclusive).

        Overlapping pieces are merged; pieces are grouped so that no chunk exceeds
        ``max_chunk_lines`` (an over-long piece is windowed). ``extra["ranges"]`` lists
        the 1-based line ranges used. ``end_line`` is the last piece end, or, with
        ``end_limit_row``, the last end of the pieces starting before that row.
        """
        merged: list[list[int]] = []
        for s, e in sorted(pieces):
            if merged and s <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        expanded: list[tuple[int, int]] = []
        for s, e in merged:
            if e - s + 1 > self.max_chunk_lines:
                expanded.extend((a - 1, b - 1) for a, b in window_ranges(s + 1, e + 1))
            else:
                expanded.append((s, e))
        groups: list[list[tuple[int, int]]] = []
        size = 0
        for s, e in expanded:
            if groups and s <= groups[-1][-1][1]:  # overlapping windows of one piece
                last_s, last_e = groups[-1][-1]
                if size + e - last_e <= self.max_chunk_lines:
                    groups[-1][-1] = (last_s, e)
                    size += e - last_e
                    continue
            if not groups or size + (e - s + 1) > self.max_chunk_lines:
                groups.append([])
                size = 0
            groups[-1].append((s, e))
            size += e - s + 1
        chunks = []
        for i, group in enumerate(groups, 1):
            start = group[0][0]
            if end_limit_row is None:
                end = group[-1][1]
            else:
                end = max([min(e, end_limit_row - 1) for s, e in group if s < end_limit_row]
                          or [group[0][1]])
            text = "\n".join(slice_text(self.lines, s + 1, e + 1) for s, e in group)
            extra = {"ranges": [[s + 1, e + 1] for s, e in group]}
            if len(groups) > 1:
                extra["part"] = i
            chunks.append(Chunk(self.path, self.language, kind, symbol, start + 1, end + 1,
                                text, extra=extra, **kw))
        return chunks

    # ---- turning children into items -----------------------------------------------
    def _iter_nodes(self, nodes):
        for n in nodes:
            if n.start_byte == n.end_byte:  # MISSING nodes from error recovery
                continue
            if n.type == "ERROR" or n.type in self.spec.member_container_types:
                yield from self._iter_nodes(n.children)
            elif n.type in self.spec.type_decl_types and \
                    sum(c.type in _GO_TYPE_SPECS for c in n.named_children) > 1:
                # Go ``type ( A struct{...}; B interface{...} )``: one item per type
                yield from self._iter_nodes(n.children)
            elif n.is_named:
                yield n

    def _items(self, nodes, in_class: bool) -> list[_Item]:
        """Group nodes into items, attaching contiguous comments above each one."""
        items: list[_Item] = []
        pending: list[Node] = []

        def flush_orphans():
            if pending:
                items.append(_Item(_COMMENT, pending[0], pending[0].start_point.row,
                                   _last_row(pending[-1]), comments=list(pending)))
                pending.clear()

        for n in self._iter_nodes(nodes):
            row = n.start_point.row
            if n.type in self.spec.comment_types:
                if not pending and items and row == items[-1].end_row:
                    items[-1].end_row = max(items[-1].end_row, _last_row(n))  # trailing
                    continue
                if pending and _last_row(pending[-1]) < row - 1:
                    flush_orphans()
                pending.append(n)
                continue
            lead: list[Node] = []
            if pending and _last_row(pending[-1]) >= row - 1:
                lead, pending = pending, []
            else:
                flush_orphans()
            first = all(i.kind == _COMMENT for i in items)
            item = self._classify(n, in_class, first=first)
            item.comments = lead
            if lead:
                item.start_row = lead[0].start_point.row
            items.append(item)
        flush_orphans()
        return items

    def _unwrap(self, node: Node) -> Node | None:
        if node.type not in self.spec.wrapper_types:
            return node
        inner = node.child_by_field_name("definition") or node.child_by_field_name("declaration")
        if inner is not None:
            return inner
        wanted = (self.spec.function_types | self.spec.class_types
                  | self.spec.function_value_types | self.spec.variable_types)
        return next((c for c in node.named_children if c.type in wanted), None)

    def _name(self, node: Node | None, default: str = "<anonymous>") -> str:
        name = node.child_by_field_name("name") if node is not None else None
        return self._node_text(name) if name is not None else default

    def _classify(self, node: Node, in_class: bool, first: bool) -> _Item:
        spec = self.spec
        item = _Item(_OTHER, node, node.start_point.row, _last_row(node), decl=node)
        inner = self._unwrap(node)
        if inner is None:
            item.kind = _HEADER if node.type in spec.header_types and not in_class else _OTHER
            return item
        item.defn = item.decl = inner
        default = "default" if node.type in spec.wrapper_types else "<anonymous>"
        item.name = self._name(inner, default)
        t = inner.type
        if t in spec.class_types:
            item.kind = KIND_CLASS
        elif in_class and t in spec.method_types:
            item.kind = KIND_METHOD
        elif in_class:
            value = inner.child_by_field_name("value") if t in spec.field_types else None
            if value is not None and value.type in spec.function_value_types:
                item.kind, item.defn = KIND_METHOD, value
            else:
                item.kind = _FIELD
        elif t in spec.function_types or t in spec.function_value_types:
            item.kind = KIND_FUNCTION
        elif t in spec.receiver_method_types:
            item.kind = KIND_METHOD
            item.name = f"{self._receiver(inner)}.{item.name}"
        elif t in spec.type_decl_types or t in _GO_TYPE_SPECS:
            self._classify_type_decl(item, inner)
        elif t in spec.variable_types:
            decls = [c for c in inner.named_children if c.type == "variable_declarator"]
            value = decls[0].child_by_field_name("value") if len(decls) == 1 else None
            if value is not None and value.type in spec.function_value_types:
                item.kind, item.defn, item.name = KIND_FUNCTION, value, self._name(decls[0])
            else:
                item.kind = _HEADER
        elif node.type in spec.header_types or t in spec.header_types:
            item.kind = _HEADER
        else:
            # A leading string is a module docstring or a "use strict" directive; Python
            # module-level assignments are header constants. (Grammar versions differ on
            # wrapping statements in expression_statement.)
            kids = inner.named_children
            child = kids[0] if t == "expression_statement" and len(kids) == 1 else inner
            if (first and child.type == "string") or (
                    spec.python_docstrings and child.type in ("assignment", "augmented_assignment")):
                item.kind = _HEADER
        return item

    def _classify_type_decl(self, item: _Item, decl: Node) -> None:
        """Go ``type`` declarations (or one spec of a grouped ``type (...)``): struct and
        interface specs make a class, others a header."""
        item.kind = _HEADER
        for spec_node in ([decl] if decl.type in _GO_TYPE_SPECS else decl.named_children):
            name = self._name(spec_node, "")
            if not name:
                continue
            first_line = self._node_text(spec_node).split("\n", 1)[0].split("{", 1)[0]
            self.go_types.setdefault(name, "type " + " ".join(first_line.split()))
            value = spec_node.child_by_field_name("type")
            if item.kind == _HEADER and value is not None and value.type in self.spec.type_class_values:
                item.kind, item.name, item.defn = KIND_CLASS, name, spec_node

    def _receiver(self, method: Node) -> str:
        """Go receiver type name without pointer or type parameters."""
        text = self._node_text(method.child_by_field_name("receiver")).strip("() \t\n")
        text = re.sub(r"\[.*\]", "", text).split()
        return text[-1].lstrip("*") if text else "<receiver>"

    # ---- signature / docstring / context -------------------------------------------
    def _body(self, item: _Item) -> Node | None:
        return item.defn.child_by_field_name("body") if item.defn is not None else None

    def _sig_start(self, node: Node) -> int:
        """Byte where a declaration's text starts, skipping annotations and decorators."""
        skip = self.spec.annotation_types | self.spec.comment_types
        for child in node.children:
            if child.type in skip:
                continue
            if child.type == "modifiers":
                kept = [c for c in child.children if c.type not in skip]
                if kept:
                    return kept[0].start_byte
                continue
            return child.start_byte
        return node.start_byte

    def _header_end(self, defn: Node, body: Node | None, with_brace: bool) -> int:
        """Byte where a declaration's header ends (after ``:``, or before/after ``{``)."""
        if body is None:
            return defn.end_byte
        colons = [c for c in defn.children if c.type == ":" and c.end_byte <= body.start_byte]
        if colons:
            return colons[-1].end_byte
        brace = self.src[body.start_byte:body.start_byte + 1] == b"{"
        return body.start_byte + (1 if with_brace and brace else 0)

    def _signature(self, item: _Item) -> str:
        if self.spec.type_decl_types and item.kind == KIND_CLASS:
            return self.go_types.get(item.name, "type " + item.name)
        body = self._body(item)
        start = self._sig_start(item.decl)
        text = self._text(start, self._header_end(item.defn, body, False)).strip()
        return text.rstrip(";").rstrip() if body is None else text

    def _context_line(self, item: _Item) -> str:
        start = self._sig_start(item.decl)
        text = self._text(start, self._header_end(item.defn, self._body(item), True))
        return " ".join(text.split())

    def _sig_end_row(self, item: _Item) -> int:
        """Last row of a member's signature (decorators included, body excluded)."""
        body = self._body(item)
        start = item.node.start_point.row
        if body is None:
            return item.end_row
        if self.src[body.start_byte:body.start_byte + 1] == b"{":
            return max(start, body.start_point.row)
        return max(start, body.start_point.row - 1)

    def _python_docstring(self, body: Node | None) -> str:
        statements = [] if body is None else [
            c for c in body.named_children if c.type not in self.spec.comment_types]
        if not statements:
            return ""
        string = statements[0]
        if string.type == "expression_statement" and string.named_children:
            string = string.named_children[0]
        if string.type != "string":
            return ""
        raw = self._node_text(string)
        try:
            value = ast.literal_eval(raw)
        except Exception:  # f-strings, broken quoting
            value = re.sub(r"^[A-Za-z]*('''|\"\"\"|'|\")|('''|\"\"\"|'|\")$", "", raw)
        return inspect.cleandoc(value) if isinstance(value, str) else ""

    def _comment_text(self, comments: list[Node]) -> str:
        out = []
        for c in comments:
            text = self._node_text(c).strip()
            if text.startswith("/*"):
                text = re.sub(r"^/\*+!?|\*+/$", "", text)
                out.extend(re.sub(r"^\s*\*? ?", "", line).rstrip() for line in text.split("\n"))
            else:
                out.append(re.sub(r"^(//[/!]?|#+!?|--) ?", "", text).rstrip())
        return "\n".join(out).strip()

    def _docstring(self, item: _Item) -> str:
        doc = ""
        if self.spec.python_docstrings:
            doc = self._python_docstring(self._body(item))
        return doc or self._comment_text(item.comments)

    # ---- definitions ---------------------------------------------------------------
    def _def_chunks(self, item: _Item, prefix: str = "", context: str = "") -> list[Chunk]:
        symbol = prefix + item.name
        if item.kind == KIND_CLASS:
            return self._class_chunks(item, symbol, context)
        if item.kind == KIND_METHOD and not context:  # Go receiver method
            recv = item.name.split(".", 1)[0]
            context = self.go_types.get(recv, f"type {recv}")
        return self._range_chunks(item.kind, symbol, item.start_row, item.end_row,
                                  self._signature(item), self._docstring(item), context)

    def _class_chunks(self, item: _Item, symbol: str, context: str) -> list[Chunk]:
        body = self._body(item) if item.defn.type in self.spec.class_types else None
        members = self._items(body.children, in_class=True) if body is not None else []
        size = item.end_row - item.start_row + 1
        if size <= self.max_class_lines or not any(m.kind in _DEF_KINDS for m in members):
            return self._range_chunks(KIND_CLASS, symbol, item.start_row, item.end_row,
                                      self._signature(item), self._docstring(item), context)
        own_context = self._context_line(item)
        decl_row = self.src.count(b"\n", 0, self._sig_start(item.decl))
        header_end = max(decl_row, members[0].start_row - 1) if members else item.end_row
        pieces = [(item.start_row, header_end)]
        chunks: list[Chunk] = []
        first_def_row = None
        for m in members:
            if m.kind == KIND_METHOD:
                chunks += self._def_chunks(m, symbol + ".", own_context)
                pieces.append((m.node.start_point.row, self._sig_end_row(m)))
            elif m.kind == KIND_CLASS:
                chunks += self._def_chunks(m, symbol + ".", own_context)
                inner_members = self._items(self._body(m).children, True) if self._body(m) else []
                inner_end = inner_members[0].start_row - 1 if inner_members else m.end_row
                pieces.append((m.node.start_point.row, max(m.node.start_point.row, inner_end)))
            else:
                pieces.append((m.start_row, m.end_row))
                continue
            if first_def_row is None:
                first_def_row = m.start_row
        if members and item.end_row > max(m.end_row for m in members):
            pieces.append((item.end_row, item.end_row))  # closing brace
        outline = self._assembled(KIND_CLASS_SIGNATURE, symbol, pieces, first_def_row,
                                  context=context, signature=self._signature(item),
                                  docstring=self._docstring(item))
        return outline + chunks

    # ---- the file ------------------------------------------------------------------
    def _module_name(self, items: list[_Item]) -> str:
        for it in items:
            if it.kind == _HEADER and it.node.type in ("package_clause", "package_declaration"):
                named = it.node.named_children
                if named:
                    return self._node_text(named[0])
        stem = os.path.splitext(os.path.basename(self.path))[0]
        if stem == "__init__":
            return os.path.basename(os.path.dirname(self.path)) or stem
        return stem

    def _header_docstring(self, root: Node, header: list[_Item]) -> str:
        """Python module docstring, or the doc comment above a package clause."""
        if self.spec.python_docstrings:
            return self._python_docstring(root)
        for it in header:
            if it.kind == _HEADER and "package" in it.node.type:
                return self._comment_text(it.comments)
        return ""

    def chunk(self, root: Node) -> list[Chunk]:
        items = self._items(root.children, in_class=False)
        chunks: list[Chunk] = []
        header: list[_Item] = []
        run: list[_Item] = []

        def flush_run():
            if run:
                chunks.extend(self._range_chunks(KIND_WINDOW, "", run[0].start_row, run[-1].end_row))
                run.clear()

        seen_def = False
        for it in items:
            if it.kind in _DEF_KINDS:
                flush_run()
                seen_def = True
            elif not seen_def and (it.kind == _HEADER or (it.kind == _COMMENT and not run)):
                # only the leading imports/constants form the header: a constant declared
                # after the first definition is a window of its own, so the header chunk's
                # line range is the header's lines, not the whole file
                flush_run()
                header.append(it)
            else:
                run.append(it)
        flush_run()
        defs = [it for it in items if it.kind in _DEF_KINDS]
        for it in defs:
            chunks.extend(self._def_chunks(it))
        if header:
            chunks = self._assembled(
                KIND_HEADER, self._module_name(items), [(h.start_row, h.end_row) for h in header],
                docstring=self._header_docstring(root, header)) + chunks
        chunks += self._uncovered(chunks)
        chunks.sort(key=lambda c: c.start_line)
        return chunks

    def _uncovered(self, chunks: list[Chunk]) -> list[Chunk]:
        """Window chunks for non-blank lines that no chunk covers (a safety net)."""
        covered = set()
        for c in chunks:
            for s, e in c.extra.get("ranges", [[c.start_line, c.end_line]]):
                covered.update(range(s, e + 1))
        runs: list[list[int]] = []
        for no, line in enumerate(self.lines, 1):
            # the ``type (`` and ``)`` lines of a grouped Go declaration whose specs are
            # chunked one by one carry nothing to search for
            if no in covered or not line.strip() or GROUP_DELIMITER.fullmatch(line):
                continue
            gap = self.lines[runs[-1][1]:no - 1] if runs else None
            if runs and not any(g.strip() for g in gap) and \
                    not any(n in covered for n in range(runs[-1][1] + 1, no)):
                runs[-1][1] = no
            else:
                runs.append([no, no])
        out = []
        for s, e in runs:
            out += self._range_chunks(KIND_WINDOW, "", s - 1, e - 1)
        return out


def chunk_code(path: str, language: str, text: str, *, max_class_lines: int = 80,
               max_chunk_lines: int = 150) -> list[Chunk]:
    """Chunk source ``text`` of a language in ``CODE_LANGUAGES`` with tree-sitter.

    Returns chunks sorted by ``start_line`` (1-based, inclusive ranges). Syntax errors
    are logged as a warning and chunked anyway (tree-sitter recovers, and definitions its
    error recovery swallowed are re-parsed, see :func:`_recover_definitions`); the chunks of
    such a file carry ``extra["syntax_errors"] = True``. Raises
    ``KeyError`` for a language without a table; other failures propagate, and
    :func:`indexer.chunking.chunk_file` turns them into a window fallback.
    """
    spec = CODE_LANGUAGES[language]
    chunker = _CodeChunker(path, language, text, spec, max_class_lines, max_chunk_lines)
    tree = parse(spec.grammar, chunker.src)  # the call-graph extractor reuses this tree
    chunks = chunker.chunk(tree.root_node)
    if tree.root_node.has_error:
        chunks = _recover_definitions(path, language, text, spec, tree.root_node, chunks,
                                      max_class_lines, max_chunk_lines)
        log.warning("%s: tree-sitter found syntax errors; chunking what it recovered", path)
        for c in chunks:
            c.extra["syntax_errors"] = True
    return chunks


# At most this many re-parses of one file's tail (each is one linear tree-sitter parse).
MAX_RESYNC_PARSES = 20
_CLOSERS = tuple(")]}")


def _resync_rows(root: Node, lines: list[str]) -> list[int]:
    """0-based rows where a new top-level construct may start inside an ``ERROR`` node:
    a non-blank line with no indentation (not a lone closing bracket) after the row the
    error starts on. Tree-sitter's recovery often swallows a whole later definition into
    the ERROR of an unclosed bracket above it."""
    rows: set[int] = set()
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "ERROR" or n.is_missing:
            for r in range(n.start_point.row + 1, min(n.end_point.row, len(lines) - 1) + 1):
                line = lines[r]
                if line.strip() and not line[0].isspace() and not line.lstrip().startswith(_CLOSERS):
                    rows.add(r)
        if n.has_error:
            stack.extend(n.children)
    return sorted(rows)


def _recover_definitions(path: str, language: str, text: str, spec: CodeLanguage, root: Node,
                         chunks: list[Chunk], max_class_lines: int, max_chunk_lines: int,
                         budget: list[int] | None = None) -> list[Chunk]:
    """``chunks`` plus the definitions that follow a syntax error and that the first parse
    lost inside an ``ERROR`` node (e.g. ``x = [1, 2`` then ``def f(): ...``).

    For each resync row (:func:`_resync_rows`), the file is parsed again with every line
    above that row blanked (so rows and line numbers stay the same); the function, method
    and class chunks that parse finds from that row on are added, unless the first parse
    already had them. The tail is recovered recursively; at most :data:`MAX_RESYNC_PARSES`
    parses per file. Existing chunks are kept as they are (a recovered definition may
    overlap the window that holds the broken lines around it).
    """
    budget = [MAX_RESYNC_PARSES] if budget is None else budget
    kept = text.splitlines(keepends=True)
    have = {(c.kind, c.symbol, c.start_line) for c in chunks}
    def_starts = {c.start_line for c in chunks if c.kind in _DEF_KINDS}
    wanted = _DEF_KINDS + (KIND_CLASS_SIGNATURE,)
    for row in _resync_rows(root, [k.rstrip("\r\n") for k in kept]):
        if row + 1 in def_starts:
            continue
        if budget[0] <= 0:
            break
        budget[0] -= 1
        tail = "\n" * row + "".join(kept[row:])
        chunker = _CodeChunker(path, language, tail, spec, max_class_lines, max_chunk_lines)
        tree = parse(spec.grammar, chunker.src)
        found = chunker.chunk(tree.root_node)
        if tree.root_node.has_error:
            found = _recover_definitions(path, language, tail, spec, tree.root_node, found,
                                         max_class_lines, max_chunk_lines, budget)
        new = [c for c in found if c.kind in wanted and c.start_line > row
               and (c.kind, c.symbol, c.start_line) not in have]
        if new:
            return sorted(chunks + new, key=lambda c: c.start_line)
    return chunks
