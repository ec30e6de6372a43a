"""Corners of a repository: the files that are not the product itself.

Tests, fixtures, examples, samples, demos, benchmarks and CI configuration hold names
and words the product does not have (a test's fake server, an example's Redis client).
Drift asks whether the *product* defined a name, and the answerability decision whether
the *product* mentions a word, so both leave corners out with :func:`is_corner`.

A Maven/Gradle source tree (``src/main/...``) is the product whatever its package folders
are called: spring-petclinic's code lives in ``src/main/java/org/springframework/samples/``.
"""
from __future__ import annotations

import re

_CORNER = re.compile(
    r"(?:^|/)(?:tests?|testing|spec|specs|__tests__|fixtures?|examples?|samples?|demos?|benchmarks?|"
    r"\.github|\.circleci|\.gitlab|ci)/"
    r"|(?:^|/)(?:test_[^/]*|[^/]*_test\.\w+|[^/]*\.(?:test|spec)\.\w+|\.travis\.ya?ml|\.gitlab-ci\.ya?ml|"
    r"\.?azure-pipelines\.ya?ml|appveyor\.ya?ml|\.pre-commit-config\.ya?ml|tox\.ini|noxfile\.py|conftest\.py)$",
    re.I)
_PRODUCT_SOURCE_ROOT = re.compile(r"(?:^|/)src/main/")


def is_corner(path: str) -> bool:
    """Whether ``path`` (repository-relative, ``/``-separated) is a test, fixture,
    example, sample, demo, benchmark or CI file rather than the product. Empty → False."""
    if not path:
        return False
    if _PRODUCT_SOURCE_ROOT.search(path):
        return False
    return bool(_CORNER.search(path))
