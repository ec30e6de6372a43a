"""The admin page's "Re-sync now" runs the use case ``coderag sync repo`` runs
(:func:`indexer.sync_repo_now`) with the repositories configured in the database: a
repository added on the page is indexed into the real Weaviate, and the sources page
then shows its commit and chunks (before that, and after a failed first run, "not indexed
yet" and no counts); a failure shows as the source's last error."""
from __future__ import annotations

import json
import time

from helpers.admin_site import admin_stack, base_env, csrf_of
from helpers.gitrepo import head_sha, make_git_repo
from helpers.sample_repo import PY


def _wait_for_sync(client, name: str, timeout: float = 300) -> dict:
    """The change-log line that ends the re-sync of ``name``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        page = client.get("/admin/changes").text
        for action in ("source.sync.done", "source.sync.failed"):
            if action in page:
                return {"action": action, "page": page}
        time.sleep(0.5)
    raise AssertionError(f"the re-sync of {name} did not finish")


def _row(client, name: str) -> str:
    """The sources page's row of ``name``."""
    return client.get("/admin/sources").text.split(f'id="source-{name}"')[1].split("</tr>")[0]


def test_resync_from_the_page_indexes_a_repository_added_there(settings_env, store, tmp_path):
    # store: an empty index (the session's Weaviate may hold a "shop" of another test)
    repo = make_git_repo(tmp_path, {"pricing/tax.py": PY, "README.md": "# Shop\n\nTaxes are computed in pricing.\n"},
                         name="shop")
    env = base_env(tmp_path / "home", **{k: v for k, v in settings_env.items()
                                         if k.startswith(("WEAVIATE", "CODERAG_EMBEDDING"))})
    env["CODERAG_HOME"] = settings_env["CODERAG_HOME"]
    with admin_stack(env) as stack, stack.client() as c:
        stack.sign_in(c)
        csrf = csrf_of(c.get("/admin/sources").text)
        assert c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "git", "name": "shop", "url": str(repo),
                                                  "branch": "main"}).status_code == 303
        row = _row(c, "shop")  # added, never indexed: no counts, and not "complete"
        assert "not indexed yet" in row and "complete" not in row and "<td>0</td>" not in row
        assert c.post("/admin/sources/shop/sync", data={"csrf_token": csrf}).status_code == 303
        done = _wait_for_sync(c, "shop")
        assert done["action"] == "source.sync.done", done["page"][-3000:]
        row = _row(c, "shop")
        assert head_sha(repo)[:7] in row and "never" not in row
        assert "complete" in row and "not indexed yet" not in row

        # `coderag sync repo` knows a repository added on the page (the database's list)
        docs = make_git_repo(tmp_path, {"README.md": "# Docs\n\nHow refunds work.\n"}, name="docs")
        assert c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "git", "name": "docs",
                                                  "url": str(docs)}).status_code == 303
        from typer.testing import CliRunner

        from bot.cli import app

        r = CliRunner().invoke(app, ["sync", "repo", "docs", "--json"], env={**env, "SLACK_API_URL": stack.fake.api_url})
        assert r.exit_code == 0, r.output
        assert json.loads(r.output.strip().splitlines()[-1])["commit"] == head_sha(docs)

        # a repository whose URL is gone: the failure is the source's last error on the page
        assert c.post("/admin/sources/add", data={"csrf_token": csrf, "kind": "git", "name": "gone",
                                                  "url": str(tmp_path / "nowhere")}).status_code == 303
        c.post("/admin/sources/gone/sync", data={"csrf_token": csrf})
        deadline = time.monotonic() + 120
        while "source.sync.failed" not in c.get("/admin/changes").text:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        row = _row(c, "gone")  # its first run failed: state with an error, still no index
        assert "error" in row and "not indexed yet" in row and "complete" not in row
