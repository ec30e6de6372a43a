"""Go facts: functions, methods (``Receiver.Method``), named types, imports, calls.

Every named type is a class definition (struct, interface, and also
``type HandlersChain []HandlerFunc`` so that its methods have an owner); struct
fields become attributes and embedded fields become bases. Local type facts:
parameters and receivers, ``var x T``, ``x := T{...}`` / ``&T{}`` / ``new(T)`` /
``x.(T)``, ``x := f()`` (the resolver reads ``f``'s declared results, by position
for ``a, err := f()``) and named results. Calls inside function literals belong to
the enclosing named function.
"""
from __future__ import annotations

import re

from tree_sitter import Node

from .facts import (
    ELEM_INDEX, KIND_CLASS, KIND_FUNCTION, KIND_METHOD, R_CALL, R_SELF, R_TYPE, R_UNKNOWN, CallRef,
    Receiver,
)
from .walker import BaseExtractor


def go_package_name(import_path: str) -> str:
    """Default package name of an import path: the last element, skipping a major
    version suffix (``/v2``) and a ``.vN`` gopkg suffix (``yaml.v3`` -> ``yaml``)."""
    parts = [p for p in import_path.split("/") if p]
    if not parts:
        return ""
    last = parts[-1]
    if re.fullmatch(r"v\d+", last) and len(parts) > 1:
        last = parts[-2]
    last = re.sub(r"\.v\d+$", "", last)
    return last.replace("-", "_").replace(".", "_")


def go_receiver_type(text: str) -> str:
    """``(c *Context)`` / ``(t *Tree[K, V])`` -> ``Context`` / ``Tree`` (chunker rule)."""
    text = re.sub(r"\[.*\]", "", text.strip("() \t\n")).split()
    return text[-1].lstrip("*") if text else "<receiver>"


