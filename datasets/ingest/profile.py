"""The private per-column profile: suggestions for the owners, never published."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal

import pyarrow as pa
import pyarrow.compute as pc

from datasets.ingest.common import FLOAT, INTEGER

DISTINCT_LIMIT = 50


@dataclass
class ColumnProfile:
    """Private suggestions for one column (owners only, never published)."""

    name: str
    position: int
    suggested_type: str
    distinct: set[str] | None = field(default_factory=set)  # None: more than DISTINCT_LIMIT
    minimum: float | None = None
    maximum: float | None = None
    unparseable: int = 0

    def to_dict(self) -> dict:
        profile: dict = {"type": self.suggested_type, "distinct_limit": DISTINCT_LIMIT}
        profile["distinct"] = _sorted_values(self.distinct, self.suggested_type)
        if self.suggested_type in (INTEGER, FLOAT):
            profile["range"] = (
                round_outward(self.minimum, self.maximum) if self.minimum is not None else None
            )
            profile["unparseable"] = self.unparseable
        return profile


def _sorted_values(values: set[str] | None, kind: str) -> list[str] | None:
    if values is None:
        return None
    if kind in (INTEGER, FLOAT):
        return sorted(values, key=float)
    return sorted(values)


def round_outward(lo: float, hi: float) -> list[str]:
    """[lo, hi] widened to multiples of the power of ten below max(|lo|, |hi|).

    E.g. [18, 93] -> [10, 100]; [0, 1234567.8] -> [0, 2000000]; [-3.2, 0.5] -> [-4, 1].
    """
    magnitude = max(abs(lo), abs(hi))
    if magnitude == 0 or not math.isfinite(magnitude):
        return ["0", "1"] if magnitude == 0 else ["", ""]
    step = Decimal(10) ** math.floor(math.log10(magnitude))
    nice_lo = (Decimal(repr(lo)) / step).to_integral_value(rounding="ROUND_FLOOR") * step
    nice_hi = (Decimal(repr(hi)) / step).to_integral_value(rounding="ROUND_CEILING") * step
    if nice_lo == nice_hi:
        nice_hi += step
    return [_plain(nice_lo), _plain(nice_hi)]


def _plain(number: Decimal) -> str:
    text = format(number, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def profile_update(profile: ColumnProfile, array: pa.Array) -> None:
    if profile.distinct is not None:
        values = pc.unique(array.drop_null())
        if len(values) > DISTINCT_LIMIT:
            profile.distinct = None
        else:
            profile.distinct.update(_as_text(v) for v in values.to_pylist())
            if len(profile.distinct) > DISTINCT_LIMIT:
                profile.distinct = None
    if profile.suggested_type in (INTEGER, FLOAT):
        extremes = pc.min_max(array)
        lo, hi = extremes["min"].as_py(), extremes["max"].as_py()
        if lo is not None:
            profile.minimum = lo if profile.minimum is None else min(profile.minimum, lo)
            profile.maximum = hi if profile.maximum is None else max(profile.maximum, hi)


def _as_text(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)
