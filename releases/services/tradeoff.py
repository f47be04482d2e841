"""Accuracy against epsilon for one release, and the project's room for it (public only).

The builder's chart: each statistic's half-width (releases.dp.statistic_accuracy,
the preview's own function; for quantiles their planning figure in the data's units,
or their rank error without a guess of n) at CHART_POINTS totals on a log scale, the release's
allocation scaled to each total (every statistic's epsilon times t / E; deltas
unchanged), and the marker of the largest total of THIS release that still fits
under the project's cap by tight-or-basic accounting
(dpportal.privacy.headroom, the same verdict as budgets.selectors.project_cap_check
with count_fit=False, bisected on t). Everything comes from the plan's public
parameters and the ledger's mechanism records: the data is never read, nothing is
cached.
"""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext

from dpportal import formatting
from dpportal.errors import ValidationFailed
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.headroom import ComposedHistory, Headroom, largest_fitting_epsilon
from dpportal.privacy.mechanism_records import MechanismRecord, merge_records
from dpportal.privacy.pld import within_cap_composed
from releases import dp
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = [
    "CHART_POINTS",
    "plan_at_epsilon",
    "plan_records",
    "plan_headroom",
    "plan_tradeoff",
]

CHART_POINTS = 20
#: the chart spans at least [E / CHART_BELOW, E * CHART_ABOVE] around the release's total E
CHART_BELOW = 20
CHART_ABOVE = 5
#: the headroom search looks in [E / SEARCH_RANGE, E * SEARCH_RANGE] (and not beyond
#: 10 x the cap: a release's basic total may exceed the cap's epsilon, but not by that much)
SEARCH_RANGE = 100
SHOWN_DIGITS = 3


def plan_at_epsilon(*, plan: ReleasePlan, epsilon: Decimal) -> ReleasePlan:
    """The same release with its allocation scaled to total `epsilon` (deltas unchanged)."""
    total = plan.cost_epsilon
    if total <= 0 or epsilon <= 0:
        raise ValidationFailed(gettext("The release needs a positive total epsilon."))
    return replace(
        plan,
        epsilon=epsilon,
        statistics=[replace(s, epsilon=s.epsilon * epsilon / total) for s in plan.statistics],
    )


class _Sweep:
    """Per-statistic results of one sweep over totals, memoised by releases.dp.planning_key.

    Statistics with equal public parameters at equal epsilons (two counts, say) are
    calibrated once; nothing outlives the request.
    """

    def __init__(self) -> None:
        self._records: dict[tuple, list[MechanismRecord]] = {}
        self._accuracies: dict[tuple, dict[str, Any] | None] = {}

    def records(self, plan: ReleasePlan) -> list[MechanismRecord]:
        """releases.dp.release_mechanisms(plan) as records (a test checks they agree)."""
        out: list[MechanismRecord] = []
        for stat in plan.statistics:
            key = dp.planning_key(plan=plan, stat=stat)
            if key not in self._records:
                self._records[key] = dp.statistic_records(plan=plan, stat=stat)
            out.extend(self._records[key])
        return merge_records(out)

    def accuracy(self, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any] | None:
        """The preview's accuracy of `stat` (releases.dp.statistic_accuracy); None if it fails."""
        key = dp.planning_key(plan=plan, stat=stat)
        if key not in self._accuracies:
            try:
                self._accuracies[key] = dp.statistic_accuracy(plan=plan, stat=stat)
            except ValidationFailed:
                self._accuracies[key] = None
        return self._accuracies[key]

    def halfwidth(self, plan: ReleasePlan, stat: StatisticPlan) -> float | None:
        """The per-cell half-width the preview shows; for quantiles the chart's figure:
        their planning figure in the data's units, or without a guess of n their rank error."""
        accuracy = self.accuracy(plan, stat)
        if accuracy is None:
            return None
        if accuracy.get("rank_error") is not None:
            # the confidence interval's planned reach, in the data's units when it can be
            # read in them, else in ranks (older plans: the rank error's)
            units = accuracy.get("interval_value_reach", accuracy.get("value_error"))
            if units is not None:
                return units
            return accuracy.get("interval_rank_reach") or accuracy["rank_error"]
        return accuracy["halfwidth"]


def _point_text(accuracy: dict[str, Any] | None) -> str:
    """One point of the chart's table as a person reads it."""
    if accuracy is None:
        return ""
    if accuracy.get("rank_error") is None:
        width = accuracy["halfwidth"]
        return formatting.halfwidth(width) if width is not None else ""
    ranks = formatting.integer(math.ceil(accuracy["rank_error"]))
    reach = accuracy.get("interval_rank_reach")
    if reach is not None:
        units = accuracy.get("interval_value_reach")
        if units is None:
            return gettext("interval ± %(reach)s ranks (rank ± %(ranks)s)") % {
                "reach": formatting.integer(math.ceil(reach)), "ranks": ranks}  # fmt: skip
        return gettext("interval about ± %(width)s (rank ± %(ranks)s)") % {
            "width": formatting.halfwidth(units), "ranks": ranks}  # fmt: skip
    if accuracy.get("value_error") is None:
        return gettext("rank ± %(ranks)s") % {"ranks": ranks}
    return gettext("about %(width)s (rank ± %(ranks)s)") % {
        "width": formatting.halfwidth(accuracy["value_error"]),
        "ranks": ranks,
    }


