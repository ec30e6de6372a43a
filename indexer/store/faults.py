"""Fault-injection points for the crash-safety tests (``tests/faults/``, ``bench/chaos.py``).

The store calls :func:`fault_point` at the moments a crash matters (after each written
batch, before the verification, before the source record is committed, before the
superseded chunks are deleted). In production nothing is registered and
``CODERAG_FAULT_AT`` is unset, so a call costs one dict look-up.

Two ways to act at a point, both only ever set by tests:

* in-process: :func:`set_fault_hook` registers ``hook(point, **info)`` (e.g. SIGKILL the
  Weaviate server, or raise);
* in another process (``coderag serve`` under test): ``CODERAG_FAULT_AT=<point>[:<n>]``
  makes the ``n``-th (default first) call at ``point`` create the file named by
  ``CODERAG_FAULT_FILE`` and then wait, so the test can SIGKILL (or SIGSTOP) the process
  there; deleting the file lets it go on.

Points: ``write_batch`` (info: ``batch`` = 1-based number of batches written so far,
``objects`` = objects written so far), ``before_verify``, ``before_commit``,
``after_commit``, ``keyword_ready`` (a first index committed its chunks without vectors;
info: ``pending``), ``vector_batch`` (phase 2 wrote one batch of vectors; info: ``batch``,
``pending`` = chunks still without their vector), ``before_cleanup``.
"""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

POINTS = ("write_batch", "before_verify", "before_commit", "after_commit", "keyword_ready", "vector_batch",
          "before_cleanup")

_hook: Callable[..., None] | None = None
_env_counts: dict[str, int] = {}


def set_fault_hook(hook: Callable[..., None] | None) -> None:
    """Register (or, with ``None``, remove) the in-process hook called at every point."""
    global _hook
    _hook = hook


def fault_point(point: str, **info) -> None:
    """Give a registered hook (or the ``CODERAG_FAULT_AT`` pause) its chance at ``point``."""
    if _hook is not None:
        _hook(point, **info)
    wanted = os.environ.get("CODERAG_FAULT_AT")
    if not wanted:
        return
    name, _, nth = wanted.partition(":")
    if name != point:
        return
    _env_counts[point] = _env_counts.get(point, 0) + 1
    if _env_counts[point] != int(nth or 1):
        return
    marker = os.environ.get("CODERAG_FAULT_FILE")
    if marker:
        Path(marker).write_text(f"{point} {info}\n", encoding="utf-8")
    # The test SIGKILLs the process while it waits here, or deletes the file to let it go on.
    deadline = time.monotonic() + 3600
    while time.monotonic() < deadline and (not marker or Path(marker).exists()):
        time.sleep(0.1)