class GoExtractor(BaseExtractor):
    grammar = "go"
    skip_types = frozenset({"comment", "interpreted_string_literal", "raw_string_literal"})
    ident_types = frozenset({"identifier"})

    INDEX_ACCESS = ("index_expression", "operand")
    ATTRIBUTE_ACCESS = ("selector_expression", "operand", "field")

    # ---- hooks -----------------------------------------------------------------------
    def unwrap(self, node: Node) -> Node:
        while True:
            if node.type == "parenthesized_expression" and node.named_children:
                node = node.named_children[0]
            elif node.type == "unary_expression" and self.text(node)[:1] in "&*" \
                    and self.field(node, "operand") is not None:
                node = self.field(node, "operand")
            else:
                return node

    def _call_fn(self, node: Node) -> Node | None:
        fn = self.field(node, "function")
        if fn is not None and fn.type in ("index_expression", "generic_type"):  # f[T](...)
            fn = self.field(fn, "operand") or self.field(fn, "type") or fn
        return fn

    def call_ref(self, node: Node) -> CallRef | None:
        if node.type != "call_expression":
            return None
        fn = self._call_fn(node)
        if fn is None or fn.type == "func_literal" or self.text(fn) in ("new", "make"):
            return None
        return self.callee(fn)

    def atom(self, node: Node) -> Receiver | None:
        t = node.type
        if t == "identifier":
            return self.ident(self.text(node))
        if t == "composite_literal":
            return Receiver(R_TYPE, "", self.text(self.field(node, "type")))
        if t == "type_assertion_expression":
            return Receiver(R_TYPE, "", self.text(self.field(node, "type")))
        if t == "call_expression" and self.text(self._call_fn(node)) in ("new", "make"):
            args = self.field(node, "arguments")
            first = args.named_children[0] if args is not None and args.named_children else None
            return Receiver(R_TYPE, "", self.text(first))
        if t in ("interpreted_string_literal", "raw_string_literal"):
            return Receiver(R_TYPE, "", "string")
        return None

    # ---- package, imports ------------------------------------------------------------
    def visit_package_clause(self, node: Node) -> None:
        if node.named_children:
            self.facts.package = self.text(node.named_children[0])

    def visit_import_spec(self, node: Node) -> None:
        path = self.text(self.field(node, "path")).strip('"`')
        name_node = self.field(node, "name")
        alias = self.text(name_node) if name_node is not None else ""
        if alias == "_":
            return
        if alias == ".":
            self.add_import(path, "*", "", self.line(node))
            return
        self.add_import(path, "", alias or go_package_name(path), self.line(node),
                        binds_module=True)

    # ---- types -----------------------------------------------------------------------
    def visit_type_declaration(self, node: Node) -> None:
        for spec in node.named_children:
            if spec.type in ("type_spec", "type_alias"):
                self._type_spec(spec)

    def _type_spec(self, spec: Node) -> None:
        name = self.text(self.field(spec, "name"))
        if not name:
            return
        value = self.field(spec, "type")
        with self.definition(name, KIND_CLASS, spec, is_function=False, symbol=name) as d:
            if value is None:
                return
            if value.type == "struct_type":
                self._struct_fields(d, value)
            elif value.type == "interface_type":
                for elem in value.named_children:
                    if elem.type in ("type_elem", "constraint_elem", "interface_type_name"):
                        d.bases.append(self.text(elem))
            else:  # `type HandlersChain []HandlerFunc`, `type X Y`: keep the underlying type
                d.returns = self.text(value)
                if value.type in ("type_identifier", "qualified_type"):
                    d.bases.append(self.text(value))

    def _struct_fields(self, d, struct: Node) -> None:
        fields = next((c for c in struct.named_children if c.type == "field_declaration_list"), None)
        if fields is None:
            return
        for f in fields.named_children:
            if f.type != "field_declaration":
                continue
            typ = self.field(f, "type")
            names = f.children_by_field_name("name")
            if not names:  # embedded field: a base
                text = self.text(typ).lstrip("*")
                d.bases.append(text)
                d.attributes[text.split(".")[-1]] = Receiver(R_TYPE, "", text)
                continue
            for n in names:
                d.attributes[self.text(n)] = Receiver(R_TYPE, "", self.text(typ))

    # ---- functions -------------------------------------------------------------------
    def _params(self, params: Node | None) -> None:
        if params is None:
            return
        for p in params.named_children:
            if p.type not in ("parameter_declaration", "variadic_parameter_declaration"):
                continue
            typ = self.text(self.field(p, "type"))
            if p.type == "variadic_parameter_declaration":
                typ = "[]" + typ
            for n in p.children_by_field_name("name"):
                self.bind(self.text(n), Receiver(R_TYPE, self.text(n), typ), declared=True)

    def visit_function_declaration(self, node: Node) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        with self.definition(name, KIND_FUNCTION, node, is_function=True, symbol=name) as d:
            self._function_body(node, d)

    def visit_method_declaration(self, node: Node) -> None:
        name = self.text(self.field(node, "name")) or "<anonymous>"
        recv_node = self.field(node, "receiver")
        recv = go_receiver_type(self.text(recv_node))
        with self.definition(name, KIND_METHOD, node, is_function=True,
                             class_symbol=recv, symbol=f"{recv}.{name}") as d:
            if recv_node is not None:
                for p in recv_node.named_children:
                    for n in p.children_by_field_name("name"):
                        self.bind(self.text(n), Receiver(R_SELF, self.text(n), recv), declared=True)
            self._function_body(node, d)

    def _function_body(self, node: Node, d) -> None:
        result = self.field(node, "result")
        d.returns = self.text(result)
        self._params(self.field(node, "parameters"))
        if result is not None and result.type == "parameter_list":
            self._params(result)  # named results are locals
        self.walk_fields(node, "body")

    def visit_func_literal(self, node: Node) -> None:
        with self.function_scope():
            self._params(self.field(node, "parameters"))
            self.walk_fields(node, "body")

    # ---- variables -------------------------------------------------------------------
    def _value(self, node: Node) -> Receiver:
        if self.unwrap(node).type == "nil":
            return None  # type: ignore[return-value]
        return self.expr(node)

    def _assign(self, names: list[Node], values: list[Node], declared_type: str = "") -> None:
        for v in values:
            self.visit(v)
        idents = [self.text(n) if n.type == "identifier" else "" for n in names]
        if declared_type:
            for n in idents:
                self.bind(n, Receiver(R_TYPE, n, declared_type), declared=True)
            return
        if len(values) == len(idents):
            for n, v in zip(idents, values):
                if n and n != "_":
                    val = self._value(v)
                    if val is not None:
                        val = Receiver(val.kind, val.name or n, val.type, val.attrs, val.value,
                                       val.index)
                    self.bind(n, val)
        elif len(values) == 1:
            value = self._value(values[0])
            for i, n in enumerate(idents):
                if not n or n == "_":
                    continue
                if value is not None and value.kind == R_CALL and not value.attrs:
                    self.bind(n, Receiver(R_CALL, n, value=value.value, index=i))
                elif i == 0 and value is not None:
                    self.bind(n, value)
                else:
                    self.bind(n, Receiver(R_UNKNOWN, n))

    @staticmethod
    def _list(node: Node | None) -> list[Node]:
        if node is None:
            return []
        if node.type == "expression_list":
            return list(node.named_children)
        return [node]

    def visit_short_var_declaration(self, node: Node) -> None:
        self._assign(self._list(self.field(node, "left")), self._list(self.field(node, "right")))

    def visit_assignment_statement(self, node: Node) -> None:
        left = self._list(self.field(node, "left"))
        op = self.text(self.field(node, "operator"))
        right = self._list(self.field(node, "right"))
        if op in ("=", ":="):
            self._assign(left, right)
        else:
            for v in right:
                self.visit(v)
        for n in left:
            if n.type != "identifier":
                self.visit(n)

    def visit_var_spec(self, node: Node) -> None:
        names = node.children_by_field_name("name")
        typ = self.text(self.field(node, "type"))
        self._assign(names, self._list(self.field(node, "value")), typ)

    visit_const_spec = visit_var_spec

    def visit_range_clause(self, node: Node) -> None:
        right = self.field(node, "right")
        if right is not None:
            self.visit(right)
        left = self._list(self.field(node, "left"))
        for i, n in enumerate(left):
            if n.type != "identifier":
                continue
            if i == 1 and right is not None:  # for _, v := range xs: v is an element
                self.bind(self.text(n), self.expr(right).with_attr(ELEM_INDEX))
            else:
                self.bind(self.text(n), Receiver(R_UNKNOWN, self.text(n)))

    def visit_type_switch_statement(self, node: Node) -> None:
        alias = self.field(node, "alias")
        for n in self._list(alias):
            if n.type == "identifier":
                self.bind(self.text(n), Receiver(R_UNKNOWN, self.text(n)))
        self.visit_children(node)

    def visit_call_expression(self, node: Node) -> None:
        self.record_call(node)
        fn = self._call_fn(node)
        if fn is not None:
            self.visit(fn)
        self.walk_fields(node, "arguments")
