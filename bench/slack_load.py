#!/usr/bin/env python3
"""Load test of the Slack HTTP app: N concurrent signed app_mention events.

Usage: python bench/slack_load.py [--n 50] [--delay 0.05] [--workers 16]

Starts a fake Slack Web API (tests/helpers/fake_slack.py) and the real Bolt app on
uvicorn (127.0.0.1:0) over a temporary SQLite database, with a stub AnswerService
subclass that sleeps ``--delay`` seconds per question (no Weaviate). Sends N mentions
at once from N threads, then prints one JSON object: ack latency p50/p95 (HTTP
response time), time to answer p50/p95 (send → chat.postMessage received by the fake),
answers posted, duplicates (answers beyond one per question; expected 0) and how many
retried deliveries (same event_id, X-Slack-Retry-Num: 1, sent for every 5th event)
were answered again (expected 0).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank) in milliseconds, rounded."""
    s = sorted(values)
    k = max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))
    return round(s[k] * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--delay", type=float, default=0.05, help="seconds the stub service takes per answer")
    ap.add_argument("--workers", type=int, default=16, help="Bolt listener threads")
    args = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="coderag-slack-bench-")
    os.environ["CODERAG_DATABASE_URL"] = f"sqlite:///{tmp}/bench.db"

    import httpx

    from bot.answer.extractive import Citation
    from bot.answer.service import Answer, AnswerService
    from bot.querylog.recorder import QueryLog
    from bot.slack.app import build_app
    from helpers.http_server import BackgroundServer, build_http_app
    from helpers.fake_slack import BOT_USER_ID, FakeSlack, sign
    from common.db import open_database
    from common.settings import ChatSettings, SlackSettings

    class FastService(AnswerService):
        def __init__(self, delay: float):
            self.delay = delay

        def ask(self, question, *, repos=None, history=(), persona=None, allowed=None):
            time.sleep(self.delay)
            cite = Citation(repo="shop", path="src/tax.py", start_line=1, end_line=9, commit="a" * 40,
                            symbol="tax", indexed_at=None)
            return Answer(question=question, text=f"Answer: {question}", citations=[cite], hits=[],
                          no_coverage=False, model="bench")

    secret = "bench-secret"
    fake = FakeSlack().start()
    settings = SlackSettings.from_env({}, bot_token="xoxb-bench", signing_secret=secret, api_url=fake.api_url,
                                      workers=args.workers)
    chat = ChatSettings.from_env(
        {}, repo_urls={"shop": "https://github.com/acme/shop/blob/{commit}/{path}#L{start}-L{end}"})
    sessions = open_database()
    app = build_app(FastService(args.delay), settings, chat=chat, sessions=sessions, querylog=QueryLog(sessions))
    server = BackgroundServer(build_http_app(app)).start()
    url = f"{server.url}/slack/events"

    sent_at: dict[str, float] = {}
    acks: list[float] = []
    statuses: list[int] = []
    lock = threading.Lock()
    barrier = threading.Barrier(args.n)
    client = httpx.Client(timeout=30, limits=httpx.Limits(max_connections=args.n + 10))

    def send(i: int, retry: bool = False) -> None:
        ts = f"1700000000.{i:06d}"
        body = json.dumps({"type": "event_callback", "team_id": "T0000001", "event_id": f"EvBENCH{i:05d}",
                           "event": {"type": "app_mention", "user": "U1", "channel": "C1", "ts": ts,
                                     "text": f"<@{BOT_USER_ID}> question number {i}?"}})
        headers = {"Content-Type": "application/json", **sign(secret, body)}
        if retry:
            headers["X-Slack-Retry-Num"] = "1"
        else:
            barrier.wait()
        t0 = time.perf_counter()
        resp = client.post(url, content=body, headers=headers)
        dt = time.perf_counter() - t0
        with lock:
            statuses.append(resp.status_code)
            if not retry:
                acks.append(dt)
                sent_at[ts] = time.monotonic() - dt

    with ThreadPoolExecutor(max_workers=args.n) as pool:
        list(pool.map(send, range(args.n)))
    retries = list(range(0, args.n, 5))
    for i in retries:
        send(i, retry=True)

    def answered() -> list:
        return [c for c in fake.posts() if c.body.get("blocks")]

    deadline = time.monotonic() + 60
    while len({c.body["thread_ts"] for c in answered()}) < args.n and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.0)  # let any duplicate show up
    posts = answered()
    first: dict[str, float] = {}
    for c in posts:
        first.setdefault(c.body["thread_ts"], c.at)
    to_answer = [first[ts] - sent_at[ts] for ts in first if ts in sent_at]
    retried_ts = {f"1700000000.{i:06d}" for i in retries}
    result = {
        "mentions": args.n,
        "service_delay_s": args.delay,
        "workers": args.workers,
        "http_status": {str(s): statuses.count(s) for s in sorted(set(statuses))},
        "ack_latency_ms": {"p50": pct(acks, 50), "p95": pct(acks, 95), "max": round(max(acks) * 1000, 1)},
        "time_to_answer_ms": {"p50": pct(to_answer, 50), "p95": pct(to_answer, 95),
                              "max": round(max(to_answer) * 1000, 1)} if to_answer else None,
        "answers_posted": len(posts),
        "questions_answered": len(first),
        "duplicates": len(posts) - len(first),
        "retried_deliveries": len(retries),
        "retries_answered_again": sum(1 for c in posts if c.body["thread_ts"] in retried_ts) - len(retried_ts & set(first)),
        "web_api_calls": {m: len(fake.of(m)) for m in ("auth.test", "chat.postMessage", "reactions.add",
                                                       "reactions.remove")},
    }
    print(json.dumps(result, indent=2))
    client.close()
    server.stop()
    fake.stop()


if __name__ == "__main__":
    main()
