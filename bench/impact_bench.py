#!/usr/bin/env python3
"""How complete and how precise ``impact`` is, and how fast it answers.

Usage: python bench/impact_bench.py [--cases ../shared/eval/impact-dev.jsonl --repos DIR]
       [--runs 10] [--no-timing]

Three parts, one JSON object on stdout:

* ``patterns``: the small programs of ``tests/helpers/impact_patterns.py`` (one per
  call pattern: imports under a root ``__init__.py``, functions as values, decorators,
  inherited constructors and protocols); precision/recall of the direct callers
  averaged per case and per pattern, and the cases that miss or add one.
* ``dev`` (with ``--cases`` and ``--repos``): impact cases in the format of
  ``impact-dev.jsonl`` (``{"id", "repo", "commit", "symbol", "path", "callers"}``),
  each repository checked out as ``DIR/<repo>`` at the case's commit (refused
  otherwise). The graph is built from the checkout's files in memory (no index);
  callers outside tests at depth 1 are scored as ``score_impact.py`` does (same path,
  one dotted symbol a suffix of the other, one-to-one).
* ``timing``: wall seconds (median, min, max of ``--runs``) of ``coderag impact`` and
  ``coderag --help`` run as processes on a tiny indexed repository, interleaved with
  ``python -c pass`` so machine load hits all alike, and each median's ratio to it.
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _same(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """Same path and one dotted symbol a suffix of the other (the dev scorer's rule)."""
    if a[0] != b[0]:
        return False
    x, y = a[1].split("."), b[1].split(".")
    n = min(len(x), len(y))
    return n > 0 and x[-n:] == y[-n:]


def score(expected: list[tuple[str, str]], found: list[tuple[str, str]]) -> tuple[float, float, list, list]:
    """``(precision, recall, missed, extra)`` with one-to-one matching, exact pairs first.
    Precision of nothing found is 1.0 when nothing was expected, else 0.0."""
    found = list(dict.fromkeys(found))
    used_e: set[int] = set()
    used_f: set[int] = set()
    for exact in (True, False):
        for i, e in enumerate(expected):
            if i in used_e:
                continue
            for j, f in enumerate(found):
                if j not in used_f and (e == f if exact else _same(e, f)):
                    used_e.add(i)
                    used_f.add(j)
                    break
    tp = len(used_e)
    precision = tp / len(found) if found else (1.0 if not expected else 0.0)
    recall = tp / len(expected) if expected else 1.0
    return (precision, recall, [e for i, e in enumerate(expected) if i not in used_e],
            [f for j, f in enumerate(found) if j not in used_f])


def _average(rows: list[dict]) -> dict:
    n = len(rows) or 1
    return {"cases": len(rows), "precision": round(sum(r["precision"] for r in rows) / n, 3),
            "recall": round(sum(r["recall"] for r in rows) / n, 3)}


def patterns_part() -> dict:
    """Precision/recall of direct callers on the pattern programs."""
    from indexer.graph import build_graph
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers.impact_patterns import CASES

    rows = []
    for case in CASES:
        graph = build_graph(case.files)
        path, symbol = case.target
        target = [d for d in graph.find_definitions(symbol) if d.path == path and d.symbol == symbol]
        found = [] if not target else [(c.path, c.symbol) for c in graph.callers(target[0], 1)]
        p, r, missed, extra = score(sorted(case.callers), sorted(found))
        rows.append({"id": case.id, "pattern": case.pattern, "precision": round(p, 3), "recall": round(r, 3),
                     "missed": missed, "extra": extra})
    by_pattern = {}
    for pattern in sorted({r["pattern"] for r in rows}):
        by_pattern[pattern] = _average([r for r in rows if r["pattern"] == pattern])
    return {**_average(rows), "by_pattern": by_pattern,
            "misses": [r for r in rows if r["missed"] or r["extra"]]}


def _files(checkout: Path) -> dict[str, str]:
    from indexer.chunking.languages import detect_language

    out = {}
    listed = subprocess.run(["git", "-C", str(checkout), "ls-files"], capture_output=True, text=True,
                            check=True).stdout.splitlines()
    for rel in listed:
        if detect_language(rel) is None and not rel.endswith("go.mod"):
            continue
        try:
            out[rel] = (checkout / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
    return out


def dev_part(cases_path: Path, repos: Path) -> dict:
    """Precision/recall of non-test direct callers on impact-dev-format cases."""
    from indexer.graph import build_graph, is_test_path

    cases = [json.loads(line) for line in cases_path.read_text().splitlines() if line.strip()]
    graphs = {}
    rows = []
    for case in cases:
        name = case["repo"]
        if name not in graphs:
            checkout = repos / name
            head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                                  text=True, check=True).stdout.strip()
            if head != case["commit"]:
                raise SystemExit(f"{checkout} is at {head[:7]}; the cases name {case['commit'][:7]}")
            graphs[name] = build_graph(_files(checkout))
        graph = graphs[name]
        targets = [d for d in graph.find_definitions(case["symbol"]) if d.path == case["path"]]
        found = [] if not targets else [(c.path, c.symbol) for c in graph.callers(targets[0], 1)
                                        if not is_test_path(c.path)]
        expected = [(c["path"], c["symbol"]) for c in case["callers"]]
        p, r, missed, extra = score(expected, found)
        rows.append({"id": case["id"], "precision": round(p, 3), "recall": round(r, 3),
                     "missed": missed, "extra": extra})
    return {**_average(rows), "misses": [r for r in rows if r["missed"] or r["extra"]]}


def timing_part(runs: int) -> dict:
    """Process wall times of ``impact`` and ``--help`` beside ``python -c pass``."""
    with tempfile.TemporaryDirectory(prefix="coderag-impact-bench-") as tmp:
        repo = Path(tmp) / "tiny"
        (repo / "pkg").mkdir(parents=True)
        (repo / "pkg" / "__init__.py").write_text("")
        (repo / "pkg" / "mod.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return f()\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
        subprocess.run(["git", "-C", str(repo), "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "x"],
                       check=True)
        env = dict(os.environ, CODERAG_HOME=str(Path(tmp) / "home"))
        env.pop("ANTHROPIC_API_KEY", None)
        env.pop("VOYAGE_API_KEY", None)
        # A user's Python caches bytecode; without it every run recompiles the project's modules.
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        cli = [sys.executable, "-m", "bot.cli"]
        subprocess.run(cli + ["index", str(repo), "--name", "tiny"], env=env, check=True, capture_output=True,
                       cwd=ROOT)
        commands = {"python -c pass": [sys.executable, "-c", "pass"], "impact": cli + ["impact", "f", "--repo", "tiny"],
                    "--help": cli + ["--help"]}
        times: dict[str, list[float]] = {k: [] for k in commands}
        for argv in commands.values():  # warm the OS file cache and the bytecode cache once
            subprocess.run(argv, env=env, capture_output=True, cwd=ROOT)
        try:
            for _ in range(runs):
                for name, argv in commands.items():
                    t0 = time.perf_counter()
                    subprocess.run(argv, env=env, check=True, capture_output=True, cwd=ROOT)
                    times[name].append(time.perf_counter() - t0)
        finally:
            from indexer import EmbeddedWeaviate

            EmbeddedWeaviate(Path(tmp) / "home").stop()
    base = statistics.median(times["python -c pass"])
    return {name: {"median_s": round(statistics.median(t), 3), "min_s": round(min(t), 3),
                   "max_s": round(max(t), 3), "ratio_to_python": round(statistics.median(t) / base, 1)}
            for name, t in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=Path, help="impact cases (impact-dev.jsonl format)")
    ap.add_argument("--repos", type=Path, help="folder of checkouts named by the cases' repo field")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--no-timing", action="store_true")
    args = ap.parse_args()
    if bool(args.cases) != bool(args.repos):
        ap.error("--cases and --repos go together")
    out = {"patterns": patterns_part()}
    if args.cases:
        out["dev"] = dev_part(args.cases, args.repos)
    if not args.no_timing:
        out["load_average_before"] = list(os.getloadavg()[:1])
        out["timing"] = timing_part(args.runs)
        out["load_average_after"] = list(os.getloadavg()[:1])
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
