"""Shared machinery of the per-language fact extractors.

:class:`BaseExtractor` parses one file with tree-sitter and walks it with
``visit_<node type>`` methods (default: visit the children). It keeps

* a definition stack, giving dotted symbols and the caller symbol of calls (calls
  inside a function nested in a function belong to the outer, chunk-visible one);
* a scope stack of local variables -> :class:`Receiver` (what is statically known of
  their value), flow-insensitive per function: a declared type wins, a second,
  different inferred value makes the variable unknown;
* the generic expression describer :meth:`expr`, built on three language hooks:
  :meth:`member` (``obj.attr``), :meth:`call_ref` (a call expression) and
  :meth:`atom` (identifiers, ``self``/``this``, literals).
"""
from __future__ import annotations

from contextlib import contextmanager

from tree_sitter import Node
from ..syntax import parse

from .facts import (
    ELEM_INDEX, ELEM_ITER,
    KIND_CLASS, R_CALL, R_IDENT, R_MODULE, R_NAME, R_UNKNOWN, CallRef, CallSite, Definition,
    FileFacts, Import, Receiver,
)

_MAX_DEPTH = 400  # deeper subtrees (huge expression chains) are skipped, not crashed on


class _Scope:
    __slots__ = ("values", "declared")

    def __init__(self):
        self.values: dict[str, Receiver] = {}
        self.declared: set[str] = set()


