"""The one chat turn (bot/chat/turn.py): its steps and error policy on a recording
``Replies``; every front end's question path (Slack mention, thread/DM message and
``/coderag ask``; Teams message) goes through it; the production shims that existed only
for test stubs stay gone; the test stubs honour ``AnswerPort``."""
from __future__ import annotations

import inspect
import re
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from bot.answer.service import Answer, AnswerService, Turn
from bot.chat.turn import AnswerPort, Question, chat_turn, guarded
from common.errors import CoderagError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def database(tmp_path, monkeypatch):
    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / 'turn.db'}")


def _answer(question: str) -> Answer:
    return Answer(question=question, text=f"Answer to: {question}", citations=[], hits=[], no_coverage=False,
                  model="stub", latency_ms={"retrieve": 1.0})


class Port:
    """An ``AnswerPort`` that answers (or raises ``fail``) and records its ``ask`` calls."""

    def __init__(self, fail: BaseException | None = None):
        self.fail = fail
        self.calls: list[tuple[str, list, object]] = []

    def ask(self, question, *, history=(), allowed=None):
        self.calls.append((question, list(history), allowed))
        if self.fail is not None:
            raise self.fail
        return _answer(question)

    def status(self, allowed=None):
        return []

    def impact(self, symbol, *, allowed=None, ref=None):
        return {}


class Recording:
    """A ``Replies`` writing down what the turn did; ``broken`` names steps that raise."""

    frontend = "test"

    def __init__(self, *broken: str):
        self.broken = set(broken)
        self.events: list[tuple] = []

    def _step(self, name: str, *args):
        self.events.append((name, *args))
        if name in self.broken:
            raise RuntimeError(f"{name} broke")

    @contextmanager
    def busy(self):
        self._step("busy")
        try:
            yield
        finally:
            self.events.append(("idle",))

    def refuse(self, message):
        self._step("refuse", message)

    def apologise(self, exc=None):
        self._step("apologise", type(exc).__name__ if exc else None)

    def render(self, answer, ref):
        self._step("render", ref)
        return f"rendered {answer.question}"

    def post(self, rendered):
        self._step("post", rendered)


class QueryLogSpy:
    def __init__(self):
        self.records: list[tuple] = []

    def record_answer(self, answer, *, source, **where):
        self.records.append((answer.question, source, where))


def test_a_turn_asks_renders_posts_and_records_with_one_reference():
    port, replies, qlog = Port(), Recording(), QueryLogSpy()
    history = [Turn("user", "earlier?")]
    result = chat_turn(port, Question("where is tax?", allowed=frozenset({"shop"}), history=history,
                                      where={"channel": "C1", "user": "U1"}), replies, qlog)
    assert port.calls == [("where is tax?", history, frozenset({"shop"}))]
    ref = result.ref
    assert re.fullmatch(r"[0-9a-f]{16,32}", ref or ""), ref
    assert replies.events == [("busy",), ("render", ref), ("post", "rendered where is tax?"), ("idle",)]
    (question, source, where), = qlog.records
    assert (question, source) == ("where is tax?", "test")
    assert where["ref"] == ref and where["channel"] == "C1" and where["user"] == "U1" and where["post_ms"] >= 0
    assert result.answer is not None and result.error is None and not result.refused


def test_an_overlong_question_is_refused_not_asked_not_recorded():
    port, replies, qlog = Port(), Recording(), QueryLogSpy()
    result = chat_turn(port, Question("x" * 50_000), replies, qlog)
    assert result.refused and port.calls == [] and qlog.records == []
    (step, message), = replies.events
    assert step == "refuse" and "characters" in message


def test_a_failing_ask_is_counted_apologised_for_and_not_recorded():
    from bot import metrics

    def errors(kind: str) -> float:
        return metrics.ERRORS.labels(kind=kind)._value.get()

    before = errors("CoderagError")
    port, replies, qlog = Port(fail=CoderagError("index is empty")), Recording(), QueryLogSpy()
    result = chat_turn(port, Question("where?"), replies, qlog)
    assert isinstance(result.error, CoderagError) and qlog.records == []
    assert replies.events == [("busy",), ("apologise", "CoderagError"), ("idle",)]
    assert errors("CoderagError") == before + 1


