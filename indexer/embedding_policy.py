"""Which chunks get a vector, and from how many embedder inputs (the embedding policy).

Embedding is most of the cost of a first index (95% of sqlalchemy's run before this
policy). A policy says, per file role (:func:`indexer.documents.file_role`):

- ``"full"``: the head input (symbol words, path, context, source start) plus one input
  per further ``EMBED_WINDOW_LINES`` lines, at most ``max_windows`` of them; the chunk's
  vector is the normalised mean;
- ``"head"``: the head input only (MiniLM reads ~25 lines of it);
- ``"none"``: no vector: the chunk is found by keyword and name (BM25 half of the hybrid
  search, name boosts, graph expansion), never by vector similarity.

:data:`DEFAULT_POLICY` is :data:`LEAN` (test and changelog chunks keyword-only, docs
sections by their head, code and examples with every sub-window), chosen on the full dev
sets (103 questions, ``bench/retrieval_eval.py``, one index per policy and precision,
docs/benchmarks.md): with the int8 runtime it keeps recall@5 and MRR@10 on the two sets
combined within 0.01 of the best configuration measured for 38% of the word pieces. An earlier measurement on a subset of the sets
(``bench/embedding_policy_bench.py``) had picked tests keyword-only alone
(:data:`TESTS_KEYWORD_ONLY`); on the full sets with fp32 vectors that cost one question of
recall@5 per set, and both stay available as presets (``CODERAG_EMBEDDING_POLICY``).

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

    def with_every_vector(self) -> "EmbeddingPolicy":
        """This policy with ``"none"`` read as ``"full"``: a vector for every chunk, each
        role otherwise as here (for repairing chunks that should have one)."""
        full = lambda m: "full" if m == "none" else m  # noqa: E731
        return EmbeddingPolicy(f"{self.name}, every chunk", modes={r: full(m) for r, m in self.modes.items()},
                               default=full(self.default), max_windows=self.max_windows)


# Before this policy: every chunk, head plus every sub-window.
ALL_WINDOWS = EmbeddingPolicy("all roles, all sub-windows")
# Picked by the subset measurement (bench/embedding_policy_bench.py; docs/benchmarks.md),
# then rejected on the full dev sets (103 questions, bench/retrieval_eval.py, one index
# per policy, ranking of b86d064, fp32 vectors): recall@5 0.933 -> 0.900 (dev) and 0.890 ->
# 0.877 (dev2). A preset (CODERAG_EMBEDDING_POLICY=tests-keyword-only).
TESTS_KEYWORD_ONLY = EmbeddingPolicy("tests keyword-only, others all sub-windows", modes={"test": "none"})
# Test and changelog chunks keyword-only, docs sections by their head input only (a
# section's start says what it is about), code and examples with every sub-window.
LEAN = EmbeddingPolicy("tests and changelogs keyword-only, docs head only, others all sub-windows",
                       modes={"test": "none", "docs": "head", "changelog": "none"})
# The default, by measurement (docs/benchmarks.md: policy x precision on both dev sets,
# 103 questions, one index each, the same ranking): with int8 vectors LEAN gave recall@5 /
# MRR@10 on the two sets combined 0.913 / 0.804 against 0.913 / 0.802 for ALL_WINDOWS fp32
# (per set: dev 0.967 / 0.846 vs 0.933 / 0.837, dev2 0.890 / 0.786 vs 0.904 / 0.788: one
# dev2 question at the rank-5 boundary); a second fresh index of LEAN int8 gave 0.913 /
# 0.793, so the MRR difference is within build-to-build noise. 38% of the word pieces:
# sqlalchemy indexes in 279 s, where embedding all its 9.14 M word pieces at the fp32
# rate measured beside it (6,041 /s, bench/embed_runtime_bench.py) would take ~1,500 s.
DEFAULT_POLICY = LEAN

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
