"""Private bounds of one numeric column: AboveThreshold on a public geometric grid.

For an owner who cannot know a column's range in advance (DESIGN.md section 3.2): the
search starts at a public point the owner knows lies inside, and walks outward over
centre +- unit * (ratio**i - 1) (dpportal.privacy.unbounded_bounds, after Durfee 2023,
unbounded quantile estimation), stopping at the first point beyond which at most
`outside` values lie by a noisy comparison. Pure epsilon-DP whatever the release's
mechanism, the epsilon split evenly between the ends searched. Like a selection it
publishes no noisy value: only the chosen grid points (`bounds`), with the accuracy
statement "with probability >= confidence, at most N values lie beyond each bound"
(unbounded_bounds.outside_at_most), all from public parameters.
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.utils.translation import gettext, gettext_noop

from dpportal import formatting
from dpportal.errors import ValidationFailed
from dpportal.privacy import tail_bounds, unbounded_bounds
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Epsilon, exact_str, round_up_sig
from releases.kinds.base import Cell, NoisePart, StatisticKind, frac, statistic_errors

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

#: the epsilon range a target is solved over
EPSILON_RANGE = (Fraction(1, 10**4), Fraction(100))


def grid_of(entry: dict[str, Any]) -> unbounded_bounds.SearchGrid:
    """The public search grid of a frozen spec entry (or a stored result entry)."""
    return unbounded_bounds.SearchGrid.from_dict(entry["grid"])


def search_grid_of(search: dict[str, Any]) -> unbounded_bounds.SearchGrid:
    """The search grid of a statistic's stored search parameters."""
    ratio = search.get("ratio", unbounded_bounds.DEFAULT_RATIO)
    return unbounded_bounds.SearchGrid.of(
        **{k: Fraction(str(search[k])) for k in ("centre", "unit", "limit")},
        ratio=Fraction(str(ratio)),
    )


def outside_bound(
    *, epsilon: object, ends: str, outside: int, steps: int, contribution_bound: int,
    confidence: object,
) -> int:  # fmt: skip
    """At most this many values lie beyond each estimated bound, with probability >= confidence."""
    return int(
        unbounded_bounds.outside_at_most(
            epsilon=frac(epsilon),
            ends=ends,
            outside=int(outside),
            steps=int(steps),
            contribution_bound=int(contribution_bound),
            confidence=frac(confidence),
        )  # fmt: skip
    )


def ends_of(ends: str) -> list[str]:
    """The bounds searched, in the order results store them."""
    return {"both": ["lower", "upper"], "upper": ["upper"], "lower": ["lower"]}[ends]