@pytest.mark.parametrize("broken", ["render", "post"])
def test_a_failing_render_or_post_is_apologised_for_and_not_recorded(broken):
    port, replies, qlog = Port(), Recording(broken), QueryLogSpy()
    result = chat_turn(port, Question("where?"), replies, qlog)
    assert isinstance(result.error, RuntimeError) and qlog.records == []
    assert replies.events[-2:] == [("apologise", "RuntimeError"), ("idle",)]


def test_a_failing_apology_or_busy_indicator_never_escapes():
    port, replies = Port(fail=RuntimeError("down")), Recording("apologise", "busy")
    result = chat_turn(port, Question("where?"), replies)
    assert isinstance(result.error, RuntimeError)
    assert ("apologise", "RuntimeError") in replies.events
    replies = Recording("apologise")
    assert guarded(replies, "a command", lambda: 1 / 0) is None
    assert replies.events == [("apologise", "ZeroDivisionError")]
    assert guarded(Recording(), "a command", lambda: 42) == 42


# --------------------------------------------------------------------------- every front end

def _in_chat_turn() -> bool:
    """True when the caller runs inside :func:`bot.chat.turn.chat_turn` (its thread's stack)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is chat_turn.__code__:
            return True
        frame = frame.f_back
    return False


def test_every_front_end_question_goes_through_the_one_turn():
    """Slack mention, DM message and ``/coderag ask``, and a Teams message: each question
    reaches the service from inside ``chat_turn`` (a path calling ``ask`` itself fails)."""
    from helpers import slack_harness, teams_harness

    class SlackSpy(slack_harness.StubService):
        def ask(self, question, **kw):
            self.via.append((question, _in_chat_turn()))
            return super().ask(question, **kw)

    class TeamsSpy(teams_harness.StubService):
        def ask(self, question, **kw):
            self.via.append((question, _in_chat_turn()))
            return super().ask(question, **kw)

    slack = SlackSpy()
    slack.via = []
    with slack_harness.Harness(slack) as h:
        h.mention("mentioned?")
        h.fake.wait_for(lambda: len(slack.via) >= 1)
        h.message("direct?", channel="D0000001", channel_type="im")
        h.fake.wait_for(lambda: len(slack.via) >= 2)
        h.command("ask commanded?", name="ask")
        h.fake.wait_for(lambda: h.fake.responses("ask"))
    assert sorted(slack.via) == [("commanded?", True), ("direct?", True), ("mentioned?", True)]

    teams = TeamsSpy()
    teams.via = []
    with teams_harness.Harness(teams) as h:
        h.post(h.activity("in teams?"))
        h.wait_messages(1)
    assert teams.via == [("in teams?", True)]


def test_the_spy_sees_a_call_from_outside_the_turn():
    """The check above can fail: ``ask`` called directly is not inside ``chat_turn``."""
    seen = []

    class Direct(Port):
        def ask(self, question, **kw):
            seen.append(_in_chat_turn())
            return super().ask(question, **kw)

    Direct().ask("q")
    chat_turn(Direct(), Question("q"), Recording())
    assert seen == [False, True]


# --------------------------------------------------------------------------- shims and stubs

#: Production code that existed only for test stubs breaking ``AnswerService``'s signature.
SHIMS = {
    "scoped(": re.compile(r"\bscoped\("),
    "IMPACT_UNAVAILABLE": re.compile(r"IMPACT_UNAVAILABLE"),
    "an `allowed is None` fork of a service call": re.compile(r"if allowed is None else \w+\.\w+\("),
    "a check that the service has a method": re.compile(r"callable\(getattr\(\s*service\s*,"),
    'getattr(answer, "prose"': re.compile(r"getattr\(\s*answer\s*,\s*[\"']prose"),
}


def shims_in(text: str) -> list[str]:
    """The names of the :data:`SHIMS` found in ``text``."""
    return [name for name, pattern in SHIMS.items() if pattern.search(text)]


def test_the_shim_finder_finds_each_shim():
    assert shims_in("kw = scoped(allowed)") == ["scoped("]
    assert shims_in("return Lookup(message=IMPACT_UNAVAILABLE)") == ["IMPACT_UNAVAILABLE"]
    assert shims_in("r = service.impact(s) if allowed is None else service.impact(s, allowed=allowed)") == [
        "an `allowed is None` fork of a service call"]
    assert shims_in('if not callable(getattr(service, "impact", None)):') == ["a check that the service has a method"]
    assert shims_in('prose = getattr(answer, "prose", "") or ""') == ['getattr(answer, "prose"']
    assert shims_in("[s for s in sources if allowed is None or s.name in allowed]") == []


def test_no_shim_is_back_in_bot():
    found = [f"{path.relative_to(ROOT)}: {name}" for path in sorted((ROOT / "bot").rglob("*.py"))
             for name in shims_in(path.read_text(encoding="utf-8"))]
    assert not found, "shims for test stubs are back (make the stub honour AnswerPort instead):\n" + "\n".join(found)


def _params(fn) -> list[tuple[str, object]]:
    return [(p.name, p.kind) for p in inspect.signature(fn).parameters.values() if p.name != "self"]


@pytest.mark.parametrize("stub", ["helpers.slack_harness:StubService", "helpers.slack_harness:WithImpact",
                                  "helpers.teams_harness:StubService"])
def test_the_test_stubs_honour_the_answer_port(stub):
    """Each stub method the front ends call takes every parameter of ``AnswerPort``'s,
    with the same kind, and keeps ``AnswerService``'s signature."""
    import importlib

    module, name = stub.split(":")
    cls = getattr(importlib.import_module(module), name)
    for method in ("ask", "status", "impact"):
        have = _params(getattr(cls, method))
        assert set(_params(getattr(AnswerPort, method))) <= set(have), (stub, method, have)
        assert have == _params(getattr(AnswerService, method)), (stub, method)
    assert isinstance(cls.__new__(cls), AnswerPort)


