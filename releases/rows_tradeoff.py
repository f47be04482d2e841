"""The owner's trade-off table of a rows-per-person result: which limit L keeps how much.

Post-processing of a stored (noisy, public) result only: for each candidate L, the
estimated share of rows kept with its range (every bucket moved by its half-width
for all buckets at once, at the release's confidence), the noise a count or a sum
gets at that L relative to L = 1, and the smallest L whose estimated share reaches
the share the owner picks. L is a setting of the dataset (its privacy unit), so the
suggestion links to the dataset's declaration with that L filled in; the owner
confirms it there. Every number goes through dpportal.formatting.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from django.urls import reverse
from django.utils.translation import gettext

from dpportal import formatting
from dpportal.errors import ValidationFailed
from dpportal.privacy.rows_per_person import suggest_limit
from releases import kinds

#: the share of rows kept the suggestion aims at unless the owner picks another (percent)
DEFAULT_SHARE_PERCENT = Decimal(95)


def share_parse(raw: str | None) -> Fraction:
    """The owner's share in percent ("95", "99.5"), above 0 and at most 100."""
    text = (raw or "").strip()
    if not text:
        return Fraction(DEFAULT_SHARE_PERCENT) / 100
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValidationFailed(gettext("The share of rows to keep must be a number.")) from None
    if not value.is_finite() or not 0 < value <= 100:
        raise ValidationFailed(
            gettext("The share of rows to keep must be above 0 % and at most 100 %.")
        )
    return Fraction(value) / 100


def _share_text(share: Fraction, *, up: bool) -> str:
    """A share to 0.1 %, rounded down (an estimate or a low end: never overstated) or up
    (a high end), so that 99.96 % is not shown as 100 %."""
    tenths = share * 1000
    whole = (
        -((-tenths.numerator) // tenths.denominator)
        if up
        else tenths.numerator // tenths.denominator
    )
    return formatting.percent(Decimal(whole) / 1000, 4)


def tradeoffs_for_owner(
    *, payload: dict[str, Any], dataset_id: int, current_bound: int, share: Fraction
) -> dict[int, dict[str, Any]]:
    """By statistic position: the trade-off of every result entry whose kind has one."""
    out: dict[int, dict[str, Any]] = {}
    confidence = payload["confidence"]
    for entry in payload.get("statistics") or []:
        rows = kinds.get(entry["kind"]).limit_tradeoff(entry, confidence=confidence)
        if not rows:
            continue
        pick = suggest_limit(rows, share)
        reached = pick.share is not None and pick.share >= share
        out[int(entry["position"])] = {
            "rows": [
                {
                    "limit": formatting.integer(r.limit),
                    "share": _share_text(r.share, up=False) if r.share is not None else "—",
                    "low": _share_text(r.share_low, up=False),
                    "high": _share_text(r.share_high, up=True),
                    "noise": gettext("× %(factor)s")
                    % {"factor": formatting.integer(r.noise_factor)},
                    "suggested": r.limit == pick.limit,
                    "current": r.limit == current_bound,
                }
                for r in rows
            ],
            "share": formatting.percent(share),
            "share_input": formatting.significant(share * 100, 6, group=False),
            "suggested": pick.limit,
            "suggested_text": formatting.integer(pick.limit),
            "reached": reached,
            "floor": int(entry["values"][-1]) > 0,
            "cap": formatting.integer(entry.get("cap")),
            "current": formatting.integer(current_bound),
            "use_url": reverse("datasets:declare", args=[dataset_id])
            + f"?contribution_bound={pick.limit}",
        }
    return out
