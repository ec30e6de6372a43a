"""The ``coderag`` CLI as a user runs it, for tests: one subprocess per command, several
at once, the shape of a clean failure, and the tiny indexed repository most CLI tests read."""
from __future__ import annotations

import subprocess
import sys

import pytest

from .gitrepo import make_git_repo

TINY_FILES = {
    "pricing/tax.py": (
        '"""Pricing helpers."""\n'
        "\n"
        "\n"
        "def calculatePriceWithTax(price, rate):\n"
        '    """Price plus sales tax, rounded to cents."""\n'
        "    return round(price * (1 + rate), 2)\n"
        "\n"
        "\n"
        "def apply_discount(price, percent):\n"
        '    """Reduce a price by a percentage."""\n'
        "    return price * (1 - percent / 100)\n"
    ),
    "server/health.go": (
        "package server\n"
        "\n"
        'import "net/http"\n'
        "\n"
        "// HealthHandler answers the load balancer's health probe.\n"
        "func HealthHandler(w http.ResponseWriter, r *http.Request) {\n"
        "\tw.WriteHeader(http.StatusOK)\n"
        "}\n"
    ),
}


def run_cli(env: dict, *args: str, input: str | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, input=input,
                          capture_output=True, text=True, timeout=timeout)


def run_many(env: dict, *argvs: list[str], timeout: float = 180) -> list[subprocess.CompletedProcess]:
    """Run several CLI commands at once (each loads MiniLM for seconds; 2 cores overlap them)."""
    procs = [subprocess.Popen([sys.executable, "-m", "bot.cli", *argv], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for argv in argvs]
    done = []
    for argv, p in zip(argvs, procs):
        stdout, stderr = p.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(argv, p.returncode, stdout, stderr))
    return done


def assert_error(proc: subprocess.CompletedProcess, exit_code: int, fragment: str) -> str:
    """A clean one-message failure: exit code, ``coderag: error:`` prefix, no traceback.

    Whitespace is normalised (``index`` may print a progress line first).
    """
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == exit_code, (proc.returncode, proc.stderr)
    message = " ".join(proc.stderr.split())
    assert message.startswith("coderag: error: "), proc.stderr
    assert message.count("coderag: error:") == 1, proc.stderr
    assert fragment in message, message
    assert proc.stdout == ""
    return message


@pytest.fixture
def tiny(tmp_path, store, local_embedder, settings_env):
    """The tiny repo, indexed in-process as ``tiny`` (so CLI reads find it)."""
    from common.settings import Settings
    from indexer import index_repository

    repo = make_git_repo(tmp_path, TINY_FILES, name="tiny")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=local_embedder)
    return repo
