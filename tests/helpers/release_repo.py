"""A small "shop" repository with two release tags and a default branch that moved on,
for the named-refs tests (``refs`` of ``CODERAG_REPOS``, ``--ref``).

History on ``main``:

* ``v1`` (tag): ``compute_total`` sums prices; ``legacy_coupon_total`` (only v1 has it)
  calls it; ``cart.py``'s ``checkout`` calls it.
* ``v2`` (tag): ``compute_total`` multiplies by quantity; ``legacy_coupon_total`` gone.
* head: ``compute_total`` rounds to cents; ``shipping.py`` adds ``quote_shipping`` (only
  the head has it), another caller. ``cart.py`` and ``docs/cart.md`` never change.
"""
from __future__ import annotations

from pathlib import Path

from helpers.gitrepo import commit_files, git, head_sha, make_git_repo

PRICING_V1 = '''"""Prices of an order."""


def compute_total(items):
    """Order total: the sum of the item prices."""
    total = 0
    for item in items:
        total += item["price"]
    return total


def legacy_coupon_total(items, coupon):
    """Total after a legacy percentage coupon code."""
    return compute_total(items) * (100 - coupon) / 100
'''

PRICING_V2 = '''"""Prices of an order."""


def compute_total(items):
    """Order total: each item's price times its quantity."""
    return sum(item["price"] * item.get("quantity", 1) for item in items)
'''

PRICING_HEAD = '''"""Prices of an order."""


def compute_total(items):
    """Order total: price times quantity, rounded to cents."""
    return round(sum(item["price"] * item.get("quantity", 1) for item in items), 2)
'''

SHIPPING_HEAD = '''from shop.pricing import compute_total


def quote_shipping(items, zone):
    """Shipping quote: free above one hundred, else a flat fee per zone."""
    return 0 if compute_total(items) > 100 else 5 * zone
'''

CART = '''from shop.pricing import compute_total


def checkout(cart):
    """Charge the customer's cart."""
    return compute_total(cart["items"])
'''

DOCS = '''# Cart

## Checkout

The checkout charges the cart's total to the customer.
'''


class ReleaseRepo:
    """The repository and its commits: ``v1``, ``v2`` (tagged) and ``head``."""

    def __init__(self, path: Path, v1: str, v2: str, head: str):
        self.path, self.v1, self.v2, self.head = path, v1, v2, head

    def commit(self, files: dict[str, str], message: str = "update", delete: tuple[str, ...] = ()) -> str:
        """Commit on ``main``; returns the new head (also kept as :attr:`head`)."""
        self.head = commit_files(self.path, files, message, delete=delete)
        return self.head

    def tag(self, name: str, commit: str | None = None) -> None:
        git(self.path, "tag", "-f", name, commit or self.head)


def make_release_repo(tmp_path: Path, name: str = "shop-upstream") -> ReleaseRepo:
    """Build the repository (see the module docstring) under ``tmp_path/name``."""
    repo = make_git_repo(tmp_path, {"shop/__init__.py": "", "shop/pricing.py": PRICING_V1, "shop/cart.py": CART,
                                    "docs/cart.md": DOCS}, name=name)
    v1 = head_sha(repo)
    git(repo, "tag", "v1")
    v2 = commit_files(repo, {"shop/pricing.py": PRICING_V2}, "quantities")
    git(repo, "tag", "-a", "v2", "-m", "release 2")  # an annotated tag
    head = commit_files(repo, {"shop/pricing.py": PRICING_HEAD, "shop/shipping.py": SHIPPING_HEAD}, "shipping")
    return ReleaseRepo(repo, v1, v2, head)


def lines_of(text: str, needle: str) -> int:
    """1-based line of the first line of ``text`` containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)
