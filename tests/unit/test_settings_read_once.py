"""Settings are read once, at the composition roots, and handed down.

``coderag`` validates every setting at start-up (:func:`common.settings.load` in
``bot/cli/__init__.py``) and hands the :class:`~common.settings.AppSettings` to the
commands through the click context (``bot/cli/context.py``) and to ``serve`` through
``bot/wiring.py``; every other module takes its group as a parameter. This test reads the
source of ``bot/`` and ``indexer/`` and fails on any other read of the environment for a
setting: a ``.from_env(...)`` call, a settings group built directly (``Settings(...)``,
which reads the environment too), ``load()``, ``open_database()`` / ``database_url()``
without settings (they read them), and :func:`common.settings.installed` outside the
scheduler job bodies a persistent job store calls by name.
"""
from __future__ import annotations

import ast
from pathlib import Path

from common.settings import GROUPS

ROOT = Path(__file__).resolve().parents[2]

#: The composition roots: the only modules below ``common/`` that read the environment.
ROOTS = ("bot/cli/__init__.py", "bot/cli/context.py", "bot/wiring.py")

#: Job bodies a persistent job store calls by name (no objects can be handed to them):
#: the only places that may take the installed settings.
JOB_BODIES = {("bot/knowledge.py", "post_digest"), ("bot/querylog/retention.py", "run_retention")}

GROUP_NAMES = {g.__name__ for g in GROUPS} | {"AppSettings"}
READ_WITHOUT_SETTINGS = {"open_database", "database_url"}


def _name(func: ast.expr) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def settings_reads(source: str) -> list[tuple[int, str, str]]:
    """``[(line, what, enclosing function)]``: every read of the environment for a setting
    in ``source`` (Python)."""
    found: list[tuple[int, str, str]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call):
                name = _name(child.func)
                if name == "from_env":
                    found.append((child.lineno, f"{ast.unparse(child.func)}()", where))
                elif name in GROUP_NAMES:
                    found.append((child.lineno, f"{name}(...)", where))
                elif name in ("load", "installed"):
                    found.append((child.lineno, f"{name}()", where))
                elif name in READ_WITHOUT_SETTINGS and not child.args and not any(
                        k.arg == "settings" for k in child.keywords):
                    found.append((child.lineno, f"{name}() without settings", where))
            visit(child, inner)

    visit(ast.parse(source), "")
    return found


def _counted(rel: str, reads: list[tuple[int, str, str]]) -> list[tuple[int, str]]:
    """``reads`` of module ``rel`` less the installed settings taken by its job bodies."""
    return [(line, what) for line, what, where in reads if not (what == "installed()" and (rel, where) in JOB_BODIES)]


def _modules() -> dict[str, list[tuple[int, str, str]]]:
    out = {}
    for top in ("bot", "indexer"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            out[rel] = settings_reads(path.read_text(encoding="utf-8"))
    return out


def test_the_counter_sees_every_kind_of_read():
    """The counter itself: each kind of read is found (so the tests below can fail)."""
    source = ("from common.settings import Settings, ChatSettings, installed, load\n"
              "def f(sessions):\n"
              "    a = Settings.from_env()\n"
              "    b = ChatSettings()\n"
              "    c = load()\n"
              "    d = installed()\n"
              "    e = open_database()\n"
              "    g = open_database(a)\n"  # handed its settings: not a read
              "    h = UserHasher.from_env(sessions)\n")
    assert [(line, what) for line, what, _ in settings_reads(source)] == [
        (3, "Settings.from_env()"), (4, "ChatSettings(...)"), (5, "load()"), (6, "installed()"),
        (7, "open_database() without settings"), (9, "UserHasher.from_env()")]
    assert {where for *_, where in settings_reads(source)} == {"f"}


def test_settings_are_read_only_at_the_composition_roots():
    """No module of ``bot/`` or ``indexer/`` outside the roots reads a setting from the
    environment; the installed settings only in the job bodies."""
    unexpected = [f"{rel}:{line}: {what}" for rel, reads in _modules().items() if rel not in ROOTS
                  for line, what in _counted(rel, reads)]
    assert not unexpected, ("settings read outside the composition roots (take the group as a parameter "
                            "from bot/wiring.py or the CLI context instead):\n" + "\n".join(unexpected))


def test_the_roots_are_the_modules_that_read():
    """Each root still reads the settings (else it is no root and leaves ``ROOTS``)."""
    modules = _modules()
    assert [root for root in ROOTS if not modules[root]] == []
