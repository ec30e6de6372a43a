"""A small payments repository with a runbook and a known history, for drift and ``who``.

History (each commit by a known author, times spread over the last months):

1. alice: the service (CLI flags, env vars, routes, functions, metrics, Makefile), the
   runbook (5 references that will go stale, 5 that stay valid, 1 external), CODEOWNERS.
2. bob: renames the flag ``--max-conn`` to ``--max-connections``.
3. alice: removes the env var ``PAYMENTS_RETRY_LIMIT``.
4. bob: moves ``POST /v1/refunds`` to ``POST /v2/refunds``.
5. carol: deletes the function ``refund_legacy``.
6. alice: renames the metric ``payments_refund_errors_total`` to ``payments_refund_failures_total``.
7. dependabot[bot]: rewrites most lines of ``src/payments/service.py`` (a bot: ignored).
8. erin: "Reformat with black" rewrites every line of ``src/payments/service.py`` (ignored).
9. bob: a small change to ``src/payments/service.py``.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from helpers.gitrepo import write_files

DAY = 86400

RUNBOOK = """# Payments runbook

## Restart the API

1. Start it with `payments-api serve --max-conn 50` (or `--dry-run` first).
2. Make sure the environment variable `PAYMENTS_RETRY_LIMIT` is set, and `PAYMENTS_DB_URL` too.
3. Check that `POST /v1/refunds` and `GET /v1/health` answer.

## When refunds fail

4. Call `refund_legacy()` from a shell; otherwise `refund()`.
5. Watch the metric `payments_refund_errors_total` and `payments_refund_seconds`.
6. Run `make migrate`, then `scripts/rotate.sh`.

