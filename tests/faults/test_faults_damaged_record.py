"""One malformed source record (non-JSON ``replaced_json``) affects only its own
repository: every other repository keeps answering, status and doctor name the damage,
and ``doctor --repair`` rewrites the record so the repository is whole again."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers.gitrepo import make_git_repo

pytestmark = pytest.mark.weaviate


def cli(env, *args):
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_damaged_record_stays_with_its_repository_and_doctor_repairs_it(settings_env, store, tmp_path):
    from weaviate.util import generate_uuid5

    from indexer.store import schema

    good = make_git_repo(tmp_path, {"billing/invoice.py": "def total_invoice_amount(lines):\n"
                                    '    """Sum of invoice lines."""\n    return sum(lines)\n'}, name="good")
    bad = make_git_repo(tmp_path, {"ship/route.py": "def plan_delivery_route(stops):\n"
                                   '    """Order the delivery stops."""\n    return sorted(stops)\n'}, name="bad")
    for repo in (good, bad):
        assert cli(settings_env, "index", str(repo)).returncode == 0
    col = store._cols.client.collections.get(schema.SOURCE_COLLECTION)
    col.data.update(uuid=generate_uuid5("source\0bad"), properties={"replaced_json": "{not json"})

    for args in (["search", "invoice total", "--json"], ["ask", "how is the invoice total computed?", "--json"],
                 ["status", "--json"], ["search", "delivery route", "--repo", "bad", "--json"]):
        proc = cli(settings_env, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (args, proc.stderr)
    found = json.loads(cli(settings_env, "search", "invoice total", "--json").stdout)["results"]
    assert found[0]["symbol"] == "total_invoice_amount"
    status = {s["name"]: s for s in json.loads(cli(settings_env, "status", "--json").stdout)["sources"]}
    assert "replaced_json" in status["bad"]["damaged"] and not status["good"]["damaged"]
    human = cli(settings_env, "status").stdout
    assert "DAMAGED source record" in human and human.count("DAMAGED") == 1

    check = cli(settings_env, "doctor", "--json")
    assert check.returncode == 1, check.stdout
    repaired = cli(settings_env, "doctor", "--repair", "--json")
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    assert "rewrote the damaged source record" in repaired.stdout
    after = {s["name"]: s for s in json.loads(cli(settings_env, "status", "--json").stdout)["sources"]}
    assert not after["bad"]["damaged"] and after["bad"]["chunks"] >= 1
    hits = json.loads(cli(settings_env, "search", "delivery route", "--repo", "bad", "--json").stdout)["results"]
    assert hits[0]["symbol"] == "plan_delivery_route"
