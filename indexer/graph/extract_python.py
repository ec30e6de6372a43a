"""Python facts: classes, functions, methods, imports, calls and type hints.

Type facts kept for the resolver: parameter and variable annotations, values of
``x = Foo(...)`` / ``with Foo(...) as x`` / ``x = self.y``, class-level annotations
(``request: PreparedRequest``) and ``self.x: T = ...`` / ``self.x = Foo(...)`` /
``self.x = param`` in methods, and declared return types.
"""
from __future__ import annotations

import posixpath

from tree_sitter import Node

from .facts import (
    ELEM_INDEX, ELEM_ITER, IMPLICIT_DECORATOR, IMPLICIT_PROTOCOL, KIND_CLASS, KIND_FUNCTION, KIND_METHOD,
    R_CALL, R_IDENT, R_MODULE, R_SELF, R_SUPER, R_TYPE, R_UNKNOWN, CallRef, Receiver,
)
from .walker import BaseExtractor

_LITERAL_TYPES = {
    "dictionary": "dict", "dictionary_comprehension": "dict", "list": "list",
    "list_comprehension": "list", "set": "set", "set_comprehension": "set", "tuple": "tuple",
    "string": "str", "concatenated_string": "str", "integer": "int", "float": "float",
    "true": "bool", "false": "bool",
}


_CONTAINERS = {"dictionary": "dict", "list": "list", "tuple": "tuple", "set": "set"}
_MAX_ELEMS, _MAX_RETURNS, _MAX_ARGS = 50, 10, 12


def may_be_function(rec: Receiver | None) -> bool:
    """Whether a value could be a function or class worth following: a name, an
    attribute (``self.m``, ``mod.f``), a call's result, or a container literal holding
    such values. Literals, untyped parameters and unknowns are not."""
    if rec is None:
        return False
    if rec.kind in (R_IDENT, R_MODULE, R_CALL) or (rec.kind == R_SELF and rec.attrs):
        return True
    if rec.kind == R_UNKNOWN and rec.name:  # a parameter (followed through the callers)
        return True
    return rec.kind == R_TYPE and bool(rec.elems)


def _names_a_container(rec: Receiver | None) -> bool:
    """Whether ``rec`` names a value whose elements may be followed: a variable, an
    attribute, an element of one, or a container literal with function elements."""
    if rec is None:
        return False
    if rec.kind in (R_IDENT, R_MODULE) or (rec.kind == R_SELF and rec.attrs):
        return True
    return rec.kind == R_TYPE and bool(rec.elems)


_VALUE_SET = "<value-set>"  # the type of a variable's set of values (see merge_values)


def _is_value_set(rec: Receiver) -> bool:
    return rec.kind == R_TYPE and rec.type == _VALUE_SET


def _followable(rec: Receiver) -> bool:
    """A value worth keeping in a variable's value set: a name, an attribute, a
    parameter, a function-holding literal or an earlier set (not a call's result)."""
    return _is_value_set(rec) or (may_be_function(rec) and rec.kind != R_CALL)


def _is_class_object(rec: Receiver) -> bool:
    """A name bound to a class itself (a classmethod's ``cls``)."""
    return rec.kind == R_TYPE and not rec.attrs and rec.type.startswith("type[")


def python_module_path(path: str) -> str:
    """Repo-relative module path of a Python file: ``a/b.py`` -> ``a/b``,
    ``a/__init__.py`` -> ``a``."""
    stem = path.rsplit(".", 1)[0] if path.endswith((".py", ".pyi")) else path
    if stem == "__init__":
        return ""
    if stem.endswith("/__init__"):
        return stem[: -len("/__init__")]
    return stem