def plan_records(*, plan: ReleasePlan) -> list[MechanismRecord]:
    """The plan's mechanism records (releases.dp.release_mechanisms, as records)."""
    return [MechanismRecord.from_dict(r) for r in dp.release_mechanisms(plan=plan)]


def _shown(value: float, digits: int = SHOWN_DIGITS) -> Decimal:
    """`value` to `digits` significant digits."""
    return formatting.round_significant(Decimal(repr(value)), digits)


def _floor(value: float) -> Decimal:
    """`value` rounded DOWN to the digits a budget is shown with (so it still fits)."""
    number = Decimal(repr(value))
    exponent = number.adjusted() - formatting.BUDGET_DIGITS + 1
    return number.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_FLOOR)


def plan_headroom(
    *, plan: ReleasePlan, history: ComposedHistory, sweep: _Sweep | None = None
) -> tuple[Decimal | None, Headroom | None]:
    """The largest total epsilon of this release that fits after `history`, shown rounded down.

    Returns (marker, search); marker None when even E / SEARCH_RANGE does not fit or
    the search could not be done (parameters outside what the mechanisms accept).
    """
    total = float(plan.cost_epsilon)
    limit = min(total * SEARCH_RANGE, max(total, 10 * float(plan.project.epsilon_cap)))

    sweep = sweep or _Sweep()
    # basic composition alone: the release's basic epsilon at total t is t itself
    cap = plan.project
    hint = None
    if history.basic.delta + Fraction(plan.cost_delta) <= Fraction(cap.delta_cap):
        hint = float(Fraction(cap.epsilon_cap) - history.basic.epsilon)

    def candidate_at(t: float) -> list[MechanismRecord]:
        return sweep.records(plan_at_epsilon(plan=plan, epsilon=Decimal(repr(t))))

    try:
        search = largest_fitting_epsilon(
            history,
            candidate_at,
            epsilon_cap=plan.project.epsilon_cap,
            delta_cap=plan.project.delta_cap,
            low=total / SEARCH_RANGE,
            limit=limit,
            hint=hint,
        )
    except (ValidationFailed, PrivacyParameterError):
        return None, None
    if search.epsilon is None:
        return None, search
    marker = _floor(search.epsilon)
    if marker <= 0 or not _fits(plan=plan, history=history, sweep=sweep, total=marker):
        marker = Decimal(repr(search.epsilon))  # the total the search itself checked
    return marker, search


def _fits(*, plan: ReleasePlan, history: ComposedHistory, sweep: _Sweep, total: Decimal) -> bool:
    """The cap check (count_fit=False) of this release at `total`, after `history`."""
    candidate = sweep.records(plan_at_epsilon(plan=plan, epsilon=total))
    check = within_cap_composed(
        history,
        candidate,
        epsilon_cap=plan.project.epsilon_cap,
        delta_cap=plan.project.delta_cap,
        count_fit=False,
    )
    return check.within


def _grid(low: float, high: float) -> list[Decimal]:
    """CHART_POINTS totals from `low` to `high`, evenly spaced in log, 3 significant digits."""
    step = (math.log(high) - math.log(low)) / (CHART_POINTS - 1)
    points = [_shown(math.exp(math.log(low) + i * step)) for i in range(CHART_POINTS)]
    return sorted(set(points))


def plan_tradeoff(*, plan: ReleasePlan, history: ComposedHistory) -> dict[str, Any]:
    """The chart's data: totals, each statistic's half-width there, the headroom marker.

    JSON-ready: exact values (epsilons as decimal strings, half-widths as numbers)
    next to `*_text` for people (dpportal.formatting).
    """
    total = plan.cost_epsilon
    sweep = _Sweep()
    marker, search = plan_headroom(plan=plan, history=history, sweep=sweep)
    low, high = float(total) / CHART_BELOW, float(total) * CHART_ABOVE
    if marker is not None:
        low = min(low, float(marker) / 2)
        high = min(max(high, float(marker) * 1.5), float(total) * SEARCH_RANGE)
    epsilons = _grid(low, high)
    columns, texts = [], []
    for e in epsilons:
        scaled = plan_at_epsilon(plan=plan, epsilon=e)
        columns.append([sweep.halfwidth(scaled, stat) for stat in scaled.statistics])
        texts.append([_point_text(sweep.accuracy(scaled, stat)) for stat in scaled.statistics])
    series = [
        {
            "position": stat.position,
            "label": stat.label,
            "kind": stat.kind,
            # quantiles without a guess of n are drawn in ranks, and their legend says so
            "unit": "ranks" if stat.kind == "quantiles" and not stat.n_guess else "value",
            "legend": gettext("%(label)s (ranks)") % {"label": stat.label}
            if stat.kind == "quantiles" and not stat.n_guess
            else stat.label,
            "halfwidth": [column[i] for column in columns],
            "halfwidth_text": [row[i] for row in texts],
        }
        for i, stat in enumerate(plan.statistics)
    ]
    return {
        "epsilons": [formatting.exact(e) for e in epsilons],
        "epsilons_text": [formatting.budget(e) for e in epsilons],
        "series": series,
        "current": formatting.exact(total),
        "current_text": formatting.budget(total),
        "remaining": formatting.exact(marker) if marker is not None else None,
        "remaining_text": formatting.budget(marker) if marker is not None else "",
        "remaining_at_limit": bool(search and search.at_limit),
    }
