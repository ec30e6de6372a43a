"""One error catalogue: every CoderagError subclass has its own exit code from
common.errors.ExitCode, and the manual's table (docs/commands.md) lists each code with its name."""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _all_error_classes():
    from common.errors import CoderagError

    for pkg in ("common", "indexer", "bot"):
        mod = importlib.import_module(pkg)
        for info in pkgutil.walk_packages(mod.__path__, prefix=f"{pkg}."):
            if not info.name.endswith(".__main__"):  # running it would start the CLI
                importlib.import_module(info.name)
    seen, todo = [], [CoderagError]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub.__module__.split(".")[0] in ("common", "indexer", "bot"):
                seen.append(sub)
            todo.append(sub)
    return seen


def test_every_error_class_has_a_distinct_exit_code():
    from common.errors import ExitCode

    classes = _all_error_classes()
    assert len(classes) >= 10
    by_code: dict[int, list[str]] = {}
    for cls in classes:
        assert isinstance(cls.exit_code, ExitCode), cls
        # a subclass that does not set its own code inherits its parent's meaning: only
        # classes that declare exit_code count
        if "exit_code" in cls.__dict__:
            by_code.setdefault(int(cls.exit_code), []).append(cls.__qualname__)
    shared = {code: names for code, names in by_code.items() if len(names) > 1}
    assert shared == {}
    assert len(set(int(c) for c in ExitCode)) == len(ExitCode)


def test_docs_list_every_exit_code():
    from common.errors import ExitCode

    text = (ROOT / "docs" / "commands.md").read_text(encoding="utf-8")
    section = text[text.index("## Exit codes"):]
    rows = dict(re.findall(r"^\| (\d+) \| `(\w+)` \|", section, re.M))
    assert rows == {str(int(c)): c.name for c in ExitCode}


def test_debug_adds_the_traceback_and_keeps_the_exit_code(tmp_path):
    """``CODERAG_DEBUG=1`` prints the traceback of an expected error, then its one line,
    and exits with the error's own code (not 1)."""
    import os
    import subprocess
    import sys

    from common.errors import ExitCode

    env = dict(os.environ, CODERAG_HOME=str(tmp_path), PYTHONPATH=str(ROOT))
    argv = [sys.executable, "-m", "bot.cli", "search", "x", "--top-k", "0"]
    plain = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    debug = subprocess.run(argv, env=dict(env, CODERAG_DEBUG="1"), capture_output=True, text=True, timeout=120)
    line = "coderag: error: --top-k must be between 1 and 100, got 0"
    assert plain.returncode == ExitCode.USAGE and plain.stderr.strip() == line
    assert "Traceback" not in plain.stderr
    assert debug.returncode == ExitCode.USAGE, debug.stderr
    assert debug.stderr.startswith("Traceback (most recent call last):"), debug.stderr
    assert "BadInput" in debug.stderr and debug.stderr.rstrip().endswith(line), debug.stderr


def test_debug_traceback_also_for_a_malformed_setting(tmp_path):
    """The settings that hold ``CODERAG_DEBUG`` are the ones that failed to load: the
    flag is read raw then, so a malformed other setting still gets its traceback."""
    import os
    import subprocess
    import sys

    from common.errors import ExitCode

    env = dict(os.environ, CODERAG_HOME=str(tmp_path), PYTHONPATH=str(ROOT), CODERAG_STALE_HOURS="abc")
    argv = [sys.executable, "-m", "bot.cli", "status"]
    plain = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    debug = subprocess.run(argv, env=dict(env, CODERAG_DEBUG="1"), capture_output=True, text=True, timeout=120)
    assert plain.returncode == debug.returncode == ExitCode.USAGE, (plain.stderr, debug.stderr)
    assert "Traceback" not in plain.stderr and "CODERAG_STALE_HOURS" in plain.stderr
    assert debug.stderr.startswith("Traceback (most recent call last):"), debug.stderr
    assert debug.stderr.rstrip().endswith(plain.stderr.strip())
