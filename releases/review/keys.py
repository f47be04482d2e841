"""The review document of a statistic of the categories found in the data.

The same typed value as the other kinds (StatisticReview), from the frozen
specification only, with `details` rows a reviewer needs here: the selection's
mechanism and public threshold, how many keys of one person are counted, whether
counts are published, the most keys published, and the release probability in
words ("a key held by 20 persons is published with probability 50 %"), all read
from the kind (releases.kinds.keys), as the preview and the worker read them.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from django.utils.translation import gettext, pgettext

from datasets.models import Column
from dpportal import formatting
from releases import dp, kinds
from releases.kinds.keys import PREVIEW_PROBABILITIES, stat_selection
from releases.review.text import sensitivity_text
from releases.review.types import ColumnReview, NoiseReview, StatisticReview
from releases.services.plan import ReleasePlan, StatisticPlan

__all__ = ["add_plan_fields", "selection_name", "statistic_review"]


def add_plan_fields(
    stat: StatisticPlan, entry: dict[str, Any], make_column: Callable[[dict], Column]
) -> None:
    """Set a frozen keys statistic's parameters on its plan."""
    kind = kinds.REGISTRY.get(str(entry.get("kind")))
    if kind is None or kind.fields != "keys":
        return
    stat.keys_per_person = int(entry.get("keys_per_person") or 1)
    stat.with_counts = bool(entry.get("with_counts", True))
    stat.max_keys = int(entry.get("max_keys") or 1)


def selection_name(code: str) -> str:
    """A partition selection mechanism in the reader's language (the code if unknown)."""
    names = {
        "laplace_threshold": gettext("Laplace noise and a threshold"),
        "gaussian_threshold": gettext("Gaussian noise and a threshold"),
        "optimal_policy": gettext("the optimal selection policy for one key per person"),
    }
    return names.get(code, code)


def probability_text(needed: dict[str, int]) -> str:
    """ "a key held by 20 persons is published with probability 50 %; ... 95 %"."""
    return "; ".join(
        gettext("a key held by %(persons)s persons is published with probability %(p)s")
        % {
            "persons": formatting.integer(needed[p]),
            "p": formatting.percent(Fraction(p)),
        }
        for p in PREVIEW_PROBABILITIES
        if p in needed
    )


def _noise(stat: StatisticPlan, plan: ReleasePlan) -> tuple[NoiseReview, ...]:
    k = Fraction(stat.keys_per_person)
    rows = gettext("persons")
    out = []
    for spec in dp.statistic_noise(plan=plan, stat=stat):
        gaussian = spec.noise == "discrete_gaussian"
        value = Fraction(spec.sigma if gaussian else spec.scale)
        out.append(
            NoiseReview(
                part="",
                distribution=gettext("discrete Gaussian") if gaussian else gettext(
                    "discrete Laplace"
                ),
                parameter=pgettext("noise", "sigma") if gaussian else pgettext("noise", "scale"),
                scale=value, unit=rows, l1_sensitivity=k,
                l2_sensitivity=Fraction(spec.l2_sensitivity),
                granularity=Fraction(1), epsilon=Fraction(stat.epsilon),
                delta=Fraction(stat.delta),
                scale_text=formatting.scale(value),
                sensitivity_text=sensitivity_text(
                    l1=k, l2=Fraction(spec.l2_sensitivity), unit=rows, gaussian=gaussian,
                    bound=plan.dataset.contribution_bound,
                ),
            )
        )  # fmt: skip
    return tuple(out)


def statistic_review(*, plan: ReleasePlan, stat: StatisticPlan) -> StatisticReview:
    """The review of one statistic of the categories found in the data."""
    preview = dp.statistic_accuracy(plan=plan, stat=stat)
    selection = stat_selection(stat)
    one = preview["halfwidth"]
    column = stat.column.name if stat.column else ""
    details = [
        (
            gettext("Selection"),
            gettext(
                "%(mechanism)s: a key is published only when its noisy count of persons "
                "reaches the public threshold %(threshold)s"
            )
            % {
                "mechanism": selection_name(selection.mechanism),
                "threshold": formatting.integer(selection.threshold or 0),
            },
            "selection",
        ),
        (gettext("Release probability"), probability_text(preview["persons_for_probability"]),
         "release-probability"),
        (
            gettext("Keys per person"),
            gettext(
                "At most %(k)s distinct keys of one person are counted, chosen at random; a "
                "person counts once in a key however many rows hold it"
            )
            % {"k": formatting.integer(stat.keys_per_person)},
            "keys-per-person",
        ),
        (
            gettext("Published"),
            (
                gettext("the keys with their noisy counts, at most %(max)s (the largest counts)")
                if stat.with_counts
                else gettext(
                    "the keys only, at most %(max)s (a uniformly random choice when more pass)"
                )
            )
            % {"max": formatting.integer(stat.max_keys)},
            "published",
        ),
    ]  # fmt: skip
    return StatisticReview(
        number=stat.position + 1,
        label=stat.label,
        kind=stat.kind,
        kind_text=gettext("Categories found in the data (partition selection)"),
        estimates_text=gettext(
            "The values of %(column)s held by enough persons, found in the data; the number "
            "of distinct persons holding each one"
        )
        % {"column": column},
        columns=tuple(ColumnReview.of(c) for c in stat.columns),
        category="",
        clip_lower=None,
        clip_upper=None,
        clip_text=gettext("Not applicable: counts need no clipping."),
        cells=int(preview["cells"]),
        out_of_range_text=gettext(
            "Every value is a key of its own; its declared categories, if any, are not used."
        ),
        missing_text=gettext("Missing values (and missing-value codes) are not a key."),
        mechanism="partition_selection",
        mechanism_text=gettext("Partition selection: %(mechanism)s")
        % {"mechanism": selection_name(selection.mechanism)},
        epsilon=stat.epsilon,
        delta=stat.delta,
        noise=_noise(stat, plan),
        unit=gettext("persons"),
        n_guess=None,
        halfwidth=one,
        halfwidth_simultaneous=one,
        halfwidth_text=(
            gettext("±%(width)s persons per published count") % {"width": formatting.halfwidth(one)}
            if one is not None
            else gettext("No counts are published.")
        ),
        halfwidth_simultaneous_text="",
        details=tuple(details),
    )
