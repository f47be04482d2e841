"""The registry of statistic kinds: one object per kind, one module per family.

`get(name)` returns the kind that defines everything about a statistic of that
kind (releases.kinds.base.StatisticKind); `REGISTRY` lists them in the builder's
order. The rest of the code loops over the registry or asks a kind; no module
outside this package names a kind to decide how to treat it.
"""

from __future__ import annotations

from releases.kinds import (
    bounds,
    counting,
    crosstab,
    grouped,
    keys,
    quantiles,
    rows_per_person,
    spread,
    sums,
)
from releases.kinds.base import UNINFORMATIVE, Cell, NoisePart, StatisticKind

REGISTRY: dict[str, StatisticKind] = {
    kind.name: kind
    for module in (
        counting,
        sums,
        grouped,
        quantiles,
        spread,
        crosstab,
        keys,
        rows_per_person,
        bounds,
    )
    for kind in module.KINDS
}


def get(name: str) -> StatisticKind:
    """The kind named `name` (KeyError for an unknown code: callers validate first)."""
    return REGISTRY[name]


__all__ = ["REGISTRY", "UNINFORMATIVE", "Cell", "NoisePart", "StatisticKind", "get"]
