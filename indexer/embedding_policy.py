"""Which chunks get a vector, and from how many embedder inputs (the embedding policy).

Embedding is most of the cost of a first index (95% of sqlalchemy's run before this
policy). A policy says, per file role (:func:`indexer.documents.file_role`):

- ``"full"``: the head input (symbol words, path, context, source start) plus one input
  per further ``EMBED_WINDOW_LINES`` lines, at most ``max_windows`` of them; the chunk's
  vector is the normalised mean;
- ``"head"``: the head input only (MiniLM reads ~25 lines of it);
- ``"none"``: no vector: the chunk is found by keyword and name (BM25 half of the hybrid
  search, name boosts, graph expansion), never by vector similarity.

:data:`DEFAULT_POLICY` is :data:`ALL_WINDOWS`: the full-set measurement (see the comment
at its definition) rejected the subset choice below. The subset measurement
(``bench/embedding_policy_bench.py``, README "Benchmarks", the table) had picked the
policy costing the fewest word pieces whose recall@5 and
MRR@10, vector-only and hybrid, on both dev sets, all stay within 0.01 of the previous
behaviour (:data:`ALL_WINDOWS`), and whose hybrid figures (what the bot searches with)
are within 0.01 of the best policy's on both dev sets. Test chunks keyword-only
(:data:`TESTS_KEYWORD_ONLY`): 45% of the word pieces, no figure lower than before, hybrid
recall@5 / MRR@10 0.800 / 0.633 (dev; best 0.800 / 0.641) and 0.882 / 0.629 (dev2; best
0.882 / 0.629). Only vector-only recall@5 on dev is beaten, by a policy that loses 0.06 of
hybrid recall on dev2.

A keyword-only chunk is a recorded state, not damage: the pipeline writes it with
``vector_state="none"`` and the source record counts it (``keyword_only``), so
:func:`indexer.store.versions.verify_run` and ``coderag doctor`` never ask for its vector.
"""
from __future__ import annotations

from dataclasses import dataclass, field

MODES = ("full", "head", "none")


@dataclass(frozen=True)
class EmbeddingPolicy:
    """``modes``: role -> ``"full"`` / ``"head"`` / ``"none"`` (roles not listed: ``default``).
    ``max_windows``: sub-windows of a ``"full"`` chunk after its head (``None`` = all)."""

    name: str
    modes: dict = field(default_factory=dict)
    default: str = "full"
    max_windows: int | None = None

    def mode(self, role: str) -> str:
        """``"full"``, ``"head"`` or ``"none"`` for a file role."""
        return self.modes.get(role, self.default)


# Before this policy: every chunk, head plus every sub-window.
ALL_WINDOWS = EmbeddingPolicy("all roles, all sub-windows")
# Chosen by measurement (bench/embedding_policy_bench.py; README "Benchmarks"): tests are
# found by name and keyword (and demoted in ranking anyway, see bot.retrieval ROLE_WEIGHTS).
TESTS_KEYWORD_ONLY = EmbeddingPolicy("tests keyword-only, others all sub-windows", modes={"test": "none"})
# The default: on the full dev sets (103 questions, bench/retrieval_eval.py, one index per
# policy on the same machine) tests keyword-only cost recall@5 0.933 -> 0.900 (dev) and
# 0.890 -> 0.877 (dev2), MRR@10 0.811 -> 0.801 and 0.764 -> 0.757: outside the 0.01
# rule that the subset measurement below had passed. TESTS_KEYWORD_ONLY stays available
# (IndexingPipeline(policy=...)) and keyword-only chunks stay a verified state.
DEFAULT_POLICY = ALL_WINDOWS
# Docs sections get their head input only (a section's start says what it is about); code
# keeps every sub-window; tests are keyword-only. For repositories too large to embed
# in full on the machine at hand (CODERAG_EMBEDDING_POLICY=lean).
LEAN = EmbeddingPolicy("tests keyword-only, docs head only, others all sub-windows",
                       modes={"test": "none", "docs": "head", "changelog": "none"})

# Names accepted by CODERAG_EMBEDDING_POLICY (common.settings), "default" = DEFAULT_POLICY.
PRESETS = {"all-windows": ALL_WINDOWS, "tests-keyword-only": TESTS_KEYWORD_ONLY, "lean": LEAN}


def named(name: str | None) -> EmbeddingPolicy:
    """The policy a ``CODERAG_EMBEDDING_POLICY`` value names (``None`` or ``"default"``:
    :data:`DEFAULT_POLICY`, looked up at call time). Raises ``ValueError`` on an unknown name."""
    if name in (None, "", "default"):
        return DEFAULT_POLICY
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown embedding policy {name!r}; one of: default, {', '.join(PRESETS)}") from None
