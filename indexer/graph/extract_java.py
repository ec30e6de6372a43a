"""Java facts: classes (nested: ``Outer.Inner``), methods and constructors
(``Class.method``, ``Class.Class``), fields, imports (single, wildcard, static) and
calls (``method_invocation``, ``new``, ``this(...)``/``super(...)``).

Type facts: field types (class attributes), parameter / local / enhanced-for /
catch types, ``var x = new T()`` / ``var x = f()``, method return types. Calls in
lambdas and anonymous classes belong to the enclosing method.
"""
from __future__ import annotations

from tree_sitter import Node

from .facts import (
    KIND_CLASS, KIND_METHOD, R_NAME, R_SELF, R_SUPER, R_TYPE, R_UNKNOWN, CallRef, Receiver,
)
from .walker import BaseExtractor

_CLASS_TYPES = ("class_declaration", "interface_declaration", "enum_declaration",
                "record_declaration", "annotation_type_declaration")
_LITERALS = {"string_literal": "String", "decimal_integer_literal": "int",
             "true": "boolean", "false": "boolean", "character_literal": "char"}


class JavaExtractor(BaseExtractor):
    grammar = "java"
    skip_types = frozenset({"line_comment", "block_comment"})
    ident_types = frozenset({"identifier"})

    INDEX_ACCESS = ("array_access", "array")
    ATTRIBUTE_ACCESS = ("field_access", "object", "field")

    # ---- hooks -----------------------------------------------------------------------
    def unwrap(self, node: Node) -> Node:
        while node.type in ("parenthesized_expression", "cast_expression") and node.named_children:
            node = self.field(node, "value") if node.type == "cast_expression" \
                else node.named_children[0]
            if node is None:
                break
        return node

    def call_ref(self, node: Node) -> CallRef | None:
        if node.type == "method_invocation":
            name = self.text(self.field(node, "name"))
            obj = self.field(node, "object")
            if obj is None:
                return CallRef(name, name, Receiver(R_NAME))
            return CallRef(name, f"{self.text(obj)}.{name}", self.expr(obj))
        if node.type == "object_creation_expression":
            typ = self.text(self.field(node, "type"))
            plain = _strip_generics(typ)
            return CallRef(plain.split(".")[-1], plain, Receiver(R_NAME), new=True)
        return None

    def atom(self, node: Node) -> Receiver | None:
        t = node.type
        if t == "identifier":
            return self.ident(self.text(node))
        if t in ("this", "super"):
            cls = self.current_class
            if cls is None:
                return Receiver(R_UNKNOWN)
            return Receiver(R_SELF if t == "this" else R_SUPER, t, cls.symbol)
        if t in _LITERALS:
            return Receiver(R_TYPE, "", _LITERALS[t])
        return None

    # ---- package / imports -----------------------------------------------------------
    def visit_package_declaration(self, node: Node) -> None:
        for c in node.named_children:
            if c.type in ("scoped_identifier", "identifier"):
                self.facts.package = self.text(c)

    def visit_import_declaration(self, node: Node) -> None:
        static = any(c.type == "static" for c in node.children)
        wildcard = any(c.type == "asterisk" for c in node.children)
        path = next((self.text(c) for c in node.named_children
                     if c.type in ("scoped_identifier", "identifier")), "")
        if not path:
            return
        if wildcard:
            self.add_import(path, "*", "", self.line(node), static=static)
            return
        module, _, name = path.rpartition(".")
        self.add_import(module, name, "", self.line(node), static=static)

    # ---- definitions -----------------------------------------------------------------
    def _class(self, node: Node) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        bases = []
        sup = self.field(node, "superclass")
        if sup is not None:
            bases += [self.text(c) for c in sup.named_children]
        for fname in ("interfaces",):
            f = self.field(node, fname)
            if f is not None:
                for tl in f.named_children:
                    bases += [self.text(c) for c in tl.named_children]
        ext = next((c for c in node.named_children if c.type == "extends_interfaces"), None)
        if ext is not None:
            for tl in ext.named_children:
                bases += [self.text(c) for c in tl.named_children]
        with self.definition(name, KIND_CLASS, node, is_function=False) as d:
            d.bases = [_strip_generics(b) for b in bases]
            params = self.field(node, "parameters")  # records
            if params is not None:
                for p in params.named_children:
                    n, t = self.field(p, "name"), self.field(p, "type")
                    if n is not None and t is not None:
                        d.attributes[self.text(n)] = Receiver(R_TYPE, "", self.text(t))
            body = self.field(node, "body")
            if body is not None:
                self._body(d, body)

    def _body(self, d, body: Node) -> None:
        for m in body.named_children:
            if m.type == "enum_body_declarations":
                self._body(d, m)
            elif m.type == "field_declaration" or m.type == "constant_declaration":
                typ = self.text(self.field(m, "type"))
                for decl in m.children_by_field_name("declarator"):
                    name = self.text(self.field(decl, "name"))
                    self.set_attribute(d, name, Receiver(R_TYPE, "", typ), declared=True)
                    self.walk_fields(decl, "value")
            else:
                self.visit(m)

    visit_class_declaration = _class
    visit_interface_declaration = _class
    visit_enum_declaration = _class
    visit_record_declaration = _class
    visit_annotation_type_declaration = _class

    def _method(self, node: Node) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        cls = self.current_def if self.current_def is not None \
            and self.current_def.kind == KIND_CLASS else None
        with self.definition(name, KIND_METHOD, node, is_function=True,
                             class_symbol=cls.symbol if cls else "") as d:
            mods = next((c for c in node.named_children if c.type == "modifiers"), None)
            d.static = mods is not None and "static" in self.text(mods).split()
            d.returns = self.text(self.field(node, "type"))
            self._params(self.field(node, "parameters"))
            self.walk_fields(node, "body")

    visit_method_declaration = _method
    visit_constructor_declaration = _method
    visit_compact_constructor_declaration = _method

    def _params(self, params: Node | None) -> None:
        if params is None:
            return
        for p in params.named_children:
            if p.type in ("formal_parameter", "spread_parameter", "catch_formal_parameter"):
                n = self.field(p, "name")
                if n is None:
                    decl = next((c for c in p.named_children if c.type == "variable_declarator"),
                                None)
                    n = self.field(decl, "name") if decl is not None else None
                typ = self.text(self.field(p, "type"))
                if p.type == "spread_parameter":
                    typ = next((self.text(c) for c in p.named_children
                                if c.type.endswith("type")), "") + "..."
                self.bind(self.text(n), Receiver(R_TYPE, self.text(n), typ), declared=True)

    def visit_lambda_expression(self, node: Node) -> None:
        with self.function_scope():
            params = self.field(node, "parameters")
            if params is not None:
                if params.type == "identifier":
                    self.bind(self.text(params), Receiver(R_UNKNOWN, self.text(params)), True)
                else:
                    for p in params.named_children:
                        n = p if p.type == "identifier" else self.field(p, "name")
                        typ = self.text(self.field(p, "type")) if p.type != "identifier" else ""
                        self.bind(self.text(n), Receiver(R_TYPE, self.text(n), typ) if typ
                                  else Receiver(R_UNKNOWN, self.text(n)), declared=True)
            self.walk_fields(node, "body")

    # ---- statements ------------------------------------------------------------------
    def visit_local_variable_declaration(self, node: Node) -> None:
        typ = self.text(self.field(node, "type"))
        for decl in node.children_by_field_name("declarator"):
            name = self.text(self.field(decl, "name"))
            value = self.field(decl, "value")
            if value is not None:
                self.visit(value)
            if typ and typ != "var":
                self.bind(name, Receiver(R_TYPE, name, typ), declared=True)
            elif value is not None:
                v = self.expr(value)
                self.bind(name, Receiver(v.kind, name, v.type, v.attrs, v.value, v.index))

    def visit_enhanced_for_statement(self, node: Node) -> None:
        typ, n = self.text(self.field(node, "type")), self.text(self.field(node, "name"))
        if typ and typ != "var":
            self.bind(n, Receiver(R_TYPE, n, typ), declared=True)
        else:
            self.bind(n, Receiver(R_UNKNOWN, n))
        self.visit_children(node)

    def visit_catch_clause(self, node: Node) -> None:
        for c in node.named_children:
            if c.type == "catch_formal_parameter":
                n = self.field(c, "name")
                types = next((x for x in c.named_children if x.type == "catch_type"), None)
                self.bind(self.text(n), Receiver(R_TYPE, self.text(n), self.text(types)),
                          declared=True)
        self.visit_children(node)

    def visit_assignment_expression(self, node: Node) -> None:
        left, right = self.field(node, "left"), self.field(node, "right")
        if right is not None:
            self.visit(right)
        if left is not None and left.type == "identifier":
            self.bind(self.text(left), self.expr(right) if right is not None else None)
        elif left is not None:
            self.visit(left)

    visit_method_invocation = BaseExtractor.walk_call

    def visit_object_creation_expression(self, node: Node) -> None:
        self.record_call(node)
        body = next((c for c in node.named_children if c.type == "class_body"), None)
        for c in node.named_children:
            if c is not body:
                self.visit(c)
        if body is not None:  # anonymous class: its methods belong to the enclosing method
            for m in body.named_children:
                if m.type in ("method_declaration",):
                    with self.function_scope():
                        self._params(self.field(m, "parameters"))
                        self.walk_fields(m, "body")
                else:
                    self.visit(m)

    def visit_explicit_constructor_invocation(self, node: Node) -> None:
        ctor = self.field(node, "constructor")
        cls = self.current_class
        if ctor is not None and cls is not None:
            kind = R_SUPER if ctor.type == "super" else R_SELF
            # this(...) -> own constructor; super(...) -> the base constructor
            word = self.text(ctor)
            self.add_call(node, CallRef(word, word, Receiver(kind, word, cls.symbol)))
        self.walk_fields(node, "arguments")


def _strip_generics(text: str) -> str:
    depth, out = 0, []
    for ch in text:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip()
