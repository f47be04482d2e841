"""Rows per person: how many persons have 1, 2, ..., 16, 17-19, ... rows, up to a cap.

A histogram over PUBLIC buckets of the number of rows each person (a value of the
dataset's ID column) has, all rows counted before the per-person limit L
(dpportal.privacy.rows_per_person: the buckets, the proof that the sensitivity is 1
whatever L is, and the trade-off table). Pure epsilon-DP: discrete Laplace of scale
1/epsilon on every bucket, under either release mechanism. Its one parameter, the
most rows per person to resolve (the cap, default 1000, at most the setting
RELEASE_ROWS_PER_PERSON_MAX_CAP), is stored in the statistic's `upper`.

What the owner reads from it (post-processing, no further cost): for each
candidate L, the share of rows kept and its range, and the suggested L for a share
(`tradeoff`, `suggestion`).
"""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings
from django.utils.translation import gettext

from dpportal.errors import ValidationFailed
from dpportal.privacy import mechanisms, noise
from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import Epsilon
from dpportal.privacy.rows_per_person import (
    DEFAULT_CAP,
    Bucket,
    Row,
    buckets,
    limit_tradeoff,
    suggest_limit,
)
from releases.kinds.base import frac, statistic_errors
from releases.kinds.counting import SymmetricIntervals, entry_head
from releases.kinds.planned import PlannedKind

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

#: the share of rows kept the suggestion aims at unless the owner picks another
DEFAULT_SHARE = Fraction(95, 100)


def bucket_label(bucket: Bucket) -> str:
    """A bucket as its cell is named: "3", "17–19", or "1001+" (more than the cap)."""
    if bucket.high is None:
        return f"{bucket.low}+"
    if bucket.low == bucket.high:
        return str(bucket.low)
    return f"{bucket.low}–{bucket.high}"


def max_cap() -> int:
    return int(getattr(settings, "RELEASE_ROWS_PER_PERSON_MAX_CAP", 100000))


def parse_cap(raw: object) -> int:
    """The builder's "most rows per person to resolve": a whole number in [1, max_cap()]
    (empty: DEFAULT_CAP); ValidationFailed naming the limit otherwise."""
    text = "" if raw is None else str(raw).strip()
    if not text:
        return DEFAULT_CAP
    try:
        cap = int(text)
    except ValueError:
        raise ValidationFailed(
            gettext("The most rows per person to resolve must be a whole number.")
        ) from None
    if not 1 <= cap <= max_cap():
        raise ValidationFailed(
            gettext("The most rows per person to resolve must be between 1 and %(limit)s.")
            % {"limit": max_cap()}
        )
    return cap


def stat_cap(stat: StatisticPlan) -> int:
    return DEFAULT_CAP if stat.upper is None else int(stat.upper)


class RowsPerPersonKind(SymmetricIntervals, PlannedKind):
    name = "rows_per_person"
    opendp_missing = "a private count of rows per person: OpenDP has no counterpart"
    pure = True
    clampable = True
    bounded = True  # its cap is stored in `upper`
    aggregate = "persons"

    def mechanism(self, release_mechanism: str) -> str:
        return "laplace"

    def cells(self, stat: StatisticPlan) -> int:
        return len(buckets(stat_cap(stat)))

    def planning_parameters(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """A histogram of persons: sensitivity 1 whatever L is (the unit is the person)."""
        return {
            "kind": "histogram",
            "mechanism": "laplace",
            "delta": 0,
            "confidence": frac(plan.confidence),
            "contribution_bound": 1,
            "cells": self.cells(stat),
        }

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        with statistic_errors(stat):
            return (
                noise.count_noise(
                    mechanism="laplace",
                    epsilon=frac(stat.epsilon),
                    contribution_bound=1,
                    cells=self.cells(stat),
                    statistic="histogram",
                ),
            )

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        """The cap (the buckets follow from it)."""
        return {"cap": DEFAULT_CAP if stat.upper is None else int(stat.upper)}

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        """`aggregate`: persons per bucket (int64, one per bucket of the cap). Noised at
        sensitivity 1: `contribution_bound` (L) does not enter."""
        cap = int(entry["cap"])
        counts = np.asarray(aggregate, dtype=np.int64)
        if counts.shape != (len(buckets(cap)),):
            raise ValueError("one count per bucket")
        result = mechanisms.release_counts(
            counts,
            mechanism="laplace",
            epsilon=Epsilon(entry["epsilon"]),
            contribution_bound=1,
            rng=rng,
        )
        del counts
        out = entry_head(entry)
        out["cells"] = [bucket_label(b) for b in buckets(cap)]
        out["values"] = list(result.values)
        out["cap"] = cap
        out["explanation"] = result.to_dict()
        return out

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        return "laplace"

    def value_title(self, columns: list[str]) -> str:
        return "persons"

    # --- post-processing for the owner -----------------------------------------------

    def limit_tradeoff(self, entry: dict[str, Any], *, confidence: object) -> list[Row]:
        """Each candidate L with the estimated share of rows kept and its range, the range
        from every bucket moved by the half-width for all buckets at once at `confidence`."""
        h = result_halfwidth(entry["explanation"], confidence=confidence, simultaneous=True)
        return limit_tradeoff(
            [int(v) for v in entry["values"]], buckets(int(entry["cap"])), Fraction(str(h))
        )

    def suggestion(self, rows: list[Row], share: object = DEFAULT_SHARE) -> Row:
        return suggest_limit(rows, share)


KINDS = (RowsPerPersonKind(),)
