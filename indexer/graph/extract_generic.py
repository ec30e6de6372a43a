"""Call-graph facts for the table-driven languages (``indexer.chunking.generic``): Rust,
C, C++, C#, Kotlin, Swift, Ruby, PHP, Scala, Lua, Elixir, Haskell, Bash and Zig.

Name-level only: definitions come from the same walker as the chunks (so symbols
match), and each call expression records the called name and the expression as
written. A plain call (``helper(x)``) gets an ``R_NAME`` receiver, which the resolver
links to a definition of that name in the same file; a member call (``obj.send()``,
``Foo::bar()``, ``$this->send()``) gets an ``R_UNKNOWN`` receiver named by its base,
which stays unresolved; :mod:`indexer.graph.query` then matches unresolved calls by
name, as for any call the resolver could not prove. No types, imports or receivers
are evaluated for these languages.
"""
from __future__ import annotations

from tree_sitter import Node

from indexer.chunking.generic import GENERIC_LANGUAGES, Definition as ChunkDef, definitions, walk

from .facts import R_NAME, R_UNKNOWN, CallSite, Definition, FileFacts, Receiver

# The part of a call node that names the callee, per node type (field name, or None
# for "the first named child").
_CALLEE_FIELD = {
    "call_expression": "function", "invocation_expression": "function",
    "function_call_expression": "function", "member_call_expression": "name",
    "nullsafe_member_call_expression": "name", "scoped_call_expression": "name",
    "object_creation_expression": "type", "macro_invocation": "macro", "function_call": "name",
    "call": "method", "apply": "function", "command": "name",
}
_NAME_LEAVES = frozenset({"identifier", "field_identifier", "simple_identifier", "type_identifier",
                          "name", "word", "command_name", "variable", "constant", "IDENTIFIER",
                          "property_identifier", "qualified_name", "operator_identifier"})
# Nodes whose calls are not calls: Haskell type signatures (``ToJSON a =>``), Elixir
# module attributes (``@doc "…"``).
_NO_CALLS = {"haskell": frozenset({"signature"}), "elixir": frozenset({"unary_operator"})}
_ELIXIR_KEYWORDS = frozenset({"def", "defp", "defmacro", "defmacrop", "defmodule", "defprotocol",
                              "defimpl", "defguard", "defguardp", "defdelegate", "defstruct",
                              "defexception", "alias", "import", "require", "use", "quote", "unquote",
                              "case", "cond", "if", "unless", "with", "for", "fn", "receive", "try"})
_BASH_BUILTINS = frozenset("""echo printf cd test [ [[ local export declare readonly return exit shift set
unset source . eval exec read true false command type trap wait kill let pushd popd""".split())


def _text(src: bytes, node: Node | None) -> str:
    return "" if node is None else src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def _rightmost_name(node: Node) -> Node | None:
    """The last identifier-like leaf of a callee expression (``a.b.c`` -> ``c``)."""
    cur = node
    for _ in range(12):
        if cur.type in _NAME_LEAVES and not cur.named_children:
            return cur
        kids = [c for c in cur.named_children if c.type not in ("type_arguments", "type_parameters",
                                                                  "arguments", "value_arguments")]
        if not kids:
            return cur if cur.type in _NAME_LEAVES else None
        cur = kids[-1]
    return None


