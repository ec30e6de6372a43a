"""Runbook <-> code drift: extract code references from docs (:mod:`.extract`), look them up in the indexed code (:mod:`.codeindex`, :mod:`.resolve`), store and report them (:mod:`.service`)."""
