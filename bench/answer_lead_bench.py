#!/usr/bin/env python3
"""Keyless answers a PM can read: does the first sentence name the right symbol or setting?

Usage: python bench/answer_lead_bench.py --repo PATH [--questions bench/data/pm_answers.jsonl]
       [--home DIR] [--no-index]
       python bench/answer_lead_bench.py --repos DIR --questions ../shared/eval/dev.jsonl ...

``PATH``: a checkout of the questions' repository at the commit they name (the script
checks it and refuses another commit). Indexes it into ``--home`` (a ``CODERAG_HOME``;
default a temporary folder), asks every question without an LLM key (the extractive
answer), and prints one JSON object: per question its first sentence, the expected
names and whether the sentence names one of them (as a whole identifier, or the last
part of a dotted one); then the total. ``--repos``: questions over several repositories,
each checked out as ``DIR/<repo>``; a question without ``expected_names`` counts the
symbols of its ``expected`` locations (the dev-set format), and one with neither is skipped.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path


def first_sentence(answer: str) -> str:
    """The answer's first sentence (up to the first ". " that ends one, or its first line)."""
    line = answer.strip().splitlines()[0] if answer.strip() else ""
    m = re.search(r"(?<=[.!?])\s+(?=[A-Z`])", line)
    return line[:m.start()] if m else line


def names_one(sentence: str, names: list[str]) -> str | None:
    """The first expected name the sentence names as a whole identifier (a dotted name
    also counts by its last part), else ``None``."""
    for name in names:
        for form in {name, name.rsplit(".", 1)[-1]}:
            if re.search(rf"(?<![\w]){re.escape(form)}(?![\w])", sentence):
                return name
    return None


def expected_names(item: dict) -> list[str]:
    """The names a right first sentence may name: ``expected_names`` when the question
    lists them, else the symbols of its ``expected`` locations (the dev-set format)."""
    if item.get("expected_names"):
        return item["expected_names"]
    return [e["symbol"] for e in item.get("expected", []) if e.get("symbol")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = ap.add_mutually_exclusive_group(required=True)
    where.add_argument("--repo", type=Path, help="the checkout of the questions' one repository")
    where.add_argument("--repos", type=Path, help="a folder holding one checkout per repository, named by "
                       "the questions' repo field (for dev.jsonl-format sets over several repositories)")
    ap.add_argument("--questions", type=Path, default=Path(__file__).parent / "data" / "pm_answers.jsonl")
    ap.add_argument("--home", type=Path, default=None)
    ap.add_argument("--no-index", action="store_true", help="use the index already in --home as it is")
    args = ap.parse_args()
    items = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    items = [i for i in items if expected_names(i)]  # questions with something to name
    checkouts = {}
    for name in sorted({i["repo"] for i in items}):
        path = args.repo if args.repo else args.repos / name
        head = subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        wanted = {i["commit"] for i in items if i["repo"] == name}
        if wanted != {head}:
            raise SystemExit(f"{path} is at {head[:7]}; the questions name {', '.join(sorted(wanted))}")
        checkouts[name] = (path, head)
    if args.repo and len(checkouts) != 1:
        raise SystemExit(f"--repo takes one repository; the questions name {', '.join(checkouts)} (use --repos)")
    tmp = None if args.home else tempfile.TemporaryDirectory(prefix="coderag-lead-bench-")
    os.environ["CODERAG_HOME"] = str(args.home or tmp.name)
    for key in ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY"):  # the keyless answer
        os.environ.pop(key, None)
    from bot.answer.service import AnswerService
    from common.settings import load
    from common.db import open_database
    from indexer import ChunkStore, EmbeddedWeaviate, index_path, make_embedder

    app = load()  # read once, as `coderag` does
    settings = app.core
    if not args.no_index:
        for name, (path, _) in checkouts.items():
            index_path(path, name=name, settings=settings)
    rows = []
    with ChunkStore.open(settings) as store:
        service = AnswerService(store, make_embedder(settings), top_k=5, sessions=open_database(settings),
                                settings=app)
        for item in items:
            answer = service.ask(item["question"], repos=[item["repo"]])
            sentence = first_sentence(answer.text)
            names = expected_names(item)
            hit = names_one(sentence, names)
            rows.append({"id": item["id"], "question": item["question"], "first_sentence": sentence,
                         "expected": names, "names_expected": hit is not None,
                         "no_coverage": answer.no_coverage})
    print(json.dumps({"repos": {n: c for n, (_, c) in checkouts.items()}, "questions": len(rows),
                      "first_sentence_names_expected": sum(r["names_expected"] for r in rows), "answers": rows},
                     indent=1))
    if tmp:
        EmbeddedWeaviate(Path(tmp.name)).stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