def _callee(language: str, node: Node, src: bytes) -> tuple[str, str, bool] | None:
    """``(name, expression as written, is_member_call)`` of a call node, or ``None``
    when it is not a call of a name (Zig suffix expressions without arguments, Elixir
    definitions, Bash builtins)."""
    t = node.type
    if language == "zig":
        kids = node.named_children
        if not any(k.type == "FnCallArguments" for k in kids):
            return None
        if t == "FieldOrFnCall":  # a.b.method(args): the method's name, the chain as written
            ident = next((k for k in kids if k.type == "IDENTIFIER"), None)
            parent = node.parent
            if ident is None or parent is None:
                return None
            expr = src[parent.start_byte:ident.end_byte].decode("utf-8", "replace")
            return _text(src, ident), expr, True
        parts = [k for k in kids if k.type != "FnCallArguments"]
        if len(parts) != 1 or parts[0].type != "IDENTIFIER":
            return None
        name = _text(src, parts[0])
        return name, name, False
    if language == "elixir":
        target = node.child_by_field_name("target") or (node.named_children[0] if node.named_children else None)
        if target is None:
            return None
        if target.type == "identifier":
            name = _text(src, target)
            return None if name in _ELIXIR_KEYWORDS else (name, name, False)
        if target.type == "dot":
            right = target.child_by_field_name("right")
            return (_text(src, right), _text(src, target), True) if right is not None else None
        return None
    field = _CALLEE_FIELD.get(t)
    part = node.child_by_field_name(field) if field else None
    if part is None:
        part = node.named_children[0] if node.named_children else None
    if part is None:
        return None
    if language == "bash":
        name = _text(src, part)
        return None if name in _BASH_BUILTINS or not name or name.startswith(("$", "-")) else (name, name, False)
    leaf = _rightmost_name(part)
    if leaf is None:
        return None
    name = _text(src, leaf).lstrip("$")
    expr = _text(src, part) if part is not leaf else name
    member = t in ("member_call_expression", "nullsafe_member_call_expression", "scoped_call_expression") \
        or (part is not leaf and part.type not in ("qualified_name", "generic_name", "template_function"))
    if t == "call" and node.child_by_field_name("receiver") is not None:  # Ruby obj.m
        expr, member = _text(src, node.child_by_field_name("receiver")) + "." + name, True
    if t in ("function_call_expression", "object_creation_expression") and part.type in ("qualified_name", "name"):
        member = False
    return (name, expr, member) if name and len(name) < 120 else None


class GenericExtractor:
    """Facts of one file in a :data:`indexer.chunking.generic.GENERIC_LANGUAGES` language."""

    def __init__(self, path: str, language: str, text: str):
        self.path = path.replace("\\", "/")
        self.language = language
        self.text = text
        self.facts = FileFacts(self.path, language)

    def run(self) -> None:
        """Find definitions (the chunker's) and the calls inside each of them."""
        spec = GENERIC_LANGUAGES[self.language]
        defs, _header, root = definitions(self.language, self.text)
        src = self.text.encode("utf-8", "surrogatepass")
        spans: list[tuple[int, int, str]] = []
        for d in walk(defs):
            self.facts.definitions.append(self._definition(d))
            spans.append((d.start_row, d.end_row, d.symbol))
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type in spec.comment_types or node.type in _NO_CALLS.get(self.language, ()):
                continue
            if self.language == "elixir" and node.type == "call" and spec.classify(node, lambda n: _text(src, n)):
                # a definition: its head (``def f(x)``) is not a call; its body is
                for child in node.named_children:
                    kids = child.named_children[1:] if child.type == "arguments" else [child]
                    stack.extend(reversed(kids))
                continue
            if node.type in spec.call_types:
                found = _callee(self.language, node, src)
                if found is not None:
                    name, expr, member = found
                    caller = self._caller(spans, node.start_point.row)
                    receiver = Receiver(R_UNKNOWN, expr.rsplit(".", 1)[0]) if member else Receiver(R_NAME)
                    self.facts.calls.append(CallSite(caller, node.start_point.row + 1, name, expr, receiver,
                                                     node.type == "object_creation_expression"))
            stack.extend(reversed(node.named_children))

    @staticmethod
    def _caller(spans: list[tuple[int, int, str]], row: int) -> str:
        """The innermost definition whose rows hold ``row`` ("" at file level)."""
        best = ""
        for start, end, symbol in spans:
            if start > row:
                break
            if start <= row <= end:
                best = symbol
        return best

    @staticmethod
    def _definition(d: ChunkDef) -> Definition:
        """The graph's definition of a chunker definition (same symbol, kind and lines)."""
        return Definition(d.symbol, d.name.rsplit(".", 1)[-1], d.kind, d.start_row + 1, d.end_row + 1,
                          class_symbol=d.class_symbol, caller_symbol=d.symbol)