```bash
git pull --rebase
```
"""

CLI_V1 = '''import argparse


def parser():
    p = argparse.ArgumentParser(prog="payments-api")
    p.add_argument("--max-conn", type=int, default=10)
    p.add_argument("--dry-run", action="store_true")
    return p
'''

CONFIG_V1 = '''import os

RETRY_LIMIT = int(os.environ.get("PAYMENTS_RETRY_LIMIT", "3"))
DB_URL = os.environ["PAYMENTS_DB_URL"]
'''

API_V1 = '''from .service import refund

ROUTES = {
    ("POST", "/v1/refunds"): refund,
    ("GET", "/v1/health"): lambda: "ok",
}
'''

SERVICE_V1 = '''from .metrics import ERRORS, LATENCY


def refund(payment_id, amount):
    """Refund part of a payment."""
    with LATENCY.time():
        if amount <= 0:
            ERRORS.inc()
            raise ValueError("amount must be positive")
        return {"payment": payment_id, "refunded": amount}


def refund_legacy(payment_id):
    """The old full refund."""
    return refund(payment_id, 100)


class RefundService:
    def run(self, payment_id, amount):
        return refund(payment_id, amount)
'''

METRICS_V1 = '''from prometheus_client import Counter, Histogram

ERRORS = Counter("payments_refund_errors_total", "Refunds that failed")
LATENCY = Histogram("payments_refund_seconds", "Refund latency")
'''

MAKEFILE = "migrate:\n\tpython -m payments.migrate\n\ntest:\n\tpytest\n"
ROTATE = "#!/bin/sh\necho rotating\n"
CODEOWNERS = "# owners\n*       @alice\n/src/payments/api.py @payments-team dave@example.com\n"


@dataclass
class KnowledgeRepo:
    """The built repo: its path and the SHA of each step (``shas["flag"]`` ...)."""

    root: Path
    shas: dict[str, str] = field(default_factory=dict)


def _commit(root: Path, name: str, email: str, message: str, when: int, files: dict[str, str] | None = None,
            delete: tuple[str, ...] = ()) -> str:
    if files:
        write_files(root, files)
    for rel in delete:
        (root / rel).unlink()
    env = {**os.environ, "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name,
           "GIT_COMMITTER_EMAIL": email, "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    run = lambda *a: subprocess.run(["git", "-c", "commit.gpgsign=false", "-C", str(root), *a], check=True,  # noqa: E731
                                    capture_output=True, text=True, env=env).stdout
    run("add", "-A")
    run("commit", "-q", "-m", message)
    return run("rev-parse", "HEAD").strip()


def build_knowledge_repo(base: Path, now: int, name: str = "payments") -> KnowledgeRepo:
    """Build the repository described in the module docstring under ``base/name``;
    ``now`` (epoch seconds) is the time of the last commit."""
    root = base / name
    root.mkdir(parents=True)
    subprocess.run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(root)], check=True)
    k = KnowledgeRepo(root)
    t = now - 200 * DAY
    alice, bob = ("Alice Author", "alice@example.com"), ("Bob Builder", "bob@example.com")
    k.shas["initial"] = _commit(root, *alice, "Payments service", t, {
        "src/payments/cli.py": CLI_V1, "src/payments/config.py": CONFIG_V1, "src/payments/api.py": API_V1,
        "src/payments/service.py": SERVICE_V1, "src/payments/metrics.py": METRICS_V1,
        "src/payments/__init__.py": "", "Makefile": MAKEFILE, "scripts/rotate.sh": ROTATE,
        "docs/runbook.md": RUNBOOK, "CODEOWNERS": CODEOWNERS,
        # Alice also committed as a@old-laptop once; .mailmap merges that identity.
        ".mailmap": "Alice Author <alice@example.com> <a@old-laptop>\n",
    })
    k.shas["flag"] = _commit(root, *bob, "cli: clearer flag name", t + 10 * DAY, {
        "src/payments/cli.py": CLI_V1.replace('"--max-conn"', '"--max-connections"')})
    k.shas["env"] = _commit(root, *alice, "config: retries come from the settings file now", t + 20 * DAY, {
        "src/payments/config.py": CONFIG_V1.replace(
            'RETRY_LIMIT = int(os.environ.get("PAYMENTS_RETRY_LIMIT", "3"))\n', 'RETRY_LIMIT = 3\n')})
    api_v2 = API_V1.replace('"/v1/refunds"', '"/v2/refunds"')
    k.shas["endpoint"] = _commit(root, *bob, "api: refunds move to v2", t + 30 * DAY, {"src/payments/api.py": api_v2})
    service = SERVICE_V1.replace('''def refund_legacy(payment_id):
    """The old full refund."""
    return refund(payment_id, 100)


''', "")
    k.shas["function"] = _commit(root, "Carol Coder", "carol@example.com", "drop the legacy refund", t + 40 * DAY,
                                 {"src/payments/service.py": service})
    k.shas["metric"] = _commit(root, *alice, "metrics: failures, not errors", t + 50 * DAY, {
        "src/payments/metrics.py": METRICS_V1.replace("payments_refund_errors_total", "payments_refund_failures_total")})
    # Alice under an old identity (merged by .mailmap): more of service.py.
    service = service.replace('    """Refund part of a payment."""\n',
                              '    """Refund part of a payment.\n\n    amount: in cents.\n    """\n')
    k.shas["alias"] = _commit(root, "alice", "a@old-laptop", "service: document units", t + 60 * DAY,
                              {"src/payments/service.py": service})
    bot_service = service + "".join(f"\n\ndef generated_{i}():\n    return {i}\n" for i in range(30))
    k.shas["bot"] = _commit(root, "dependabot[bot]", "49699333+dependabot[bot]@users.noreply.github.com",
                            "Bump generated helpers", t + 70 * DAY, {"src/payments/service.py": bot_service})
    reformatted = bot_service.replace('"', "'")
    k.shas["reformat"] = _commit(root, "Erin Formatter", "erin@example.com", "Reformat with black", t + 80 * DAY,
                                 {"src/payments/service.py": reformatted})
    k.shas["small"] = _commit(root, *bob, "service: typo", now, {
        "src/payments/service.py": reformatted.replace("amount must be positive", "amount must be > 0")})
    return k