class PythonExtractor(BaseExtractor):
    grammar = "python"
    skip_types = frozenset({"comment"})

    INDEX_ACCESS = ("subscript", "value")
    ATTRIBUTE_ACCESS = ("attribute", "object", "attribute")

    def run(self) -> None:
        self.facts.package = python_module_path(self.path)
        super().run()

    # ---- hooks -----------------------------------------------------------------------
    def unwrap(self, node: Node) -> Node:
        while node.type in ("parenthesized_expression", "await") and node.named_children:
            node = node.named_children[-1] if node.type == "await" else node.named_children[0]
        return node

    def _is_super(self, node: Node) -> bool:
        return node.type == "call" and self.text(self.field(node, "function")) == "super"

    def call_ref(self, node: Node) -> CallRef | None:
        if node.type != "call" or self._is_super(node):
            return None
        fn = self.field(node, "function")
        if fn is None:
            return None
        ref = self.callee(fn)
        ref.args, ref.kwargs = self._arguments(self.field(node, "arguments"))
        return ref

    def _arguments(self, args: Node | None) -> tuple[list[Receiver | None], dict[str, Receiver]]:
        """What is known of a call's arguments that may be functions: positional ones
        (``None`` for the others, so positions hold) and keyword ones."""
        positional: list[Receiver | None] = []
        keywords: dict[str, Receiver] = {}
        if args is None or args.type != "argument_list":
            return positional, keywords
        for a in args.named_children:
            if a.type in ("comment", "list_splat", "dictionary_splat"):
                if a.type == "list_splat":
                    break  # positions after *args are unknown
                continue
            if a.type == "keyword_argument":
                value = self.value_of(self.field(a, "value"))
                if may_be_function(value):
                    keywords[self.text(self.field(a, "name"))] = value
                continue
            value = self.value_of(a)
            positional.append(value if may_be_function(value) else None)
            if len(positional) >= _MAX_ARGS:
                break
        while positional and positional[-1] is None:
            positional.pop()
        return positional, keywords

    def atom(self, node: Node) -> Receiver | None:
        if node.type == "identifier":
            return self.ident(self.text(node))
        if self._is_super(node):
            cls = self.current_class
            return Receiver(R_SUPER, "super", cls.symbol if cls else "")
        if node.type in _LITERAL_TYPES:
            return Receiver(R_TYPE, "", _LITERAL_TYPES[node.type])
        return None

    def value_of(self, node: Node | None) -> Receiver | None:
        """Value of an assignment's right side; ``None`` for ``None`` (ignored). A
        container literal keeps the values it holds that may be functions."""
        if node is None:
            return None
        node = self.unwrap(node)
        if node.type == "none":
            return None
        if node.type in ("conditional_expression", "boolean_operator"):
            return Receiver(R_UNKNOWN)
        if node.type in _CONTAINERS:
            return Receiver(R_TYPE, "", _CONTAINERS[node.type], elems=self._elements(node))
        if node.type == "lambda":
            return Receiver(R_UNKNOWN)
        return self.expr(node)

    def _elements(self, node: Node) -> list[Receiver]:
        """The values of a container literal that may be functions (dict values)."""
        out = []
        for child in node.named_children:
            value = self.field(child, "value") if child.type == "pair" else child
            if value is None or value.type in ("comment", "list_splat", "dictionary_splat"):
                continue
            rec = self.value_of(value)
            if may_be_function(rec) and not (rec.kind == R_UNKNOWN and rec.name):
                out.append(rec)
            if len(out) >= _MAX_ELEMS:
                break
        return out

    def callee(self, node: Node, new: bool = False) -> CallRef:
        """As :meth:`BaseExtractor.callee`, and calls of values: a local bound to a
        function (``a = f; a()``), a container element (``handlers[k]()``, ``for h in
        hs: h()``), a call's result (``make()()``) are *through* calls whose receiver is
        the called value."""
        node = self.unwrap(node)
        text = " ".join(self.text(node).split())
        if node.type == "identifier":
            bound = self.lookup(self.text(node))
            if bound is not None and bound.kind != R_UNKNOWN and (
                    may_be_function(bound) or _is_class_object(bound)):
                return CallRef(self.text(node), text, self.ident(self.text(node)), new, through=True)
        m = self.member(node)
        if m is not None and m[1] in (ELEM_INDEX, ELEM_ITER):
            obj = self.unwrap(m[0])  # `{"a": f}[k]()` keeps the literal's elements
            base = self.value_of(obj) if obj.type in _CONTAINERS else self.expr(obj)
            return CallRef(text, text, (base or Receiver(R_UNKNOWN)).with_attr(m[1]), new, through=True)
        inner = self.call_ref(node)
        if inner is not None:
            return CallRef(inner.callee_name + "()", text, Receiver(R_CALL, value=inner), new, through=True)
        return super().callee(node, new)

    def merge_values(self, name: str, old: Receiver, new: Receiver) -> Receiver:
        """Two values that may be functions make a set (``x = f`` then ``x = g``: ``x()``
        may call either), written as an element of a literal holding both; anything
        else is unknown."""
        if not (_followable(old) and _followable(new)):
            return Receiver(R_UNKNOWN, name)
        olds = old.elems if _is_value_set(old) else [old]
        elems = olds + [new] if all(e.to_dict() != new.to_dict() for e in olds) else olds
        return Receiver(R_TYPE, name, _VALUE_SET, [ELEM_INDEX], elems=elems[:_MAX_ELEMS])

    # ---- imports ---------------------------------------------------------------------
    def _imported(self, node: Node) -> list[tuple[str, str]]:
        """``(name, alias)`` of each name an import statement lists (``alias`` "" without ``as``)."""
        out = []
        for child in node.children_by_field_name("name"):
            if child.type == "aliased_import":
                out.append((self.text(self.field(child, "name")), self.text(self.field(child, "alias"))))
            else:
                out.append((self.text(child), ""))
        return out

    def visit_import_statement(self, node: Node) -> None:
        for module, alias in self._imported(node):
            self.add_import(module, "", alias, self.line(node), binds_module=True)

    def _relative_module(self, rel: Node) -> str:
        prefix = next((c for c in rel.children if c.type == "import_prefix"), None)
        dots = len(self.text(prefix).strip()) if prefix is not None else 1
        base = posixpath.dirname(self.path)
        for _ in range(dots - 1):
            base = posixpath.dirname(base)
        dotted = next((c for c in rel.named_children if c.type == "dotted_name"), None)
        rest = self.text(dotted).replace(".", "/") if dotted is not None else ""
        return posixpath.join(base, rest).strip("/") if rest else base

    def visit_import_from_statement(self, node: Node) -> None:
        mod = self.field(node, "module_name")
        if mod is None:
            return
        relative = mod.type == "relative_import"
        module = self._relative_module(mod) if relative else self.text(mod)
        line = self.line(node)
        if any(c.type == "wildcard_import" for c in node.named_children):
            self.add_import(module, "*", "", line, relative)
        for name, alias in self._imported(node):
            self.add_import(module, name, alias, line, relative)

    # ---- definitions -----------------------------------------------------------------
    def visit_decorated_definition(self, node: Node) -> None:
        decorators = [c for c in node.named_children if c.type == "decorator"]
        inner = self.field(node, "definition")
        if inner is None:
            for dec in decorators:
                self.visit_children(dec)
            return
        names = {self.text(d).lstrip("@").split("(")[0].strip() for d in decorators}
        if inner.type == "function_definition":
            self._function(inner, node, names, decorators)
        elif inner.type == "class_definition":
            self.visit_class_definition(inner, node, decorators)
        else:
            for dec in decorators:
                self.visit_children(dec)
            self.visit(inner)

    def _decorations(self, decorators: list[Node], name: str, top_level: bool) -> None:
        """Inside the decorated definition: each decorator is a call it makes (``@dec``
        calls ``dec`` with the function; ``@dec(1)`` calls ``dec(1)``, whose result gets
        the function), marked as a decoration; the calls in its arguments are walked."""
        me = [Receiver(R_IDENT, name)] if top_level else []
        for dec in decorators:
            expr = next((c for c in dec.named_children if c.type != "comment"), None)
            if expr is None:
                continue
            expr = self.unwrap(expr)
            if expr.type == "call":
                fn = self.field(expr, "function")
                if fn is not None:
                    ref = self.callee(fn)
                    ref.args, ref.kwargs = self._arguments(self.field(expr, "arguments"))
                    ref.implicit = IMPLICIT_DECORATOR
                    self.add_call(dec, ref)
                    self.visit(fn)
                self.walk_fields(expr, "arguments")
            else:
                ref = self.callee(expr)
                ref.args, ref.implicit = list(me), IMPLICIT_DECORATOR
                self.add_call(dec, ref)
                self.visit(expr)

    def visit_class_definition(self, node: Node, outer: Node | None = None,
                               decorators: list[Node] | None = None) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        bases = []
        sup = self.field(node, "superclasses")
        if sup is not None:
            self.visit_children(sup)
            bases = [self.text(c) for c in sup.named_children
                     if c.type not in ("keyword_argument", "comment", "list_splat",
                                       "dictionary_splat")]
        top_level = not self.def_stack
        with self.definition(name, KIND_CLASS, outer or node, is_function=False) as d:
            d.bases = bases
            if decorators:
                self._decorations(decorators, name, top_level)
            body = self.field(node, "body")
            if body is not None:
                self.visit_children(body)

    def visit_function_definition(self, node: Node) -> None:
        self._function(node, node, set())

    def _function(self, node: Node, outer: Node, decorators: set[str],
                  decorator_nodes: list[Node] | None = None) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        top = self.current_def
        is_method = top is not None and top.kind == KIND_CLASS and not self.in_function
        cls = top if is_method else None
        kind = KIND_METHOD if is_method else KIND_FUNCTION
        params = self.field(node, "parameters")
        if params is not None:  # defaults are evaluated in the enclosing scope
            for p in params.named_children:
                self.walk_fields(p, "value")
        top_level = not self.def_stack
        with self.definition(name, kind, outer, is_function=True,
                             class_symbol=cls.symbol if cls else "") as d:
            if decorator_nodes:
                self._decorations(decorator_nodes, name, top_level)
            d.returns = self.text(self.field(node, "return_type"))
            d.static = "staticmethod" in decorators
            d.params = self._bind_params(params, cls, static=d.static,
                                         classmethod="classmethod" in decorators)
            body = self.field(node, "body")
            if body is not None:
                self.visit_children(body)

    def _bind_params(self, params: Node | None, cls, static: bool, classmethod: bool = False) -> list[str]:
        """Bind the parameters in the function's scope; return their names in order
        (without a method's ``self``/``cls``; ``*args`` ends the positional ones). A
        classmethod's first parameter is the class (``cls()`` constructs it)."""
        names: list[str] = []
        if params is None:
            return names
        first = True
        for p in params.named_children:
            if p.type in ("comment", "positional_separator", "keyword_separator"):
                continue
            if p.type == "identifier":
                name, typ = self.text(p), ""
            elif p.type in ("typed_parameter",):
                ident = next((c for c in p.named_children if c.type == "identifier"), None)
                name, typ = self.text(ident), self.text(self.field(p, "type"))
            elif p.type in ("default_parameter", "typed_default_parameter"):
                name, typ = self.text(self.field(p, "name")), self.text(self.field(p, "type"))
            else:  # *args / **kwargs (and their typed forms)
                ident = next((c for c in p.named_children if c.type == "identifier"), None)
                if ident is None and p.named_children:
                    ident = next((c for c in p.named_children[0].named_children
                                  if c.type == "identifier"), None)
                self.bind(self.text(ident), Receiver(R_UNKNOWN, self.text(ident)), declared=True)
                first = False
                names.append("*")  # positions after *args are not this function's
                continue
            if first and cls is not None and not static:
                self.bind(name, Receiver(R_TYPE, name, f"type[{cls.symbol}]") if classmethod
                          else Receiver(R_SELF, name, cls.symbol), declared=True)
                first = False
                continue
            if typ:
                self.bind(name, Receiver(R_TYPE, name, typ), declared=True)
            else:
                self.bind(name, Receiver(R_UNKNOWN, name), declared=True)
            names.append(name)
            first = False
        return names

    def visit_return_statement(self, node: Node) -> None:
        """``return f`` / ``return self.m``: what calling the result calls."""
        self.visit_children(node)
        d = self.current_def
        value = node.named_children[0] if node.named_children else None
        if d is None or value is None or not self.in_function or d.kind == KIND_CLASS:
            return
        rec = self.value_of(value)
        if may_be_function(rec) and rec.kind != R_CALL and len(d.return_values) < _MAX_RETURNS:
            d.return_values.append(rec)

    def visit_lambda(self, node: Node) -> None:
        with self.function_scope():
            params = self.field(node, "parameters")
            if params is not None:
                for p in params.named_children:
                    n = p if p.type == "identifier" else self.field(p, "name")
                    self.bind(self.text(n), Receiver(R_UNKNOWN, self.text(n)), declared=True)
            self.walk_fields(node, "body")

    # ---- statements ------------------------------------------------------------------
    def _self_attr(self, target: Node) -> str:
        """``x`` when ``target`` is ``self.x`` inside a method, else ""."""
        if target.type != "attribute":
            return ""
        obj = self.field(target, "object")
        if obj is None or obj.type != "identifier":
            return ""
        found = self.lookup(self.text(obj))
        if found is None or found.kind != R_SELF or found.attrs:
            return ""
        return self.text(self.field(target, "attribute"))

    def _class_body_level(self) -> bool:
        top = self.current_def
        return top is not None and top.kind == KIND_CLASS and len(self.def_stack) > 0 \
            and not self.def_stack[-1][1]

    def visit_assignment(self, node: Node) -> None:
        left, right, typ = self.field(node, "left"), self.field(node, "right"), self.field(node, "type")
        if right is not None:
            self.visit(right)
        if left is None:
            return
        declared = typ is not None
        value = self.value_of(right)
        if declared:  # the annotation types it; a container literal keeps its elements
            elems = value.elems if value is not None and value.kind == R_TYPE else []
            value = Receiver(R_TYPE, "", self.text(typ), elems=list(elems))
        if left.type == "identifier":
            name = self.text(left)
            if value is not None:
                value = Receiver(value.kind, value.name or name, value.type, value.attrs,
                                 value.value, value.index, value.elems)
            if self._class_body_level():
                self.set_attribute(self.current_def, name, value, declared)
            else:
                self.bind(name, value, declared)
            return
        attr = self._self_attr(left)
        if attr:
            cls = self.current_class
            if cls is not None:
                self.set_attribute(cls, attr, value, declared)
            return
        if left.type in ("pattern_list", "tuple_pattern", "list_pattern"):
            # `fn, arg = RULES[k]`: each name may hold any element of what is unpacked
            elem = value.with_attr(ELEM_INDEX) if _names_a_container(value) else None
            for n in left.named_children:
                if n.type == "identifier":
                    self.bind(self.text(n), elem or Receiver(R_UNKNOWN, self.text(n)))
        self.visit(left)

    def visit_named_expression(self, node: Node) -> None:
        value = self.field(node, "value")
        if value is not None:
            self.visit(value)
        self.bind(self.text(self.field(node, "name")), self.value_of(value))

    def visit_with_item(self, node: Node) -> None:
        value = self.field(node, "value")
        managed = value.named_children[0] if value is not None and value.type == "as_pattern" \
            and value.named_children else value
        for method in ("__enter__", "__exit__"):
            self._protocol_call(node, managed, method)
        if value is not None and value.type == "as_pattern":
            inner = value.named_children[0] if value.named_children else None
            alias = self.field(value, "alias")
            if inner is not None:
                self.visit(inner)
            if alias is not None and alias.named_children and \
                    alias.named_children[0].type == "identifier":
                self.bind(self.text(alias.named_children[0]), self.value_of(inner))
            return
        self.visit_children(node)

    def _bind_unknown_targets(self, target: Node | None) -> None:
        if target is None:
            return
        if target.type == "identifier":
            self.bind(self.text(target), Receiver(R_UNKNOWN, self.text(target)))
        else:
            for n in target.named_children:
                self._bind_unknown_targets(n)

    def _protocol_call(self, node: Node, value: Node | None, method: str) -> None:
        """A call the language makes implicitly: ``for x in v`` calls ``v.__iter__``,
        ``with v`` calls ``v.__enter__`` and ``v.__exit__``."""
        if value is None:
            return
        rec = self.expr(value)
        if rec.kind == R_UNKNOWN and not rec.attrs:
            return  # a literal or an expression with nothing known: no call to resolve
        self.add_call(node, CallRef(method, f"{self.text(value)}.{method}", rec, implicit=IMPLICIT_PROTOCOL))

    def visit_raise_statement(self, node: Node) -> None:
        """``raise Cls`` (no call) constructs ``Cls``."""
        exc = node.named_children[0] if node.named_children else None
        if exc is not None and exc.type in ("identifier", "attribute"):
            self.add_call(node, self.callee(exc))
        self.visit_children(node)

    def visit_for_statement(self, node: Node) -> None:
        left, right = self.field(node, "left"), self.field(node, "right")
        self._protocol_call(node, right, "__iter__")
        mapping = self._mapping_view(right)
        if mapping is not None and left is not None:
            # `for fn in RULES.values()` / `for k, fn in RULES.items()`: the values
            container, view = mapping
            names = [left] if left.type == "identifier" else \
                [n for n in left.named_children if n.type == "identifier"]
            if view == "values" and left.type == "identifier":
                self.bind(self.text(left), container.with_attr(ELEM_INDEX))
            elif view == "items" and len(names) == 2 and len(left.named_children) == 2:
                self.bind(self.text(names[0]), Receiver(R_UNKNOWN, self.text(names[0])))
                self.bind(self.text(names[1]), container.with_attr(ELEM_INDEX))
            else:
                self._bind_unknown_targets(left)
        elif left is not None and left.type == "identifier" and right is not None:
            self.bind(self.text(left), (self.value_of(right) or Receiver(R_UNKNOWN)).with_attr(ELEM_ITER))
        else:
            self._bind_unknown_targets(left)
        self.visit_children(node)

    def _mapping_view(self, node: Node | None) -> tuple[Receiver, str] | None:
        """``(container, "values" | "items")`` for ``d.values()`` / ``d.items()`` called
        without arguments on a named container (a variable or an attribute), else None."""
        node = self.unwrap(node) if node is not None else None
        if node is None or node.type != "call":
            return None
        fn, args = self.field(node, "function"), self.field(node, "arguments")
        if fn is None or fn.type != "attribute" or (args is not None and args.named_children):
            return None
        view = self.text(self.field(fn, "attribute"))
        if view not in ("values", "items"):
            return None
        container = self.value_of(self.field(fn, "object"))
        return (container, view) if _names_a_container(container) else None

    def visit_for_in_clause(self, node: Node) -> None:
        self._bind_unknown_targets(self.field(node, "left"))
        self.visit_children(node)

    def visit_except_clause(self, node: Node) -> None:
        for c in node.named_children:
            if c.type == "as_pattern":
                alias = self.field(c, "alias")
                if alias is not None:
                    self._bind_unknown_targets(alias)
        self.visit_children(node)

    def visit_call(self, node: Node) -> None:
        fn = self.field(node, "function")
        if fn is not None and not self._is_super(node):
            ref = self.call_ref(node)
            if ref is not None:
                self.add_call(node, ref)
        if fn is not None:
            self.visit(fn)
        self.walk_fields(node, "arguments")

