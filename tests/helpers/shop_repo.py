"""The tiny "shop" repository the chat end-to-end tests index: a Python pricing module and a
Go health handler, the question that finds the former, and the citation URL template."""
from __future__ import annotations

from pathlib import Path

from common.settings import Settings
from helpers.gitrepo import head_sha, make_git_repo

FILES = {
    "pricing/tax.py": '''"""Pricing helpers."""


def calculate_price_with_tax(price, rate):
    """Price plus sales tax, rounded to cents."""
    return round(price * (1 + rate), 2)


def apply_discount(price, percent):
    """Reduce a price by a percentage."""
    return price * (1 - percent / 100)
''',
    "server/health.go": '''package server

import "net/http"

// HealthHandler answers the load balancer's health probe.
func HealthHandler(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
}
''',
}
TEMPLATE = "https://github.com/acme/shop/blob/{commit}/{path}#L{start}-L{end}"
QUESTION = "where is the price with sales tax calculated?"


def index_shop(tmp_path: Path, monkeypatch, store, embedder, *, db_name: str) -> str:
    """Index the shop repository (made under ``tmp_path``) into ``store`` with its call graph
    in a SQLite file ``db_name`` there; returns the indexed commit SHA."""
    from indexer import index_repository

    monkeypatch.setenv("CODERAG_DATABASE_URL", f"sqlite:///{tmp_path / db_name}")
    repo = make_git_repo(tmp_path, FILES, name="shop")
    index_repository(repo, settings=Settings.from_env(), store=store, embedder=embedder)
    return head_sha(repo)
