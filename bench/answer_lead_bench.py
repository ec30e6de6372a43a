#!/usr/bin/env python3
"""Keyless answers a PM can read: does the first sentence name the right symbol or setting?

Usage: python bench/answer_lead_bench.py --repo PATH [--questions bench/data/pm_answers.jsonl]
       [--home DIR]

``PATH``: a checkout of the questions' repository at the commit they name (the script
checks it and refuses another commit). Indexes it into ``--home`` (a ``CODERAG_HOME``;
default a temporary folder), asks every question without an LLM key (the extractive
answer), and prints one JSON object: per question its first sentence, the expected
names and whether the sentence names one of them (as a whole identifier, or the last
part of a dotted one); then the total.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, required=True)
    ap.add_argument("--questions", type=Path, default=Path(__file__).parent / "data" / "pm_answers.jsonl")
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args()
    items = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    head = subprocess.run(["git", "-C", str(args.repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    wanted = {i["commit"] for i in items}
    if wanted != {head}:
        raise SystemExit(f"{args.repo} is at {head[:7]}; the questions name {', '.join(sorted(wanted))}")
    tmp = None if args.home else tempfile.TemporaryDirectory(prefix="coderag-lead-bench-")
    os.environ["CODERAG_HOME"] = str(args.home or tmp.name)
    for key in ("ANTHROPIC_API_KEY", "VOYAGE_API_KEY"):  # the keyless answer
        os.environ.pop(key, None)
    from bot.answer.service import AnswerService
    from indexer import ChunkStore, EmbeddedWeaviate, Settings, index_path, make_embedder, open_database

    name = items[0]["repo"]
    index_path(args.repo, name=name)
    settings = Settings.from_env()
    rows = []
    with ChunkStore.open(settings) as store:
        service = AnswerService(store, make_embedder(settings), top_k=5, sessions=open_database(settings))
        for item in items:
            answer = service.ask(item["question"], repos=[name])
            sentence = first_sentence(answer.text)
            hit = names_one(sentence, item["expected_names"])
            rows.append({"id": item["id"], "question": item["question"], "first_sentence": sentence,
                         "expected": item["expected_names"], "names_expected": hit is not None,
                         "no_coverage": answer.no_coverage})
    print(json.dumps({"repo": name, "commit": head, "questions": len(rows),
                      "first_sentence_names_expected": sum(r["names_expected"] for r in rows), "answers": rows},
                     indent=1))
    if tmp:
        EmbeddedWeaviate(Path(tmp.name)).stop()
        tmp.cleanup()


if __name__ == "__main__":
    main()
