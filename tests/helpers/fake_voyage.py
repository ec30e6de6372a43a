"""A local stand-in for Voyage's REST API (POST {base}/embeddings), on 127.0.0.1:0.

It answers in Voyage's wire format and records every request so tests can check what
the real ``voyageai`` client sent. Vectors are deterministic: ``[len(text), k, 1, 0, ...]``
for the k-th text of the whole session (so order can be checked across batches).
"""
from __future__ import annotations

import base64
import struct
import time
from dataclasses import dataclass

from .fake_http import FakeHTTPServer, Reply, Request

DIMS = 8


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict


class FakeVoyage(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Recorded] = []
        # Status codes to answer before answering normally (e.g. [429] = one rate-limit error).
        self.fail_with: list[int] = []
        # Answer with base64-encoded float32 vectors when the client asks for them.
        self.honour_base64 = False
        self.texts_seen = 0
        # Seconds each embeddings request takes (a remote API's latency; requests overlap).
        self.latency = 0.0

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    @property
    def embed_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/embeddings"]

    @property
    def rerank_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/rerank"]

    def recorded(self) -> list:
        return [r.path for r in self.requests]

    @staticmethod
    def relevance(query: str, document: str) -> float:
        """Fake rerank score: the share of the query's words that the document holds."""
        words = {w.lower() for w in query.split()}
        return round(sum(1 for w in words if w in document.lower()) / (len(words) or 1), 4)

    def vector_for(self, text: str, k: int) -> list[float]:
        return [float(len(text)), float(k), 1.0] + [0.0] * (DIMS - 3)

    def respond(self, request: Request) -> Reply:
        body = request.json()
        with self.lock:
            self.requests.append(Recorded(request.target, dict(request.headers), body))
            failure = self.fail_with.pop(0) if self.fail_with else None
            if failure is None and request.target == "/v1/embeddings":
                start = self.texts_seen
                self.texts_seen += len(body.get("input", []))
        if failure is not None:
            return Reply(failure, {"detail": f"fake error {failure}"})
        if self.latency and request.target == "/v1/embeddings":
            time.sleep(self.latency)
        if request.target == "/v1/rerank":
            docs = body.get("documents", [])
            data = sorted(({"index": i, "relevance_score": self.relevance(body["query"], d)}
                           for i, d in enumerate(docs)), key=lambda x: -x["relevance_score"])
            if body.get("top_k"):
                data = data[:body["top_k"]]
            return Reply(200, {"object": "list", "data": data, "model": body.get("model"),
                               "usage": {"total_tokens": sum(len(d.split()) for d in docs)}})
        if request.target != "/v1/embeddings":
            return Reply(404, {"detail": f"no route {request.target}"})
        data = []
        for i, text in enumerate(body["input"]):
            vec = self.vector_for(text, start + i)
            emb = (base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                   if self.honour_base64 and body.get("encoding_format") == "base64" else vec)
            data.append({"object": "embedding", "embedding": emb, "index": i})
        tokens = sum(len(t.split()) for t in body["input"])
        return Reply(200, {"object": "list", "data": data, "model": body.get("model"),
                           "usage": {"total_tokens": tokens}})


def start_fake_voyage() -> FakeVoyage:
    return FakeVoyage().start()
