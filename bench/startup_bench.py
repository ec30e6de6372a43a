#!/usr/bin/env python3
"""Start-up of short commands, as whole processes, side by side with ``python -c pass``.

Usage: python bench/startup_bench.py [--runs 10] [--home DIR]

Builds a tiny Git repository and indexes it into ``--home`` (a ``CODERAG_HOME``; default a
temporary folder, its embedded Weaviate stopped at the end), then runs, interleaved
round by round so machine load hits every command alike:

* ``python -c pass`` (the interpreter alone),
* ``coderag --help``, ``coderag --version``, ``coderag status``, ``coderag impact f``.

Prints one JSON object: per command the median, min and max wall seconds over ``--runs``
runs, and the median's ratio to ``python -c pass``; plus the load average before/after.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "--help": [sys.executable, "-m", "bot.cli", "--help"],
    "--version": [sys.executable, "-m", "bot.cli", "--version"],
    "status": [sys.executable, "-m", "bot.cli", "status"],
    "impact": [sys.executable, "-m", "bot.cli", "impact", "f"],
}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def tiny_repo(root: Path) -> Path:
    repo = root / "startup-bench-repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "mod.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return f()\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "init")
    return repo


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="coderag-startup-bench-")
    home = args.home or Path(tmp.name) / "home"
    env = dict(os.environ, CODERAG_HOME=str(home))
    # A user's Python caches bytecode; without it every run recompiles the project's modules.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    repo = tiny_repo(Path(tmp.name))
    subprocess.run([sys.executable, "-m", "bot.cli", "index", str(repo)], env=env, check=True,
                   capture_output=True)
    for cmd in COMMANDS.values():  # warm the OS file cache once
        subprocess.run(cmd, env=env, capture_output=True)
    times: dict[str, list[float]] = {k: [] for k in COMMANDS}
    load_before = os.getloadavg()[0]
    for _ in range(args.runs):
        for name, cmd in COMMANDS.items():
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, env=env, capture_output=True)
            times[name].append(time.perf_counter() - t0)
            if proc.returncode != 0:
                raise SystemExit(f"{name} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    base = statistics.median(times["python -c pass"])
    result = {name: {"median_s": round(statistics.median(v), 3), "min_s": round(min(v), 3),
                     "max_s": round(max(v), 3), "ratio_to_python": round(statistics.median(v) / base, 1)}
              for name, v in times.items()}
    print(json.dumps({"runs": args.runs, "commands": result,
                      "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)]}))
    if args.home is None:
        from indexer import EmbeddedWeaviate

        EmbeddedWeaviate(home).stop()
    tmp.cleanup()


if __name__ == "__main__":
    main()
