"""A local stand-in for Anthropic's Messages API (POST {base}/v1/messages), on 127.0.0.1:0.

It answers in the Messages API wire format (a ``message`` object with text content blocks
and ``usage``) and records every request, so tests can check what the real ``anthropic``
client sent. ``fail_with`` holds status codes to answer first (429 / 529 with
``retry-after-ms: 1`` so the SDK's backoff stays fast); ``always_fail`` answers every
request with that status.
"""
from __future__ import annotations

from dataclasses import dataclass

from .fake_http import FakeHTTPServer, Reply, Request


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict


_ERROR_TYPES = {429: "rate_limit_error", 529: "overloaded_error", 500: "api_error",
                503: "api_error", 401: "authentication_error"}


class FakeAnthropic(FakeHTTPServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Recorded] = []
        self.reply_text = "ok [1]"
        # what a forced tool call (``tool_choice: {"type": "tool", ...}``) answers, e.g. the
        # answerability judgement of bot/answer/claude.py
        self.tool_input: dict = {"answerable": "yes", "uncovered": [], "reason": "covered"}
        self.fail_with: list[int] = []
        self.always_fail: int | None = None

    @property
    def base_url(self) -> str:
        return self.root

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

    def recorded(self) -> list:
        return [r.path for r in self.requests]

    def respond(self, request: Request) -> Reply:
        body = request.json()
        with self.lock:
            self.requests.append(Recorded(request.target, {k.lower(): v for k, v in request.headers.items()}, body))
            failure = self.always_fail or (self.fail_with.pop(0) if self.fail_with else None)
            text = self.reply_text
            tool_input = dict(self.tool_input)
        ids = {"request-id": "req_fake"}
        if failure is not None:
            return Reply(failure, {"type": "error", "error": {"type": _ERROR_TYPES.get(failure, "api_error"),
                                                              "message": "fake failure"}},
                         {**ids, "retry-after-ms": "1", "retry-after": "0"})
        if not request.target.startswith("/v1/messages"):
            return Reply(404, {"type": "error", "error": {"type": "not_found_error", "message": request.target}}, ids)
        choice = body.get("tool_choice") or {}
        forced = choice.get("type") == "tool"
        content = ([{"type": "tool_use", "id": "toolu_fake", "name": choice.get("name"), "input": tool_input}]
                   if forced else [{"type": "text", "text": text}])
        return Reply(200, {
            "id": "msg_fake", "type": "message", "role": "assistant", "model": body.get("model"),
            "content": content,
            "stop_reason": "tool_use" if forced else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 1234, "output_tokens": 56,
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 900},
        }, ids)


def start_fake_anthropic() -> FakeAnthropic:
    return FakeAnthropic().start()