class BoundsKind(StatisticKind):
    name = "bounds"
    opendp_missing = (
        "a private search for bounds by unbounded quantile estimation: OpenDP has no counterpart"
    )
    pure = True
    fields = "bounds"
    aggregate = "grid_counts"

    def mechanism(self, release_mechanism: str) -> str:
        return "above_threshold"

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        return "above_threshold"

    def value_cells(self, stat: StatisticPlan) -> int:
        return len(ends_of(stat.search["ends"]))

    def _outside(self, plan: ReleasePlan, stat: StatisticPlan, epsilon: object) -> int:
        return outside_bound(
            epsilon=epsilon, ends=stat.search["ends"], outside=stat.search["outside"],
            steps=search_grid_of(stat.search).steps(),
            contribution_bound=plan.dataset.contribution_bound, confidence=plan.confidence,
        )  # fmt: skip

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """The accuracy statement before any data: at most N values beyond each bound, or
        for an extrapolated bound what the model promises and that nothing else does."""
        if stat.search.get("tail"):
            n = None
            text = tail_accuracy_text(stat.search["outside"])
        else:
            with statistic_errors(stat):
                n = self._outside(plan, stat, stat.epsilon)
            text = gettext(
                "with probability %(confidence)s, at most %(n)s values lie beyond each bound"
            ) % {
                "confidence": formatting.percent(frac(plan.confidence)),
                "n": formatting.integer(n),
            }
        return {
            "cells": self.value_cells(stat),
            "halfwidth": None,
            "halfwidth_simultaneous": None,
            "n_guess": None,
            "outside_at_most": n,
            "accuracy_text": text,
            "accuracy_simultaneous_text": text,
        }

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        search = tuple(sorted((k, str(v)) for k, v in stat.search.items()))
        return (*super().planning_key(plan=plan, stat=stat), search)

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """The smallest epsilon (3 significant digits, rounded up) whose statement allows
        at most the target number of values beyond each bound (the target: a count)."""
        target = frac(stat.target_halfwidth)
        low, high = EPSILON_RANGE
        if stat.search.get("tail"):
            raise ValidationFailed(
                gettext(
                    "%(where)s: an extrapolated bound has no accuracy statement to aim at; "
                    "give its epsilon instead of a target."
                )
                % {"where": gettext("Statistic %(number)s") % {"number": stat.position + 1}}
            )
        with statistic_errors(stat):
            if self._outside(plan, stat, high) > target:
                raise ValidationFailed(
                    gettext(
                        "%(where)s: at most %(target)s values beyond each bound would need an "
                        "epsilon above %(high)s; allow more values beyond each bound."
                    )
                    % {
                        "where": gettext("Statistic %(number)s") % {"number": stat.position + 1},
                        "target": formatting.integer(target),
                        "high": formatting.epsilon(high),
                    }
                )
            for _ in range(60):  # bisection on a bounded range: 60 halvings suffice
                if high - low <= high / 1000:
                    break
                middle = (low + high) / 2
                if self._outside(plan, stat, middle) <= target:
                    high = middle
                else:
                    low = middle
            return round_up_sig(high, 3)

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        return ()  # AboveThreshold compares noisy counts: no noise vector is released

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        if stat.search.get("tail"):
            return tail_bounds.tail_records(
                epsilon=frac(stat.epsilon), contribution_bound=plan.dataset.contribution_bound
            )
        return unbounded_bounds.bounds_records(epsilon=frac(stat.epsilon), ends=stat.search["ends"])

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        return []

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        search = dict(stat.search)
        grid = search_grid_of(search)
        return {
            "ends": search["ends"],
            "outside": int(search["outside"]),
            "grid": grid.to_dict(),
            "steps": grid.steps(),
            **({"tail": search["tail"]} if search.get("tail") else {}),
        }

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        grid = grid_of(entry)
        counts = [int(c) for c in np.asarray(aggregate, dtype=np.int64)]
        if entry.get("tail"):
            return _tail_entry(
                entry, counts, grid=grid, contribution_bound=contribution_bound, rng=rng
            )
        estimate = unbounded_bounds.estimate_bounds(
            counts, grid=grid, ends=entry["ends"], outside=int(entry["outside"]),
            epsilon=Epsilon(entry["epsilon"]), contribution_bound=contribution_bound, rng=rng,
        )  # fmt: skip
        found = {"lower": estimate.lower, "upper": estimate.upper}
        # a search that reached its limit found no bound: no statement holds for it
        bounds = {
            end: None if found[end].reached_limit else repr(found[end].value)
            for end in ends_of(entry["ends"])
        }
        explanation = dict(estimate.explanation())
        explanation["confidence"] = exact_str(frac(confidence))
        explanation["outside_at_most"] = outside_bound(
            epsilon=entry["epsilon"], ends=entry["ends"], outside=entry["outside"],
            steps=grid.steps(), contribution_bound=contribution_bound, confidence=confidence,
        )  # fmt: skip
        return {
            "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
            "columns": [c["name"] for c in entry["columns"]],
            "category": None, "shape": None,
            "epsilon": entry["epsilon"], "delta": entry["delta"],
            "cells": [], "values": [],
            "bounds": bounds, "ends": entry["ends"], "outside": int(entry["outside"]),
            "explanation": explanation,
        }  # fmt: skip

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return []

    def explanation_parts(self, explanation: dict[str, Any]):
        return iter(())

    def values(self, entry: dict[str, Any]) -> list[float]:
        return []

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        return []  # a selection of grid points: no noisy value, so no value interval

    def statement(self, entry: dict[str, Any]) -> str:
        """The result in one sentence, in the reader's language."""
        return bounds_statement(entry)

    def value_title(self, columns: list[str]) -> str:
        return columns[0] if columns else ""

    def layout(self, entry: dict[str, Any]) -> str:
        return "statement"


def _tail_entry(
    entry: dict[str, Any], counts: list[int], *, grid, contribution_bound: int, rng
) -> dict[str, Any]:
    """The stored result of an upper bound extrapolated under a tail model."""
    estimate = tail_bounds.estimate_tail_upper(
        counts, grid=grid, beyond=int(entry["outside"]), epsilon=Epsilon(entry["epsilon"]),
        contribution_bound=contribution_bound, rng=rng,
    )  # fmt: skip
    return {
        "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
        "columns": [c["name"] for c in entry["columns"]],
        "category": None, "shape": None,
        "epsilon": entry["epsilon"], "delta": entry["delta"],
        "cells": [], "values": [],
        "bounds": {"upper": None if estimate.upper is None else repr(estimate.upper)},
        "ends": "upper", "outside": int(entry["outside"]), "tail": entry["tail"],
        "explanation": estimate.explanation(),
    }  # fmt: skip