class BaseExtractor:
    """Walks one file and fills :attr:`facts`. Subclasses set ``grammar`` and hooks."""

    grammar = ""
    # Node types skipped entirely (comments, strings).
    skip_types: frozenset[str] = frozenset({"comment", "line_comment", "block_comment"})
    ident_types: frozenset[str] = frozenset({"identifier"})

    def __init__(self, path: str, language: str, text: str):
        self.path = path.replace("\\", "/")
        self.language = language
        self.src = text.encode("utf-8", "surrogatepass")
        self.facts = FileFacts(self.path, language)
        self.scopes: list[_Scope] = [_Scope()]
        # Definition stack: (Definition, is_function).
        self.def_stack: list[tuple[Definition, bool]] = []
        self.depth = 0
        self.module_names: set[str] = set()  # file-level names bound to whole modules
        self._declared_attrs: dict[int, set[str]] = {}  # id(class def) -> declared attrs

    # ---- entry point -----------------------------------------------------------------
    def run(self) -> None:
        """Parse and walk the file (errors propagate to :func:`extract_file`)."""
        tree = parse(self.grammar or self.language, self.src)  # the chunker's tree when it parsed it
        self.visit(tree.root_node)

    # ---- text helpers ----------------------------------------------------------------
    def text(self, node: Node | None) -> str:
        if node is None:
            return ""
        return self.src[node.start_byte:node.end_byte].decode("utf-8", "replace")

    @staticmethod
    def line(node: Node) -> int:
        return node.start_point.row + 1

    @staticmethod
    def end_line(node: Node) -> int:
        row = node.end_point.row
        if node.end_point.column == 0 and row > node.start_point.row:
            row -= 1
        return row + 1

    @staticmethod
    def field(node: Node | None, name: str) -> Node | None:
        return None if node is None else node.child_by_field_name(name)

    # ---- walking ---------------------------------------------------------------------
    def visit(self, node: Node) -> None:
        if node.type in self.skip_types:
            return
        self.depth += 1
        try:
            if self.depth > _MAX_DEPTH:
                return
            handler = getattr(self, "visit_" + node.type, None)
            if handler is not None:
                handler(node)
            else:
                self.visit_children(node)
        finally:
            self.depth -= 1

    def walk_fields(self, node: Node, *names: str) -> None:
        """Visit ``node``'s children in the fields ``names``, in that order (a missing one is
        skipped). Not named ``visit_…``: those are the handlers of node types."""
        for name in names:
            child = self.field(node, name)
            if child is not None:
                self.visit(child)

    def visit_children(self, node: Node) -> None:
        for child in node.children:
            if child.is_named:
                self.visit(child)

    # ---- definitions -----------------------------------------------------------------
    @property
    def current_def(self) -> Definition | None:
        return self.def_stack[-1][0] if self.def_stack else None

    @property
    def in_function(self) -> bool:
        return any(is_fn for _, is_fn in self.def_stack)

    @property
    def current_class(self) -> Definition | None:
        """Innermost class definition, if the innermost definition chain is in one."""
        for d, is_fn in reversed(self.def_stack):
            if d.kind == KIND_CLASS:
                return d
        return None

    @property
    def caller_symbol(self) -> str:
        d = self.current_def
        return d.caller_symbol if d is not None else ""

    def symbol_for(self, name: str) -> str:
        d = self.current_def
        return f"{d.symbol}.{name}" if d is not None else name

    @contextmanager
    def definition(self, name: str, kind: str, node: Node, *, is_function: bool,
                   class_symbol: str = "", symbol: str | None = None):
        """Push a definition named ``name`` (symbol from the stack unless given)."""
        sym = symbol if symbol is not None else self.symbol_for(name)
        caller = self.caller_symbol if self.in_function else sym
        d = Definition(sym, name, kind, self.line(node), self.end_line(node),
                       class_symbol=class_symbol, caller_symbol=caller)
        self.facts.definitions.append(d)
        self.def_stack.append((d, is_function))
        if is_function:
            self.scopes.append(_Scope())
        try:
            yield d
        finally:
            if is_function:
                self.scopes.pop()
            self.def_stack.pop()

    @contextmanager
    def function_scope(self):
        """A scope for an anonymous function (lambda, closure): no definition."""
        self.scopes.append(_Scope())
        try:
            yield
        finally:
            self.scopes.pop()

    # ---- variables -------------------------------------------------------------------
    def bind(self, name: str, value: Receiver | None, declared: bool = False) -> None:
        """Record what is known of local ``name``. ``None`` values (Python ``None``) are
        ignored; a declared type locks the variable; conflicting inferred values make it
        unknown."""
        if not name or value is None:
            return
        scope = self.scopes[-1]
        if declared:
            scope.values[name] = value
            scope.declared.add(name)
            return
        if name in scope.declared:
            return
        old = scope.values.get(name)
        if old is None:
            scope.values[name] = value
        elif old.to_dict() != value.to_dict():
            scope.values[name] = self.merge_values(name, old, value)
        if len(self.scopes) == 1 and not self.def_stack:
            self.facts.variables[name] = scope.values[name]

    def merge_values(self, name: str, old: Receiver, new: Receiver) -> Receiver:
        """What a variable assigned two different inferred values is: unknown here;
        a language may keep the set of both (flow-insensitive assignment sets)."""
        return Receiver(R_UNKNOWN, name)

    def lookup(self, name: str) -> Receiver | None:
        for scope in reversed(self.scopes):
            if name in scope.values:
                return scope.values[name]
        return None

    def set_attribute(self, cls: Definition, attr: str, value: Receiver | None,
                      declared: bool = False) -> None:
        """Record a class attribute's value (declared types win over inferred ones)."""
        if value is None or not attr:
            return
        locked = self._declared_attrs.setdefault(id(cls), set())
        if declared:
            cls.attributes[attr] = value
            locked.add(attr)
        elif attr not in locked:
            old = cls.attributes.get(attr)
            if old is None:
                cls.attributes[attr] = value
            elif old.to_dict() != value.to_dict():
                cls.attributes[attr] = Receiver(R_UNKNOWN)

    def add_import(self, module: str, name: str = "", alias: str = "", line: int = 0,
                   relative: bool = False, static: bool = False, binds_module: bool = False) -> None:
        scope = self.caller_symbol if self.in_function and self.language == "python" else ""
        imp = Import(module, name, alias, line, relative, static, scope)
        self.facts.imports.append(imp)
        local = imp.local_name
        if not binds_module or not local:
            return
        if self.def_stack or len(self.scopes) > 1:
            self.bind(local, Receiver(R_MODULE, local), declared=True)
        else:
            self.module_names.add(local)

    # ---- expressions -----------------------------------------------------------------
    def unwrap(self, node: Node) -> Node:
        """Strip wrappers that do not change the value (parentheses, await...)."""
        return node

    #: The grammar's element access, ``(node type, container field)`` (``x[i]``), and
    #: attribute access, ``(node type, object field, attribute field)`` (``obj.attr``),
    #: read by :meth:`member`; ``None``: the language has none.
    INDEX_ACCESS: tuple[str, str] | None = None
    ATTRIBUTE_ACCESS: tuple[str, str, str] | None = None

    def member(self, node: Node) -> tuple[Node, str] | None:
        """``(object node, attribute name)`` for an attribute access (``(container,
        ELEM_INDEX)`` for an element access), by :attr:`INDEX_ACCESS` and
        :attr:`ATTRIBUTE_ACCESS`; else ``None``."""
        if self.INDEX_ACCESS is not None and node.type == self.INDEX_ACCESS[0]:
            container = self.field(node, self.INDEX_ACCESS[1])
            return (container, ELEM_INDEX) if container is not None else None
        if self.ATTRIBUTE_ACCESS is not None and node.type == self.ATTRIBUTE_ACCESS[0]:
            obj, attr = self.field(node, self.ATTRIBUTE_ACCESS[1]), self.field(node, self.ATTRIBUTE_ACCESS[2])
            if obj is not None and attr is not None:
                return obj, self.text(attr)
        return None

    def call_ref(self, node: Node) -> CallRef | None:
        """A :class:`CallRef` when ``node`` is a call (or ``new``) expression."""
        return None

    def atom(self, node: Node) -> Receiver | None:
        """Identifiers, self/this, literals with a type; ``None`` for unknown shapes."""
        return None

    def ident(self, name: str) -> Receiver:
        """What a bare identifier denotes in the current scope."""
        found = self.lookup(name)
        if found is not None:
            r = Receiver(found.kind, found.name or name, found.type, list(found.attrs),
                         found.value, found.index, list(found.elems))
            return r
        if name in self.module_names:
            return Receiver(R_MODULE, name)
        return Receiver(R_IDENT, name)

    def expr(self, node: Node | None) -> Receiver:
        """Describe a value expression as a :class:`Receiver` (never raises)."""
        if node is None:
            return Receiver(R_UNKNOWN)
        node = self.unwrap(node)
        m = self.member(node)
        if m is not None:
            obj, attr = m
            return self.expr(obj).with_attr(attr)
        ref = self.call_ref(node)
        if ref is not None:
            return Receiver(R_CALL, value=ref)
        a = self.atom(node)
        return a if a is not None else Receiver(R_UNKNOWN)

    def callee(self, node: Node, new: bool = False) -> CallRef:
        """Describe the called expression ``node`` (``foo``, ``a.b.foo``, ``x().foo``).

        A plain call gets an ``R_NAME`` receiver; calling a local variable (a callable
        parameter, a closure) gets an ``R_UNKNOWN`` receiver named after the variable,
        which the resolver never matches by name.
        """
        node = self.unwrap(node)
        m = self.member(node)
        if m is not None:
            obj, attr = m
            if attr in (ELEM_INDEX, ELEM_ITER):  # calling a container element: dynamic
                return CallRef("", self.text(node), Receiver(R_UNKNOWN), new)
            return CallRef(attr, self.text(node), self.expr(obj), new)
        if node.type in self.ident_types:
            name = self.text(node)
            if self.lookup(name) is not None and not new:
                return CallRef(name, name, Receiver(R_UNKNOWN, name), new)
            return CallRef(name, name, Receiver(R_NAME), new)
        return CallRef("", self.text(node), Receiver(R_UNKNOWN), new)

    def add_call(self, node: Node, ref: CallRef) -> None:
        """Record a call site of ``ref`` at ``node``'s line."""
        if not ref.callee_name:
            return
        ref.callee_text = " ".join(ref.callee_text.split())
        self.facts.calls.append(CallSite.of(self.caller_symbol, self.line(node), ref))

    def record_call(self, node: Node) -> None:
        """Record ``node`` as a call site when :meth:`call_ref` reads it as a call."""
        ref = self.call_ref(node)
        if ref is not None:
            self.add_call(node, ref)

    def walk_call(self, node: Node) -> None:
        """The ``visit_<call node type>`` of a call whose parts need no special walk:
        :meth:`record_call`, then visit the children. (Not named ``visit_call``: that would
        be the handler of every node of type ``call``, e.g. Python's.)"""
        self.record_call(node)
        self.visit_children(node)
