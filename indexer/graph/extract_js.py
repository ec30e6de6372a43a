"""JavaScript / TypeScript / TSX facts.

Definitions follow the chunker: ``fn`` for function declarations and top-level
``const fn = () => ...``, ``Class`` and ``Class.method`` (class fields holding arrow
functions are methods too), ``default`` for an anonymous default export. Imports:
ES ``import`` (default, named with aliases, namespace), ``export ... from`` re-exports,
and ``require`` (``const x = require('./m')``, ``const {a, b: c} = require(...)``);
relative specifiers are resolved against the file (``src/a/x``). Type facts: typed
parameters (incl. TS parameter properties, which also become class attributes),
typed and ``new``-initialised variables and class fields, return types.
"""
from __future__ import annotations

import posixpath

from tree_sitter import Node

from .facts import (
    ELEM_ITER, KIND_CLASS, KIND_FUNCTION, KIND_METHOD, R_IDENT, R_SELF, R_SUPER, R_TYPE,
    R_UNKNOWN, CallRef, Receiver,
)
from .walker import BaseExtractor

_FUNCTION_VALUES = ("arrow_function", "function_expression", "function", "generator_function")
_CLASS_TYPES = ("class_declaration", "abstract_class_declaration", "class")
_LITERALS = {"string": "string", "template_string": "string", "number": "number",
             "array": "Array", "true": "boolean", "false": "boolean"}


