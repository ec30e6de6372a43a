"""Socket Mode wiring: Bolt's SocketModeHandler feeding our app.

A real ``SocketModeHandler`` (built-in client, never connected) gets raw Socket Mode
envelopes pushed onto its client's message queue — the path a WebSocket frame takes —
and its ``send_socket_mode_response`` is replaced by a recorder (the acks that would
go back over the socket). The Web API calls go to the fake Slack server."""
from __future__ import annotations

import json
import threading
import time

import pytest
from slack_bolt.adapter.socket_mode import SocketModeHandler
from slack_sdk.socket_mode.request import SocketModeRequest

from helpers.fake_slack import BOT_USER_ID
from helpers.slack_harness import Harness, StubService


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'slack.db'}")


class RecordingSocketClient:
    """Stands in for the WebSocket side: records the envelope acks."""

    def __init__(self):
        self.acks = []
        self.lock = threading.Lock()
        import logging

        self.logger = logging.getLogger("fake-socket")

    def send_socket_mode_response(self, response):
        with self.lock:
            self.acks.append(response)


def mention_envelope(h: Harness, envelope_id: str, event_id: str, ts: str, retry: int | None = None) -> dict:
    body = h.envelope({"type": "app_mention", "user": "U0000001", "text": f"<@{BOT_USER_ID}> where is tax?",
                       "ts": ts, "channel": "C0000001", "event_ts": ts}, event_id)
    return {"envelope_id": envelope_id, "type": "events_api", "payload": body, "accepts_response_payload": False,
            "retry_attempt": retry or 0, "retry_reason": "timeout" if retry else ""}


def test_socket_mode_request_runs_the_listener_through_the_handler():
    service = StubService(delay=0.5)
    with Harness(service, socket_mode=True) as h:
        assert h.server is None and h.settings.socket_mode
        handler = SocketModeHandler(h.app, app_token=h.settings.app_token)
        recorder = RecordingSocketClient()
        handler.client.send_socket_mode_response = recorder.send_socket_mode_response
        try:
            ts = h.new_ts()
            raw = json.dumps(mention_envelope(h, "env-1", "EvSOCK001", ts))
            handler.client.message_queue.put(raw)  # as if it arrived on the WebSocket
            h.fake.wait_for(lambda: recorder.acks)
            assert recorder.acks[0].envelope_id == "env-1"
            post = h.fake.wait_for(lambda: [p for p in h.fake.posts() if p.body.get("blocks")])[0]
            assert post.body["thread_ts"] == ts and service.asked[0][0] == "where is tax?"

            # a redelivery over the socket (retry_attempt=1) is acked but not answered again
            raw = json.dumps(mention_envelope(h, "env-2", "EvSOCK001", ts, retry=1))
            handler.client.message_queue.put(raw)
            h.fake.wait_for(lambda: len(recorder.acks) == 2)
            time.sleep(0.8)
            assert len([p for p in h.fake.posts() if p.body.get("blocks")]) == 1
        finally:
            handler.close()


def test_handler_handle_entry_point_acks_slash_commands():
    service = StubService()
    with Harness(service, socket_mode=True) as h:
        handler = SocketModeHandler(h.app, app_token=h.settings.app_token)
        try:
            client = RecordingSocketClient()
            payload = {"command": "/coderag", "text": "help", "team_id": "T0000001", "channel_id": "C0000001",
                       "user_id": "U0000001", "response_url": h.fake.response_url("s"), "trigger_id": "1.2"}
            handler.handle(client, SocketModeRequest(type="slash_commands", envelope_id="env-c", payload=payload))
            (ack,) = client.acks
            assert ack.envelope_id == "env-c"
            assert "/coderag ask" in json.dumps(ack.payload)

            payload = dict(payload, text="ask where is tax?", trigger_id="1.3")  # a new invocation: new trigger_id
            handler.handle(client, SocketModeRequest(type="slash_commands", envelope_id="env-d", payload=payload))
            assert client.acks[1].envelope_id == "env-d"
            r = h.fake.wait_for(lambda: h.fake.responses("s"))[0]
            assert "Answer to: where is tax?" in json.dumps(r.body["blocks"])
        finally:
            handler.close()
