"""Who may use ``/admin``: every route refuses anonymous requests (401) and signed-in
non-admins (403); every form refuses a missing or wrong CSRF token (403); the token and
"Sign in with Slack" (OpenID Connect against the fake Slack) sign admins in; no secret
reaches a page. Over real HTTP, on the app ``coderag serve`` serves."""
from __future__ import annotations

import re

import httpx
import pytest

from helpers.admin_site import ADMIN_TOKEN, admin_stack, base_env, csrf_of
from helpers.fake_slack_oidc import CLIENT_SECRET
from helpers.slack_harness import SECRET


def _paths(stack) -> list[tuple[str, str]]:
    """(method, concrete path) of every admin route except the sign-in pages."""
    from bot.admin.app import PUBLIC

    out = []
    for route in stack.ctx.admin.routes:
        if route.path in PUBLIC:
            continue
        path = re.sub(r"\{name:path\}", "shop", route.path)
        path = path.replace("{channel}", "C0000001").replace("{draft_id:int}", "1")
        for method in sorted(route.methods - {"HEAD"}):
            out.append((method, "/admin" + path))
    return out


@pytest.fixture
def stack(tmp_path):
    with admin_stack(base_env(tmp_path / "home")) as s:
        yield s


def test_every_route_refuses_anonymous_and_non_admin_requests(stack):
    paths = _paths(stack)
    assert len(paths) == 18 and ("POST", "/admin/channels/set") in paths and ("GET", "/admin/health") in paths
    with stack.client() as anon:
        for method, path in paths:
            r = anon.request(method, path, data={"csrf_token": "x"} if method == "POST" else None)
            assert r.status_code == 401, (method, path, r.status_code)
        assert "Sign in" in anon.get("/admin/sources").text  # a browser gets the sign-in page with the 401
    stack.fake.user = {"id": "UOTHER01", "email": "mallory@acme.test", "name": "Mallory"}
    with stack.client() as outsider:
        r = stack.sign_in_slack(outsider)
        assert r.status_code == 403 and "not one of the" in r.text
        csrf = csrf_of(r.text)
        for method, path in paths:
            r = outsider.request(method, path, data={"csrf_token": csrf} if method == "POST" else None)
            assert r.status_code == 403, (method, path, r.status_code)


def test_every_form_needs_the_sessions_csrf_token(stack):
    with stack.client() as admin:
        assert stack.sign_in(admin).status_code == 303
        page = admin.get("/admin/channels")
        assert page.status_code == 200
        good = csrf_of(page.text)
        for method, path in _paths(stack):
            if method != "POST":
                continue
            for data in ({}, {"csrf_token": "wrong" + good[5:]}):
                r = admin.post(path, data=data)
                assert r.status_code == 403, (path, data, r.status_code)
        # the sign-in form too: another browser without the page's token
        with stack.client() as fresh:
            assert fresh.post("/admin/login", data={"token": ADMIN_TOKEN}).status_code == 403
        # and with it, a change goes through
        r = admin.post("/admin/channels/set", data={"csrf_token": good, "channel": "C0000009", "list": "own",
                                                    "sources": ["shop"], "reply_mode": "mention"})
        assert r.status_code == 303


def test_token_sign_in_wrong_token_throttle_and_sign_out(stack, caplog):
    caplog.set_level("DEBUG")
    with stack.client() as c:
        assert stack.sign_in(c, token="x" * 30).status_code == 401
        r = stack.sign_in(c)
        assert r.status_code == 303 and r.headers["location"] == "/admin/"
        cookie = next(h for h in r.headers.get_list("set-cookie") if h.startswith("coderag_admin="))
        assert "httponly" in cookie.lower() and "path=/admin" in cookie.lower() and "samesite=lax" in cookie.lower()
        assert c.get("/admin/sources").status_code == 200
        assert c.post("/admin/logout", data={"csrf_token": csrf_of(c.get("/admin/sources").text)}).status_code == 303
        assert c.get("/admin/sources").status_code == 401
    with stack.client() as guesser:
        codes = [stack.sign_in(guesser, token=f"guess-{i:030d}").status_code for i in range(11)]
        assert codes[:9] == [401] * 9 and codes[-1] == 429
        assert stack.sign_in(guesser).status_code == 429  # even the right one, until the window passes
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "wrong token from" in logged
    assert ADMIN_TOKEN not in logged and "guess-0" not in logged and "x" * 30 not in logged  # no token logged


def test_slack_sign_in_for_a_listed_admin_and_its_change_log_line(stack):
    with stack.client() as c:
        r = stack.sign_in_slack(c)
        assert r.status_code == 303, r.text
        page = c.get("/admin/changes")
        assert page.status_code == 200 and "Ada Admin" in page.text and "admin.sign_in" in page.text
    # a callback that this browser did not start (no state in its session) signs nobody in
    with stack.client() as other:
        r = other.get("/admin/login/slack/callback?code=abc&state=forged")
        assert r.status_code == 400 and other.get("/admin/sources").status_code == 401


