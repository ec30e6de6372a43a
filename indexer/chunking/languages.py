"""Per-language data: file extensions and tree-sitter node-type tables.

Adding a tree-sitter language means adding a :class:`CodeLanguage` entry to
:data:`CODE_LANGUAGES` (and its extensions to :data:`EXTENSIONS`); ``code.py`` holds no
language names except where a grammar needs special handling (Go receivers and
``type`` declarations).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

# Extension (lower case, with dot) -> language name. Only the languages in
# CODE_LANGUAGES, generic.GENERIC_LANGUAGES and DOC_LANGUAGES get a structural
# splitter; the rest use windows.
EXTENSIONS: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    ".go": "go",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".tsx": "tsx",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".java": "java",
    ".md": "markdown", ".markdown": "markdown",
    ".rst": "rst",
    ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".json": "json",
    ".cfg": "ini", ".ini": "ini", ".sh": "bash", ".bash": "bash",
    ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cxx": "cpp",
    ".hh": "cpp", ".hxx": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".kt": "kotlin", ".kts": "kotlin",
    ".scala": "scala", ".sc": "scala", ".swift": "swift", ".lua": "lua", ".ex": "elixir", ".exs": "elixir",
    ".hs": "haskell", ".zig": "zig",
    ".php": "php", ".cs": "csharp", ".sql": "sql", ".html": "html", ".css": "css",
    ".xml": "xml", ".proto": "proto", ".txt": "text",
}
# Whole file names (no extension) -> language name.
FILENAMES: dict[str, str] = {"Dockerfile": "dockerfile", "Makefile": "make", "Rakefile": "ruby",
                             "Gemfile": "ruby"}

DOC_LANGUAGES = frozenset({"markdown", "rst"})


def detect_language(path: str) -> str | None:
    """Language name for ``path`` from its extension or file name, else ``None``.

    Case-insensitive on the extension: ``"a/B.PY"`` -> ``"python"``.
    """
    base = os.path.basename(path)
    if base in FILENAMES:
        return FILENAMES[base]
    ext = os.path.splitext(base)[1].lower()
    return EXTENSIONS.get(ext)


@dataclass(frozen=True)
class CodeLanguage:
    """Node types of one tree-sitter grammar, as the code chunker needs them."""

    grammar: str  # tree-sitter grammar name (indexer.syntax.parse)
    comment_types: frozenset[str]
    # Top-level definitions.
    function_types: frozenset[str]  # free functions -> kind "function"
    class_types: frozenset[str]  # classes, interfaces, enums, records -> kind "class"
    receiver_method_types: frozenset[str] = frozenset()  # Go: methods outside the type
    # Members of a class body.
    method_types: frozenset[str] = frozenset()
    # Body wrappers whose children are members too (Java enum_body_declarations).
    member_container_types: frozenset[str] = frozenset()
    # Nodes wrapping one definition: decorated_definition, export_statement.
    wrapper_types: frozenset[str] = frozenset()
    # `const f = () => ...`: declaration types, and value types that make it a function.
    variable_types: frozenset[str] = frozenset()
    function_value_types: frozenset[str] = frozenset()
    # Field-like class members whose value may be a function (TS `handle = () => {}`).
    field_types: frozenset[str] = frozenset()
    # Top-level statements that belong in the file header.
    header_types: frozenset[str] = frozenset()
    # Annotation/decorator nodes skipped when building signature and context lines.
    annotation_types: frozenset[str] = frozenset()
    # Go-style `type X ...` declarations: a spec whose type is one of these is a class.
    type_decl_types: frozenset[str] = frozenset()
    type_class_values: frozenset[str] = frozenset()
    python_docstrings: bool = False


def _f(*names: str) -> frozenset[str]:
    return frozenset(names)


_JS_COMMON = dict(
    comment_types=_f("comment"),
    function_types=_f("function_declaration", "generator_function_declaration"),
    method_types=_f("method_definition", "abstract_method_signature"),
    wrapper_types=_f("export_statement"),
    variable_types=_f("lexical_declaration", "variable_declaration"),
    function_value_types=_f("arrow_function", "function_expression", "function",
                            "generator_function"),
    field_types=_f("public_field_definition", "field_definition"),
    header_types=_f("import_statement", "lexical_declaration", "variable_declaration",
                    "type_alias_declaration", "export_statement"),
    annotation_types=_f("decorator"),
)
_TS_CLASSES = _f("class_declaration", "abstract_class_declaration", "interface_declaration",
                 "enum_declaration", "class")

CODE_LANGUAGES: dict[str, CodeLanguage] = {
    "python": CodeLanguage(
        grammar="python",
        comment_types=_f("comment"),
        function_types=_f("function_definition"),
        class_types=_f("class_definition"),
        method_types=_f("function_definition"),
        wrapper_types=_f("decorated_definition"),
        header_types=_f("import_statement", "import_from_statement",
                        "future_import_statement", "type_alias_statement"),
        annotation_types=_f("decorator"),
        python_docstrings=True,
    ),
    "go": CodeLanguage(
        grammar="go",
        comment_types=_f("comment"),
        function_types=_f("function_declaration"),
        class_types=_f(),
        receiver_method_types=_f("method_declaration"),
        header_types=_f("package_clause", "import_declaration", "const_declaration",
                        "var_declaration", "type_declaration"),
        type_decl_types=_f("type_declaration"),
        type_class_values=_f("struct_type", "interface_type"),
    ),
    "typescript": CodeLanguage(grammar="typescript", class_types=_TS_CLASSES, **_JS_COMMON),
    "tsx": CodeLanguage(grammar="tsx", class_types=_TS_CLASSES, **_JS_COMMON),
    "javascript": CodeLanguage(grammar="javascript", class_types=_f("class_declaration", "class"),
                               **_JS_COMMON),
    "java": CodeLanguage(
        grammar="java",
        comment_types=_f("line_comment", "block_comment"),
        function_types=_f(),
        class_types=_f("class_declaration", "interface_declaration", "enum_declaration",
                       "record_declaration", "annotation_type_declaration"),
        method_types=_f("method_declaration", "constructor_declaration",
                        "compact_constructor_declaration"),
        member_container_types=_f("enum_body_declarations"),
        header_types=_f("package_declaration", "import_declaration"),
        annotation_types=_f("marker_annotation", "annotation"),
    ),
}
