"""The README and the manual in docs/ stay true to the product.

* every command and subcommand of ``coderag`` (found by walking the Typer app, not listed
  here) has its section in ``docs/commands.md``, and each of its options is named there;
* the README stays short (at most 200 lines), holds the two fresh-machine commands, and
  every relative link in it points at a file of this repository;
* every page in ``docs/`` is in the site's navigation (``mkdocs.yml``).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parents[2]
COMMANDS_PAGE = ROOT / "docs" / "commands.md"
README_MAX_LINES = 200
# The two commands a newcomer runs on a fresh machine, exactly as the README gives them.
FRESH_MACHINE_ASK = ('python3 -m venv .venv && . .venv/bin/activate && bash scripts/install.sh && coderag index . '
                     '&& coderag ask "where is the local weaviate-server process started?"')
FRESH_MACHINE_TESTS = ("python3 -m venv .venv && . .venv/bin/activate && bash scripts/install.sh --test "
                       "&& python3 -m pytest -q")


def cli_commands(app: typer.Typer) -> dict[str, list[str]]:
    """``{"feedback export": ["--negative", "--out", "--since"], ...}``: every leaf command of
    ``app`` (subcommands of groups included) with its long options, ``--help`` left out."""
    root = typer.main.get_command(app)
    found: dict[str, list[str]] = {}

    def walk(cmd, path: list[str], parent_ctx) -> None:
        if hasattr(cmd, "list_commands"):  # a group: recurse into its commands
            ctx = cmd.context_class(cmd, parent=parent_ctx, info_name=path[-1] if path else "coderag")
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name], ctx)
            return
        opts = [o for p in cmd.params for o in getattr(p, "opts", []) if o.startswith("--") and o != "--help"]
        found[" ".join(path)] = opts

    walk(root, [], None)
    return found


def section(page: str, command: str) -> str | None:
    """The text of the ``### `coderag COMMAND``` section of ``page`` (up to the next heading
    of that level or above), or ``None`` when there is no such heading."""
    m = re.search(rf"^### `coderag {re.escape(command)}`[^\n]*\n(.*?)(?=^#{{1,3}} |\Z)", page, re.M | re.S)
    return m.group(1) if m else None


def undocumented(commands: dict[str, list[str]], page: str) -> list[str]:
    """``"NAME"`` for each command without a section, ``"NAME --opt"`` for each option its
    section does not name; sorted."""
    missing = []
    for name, opts in commands.items():
        text = section(page, name)
        if text is None:
            missing.append(name)
            continue
        missing += [f"{name} {o}" for o in opts if not re.search(rf"{re.escape(o)}(?![\w-])", text)]
    return sorted(missing)


def test_the_walk_finds_every_kind_of_command():
    from bot.cli import app

    commands = cli_commands(app)
    for name in ("index", "ask", "stats", "drift", "who", "doctor", "feedback export", "db upgrade", "db prune",
                 "weaviate status", "weaviate stop", "sync repo", "sync confluence", "mcp", "serve"):
        assert name in commands, name
    assert commands["feedback export"] == ["--negative", "--out", "--since"]
    assert "--no-signal" in commands["search"]


def test_every_command_and_option_is_in_the_commands_page():
    from bot.cli import app

    page = COMMANDS_PAGE.read_text(encoding="utf-8")
    assert undocumented(cli_commands(app), page) == []
    assert "coderag --version" in page


def test_a_new_command_or_option_is_reported():
    from bot.cli import app

    page = COMMANDS_PAGE.read_text(encoding="utf-8")
    commands = dict(cli_commands(app))
    commands["frobnicate"] = []
    commands["ask"] = commands["ask"] + ["--explain"]
    assert undocumented(commands, page) == ["ask --explain", "frobnicate"]
    # A section that loses an option is caught too.
    assert undocumented({"drift": ["--json"]}, page.replace("`coderag drift [SOURCE] [--json]`", "")) == \
        ["drift --json"]


def test_readme_is_short_and_holds_the_fresh_machine_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= README_MAX_LINES
    for command in (FRESH_MACHINE_ASK, FRESH_MACHINE_TESTS):
        assert f"```bash\n{command}\n```" in text
        # The manual's getting-started page gives the same two commands.
        assert f"```bash\n{command}\n```" in (ROOT / "docs/getting-started.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("doc", ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md")))
def test_relative_links_point_at_files(doc):
    """Links to other files of the repository (not web addresses) resolve."""
    path = ROOT / doc
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # no links inside code
    text = re.sub(r"`[^`\n]*`", "", text)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        if not (path.parent / target.split("#")[0]).exists():
            broken.append(target)
    assert broken == []


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s+([\w/.-]+\.md)\s*$", nav, re.M))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == listed
