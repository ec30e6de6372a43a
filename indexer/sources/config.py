"""``FreshnessConfig``: the name :mod:`indexer.freshness.queue` still imports for the
freshness group, :class:`common.settings.FreshnessSettings` (the repos and spaces kept
fresh are declared and parsed there and in :mod:`common.sources`). Remove this module
once that import names ``FreshnessSettings``."""
from common.settings import FreshnessSettings as FreshnessConfig  # noqa: F401
