"""A real Chromium for browser tests, driven by Playwright: Debian's ``chromium``
package (``scripts/install.sh --test`` installs it) through ``executable_path``, since
Playwright's own browser download needs the internet. Missing: the test is skipped (or
fails under ``CODERAG_TEST_REQUIRE_ALL``), saying how to install it."""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Iterator

from helpers.components import missing, require_module

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str:
    """The Chromium executable (``CODERAG_TEST_CHROMIUM`` when set), or skip."""
    explicit = os.environ.get("CODERAG_TEST_CHROMIUM")
    if explicit:
        return explicit
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    missing("Chromium", "bash scripts/install.sh --test installs Debian's chromium package")
    raise AssertionError("unreachable")


@contextmanager
def browser() -> Iterator:
    """A headless Chromium (Playwright ``Browser``), closed afterwards."""
    require_module("playwright", "Playwright", "pip install -e '.[test]' installs it")
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=path, headless=True,
                              args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()
