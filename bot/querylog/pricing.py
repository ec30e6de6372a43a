"""USD cost of an answer from its token counts.

Default prices are US dollars per million tokens (MTok) as published on Anthropic's
pricing page (https://www.anthropic.com/pricing, "API" section; also
https://docs.anthropic.com/en/docs/about-claude/pricing) for the model families, at the
time of writing — check them against your contract:

=========  =======  ========  ==============  ===================
family     input    output    cache read      cache write (5 min)
=========  =======  ========  ==============  ===================
haiku      1.00     5.00      0.10            1.25
sonnet     3.00     15.00     0.30            3.75
opus       5.00     25.00     0.50            6.25
=========  =======  ========  ==============  ===================

A model id is matched to a family by substring (``claude-sonnet-5-5`` → sonnet). The
extractive answers (model ``extractive``) cost nothing. Override with
``CODERAG_PRICE_INPUT_PER_MTOK``, ``CODERAG_PRICE_OUTPUT_PER_MTOK``,
``CODERAG_PRICE_CACHE_READ_PER_MTOK``, ``CODERAG_PRICE_CACHE_WRITE_PER_MTOK`` (apply to
every model; an unset one keeps the family default, or 0 for an unknown family when at
least one is set). Unknown model and no override → cost unknown (``None``).
"""
from __future__ import annotations

from dataclasses import dataclass

from common.settings import QueryLogSettings


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float


FAMILIES: dict[str, Price] = {
    "haiku": Price(1.00, 5.00, 0.10, 1.25),
    "sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "opus": Price(5.00, 25.00, 0.50, 6.25),
}
FREE_MODELS = ("extractive",)
_ENV = {"input": "CODERAG_PRICE_INPUT_PER_MTOK", "output": "CODERAG_PRICE_OUTPUT_PER_MTOK",
        "cache_read": "CODERAG_PRICE_CACHE_READ_PER_MTOK", "cache_write": "CODERAG_PRICE_CACHE_WRITE_PER_MTOK"}


def price_for(model: str, prices: QueryLogSettings | None = None) -> Price | None:
    """The price of ``model`` after the overrides in ``prices`` (the query-log group read
    at start-up: ``CODERAG_PRICE_*_PER_MTOK``; ``None``: list prices); ``None`` when unknown."""
    base = next((p for fam, p in FAMILIES.items() if fam in (model or "").lower()), None)
    q = prices
    overrides = {f: getattr(q, f"price_{f}") for f in _ENV if getattr(q, f"price_{f}", None) is not None}
    if not overrides:
        return base
    fallback = base or Price(0.0, 0.0, 0.0, 0.0)
    return Price(**{f: overrides.get(f, getattr(fallback, f)) for f in _ENV})


def cost_usd(model: str, input_tokens: int = 0, output_tokens: int = 0, cache_read_tokens: int = 0,
             cache_write_tokens: int = 0, *, prices: QueryLogSettings | None = None) -> float | None:
    """Dollars for one answer; 0.0 for models that call no API; ``None`` if the price is unknown.
    ``prices``: the overrides (:func:`price_for`).

    ``input_tokens`` are the uncached input tokens (the API's ``input_tokens``, which
    excludes cache reads and writes).
    """
    if not model or model in FREE_MODELS:
        return 0.0
    price = price_for(model, prices)
    if price is None:
        return None
    return (input_tokens * price.input + output_tokens * price.output
            + cache_read_tokens * price.cache_read + cache_write_tokens * price.cache_write) / 1e6
