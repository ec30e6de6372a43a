"""Start-up: short commands load only what they use, say what a slow first run is doing,
and their help reads as sentences. (Speed itself is measured by bench/startup_bench.py.)"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HEAVY = ("weaviate", "torch", "onnxruntime", "sentence_transformers", "anthropic", "voyageai", "slack_bolt",
         "slack_sdk", "microsoft_agents", "apscheduler", "alembic", "mcp", "tree_sitter", "transformers")

PROBE = """
import json, sys
sys.argv = ["coderag", *json.loads(sys.argv[1])]
from bot.cli import main
try:
    main()
except SystemExit:
    pass
loaded = sorted({m.split(".")[0] for m in sys.modules})
with open(OUT, "w") as f:
    json.dump(loaded, f)
"""


def loaded_after(args: list[str], env: dict, tmp_path) -> set[str]:
    out = tmp_path / "modules.json"
    code = PROBE.replace("OUT", repr(str(out)))
    proc = subprocess.run([sys.executable, "-c", code, json.dumps(args)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert out.exists(), proc.stderr
    return set(json.loads(out.read_text()))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["impact", "--help"], ["status", "--help"]])
def test_help_and_version_load_no_heavy_library(args, tmp_path):
    env = dict(os.environ, CODERAG_HOME=str(tmp_path / "home"))
    loaded = loaded_after(args, env, tmp_path)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.weaviate
def test_impact_and_status_load_no_weaviate_client_nor_model(settings_env, tmp_path):
    from helpers.gitrepo import make_git_repo

    repo = make_git_repo(tmp_path, {"pkg/mod.py": "def f():\n    return 1\n\n\ndef g():\n    return f()\n"},
                         name="tinyimpact")
    proc = subprocess.run([sys.executable, "-m", "bot.cli", "index", str(repo)], env=settings_env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    for args in (["impact", "f"], ["status"]):
        loaded = loaded_after(args, settings_env, tmp_path)
        assert "bot" in loaded
        assert not loaded & {"weaviate", "torch", "onnxruntime", "sentence_transformers", "anthropic",
                             "slack_bolt", "alembic"}, (args, sorted(loaded & set(HEAVY)))


def test_version_prints_the_package_version():
    from importlib.metadata import version

    proc = subprocess.run([sys.executable, "-m", "bot.cli", "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"coderag {version('coderag')}\n"


def test_help_joins_each_commands_sentences(tmp_path):
    """A wide terminal shows each command's help on one line: the docstrings' source line
    breaks are not kept as breaks mid-sentence."""
    env = dict(os.environ, COLUMNS="250", TERMINAL_WIDTH="250", CODERAG_HOME=str(tmp_path))
    out = subprocess.run([sys.executable, "-m", "bot.cli", "--help"], env=env, capture_output=True, text=True,
                         timeout=60).stdout
    line = next(line for line in out.splitlines() if "│ remove " in line)
    assert "so a later sync starts from scratch" in line, out
    # no character whose width the terminal and the wrapper count differently (an emoji
    # cut "top coverage gaps" across lines at 80 columns)
    assert all(ord(ch) < 0x2000 for ch in out.replace("│", "").replace("─", "").replace("╭", "").replace(
        "╮", "").replace("╰", "").replace("╯", "")), [ln for ln in out.splitlines() if any(ord(c) > 0x2600 for c in ln)]
    narrow = subprocess.run([sys.executable, "-m", "bot.cli", "--help"], capture_output=True, text=True, timeout=60,
                            env=dict(env, COLUMNS="80", TERMINAL_WIDTH="80")).stdout
    assert "top coverage gaps" in " ".join(ln.strip("│ ") for ln in narrow.splitlines()), narrow


@pytest.mark.weaviate
def test_a_first_run_says_it_is_starting_weaviate_before_doing_it(weaviate_binary, tmp_path):
    """Empty CODERAG_HOME: the first line on stderr says the embedded Weaviate is starting."""
    from indexer import EmbeddedWeaviate

    home = tmp_path / "fresh-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("WEAVIATE_URL", "CODERAG_"))}
    env.update(CODERAG_HOME=str(home), WEAVIATE_BINARY=weaviate_binary)
    try:
        proc = subprocess.run([sys.executable, "-m", "bot.cli", "status"], env=env, capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 0, proc.stderr
        first = proc.stderr.splitlines()[0]
        assert first.startswith("coderag: starting the embedded Weaviate"), proc.stderr
        again = subprocess.run([sys.executable, "-m", "bot.cli", "status"], env=env, capture_output=True,
                               text=True, timeout=300)
        assert "starting the embedded Weaviate" not in again.stderr  # only when it really starts
    finally:
        EmbeddedWeaviate(home).stop()
