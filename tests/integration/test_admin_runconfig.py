"""The run-time configuration in the database (real SQLite and PostgreSQL): seeded from
the environment once per entry, read by the channel policy at question time with the
same rules as the environment's allow-list, every change in the change log, drafts
decided once."""
from __future__ import annotations

import json

import pytest

from bot.runconfig.drafts import DraftStore
from bot.runconfig.policy import RuntimePolicy
from bot.runconfig.store import RunConfig, Seed, SourceEntry
from bot.tenancy import ChannelPolicy
from common.errors import BadInput
from helpers.admin_site import app_settings
from helpers.querylog import migrated_sessions

REPOS = json.dumps([{"name": "shop", "url": "/srv/shop", "branch": "main"},
                    {"name": "web", "url": "https://github.com/acme/web.git", "branch": "trunk"}])
POLICY = {"C0000001": ["shop"], "C0000002": [], "*": ["web"]}


@pytest.fixture
def sessions(db_url):
    return migrated_sessions(db_url)


def _seed(sessions, tmp_path, **extra):
    env = {"CODERAG_HOME": str(tmp_path), "CODERAG_REPOS": REPOS, "CODERAG_CHANNEL_SOURCES": json.dumps(POLICY),
           "CODERAG_ONBOARDING_CHANNELS": "C0000003", **extra}
    return RunConfig(sessions).seed(Seed.from_settings(app_settings(env), review_channel="CREVIEW01"))


def test_the_environment_seeds_each_entry_once_and_the_database_then_wins(sessions, tmp_path):
    cfg = RunConfig(sessions)
    assert _seed(sessions, tmp_path) == 2 + 4 + 1  # two repos, four channels, the review channel
    assert _seed(sessions, tmp_path) == 0  # a restart (or another replica) seeds nothing again
    assert [(s.name, s.origin, s.branch) for s in cfg.sources()] == [("shop", "env", "main"), ("web", "env", "trunk")]
    assert {c.channel: (c.sources, c.reply_mode) for c in cfg.channels()} == {
        "*": (("web",), "mention"), "C0000001": (("shop",), "mention"), "C0000002": ((), "mention"),
        "C0000003": (None, "questions")}
    cfg.remove_source("web", actor="ada")
    cfg.set_channel("C0000001", sources=["web"], reply_mode="review", actor="ada")
    assert _seed(sessions, tmp_path) == 0  # neither the removed repo nor the changed channel comes back
    assert [s.name for s in cfg.sources()] == ["shop"]
    assert cfg.channel("C0000001").sources == ("web",) and cfg.value("review_channel") == "CREVIEW01"
    log = cfg.changes()
    assert [c["action"] for c in log[:2]] == ["channel.set", "source.remove"]
    assert log[0]["actor"] == "ada" and log[0]["detail"] == {
        "before": {"sources": ["shop"], "reply_mode": "mention"}, "after": {"sources": ["web"], "reply_mode": "review"}}
    assert {c["actor"] for c in log[2:]} == {"environment"}


def test_entries_the_environment_owns_follow_it_and_page_edits_win(sessions, tmp_path):
    _seed(sessions, tmp_path)
    cfg = RunConfig(sessions)
    cfg.set_channel("C0000002", sources=["shop"], reply_mode="mention", actor="ada")  # now the page's
    repos = json.dumps([{"name": "shop", "url": "/srv/shop2"}, {"name": "docs", "url": "/srv/docs"}])
    policy = {"C0000001": ["shop", "docs"], "*": ["web"]}  # C0000002 no longer in the environment
    assert _seed(sessions, tmp_path, CODERAG_REPOS=repos, CODERAG_CHANNEL_SOURCES=json.dumps(policy)) > 0
    assert {s.name: s.url for s in cfg.sources()} == {"shop": "/srv/shop2", "docs": "/srv/docs"}  # web unseeded
    assert cfg.channel("C0000001").sources == ("docs", "shop")
    assert cfg.channel("C0000002").sources == ("shop",)  # the page's edit stays
    assert _seed(sessions, tmp_path) > 0  # the first environment again: web comes back, docs goes
    assert sorted(s.name for s in cfg.sources()) == ["shop", "web"]
    actions = {c["action"] for c in cfg.changes() if c["actor"] == "environment"}
    assert {"source.seed", "source.unseed", "channel.seed"} <= actions


def test_the_database_policy_answers_as_the_environment_policy_did(sessions, tmp_path):
    _seed(sessions, tmp_path)
    env_policy, db_policy = ChannelPolicy.parse(json.dumps(POLICY)), RuntimePolicy(sessions)
    for channel in ("C0000001", "C0000002", "C0000003", "C0000099", None):
        assert db_policy.allowed(channel) == env_policy.allowed(channel), channel
    assert db_policy.reply_mode("C0000003") == "questions" and db_policy.reply_mode("C0000099") == "mention"
    cfg = RunConfig(sessions)
    cfg.set_channel("C0000099", sources=["shop", "web"], reply_mode="review", actor="ada")
    assert db_policy.allowed("C0000099") == {"shop", "web"} and db_policy.reply_mode("C0000099") == "review"
    cfg.remove_channel("C0000099", actor="ada")
    assert db_policy.allowed("C0000099") == {"web"}  # follows * again