class JsExtractor(BaseExtractor):
    skip_types = frozenset({"comment"})
    ident_types = frozenset({"identifier"})

    INDEX_ACCESS = ("subscript_expression", "object")
    ATTRIBUTE_ACCESS = ("member_expression", "object", "property")

    def __init__(self, path: str, language: str, text: str):
        super().__init__(path, language, text)
        self.grammar = {"javascript": "javascript", "typescript": "typescript",
                        "tsx": "tsx"}[language]

    def run(self) -> None:
        self.facts.package = self.path.rsplit(".", 1)[0]
        super().run()

    # ---- hooks -----------------------------------------------------------------------
    def unwrap(self, node: Node) -> Node:
        while node.type in ("parenthesized_expression", "await_expression", "non_null_expression",
                            "as_expression", "satisfies_expression", "type_assertion") \
                and node.named_children:
            node = node.named_children[0] if node.type != "type_assertion" \
                else node.named_children[-1]
        return node

    def call_ref(self, node: Node) -> CallRef | None:
        if node.type == "call_expression":
            fn = self.field(node, "function")
            if fn is not None and fn.type == "super" and self.current_class is not None:
                return CallRef("super", "super", Receiver(R_SUPER, "super",
                                                          self.current_class.symbol))
            if fn is None or fn.type in ("super", "import") or self.text(fn) == "require":
                return None
            return self.callee(fn)
        if node.type == "new_expression":
            ctor = self.field(node, "constructor")
            if ctor is None:
                return None
            return self.callee(ctor, new=True)
        return None

    def atom(self, node: Node) -> Receiver | None:
        t = node.type
        if t == "identifier":
            return self.ident(self.text(node))
        if t == "this":
            cls = self.current_class
            return Receiver(R_SELF, "this", cls.symbol) if cls else Receiver(R_UNKNOWN)
        if t == "super":
            cls = self.current_class
            return Receiver(R_SUPER, "super", cls.symbol) if cls else Receiver(R_UNKNOWN)
        if t in _LITERALS:
            return Receiver(R_TYPE, "", _LITERALS[t])
        return None

    # ---- imports / exports -----------------------------------------------------------
    def _spec(self, node: Node | None) -> tuple[str, bool]:
        raw = self.text(node).strip("'\"`")
        if raw.startswith("."):
            return posixpath.normpath(posixpath.join(posixpath.dirname(self.path), raw)), True
        return raw, False

    def visit_import_statement(self, node: Node) -> None:
        module, rel = self._spec(self.field(node, "source"))
        line = self.line(node)
        clause = next((c for c in node.named_children if c.type == "import_clause"), None)
        if clause is None:
            return
        for c in clause.named_children:
            if c.type == "identifier":
                self.add_import(module, "default", self.text(c), line, rel)
            elif c.type == "namespace_import":
                ident = c.named_children[0] if c.named_children else None
                self.add_import(module, "", self.text(ident), line, rel, binds_module=True)
            elif c.type == "named_imports":
                for s in c.named_children:
                    if s.type == "import_specifier":
                        name = self.text(self.field(s, "name"))
                        self.add_import(module, name, self.text(self.field(s, "alias")), line, rel)

    def visit_export_statement(self, node: Node) -> None:
        source = self.field(node, "source")
        decl = self.field(node, "declaration")
        is_default = any(c.type == "default" for c in node.children)
        if source is not None:  # re-exports
            module, rel = self._spec(source)
            clause = next((c for c in node.named_children if c.type == "export_clause"), None)
            if clause is None:
                self.add_import(module, "*", "", self.line(node), rel)
                return
            for s in clause.named_children:
                if s.type == "export_specifier":
                    self.add_import(module, self.text(self.field(s, "name")),
                                    self.text(self.field(s, "alias")), self.line(node), rel)
            return
        if decl is not None:
            if decl.type in _CLASS_TYPES + ("function_declaration",
                                            "generator_function_declaration"):
                name = self.text(self.field(decl, "name"))
                if is_default and name:
                    self.facts.variables["default"] = Receiver(R_IDENT, name)
            self.visit(decl)
            return
        value = self.field(node, "value")
        if value is None:
            value = next((c for c in node.named_children if c.type not in ("comment",)), None)
        if value is None:
            return
        if is_default and value.type in _FUNCTION_VALUES:
            self._function("default", value, node)
            return
        if is_default and value.type in _CLASS_TYPES:
            self._class(value, "default")
            return
        if is_default:
            self.facts.variables["default"] = self.expr(value)
        self.visit(value)

    # ---- definitions -----------------------------------------------------------------
    def visit_class_declaration(self, node: Node) -> None:
        self._class(node)

    visit_abstract_class_declaration = visit_class_declaration

    def visit_class(self, node: Node) -> None:  # class expressions
        self.visit_children(node)

    def _class(self, node: Node, default_name: str = "<anonymous>") -> None:
        name = self.text(self.field(node, "name")) or default_name
        bases = []
        heritage = next((c for c in node.named_children if c.type == "class_heritage"), None)
        if heritage is not None:
            for c in heritage.named_children:
                if c.type in ("extends_clause", "implements_clause"):
                    bases += [self.text(x) for x in c.named_children
                              if x.type not in ("type_arguments",)]
                else:
                    bases.append(self.text(c))
            for c in heritage.named_children:
                self.visit(c)
        with self.definition(name, KIND_CLASS, node, is_function=False) as d:
            d.bases = bases
            body = self.field(node, "body")
            if body is not None:
                for member in body.named_children:
                    self._class_member(d, member)

    def _class_member(self, cls, member: Node) -> None:
        t = member.type
        if t in ("method_definition", "abstract_method_signature", "method_signature"):
            name = self.text(self.field(member, "name"))
            self._function(name, member, member, kind=KIND_METHOD, cls=cls,
                           static=any(c.type == "static" for c in member.children))
        elif t in ("public_field_definition", "field_definition"):
            name_node = self.field(member, "name") or self.field(member, "property")
            name = self.text(name_node)
            value = self.field(member, "value")
            typ = self.field(member, "type")
            if value is not None and value.type in _FUNCTION_VALUES:
                self._function(name, value, member, kind=KIND_METHOD, cls=cls)
                return
            if typ is not None:
                self.set_attribute(cls, name, Receiver(R_TYPE, "", self.text(typ).lstrip(": ")),
                                   declared=True)
            elif value is not None:
                self.set_attribute(cls, name, self._value(value))
            if value is not None:
                self.visit(value)
        else:
            self.visit(member)

    def visit_function_declaration(self, node: Node) -> None:
        self._function(self.text(self.field(node, "name")) or "<anonymous>", node, node)

    visit_generator_function_declaration = visit_function_declaration

    def _function(self, name: str, fn: Node, outer: Node, kind: str = KIND_FUNCTION,
                  cls=None, static: bool = False) -> None:
        with self.definition(name, kind, outer, is_function=True,
                             class_symbol=cls.symbol if cls else "") as d:
            d.static = static
            d.returns = self.text(self.field(fn, "return_type")).lstrip(": ").strip()
            self._params(fn, cls if name == "constructor" else None)
            self.walk_fields(fn, "body")

    def _params(self, fn: Node, ctor_cls=None) -> None:
        params = self.field(fn, "parameters")
        single = self.field(fn, "parameter")
        if single is not None:
            self.bind(self.text(single), Receiver(R_UNKNOWN, self.text(single)), declared=True)
        if params is None:
            return
        for p in params.named_children:
            pattern = self.field(p, "pattern") if p.type in ("required_parameter",
                                                             "optional_parameter") else p
            if pattern is not None and pattern.type == "assignment_pattern":
                pattern = self.field(pattern, "left")
            if pattern is None or pattern.type != "identifier":
                continue
            name = self.text(pattern)
            typ = self.text(self.field(p, "type")).lstrip(": ").strip()
            value = Receiver(R_TYPE, name, typ) if typ else Receiver(R_UNKNOWN, name)
            self.bind(name, value, declared=True)
            if ctor_cls is not None and typ and any(
                    c.type in ("accessibility_modifier", "readonly") for c in p.children):
                self.set_attribute(ctor_cls, name, Receiver(R_TYPE, "", typ), declared=True)

    def _anonymous_function(self, node: Node) -> None:
        with self.function_scope():
            self._params(node)
            self.walk_fields(node, "body")

    visit_arrow_function = _anonymous_function
    visit_function_expression = _anonymous_function
    visit_function = _anonymous_function
    visit_generator_function = _anonymous_function

    # ---- variables -------------------------------------------------------------------
    def _value(self, node: Node | None) -> Receiver | None:
        if node is None:
            return None
        node = self.unwrap(node)
        if node.type in ("null", "undefined"):
            return None
        return self.expr(node)

    def _require(self, value: Node | None) -> tuple[str, bool] | None:
        if value is None or value.type != "call_expression":
            return None
        if self.text(self.field(value, "function")) != "require":
            return None
        args = self.field(value, "arguments")
        first = args.named_children[0] if args is not None and args.named_children else None
        if first is None or first.type != "string":
            return None
        return self._spec(first)

    def visit_variable_declarator(self, node: Node) -> None:
        name_node, value = self.field(node, "name"), self.field(node, "value")
        req = self._require(value)
        line = self.line(node)
        if req is not None and name_node is not None:
            module, rel = req
            if name_node.type == "identifier":
                self.add_import(module, "", self.text(name_node), line, rel, binds_module=True)
            elif name_node.type == "object_pattern":
                for p in name_node.named_children:
                    if p.type == "shorthand_property_identifier_pattern":
                        self.add_import(module, self.text(p), "", line, rel)
                    elif p.type == "pair_pattern":
                        self.add_import(module, self.text(self.field(p, "key")),
                                        self.text(self.field(p, "value")), line, rel)
            return
        if name_node is not None and name_node.type == "identifier" and value is not None \
                and value.type in _FUNCTION_VALUES and not self.in_function \
                and self.current_def is None:
            self._function(self.text(name_node), value, node.parent or node)
            return
        if value is not None:
            self.visit(value)
        if name_node is None or name_node.type != "identifier":
            return
        name = self.text(name_node)
        typ = self.text(self.field(node, "type")).lstrip(": ").strip()
        if typ:
            self.bind(name, Receiver(R_TYPE, name, typ), declared=True)
        else:
            v = self._value(value)
            if v is not None:
                v = Receiver(v.kind, v.name or name, v.type, v.attrs, v.value, v.index)
            self.bind(name, v if value is not None else Receiver(R_UNKNOWN, name))

    def visit_assignment_expression(self, node: Node) -> None:
        left, right = self.field(node, "left"), self.field(node, "right")
        if right is not None:
            self.visit(right)
        if left is None:
            return
        if left.type == "member_expression":
            obj = self.field(left, "object")
            cls = self.current_class
            if obj is not None and obj.type == "this" and cls is not None:
                self.set_attribute(cls, self.text(self.field(left, "property")), self._value(right))
                return
        if left.type == "identifier":
            self.bind(self.text(left), self._value(right))
            return
        self.visit(left)

    def visit_for_in_statement(self, node: Node) -> None:
        left, right = self.field(node, "left"), self.field(node, "right")
        is_of = any(c.type == "of" for c in node.children)
        if left is not None and left.type == "identifier":
            value = self.expr(right).with_attr(ELEM_ITER) if is_of and right is not None \
                else Receiver(R_UNKNOWN, self.text(left))
            self.bind(self.text(left), value)
        self.visit_children(node)

    def visit_call_expression(self, node: Node) -> None:
        self.record_call(node)
        self.walk_fields(node, "function", "arguments")

    visit_new_expression = BaseExtractor.walk_call

