"""A local stand-in for Anthropic's Messages API (POST {base}/v1/messages), on 127.0.0.1:0.

It answers in the Messages API wire format (a ``message`` object with text content blocks
and ``usage``) and records every request, so tests can check what the real ``anthropic``
client sent. ``fail_with`` holds status codes to answer first (429 / 529 with
``retry-after-ms: 1`` so the SDK's backoff stays fast); ``always_fail`` answers every
request with that status.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict


@dataclass
class FakeAnthropic:
    server: ThreadingHTTPServer
    requests: list[Recorded] = field(default_factory=list)
    reply_text: str = "ok [1]"
    # what a forced tool call (``tool_choice: {"type": "tool", ...}``) answers, e.g. the
    # answerability judgement of bot/answer/claude.py
    tool_input: dict = field(default_factory=lambda: {"answerable": "yes", "uncovered": [], "reason": "covered"})
    fail_with: list[int] = field(default_factory=list)
    always_fail: int | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def messages_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith("/v1/messages")]

    @property
    def answer_requests(self) -> list[Recorded]:
        """Messages requests that ask for prose (no forced tool call)."""
        return [r for r in self.messages_requests if "tool_choice" not in r.body]

    @property
    def judge_requests(self) -> list[Recorded]:
        """Messages requests that force a tool call (the answerability judgement)."""
        return [r for r in self.messages_requests if "tool_choice" in r.body]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


_ERROR_TYPES = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error",
                503: "api_error", 401: "authentication_error"}


def _handler(fake: FakeAnthropic):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, code: int, payload: dict, headers: dict | None = None) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.send_header("request-id", "req_fake")
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                failure = fake.always_fail or (fake.fail_with.pop(0) if fake.fail_with else None)
                text = fake.reply_text
                tool_input = dict(fake.tool_input)
            if failure is not None:
                self._send(failure, {"type": "error", "error": {"type": _ERROR_TYPES.get(failure, "api_error"),
                                                                "message": "fake failure"}},
                           {"retry-after-ms": "1", "retry-after": "0"})
                return
            if not self.path.startswith("/v1/messages"):
                self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": self.path}})
                return
            choice = body.get("tool_choice") or {}
            forced = choice.get("type") == "tool"
            content = ([{"type": "tool_use", "id": "toolu_fake", "name": choice.get("name"), "input": tool_input}]
                       if forced else [{"type": "text", "text": text}])
            self._send(200, {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": content,
                "stop_reason": "tool_use" if forced else "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 1234, "output_tokens": 56,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 900},
            })

    return Handler


def start_fake_anthropic() -> FakeAnthropic:
    server = ThreadingHTTPServer(("127.0.0.1", 0), None)
    fake = FakeAnthropic(server=server)
    server.RequestHandlerClass = _handler(fake)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return fake
