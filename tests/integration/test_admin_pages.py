"""What the admin pages show, over real HTTP on a real database: the questions page's
filters (surface, channel, outcome) with each answer's citations linked as posted,
text removed by retention, HTML in a question shown as text; the health page's
scheduler row from the scheduler's lock."""
from __future__ import annotations

import json

from helpers.admin_site import admin_stack, base_env
from helpers.querylog import chunks, record

TEMPLATE = "https://github.com/acme/shop/blob/{commit}/{path}#L{start}-L{end}"


def _page(c, path: str) -> str:
    r = c.get(path)
    assert r.status_code == 200, (path, r.status_code)
    return r.text


def test_questions_filters_citations_and_escaping(tmp_path):
    from bot.querylog.recorder import QueryLog

    env = base_env(tmp_path / "home", CODERAG_REPO_URLS=json.dumps({"shop": TEMPLATE}))
    with admin_stack(env) as stack, stack.client() as c:
        log = QueryLog(stack.sessions, settings=stack.app.querylog)
        log.record(record("where is tax computed?", channel="C0000001", message_ts="1.1", chunks=chunks(3, cited=(1,))))
        log.record(record("can we publish to kafka?", source="teams", channel="C0000002", message_ts="2.2",
                          no_coverage=True, answer="Nothing indexed mentions Kafka.", chunks=[]))
        log.record(record("<script>alert(1)</script> is this safe?", channel="C0000001", message_ts="3.3"))
        log.record(record(None, channel="C0000001", message_ts="4.4"))  # blanked by retention
        log.record_feedback("C0000001", "1.1", "U9", -1)
        stack.sign_in(c)

        everything = _page(c, "/admin/questions")
        assert everything.count('class="card query"') == 4
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in everything and "<script>alert" not in everything
        assert "(text removed by retention)" in everything
        link = TEMPLATE.format(commit="a" * 40, path="src/m1.py", start=10, end=19)
        assert f'href="{link}"' in everything and "shop/src/m1.py:10-19@aaaaaaa" in everything
        first = everything.split('id="query-1"')[1].split('class="card query"')[0]
        assert "src/m1.py" in first and "src/m2.py" not in first  # retrieved but not cited: not a source

        teams = _page(c, "/admin/questions?surface=teams")
        assert "kafka" in teams and "tax computed" not in teams
        refused = _page(c, "/admin/questions?outcome=refused")
        assert "kafka" in refused and refused.count('class="card query"') == 1
        down = _page(c, "/admin/questions?outcome=down")
        assert "tax computed" in down and down.count('class="card query"') == 1
        channel = _page(c, "/admin/questions?channel=C0000002")
        assert "kafka" in channel and channel.count('class="card query"') == 1
        assert _page(c, "/admin/questions?surface=nonsense").count('class="card query"') == 4  # ignored

        gaps = _page(c, "/admin/gaps")
        assert "kafka" in gaps and "tax computed" in gaps and "is this safe" not in gaps


def test_health_names_the_scheduler_that_holds_its_lock(tmp_path):
    from indexer.store.sql_lock import SchedulerLock

    with admin_stack(base_env(tmp_path / "home")) as stack, stack.client() as c:
        stack.sign_in(c)
        page = _page(c, "/admin/health")
        assert 'id="health-database"' in page and "no scheduler has run on this database" in page
        lock = SchedulerLock(stack.sessions)
        lock.acquire()
        page = _page(c, "/admin/health")
        row = page.split('id="health-scheduler"')[1].split("</tr>")[0]
        assert "running" in row and lock.owner in row


def test_a_confluence_space_needs_confluence_configured(tmp_path):
    from helpers.admin_site import csrf_of

    with admin_stack(base_env(tmp_path / "home")) as stack, stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/sources").text)
        c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "confluence", "name": "OPS"})
        page = _page(c, "/admin/sources")
        assert "Confluence is not configured" in page and 'id="source-OPS"' not in page


def _form(page: str) -> str:
    """The channel policy form of the channels page."""
    return page.split('action="/admin/channels/set"')[1].split("</form>")[0]


def test_editing_a_channel_fills_the_form_with_its_current_policy(tmp_path):
    import re

    from helpers.admin_site import csrf_of

    env = base_env(tmp_path / "home", CODERAG_REPOS=json.dumps([{"name": "shop", "url": "/srv/shop"},
                                                                {"name": "web", "url": "/srv/web"}]))
    with admin_stack(env) as stack, stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/channels").text)
        c.post("/admin/channels/set", data={"csrf_token": csrf, "channel": "C0000007", "list": "own",
                                            "sources": ["web"], "other": "runbooks", "reply_mode": "review"})
        c.post("/admin/channels/set", data={"csrf_token": csrf, "channel": "C0000008", "list": "inherit",
                                            "reply_mode": "questions"})
        page = _page(c, "/admin/channels")
        assert 'href="/admin/channels?edit=C0000007#policy"' in page
        blank = _form(page)  # a new channel: an empty form
        assert 'name="channel" placeholder="C0123ABCD" value=""' in blank and " checked" not in blank

        form = _form(_page(c, "/admin/channels?edit=C0000007"))
        assert 'name="channel" placeholder="C0123ABCD" value="C0000007"' in form
        assert re.search(r'<option value="own" selected>', form) and '<option value="review" selected>' in form
        assert 'value="web" checked' in form and 'value="shop" checked' not in form
        assert 'name="other" value="runbooks"' in form  # a source not configured here: the free-text field

        form = _form(_page(c, "/admin/channels?edit=C0000008"))
        assert '<option value="inherit" selected>' in form and '<option value="questions" selected>' in form
        assert " checked" not in form

        # saving the pre-filled form unchanged keeps the policy as it was
        fields = {"csrf_token": csrf, "channel": "C0000007", "list": "own", "sources": ["web"], "other": "runbooks",
                  "reply_mode": "review"}
        assert c.post("/admin/channels/set", data=fields).status_code == 303
        row = _page(c, "/admin/channels").split('id="channel-C0000007"')[1].split("</tr>")[0]
        assert "runbooks, web" in row and "draft for review" in row
        unknown = _form(_page(c, "/admin/channels?edit=C9999999"))  # no policy of its own: a blank form
        assert 'placeholder="C0123ABCD" value=""' in unknown and " checked" not in unknown