# --------------------------------------------------------------------------- the composition root

def test_serve_hands_the_chat_front_ends_the_policy_and_query_log_it_read(tmp_path, monkeypatch):
    """``bot/wiring.py`` builds Slack and Teams with the allow-list, the query log and the
    Teams settings of the settings read at start-up (the front ends read none themselves)."""
    import json

    import bot.slack.app
    import bot.teams.routes
    from bot import wiring
    from bot.querylog.recorder import QueryLog
    from bot.tenancy import ChannelPolicy
    from common.settings import install, load

    channels = {"C1": ["shop"], "*": []}
    app = load({"CODERAG_HOME": str(tmp_path), "CODERAG_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
                "SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "CODERAG_TEAMS": "1",
                "CODERAG_TEAMS_SERVICE_HOSTS": "relay.example", "CODERAG_CHANNEL_SOURCES": json.dumps(channels),
                "CODERAG_SCHEDULER": "0", "CODERAG_ROLE": "bot"})
    built = {}

    class Closed:
        def close(self):
            pass

    monkeypatch.setattr(wiring.ChunkStore, "open", staticmethod(lambda settings: Closed()))
    monkeypatch.setattr(wiring, "make_embedder", lambda settings: object())
    monkeypatch.setattr(wiring, "AnswerService", lambda *a, **kw: Port())
    monkeypatch.setattr(wiring, "build_asgi", lambda ctx: None)
    monkeypatch.setattr(bot.slack.app, "build_app", lambda service, settings, **kw: built.setdefault("slack", kw))
    monkeypatch.setattr(bot.teams.routes, "build_teams",
                        lambda service, settings, **kw: built.setdefault("teams", dict(kw, settings=settings)))
    the_plan = wiring.plan(app)
    assert the_plan.slack is not None and the_plan.teams
    try:
        wiring.build(the_plan, settings=app)
    finally:
        install(None)
    # one policy for both front ends, read at each question from the database the
    # environment seeded: it answers as the environment's policy does
    expected = ChannelPolicy.parse(json.dumps(channels))
    policy = built["slack"]["policy"]
    assert built["teams"]["policy"] is policy
    for channel in ("C1", "C9", None):
        assert policy.allowed(channel) == expected.allowed(channel), channel
    assert isinstance(built["slack"]["querylog"], QueryLog) and built["teams"]["querylog"] is built["slack"]["querylog"]
    assert built["teams"]["settings"].service_hosts == ("relay.example",) and built["teams"]["auth"].anonymous
