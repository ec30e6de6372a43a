"""A small shop repository whose commits have controlled dates, for ``changes``.

History (author, days before ``now``, what changed):

* ``initial``  alice 30: billing/invoice.py (Invoice.__init__, Invoice.total, Invoice.tax,
  send_invoice) and shipping/rates.py (rate_for, free_shipping).
* ``tax_round`` bob 20: Invoice.tax rounds.
* ``refunds``  carol 5: Invoice.total skips voided lines; refund added.
* ``rates``    dave 3: rate_for charges a base fee by zone.
* ``cleanup``  erin 1: send_invoice deleted; Invoice.tax takes a default rate.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from helpers.gitrepo import write_files
from helpers.openapi_spec import SPEC_YAML

DAY = 86400

INVOICE_V1 = '''"""Invoices of the billing service."""


class Invoice:
    def __init__(self, lines):
        self.lines = lines

    def total(self):
        return sum(line.amount for line in self.lines)

    def tax(self, rate):
        return self.total() * rate


def send_invoice(invoice, mailer):
    mailer.deliver(invoice.lines, subject="Your invoice")
'''

INVOICE_V2 = INVOICE_V1.replace("        return self.total() * rate\n",
                                "        return round(self.total() * rate, 2)\n")

INVOICE_V3 = INVOICE_V2.replace(
    "        return sum(line.amount for line in self.lines)\n",
    "        return sum(line.amount for line in self.lines if not line.voided)\n") + '''

def refund(invoice, amount):
    """Refund part of a paid invoice."""
    invoice.lines.append(-amount)
    return invoice
'''

INVOICE_V5 = INVOICE_V3.replace("    def tax(self, rate):\n", "    def tax(self, rate=0.2):\n").replace('''

def send_invoice(invoice, mailer):
    mailer.deliver(invoice.lines, subject="Your invoice")
''', "")

RATES_V1 = '''"""Shipping rates of parcels."""


def rate_for(parcel_weight_kg):
    """The shipping rate of a parcel, computed from its weight."""
    return 5 + parcel_weight_kg * 2


def free_shipping(order_total):
    return order_total > 100
'''

RATES_V4 = RATES_V1.replace("    return 5 + parcel_weight_kg * 2\n",
                            "    base = 7 if parcel_weight_kg > 20 else 5\n    return base + parcel_weight_kg * 2\n")

#: (name, author, days ago, files)
HISTORY = [
    ("initial", "alice", 30, {"billing/invoice.py": INVOICE_V1, "shipping/rates.py": RATES_V1}),
    ("tax_round", "bob", 20, {"billing/invoice.py": INVOICE_V2}),
    ("refunds", "carol", 5, {"billing/invoice.py": INVOICE_V3}),
    ("rates", "dave", 3, {"shipping/rates.py": RATES_V4}),
    ("cleanup", "erin", 1, {"billing/invoice.py": INVOICE_V5}),
]


@dataclass
class HistoryRepo:
    root: Path
    now: int
    shas: dict[str, str] = field(default_factory=dict)


def _git(root: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", "-C", str(root),
                           *args], check=True, capture_output=True, text=True, env=env).stdout


def build_history_repo(tmp_path: Path, now: int, name: str = "shop", history=None) -> HistoryRepo:
    """The repository of ``history`` (``(label, author, days ago, files)`` oldest first;
    :data:`HISTORY` by default) under ``tmp_path/name``, commit dates relative to ``now``."""
    root = Path(tmp_path) / name
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    repo = HistoryRepo(root, now)
    for label, author, days, files in HISTORY if history is None else history:
        write_files(root, files)
        _git(root, "add", "-A")
        when = f"@{int(now - days * DAY)} +0000"  # days may be a fraction (hours)
        env = {**os.environ, "GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": f"{author}@example.com",
               "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": f"{author}@example.com",
               "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
        _git(root, "commit", "-q", "-m", f"{label}: {author}'s change", env=env)
        repo.shas[label] = _git(root, "rev-parse", "HEAD").strip()
    return repo


#: An OpenAPI spec's history (tests/helpers/openapi_spec.py's shop API): ``summary``
#: edits the summary of ``GET /orders/{id}`` (line 50, its operation at 43-54),
#: ``version`` only the spec's ``info.version`` (no operation), ``drop_cancel`` removes
#: ``DELETE /orders/{id}`` (lines 55-60).
SPEC_V2 = SPEC_YAML.replace("      summary: Get an order\n", "      summary: Get one order by its id\n")
SPEC_V3 = SPEC_V2.replace("  version: 3.2.1\n", "  version: 3.3.0\n")
SPEC_V4 = SPEC_V3.replace('''    delete:
      summary: Cancel an order
      description: Cancels an order that has not shipped yet and releases its stock.
      responses:
        '204':
          description: Cancelled
''', "")
SPEC_HISTORY = [
    ("initial", "alice", 30, {"api/openapi.yaml": SPEC_YAML, "shop/app.py": 'ROUTES = ["/health"]\n'}),
    ("summary", "bob", 3, {"api/openapi.yaml": SPEC_V2}),
    ("version", "carol", 2, {"api/openapi.yaml": SPEC_V3}),
    ("drop_cancel", "dave", 1, {"api/openapi.yaml": SPEC_V4}),
]


#: ``express_rate`` added at the end of :data:`RATES_V4` (its tail is what ``express`` adds).
RATES_EXPRESS = RATES_V4 + '''

def express_rate(parcel_weight_kg):
    """The next-day rate: twice the standard one."""
    return 2 * rate_for(parcel_weight_kg)
'''
RATES_IMPORTED = RATES_V4.replace("    return order_total > 100\n", "    return order_total >= 100\n")

#: History whose commit dates are out of order, as a rebase or an import leaves it:
#: (name, author date and commit date in days before ``now``, files), oldest parent first.
#: ``rebased`` was written 40 days ago and committed 1 day ago; ``imported`` (a series
#: brought over with its old dates) sits after it with a commit date 20 days ago, so
#: ``git log --since=7.days`` stops there and never reaches ``rebased``.
REORDERED = [
    ("initial", 30, 30, {"shipping/rates.py": RATES_V1}),
    ("rebased", 40, 1, {"shipping/rates.py": RATES_V4}),
    ("imported", 20, 20, {"shipping/rates.py": RATES_IMPORTED}),
    ("express", 3, 2, {"shipping/rates.py": RATES_IMPORTED + RATES_EXPRESS[len(RATES_V4):]}),
]


def build_reordered_repo(tmp_path: Path, now: int, name: str = "ship") -> HistoryRepo:
    """The repository of :data:`REORDERED` under ``tmp_path/name`` (author ``gina`` for
    every commit but ``express``, by ``hugo``), dates relative to ``now``."""
    root = Path(tmp_path) / name
    root.mkdir(parents=True)
    _git(root, "init", "-q")
    repo = HistoryRepo(root, now)
    for label, authored, committed, files in REORDERED:
        write_files(root, files)
        _git(root, "add", "-A")
        who = "hugo" if label == "express" else "gina"
        env = {**os.environ, "GIT_AUTHOR_NAME": who, "GIT_AUTHOR_EMAIL": f"{who}@example.com",
               "GIT_COMMITTER_NAME": who, "GIT_COMMITTER_EMAIL": f"{who}@example.com",
               "GIT_AUTHOR_DATE": f"@{now - authored * DAY} +0000",
               "GIT_COMMITTER_DATE": f"@{now - committed * DAY} +0000"}
        _git(root, "commit", "-q", "-m", f"{label}: {who}'s change", env=env)
        repo.shas[label] = _git(root, "rev-parse", "HEAD").strip()
    return repo