def test_an_admin_removed_from_the_list_is_refused_at_once(tmp_path):
    env = base_env(tmp_path / "home")
    with admin_stack(env) as stack, stack.client() as c:
        assert stack.sign_in_slack(c).status_code == 303
        assert c.get("/admin/sources").status_code == 200
        stack.ctx.admin.gate.settings = stack.app.admin.model_copy(update={"users": frozenset({"uother01"})})
        assert c.get("/admin/sources").status_code == 403


def test_no_secret_reaches_a_page(stack):
    with stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/sources").text)
        c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "git", "name": "private",
                                           "url": "https://oauth2:glpat-secret-0123456789@gitlab.example/x.git"})
        texts = [c.get(p).text for p in ("/admin/sources", "/admin/channels", "/admin/questions", "/admin/gaps",
                                         "/admin/drift", "/admin/health", "/admin/reviews", "/admin/changes")]
    for secret in (ADMIN_TOKEN, CLIENT_SECRET, SECRET, "xoxb-test-token", "glpat-secret-0123456789"):
        assert not any(secret in t for t in texts), secret
    # a URL with a password is refused (the database keeps no secret), and the refusal says why
    assert "password in the clone URL" in texts[0]


def test_admin_is_not_served_without_a_sign_in(tmp_path):
    env = base_env(tmp_path / "home")
    for name in ("CODERAG_ADMIN_TOKEN", "SLACK_CLIENT_ID", "SLACK_CLIENT_SECRET"):
        env.pop(name)
    with admin_stack(env) as stack:
        assert httpx.get(f"{stack.base}/admin/sources").status_code == 404


ADA_TOKEN = "ada-token-0123456789abcdef0123456789"
BOB_TOKEN = "bob-token-fedcba9876543210fedcba9876"


def _actors(c) -> list[tuple[str, str, str]]:
    """(who, what, on) of each change-log line, newest first."""
    page = c.get("/admin/changes").text
    return re.findall(r"<td>([^<]*)</td><td class=\"mono\">([^<]*)</td><td class=\"mono\">([^<]*)</td>", page)


def test_each_admin_signs_in_with_a_token_of_their_own_and_the_change_log_names_them(tmp_path, caplog):
    """CODERAG_ADMIN_TOKENS: ada's token as it is, bob's kept as its SHA-256 only; the
    shared CODERAG_ADMIN_TOKEN still signs in, as "admin"; removing ada's token ends her
    session; no token reaches a page or a log line."""
    import hashlib

    caplog.set_level("DEBUG")
    bob_digest = hashlib.sha256(BOB_TOKEN.encode()).hexdigest()
    env = base_env(tmp_path / "home", CODERAG_ADMIN_TOKENS=f"ada:{ADA_TOKEN}, bob:sha256:{bob_digest}")
    with admin_stack(env) as stack:
        changes = {}
        for who, token, channel in (("ada", ADA_TOKEN, "C0000011"), ("bob", BOB_TOKEN, "C0000012"),
                                    ("admin", ADMIN_TOKEN, "C0000013")):
            with stack.client() as c:
                assert stack.sign_in(c, token=token).status_code == 303, who
                page = c.get("/admin/channels")
                assert f"{who} (token)" in page.text  # the header names who is signed in
                c.post("/admin/channels/set", data={"csrf_token": csrf_of(page.text), "channel": channel,
                                                    "list": "inherit", "reply_mode": "questions"})
                changes[who] = _actors(c)
        log = changes["admin"]
        assert ("ada", "channel.set", "C0000011") in log and ("ada", "admin.sign_in", "token") in log
        assert ("bob", "channel.set", "C0000012") in log and ("admin", "channel.set", "C0000013") in log
        with stack.client() as c:  # the digest itself is not a token
            assert stack.sign_in(c, token=f"sha256:{bob_digest}").status_code == 401
            assert stack.sign_in(c, token=bob_digest).status_code == 401

        with stack.client() as ada:
            stack.sign_in(ada, token=ADA_TOKEN)
            assert ada.get("/admin/sources").status_code == 200
            admin = stack.ctx.admin.gate.settings
            stack.ctx.admin.gate.settings = admin.model_copy(update={"tokens": {"bob": f"sha256:{bob_digest}"}})
            assert ada.get("/admin/sources").status_code == 403  # her token is gone: so is her session
            assert stack.sign_in(ada, token=ADA_TOKEN).status_code == 401
        texts = [r.getMessage() for r in caplog.records]
    for secret in (ADA_TOKEN, BOB_TOKEN, ADMIN_TOKEN):
        assert not any(secret in t for t in texts), secret
        assert not any(secret in str(v) for row in log for v in row)
