"""A local stand-in for Voyage's REST API (POST {base}/embeddings), on 127.0.0.1:0.

It answers in Voyage's wire format and records every request so tests can check what
the real ``voyageai`` client sent. Vectors are deterministic: ``[len(text), k, 1, 0, ...]``
for the k-th text of the whole session (so order can be checked across batches).
"""
from __future__ import annotations

import base64
import json
import struct
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DIMS = 8


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict


@dataclass
class FakeVoyage:
    server: ThreadingHTTPServer
    requests: list[Recorded] = field(default_factory=list)
    # Status codes to answer before answering normally (e.g. [429] = one rate-limit error).
    fail_with: list[int] = field(default_factory=list)
    # Answer with base64-encoded float32 vectors when the client asks for them.
    honour_base64: bool = False
    texts_seen: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    @property
    def embed_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/embeddings"]

    @property
    def rerank_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path == "/v1/rerank"]

    @staticmethod
    def relevance(query: str, document: str) -> float:
        """Fake rerank score: the share of the query's words that the document holds."""
        words = {w.lower() for w in query.split()}
        return round(sum(1 for w in words if w in document.lower()) / (len(words) or 1), 4)

    def vector_for(self, text: str, k: int) -> list[float]:
        return [float(len(text)), float(k), 1.0] + [0.0] * (DIMS - 3)


def _handler(fake: FakeVoyage):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep test output clean
            pass

        def _send(self, code: int, payload: dict) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append(Recorded(self.path, dict(self.headers), body))
                failure = fake.fail_with.pop(0) if fake.fail_with else None
                if failure is None and self.path == "/v1/embeddings":
                    start = fake.texts_seen
                    fake.texts_seen += len(body.get("input", []))
            if failure is not None:
                self._send(failure, {"detail": f"fake error {failure}"})
                return
            if self.path == "/v1/rerank":
                docs = body.get("documents", [])
                data = sorted(({"index": i, "relevance_score": fake.relevance(body["query"], d)}
                               for i, d in enumerate(docs)), key=lambda x: -x["relevance_score"])
                if body.get("top_k"):
                    data = data[:body["top_k"]]
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"total_tokens": sum(len(d.split()) for d in docs)}})
                return
            if self.path != "/v1/embeddings":
                self._send(404, {"detail": f"no route {self.path}"})
                return
            data = []
            for i, text in enumerate(body["input"]):
                vec = fake.vector_for(text, start + i)
                emb = (base64.b64encode(struct.pack(f"<{len(vec)}f", *vec)).decode()
                       if fake.honour_base64 and body.get("encoding_format") == "base64" else vec)
                data.append({"object": "embedding", "embedding": emb, "index": i})
            tokens = sum(len(t.split()) for t in body["input"])
            self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                             "usage": {"total_tokens": tokens}})

    return Handler


def start_fake_voyage() -> FakeVoyage:
    server = ThreadingHTTPServer(("127.0.0.1", 0), None)
    fake = FakeVoyage(server=server)
    server.RequestHandlerClass = _handler(fake)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return fake
