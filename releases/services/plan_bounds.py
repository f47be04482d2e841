"""Parsing a private-bounds statistic: one numeric column whose range the owner does not know.

The column needs no declared bounds (finding them is the point). The search's grid is
public: its start point (`centre`, a value the owner knows lies inside without looking at
the data), its smallest step (`unit`) and its largest distance (`limit`), with the
ends searched and how many values may lie beyond each bound (`outside`), or, with a
tail model (`tail`), how many values the extrapolated upper bound should leave above it.
The core
(dpportal.privacy.unbounded_bounds.SearchGrid) validates the grid and bounds its steps.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, pgettext

from datasets.models import Column, Dataset
from dpportal import formatting, messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.tail_bounds import MODELS as TAIL_MODELS
from dpportal.privacy.unbounded_bounds import DEFAULT_OUTSIDE, DEFAULT_RATIO, SearchGrid
from releases.plans import StatisticPlan
from releases.services.plan_fields import _column, _optional_decimal

ENDS = ("both", "upper", "lower")
#: the most values a bound may leave beyond it (a larger one says nothing useful)
MAX_OUTSIDE = 10**9
DEFAULTS = {"centre": Decimal(0), "unit": Decimal(1), "limit": Decimal(10**12)}


def parse_bounds(
    plan: StatisticPlan, raw: dict, *, dataset: Dataset, columns: dict[str, Column]
) -> None:
    """Fill `plan` (a private-bounds statistic) from the builder's input, or raise."""
    plan.column = _column(dataset, columns, raw.get("column"), what="bounds")
    if plan.column.kind != Column.Kind.NUMERIC:
        raise ValidationFailed(
            gettext("Private bounds need a numeric column; '%(name)s' is not.")
            % {"name": plan.column.name}
        )
    ends = str(raw.get("ends") or "both").strip()
    if ends not in ENDS:
        raise ValidationFailed(gettext("Search both bounds, the upper one or the lower one."))
    outside_raw = raw.get("outside")
    try:
        outside = DEFAULT_OUTSIDE if outside_raw in (None, "") else int(str(outside_raw).strip())
    except ValueError:
        outside = -1
    if not (0 <= outside <= MAX_OUTSIDE):
        raise ValidationFailed(
            gettext(
                "The values allowed beyond each bound must be a whole number from 0 to %(limit)s."
            )
            % {"limit": formatting.integer(MAX_OUTSIDE)}
        )
    tail = str(raw.get("tail") or "").strip()
    if tail and tail not in TAIL_MODELS:
        raise ValidationFailed(gettext("Choose how the upper bound is found from the list."))
    if tail and ends != "upper":
        raise ValidationFailed(
            gettext(
                "A tail model extrapolates the upper bound only: search the upper bound, and "
                "declare the lower one yourself (0 for amounts that cannot be negative)."
            )
        )
    if tail and outside < 1:
        raise ValidationFailed(
            gettext("An extrapolated bound needs at least 1 value expected above it.")
        )
    given: dict[str, Decimal] = {}
    fields = {
        "centre": pgettext("field", "start point"),
        "unit": pgettext("field", "smallest step"),
        "limit": pgettext("field", "largest distance"),
    }
    for key, label in fields.items():
        value = _optional_decimal(raw.get(key), field=label)
        given[key] = DEFAULTS[key] if value is None else value
    try:
        SearchGrid.of(**{k: Fraction(v) for k, v in given.items()}, ratio=DEFAULT_RATIO)
    except PrivacyParameterError as exc:
        raise ValidationFailed(
            gettext("The search grid is not valid: %(problem)s.")
            % {"problem": messages.translated(exc.records)}
        ) from exc
    plan.search = {
        "ends": ends,
        "outside": outside,
        **{k: formatting.exact(v.normalize()) for k, v in given.items()},
        # the grid's growth per step, frozen with it (the core's default may change)
        "ratio": str(DEFAULT_RATIO),
        **({"tail": tail} if tail else {}),
    }


def bounds_input(search: dict[str, Any]) -> dict[str, Any]:
    """A stored search as the builder's input again."""
    return {k: search[k] for k in ("ends", "outside", "tail", *DEFAULTS) if k in search}
