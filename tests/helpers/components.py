"""Optional components of the test environment, and what to do when one is really absent.

A test that needs a component the machine does not have (the PostgreSQL driver, a
PostgreSQL server, the ``weaviate-server`` binary) is *skipped* with a reason that says
how to install it, instead of erroring halfway. CI sets ``CODERAG_TEST_REQUIRE_ALL=1``
(``.ci/run``): there a missing component *fails* the test, so a dependency dropped from
``pyproject.toml`` or an install step dropped from ``scripts/install.sh`` turns CI red
instead of being skipped quietly.
"""
from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRE_ALL_ENV = "CODERAG_TEST_REQUIRE_ALL"


def require_all() -> bool:
    """True when every optional component must be present (``CODERAG_TEST_REQUIRE_ALL=1``)."""
    return os.environ.get(REQUIRE_ALL_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


def missing(component: str, how_to_install: str) -> None:
    """Skip the calling test (or fail it under ``CODERAG_TEST_REQUIRE_ALL``).

    Raises ``pytest.skip.Exception`` or ``pytest.fail.Exception``; never returns.
    """
    reason = f"{component} is not available: {how_to_install}"
    if require_all():
        pytest.fail(f"{reason} ({REQUIRE_ALL_ENV} is set, so a missing component is an error)",
                    pytrace=False)
    pytest.skip(reason)


def require_module(module: str, component: str, how_to_install: str) -> None:
    """Skip/fail (see :func:`missing`) unless ``module`` is importable."""
    if importlib.util.find_spec(module) is None:
        missing(component, how_to_install)