def test_no_allow_list_anywhere_means_every_source(sessions, tmp_path):
    RunConfig(sessions).seed(Seed.from_settings(app_settings({"CODERAG_HOME": str(tmp_path)})))
    policy = RuntimePolicy(sessions)
    assert policy.allowed("C0000001") is None and not policy.enabled
    RunConfig(sessions).set_channel("C0000001", sources=None, reply_mode="questions", actor="ada")
    assert policy.allowed("C0000001") is None  # a reply mode alone restricts nothing
    RunConfig(sessions).set_channel("C0000002", sources=["shop"], reply_mode="mention", actor="ada")
    assert policy.allowed("C0000002") == {"shop"} and policy.allowed("C0000001") == frozenset()


def test_bad_entries_are_refused(sessions):
    cfg = RunConfig(sessions)
    for bad in (dict(channel="not a channel"), dict(channel="C1", reply_mode="shout")):
        with pytest.raises(BadInput):
            cfg.set_channel(bad["channel"], sources=[], reply_mode=bad.get("reply_mode", "mention"), actor="a")
    with pytest.raises(BadInput):
        cfg.add_source(SourceEntry(name="x y", url="/srv/x"), actor="a")
    with pytest.raises(BadInput):
        cfg.add_source(SourceEntry(name="x", url=""), actor="a")
    cfg.add_source(SourceEntry(name="x", url="/srv/x"), actor="a")
    with pytest.raises(BadInput, match="already configured"):
        cfg.add_source(SourceEntry(name="x", url="/srv/y"), actor="a")
    cfg.remove_source("x", actor="a")
    assert cfg.add_source(SourceEntry(name="x", url="/srv/y"), actor="a").url == "/srv/y"  # back again


def test_the_freshness_config_is_the_databases(sessions, tmp_path):
    from common.settings import FreshnessSettings

    _seed(sessions, tmp_path)
    cfg = RunConfig(sessions)
    cfg.add_source(SourceEntry(name="docs", url="/srv/docs", branch="main", url_template="u/{path}"), actor="ada")
    cfg.remove_source("web", actor="ada")
    base = FreshnessSettings.from_env({"CODERAG_REPOS": REPOS, "CODERAG_GITHUB_WEBHOOK_SECRET": "s" * 20})
    merged = cfg.freshness(base)
    assert [r.name for r in merged.repos] == ["docs", "shop"] and merged.github_secret == base.github_secret
    assert merged.repo("docs").url_template == "u/{path}"


def test_a_draft_is_decided_once_and_a_failed_post_gives_it_back(sessions):
    drafts = DraftStore(sessions)
    draft_id = drafts.create(ref="r" * 32, surface="slack", channel="C0000001", thread_ts="1.1", message_ts="1.1",
                             question="where is tax computed?", answer="In tax.py", messages=[["In tax.py", None]])
    posted = []

    def broken(*_a):
        raise ConnectionError("slack down")

    with pytest.raises(ConnectionError):
        drafts.decide(draft_id, "approve", reviewer="ada", post=broken)
    assert drafts.get(draft_id).status == "pending"
    d = drafts.decide(draft_id, "approve", reviewer="ada", post=lambda c, t, m: posted.append((c, t, m)) or "9.9")
    assert d.status == "approved" and d.posted_ts == "9.9" and posted == [("C0000001", "1.1", [["In tax.py", None]])]
    with pytest.raises(BadInput, match="already approved"):
        drafts.decide(draft_id, "decline", reviewer="bob", post=None)
    other = drafts.create(ref="s" * 32, surface="slack", channel="C0000001", thread_ts="2.2", message_ts=None,
                          question="q", answer="a", messages=[])
    with pytest.raises(BadInput):
        drafts.decide(other, "edit", reviewer="ada", post=lambda *a: None, text="  ")
    assert drafts.decide(other, "decline", reviewer="bob", post=None).status == "declined"
    actions = [c["action"] for c in RunConfig(sessions).changes()]
    assert actions[:2] == ["draft.decline", "draft.approve"]


def test_a_repository_password_stays_in_the_environment(sessions, tmp_path):
    """Seeding keeps a clone URL's password out of the database (the run still gets it from
    the environment); the page refuses a URL with a password, and one that is not a URL."""
    from sqlalchemy import text

    from common.settings import FreshnessSettings

    secret = "PLANTED0pw0in0url0x1"
    repos = json.dumps([{"name": "priv", "url": f"https://deploy:{secret}@git.example.com/priv.git"}])
    _seed(sessions, tmp_path, CODERAG_REPOS=repos)
    with sessions() as s:
        rows = [tuple(r) for t in ("config_sources", "config_changes")
                for r in s.execute(text(f"SELECT * FROM {t}"))]  # noqa: S608  (fixed table names)
    assert rows and secret not in repr(rows)
    merged = RunConfig(sessions).freshness(FreshnessSettings.from_env({"CODERAG_REPOS": repos}))
    assert merged.repo("priv").url == f"https://deploy:{secret}@git.example.com/priv.git"
    cfg = RunConfig(sessions)
    with pytest.raises(BadInput, match="password in the clone URL"):
        cfg.add_source(SourceEntry(name="other", url=f"https://bob:{secret}@git.example.com/o.git"), actor="a")
    with pytest.raises(BadInput, match="not a clone URL"):
        cfg.add_source(SourceEntry(name="bad", url="htp:/::not a url"), actor="a")