def extrapolated_text(estimate: dict[str, Any]) -> str:
    """What a declared estimate's provenance adds when its upper bound came from the tail
    model ("" otherwise), appended to the "estimated privately" wording of each surface."""
    if estimate.get("model") != "lognormal":
        return ""
    return gettext(", the upper one extrapolated under a log-normal tail model")


def tail_accuracy_text(beyond: object) -> str:
    """What an extrapolated upper bound promises, before any data."""
    return gettext(
        "about %(n)s values lie above the bound if the column's upper tail is log-normal; "
        "no guarantee otherwise"
    ) % {"n": formatting.integer(beyond)}


TAIL_FAILURES = {
    "too_few_values": gettext_noop("too few values to fit the model"),
    "search_limit": gettext_noop("a quantile search reached its limit"),
    "not_lognormal": gettext_noop(
        "the two quantiles found do not fit a log-normal tail (the middle one is not positive "
        "or the upper one is not above it)"
    ),
}


def tail_statement(entry: dict[str, Any], *, name: str) -> str:
    """The result of an extrapolated upper bound in one sentence."""
    explanation = entry.get("explanation") or {}
    upper = (entry.get("bounds") or {}).get("upper")
    if upper is None:
        why = TAIL_FAILURES.get(str(explanation.get("reason")), TAIL_FAILURES["not_lognormal"])
        return gettext("No upper bound of %(column)s could be extrapolated: %(why)s.") % {
            "column": name,
            "why": gettext(why),
        }
    values = {
        "column": name,
        "upper": bound_text(upper),
        "n": formatting.integer(explanation.get("beyond")),
    }
    if explanation.get("reason") == "limit":
        return (
            gettext(
                "Extrapolated upper bound of %(column)s: %(upper)s, the search's largest distance "
                "(the log-normal tail model placed it further out)."
            )
            % values
        )
    return (
        gettext(
            "Extrapolated upper bound of %(column)s: %(upper)s (about %(n)s values lie above it "
            "if its upper tail is log-normal; no guarantee otherwise)."
        )
        % values
    )


def bound_text(value: object) -> str:
    """A bound as a person reads it (grouped digits, at most 6 significant)."""
    if value is None:
        return "—"
    return formatting.significant(Fraction(str(value)), 6)


def bounds_statement(entry: dict[str, Any], *, column: str | None = None) -> str:
    """ "Estimated bounds of income: 0 to 412,000 (at most N values lie beyond each, 95 %)"."""
    bounds = entry.get("bounds") or {}
    explanation = entry.get("explanation") or {}
    name = column or (entry.get("columns") or [""])[0]
    if entry.get("tail"):
        return tail_statement(entry, name=name)
    values = {
        "column": name,
        "lower": bound_text(bounds.get("lower")),
        "upper": bound_text(bounds.get("upper")),
        "n": formatting.integer(explanation.get("outside_at_most")),
        "confidence": formatting.percent(frac(explanation.get("confidence", "0.95"))),
    }
    missing = [end for end in ("lower", "upper") if end in bounds and bounds[end] is None]
    if len(missing) == 2:
        return (
            gettext(
                "No bound of %(column)s was found within the search's limit on either side: more "
                "values than allowed lie beyond its last points."
            )
            % values
        )
    if missing == ["lower"]:
        return (
            gettext(
                "No lower bound of %(column)s was found within the search's limit: more values "
                "than allowed lie below its last point."
            )
            % values
        )
    if missing == ["upper"]:
        return (
            gettext(
                "No upper bound of %(column)s was found within the search's limit: more values "
                "than allowed lie above its last point."
            )
            % values
        )
    if "lower" in bounds and "upper" in bounds:
        text = gettext(
            "Estimated bounds of %(column)s: %(lower)s to %(upper)s (at most %(n)s values lie "
            "beyond each, %(confidence)s)."
        )
    elif "upper" in bounds:
        text = gettext(
            "Estimated upper bound of %(column)s: %(upper)s (at most %(n)s values lie above it, "
            "%(confidence)s)."
        )
    else:
        text = gettext(
            "Estimated lower bound of %(column)s: %(lower)s (at most %(n)s values lie below it, "
            "%(confidence)s)."
        )
    return text % values


KINDS = (BoundsKind(),)
