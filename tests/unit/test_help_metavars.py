"""Every ``coderag … --help`` shows what an option's value is (``--port PORT``,
``--stalled-after SECONDS``, ``--name NAME``), never the Python type typer writes by
default (``<int range> [x>=1]``, ``<str>``, ``<float range>``)."""
from __future__ import annotations

import re

import typer
from typer.testing import CliRunner

RAW = re.compile(r"<(int|float) range>|<(str|int|float|text|path|bool)>")


def _command_paths(command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [prefix]
    if getattr(command, "commands", None):
        for name, sub in command.commands.items():
            paths += _command_paths(sub, prefix + (name,))
    return paths


def test_every_command_help_shows_natural_metavars():
    from bot.cli import app

    paths = _command_paths(typer.main.get_command(app))
    assert len(paths) > 10, paths
    runner = CliRunner()
    bad = {}
    for path in paths:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        found = RAW.findall(result.output)
        if found:
            bad[" ".join(path)] = [m.group(0) for m in RAW.finditer(result.output)]
    assert not bad, bad


def test_worker_and_serve_help_name_the_values():
    from bot.cli import app

    runner = CliRunner()
    worker = runner.invoke(app, ["worker", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--stalled-after\s+SECONDS", worker) and re.search(r"--name\s+NAME", worker), worker
    assert re.search(r"--concurrency\s+N\b", worker), worker
    serve = runner.invoke(app, ["serve", "--help"], env={"COLUMNS": "200"}).output
    assert re.search(r"--port\s+PORT", serve), serve
