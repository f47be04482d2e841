"""A published release whose grouped mean has an empty group, and counts far below zero.

The grouped mean of income (bounds 0 to 200,000) by region has three groups: North
and South with hundreds of rows, and "Other" with none, noised the way the worker
noises them (dpportal.privacy.grouped_release). The 1-D histogram of the base
release (tests.public_builders) gets one cell whose noisy count is far below zero,
so that its rounded, clamped display must cut its interval at zero.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from dpportal.privacy import grouped_release, sensitivity
from dpportal.privacy.accuracy import result_halfwidth
from dpportal.privacy.rng import SeededTestRandom
from releases import lifecycle
from releases.models import Release, ReleaseResult, Statistic
from tests.public_builders import _domain, build_release

REGIONS = ["North", "South"]
CELLS = [*REGIONS, "Other"]
BOUNDS = (Fraction(0), Fraction(200000))
TRUE_ROWS = [500, 400, 0]
TRUE_MEAN = [40000, 30000, 0]
LABEL = "Mean income by region"


def grouped_mean_entry(*, epsilon: Fraction = Fraction(1), seed: int = 27) -> dict:
    lo, hi = BOUNDS
    gamma = sensitivity.sum_granularity(lo, hi, epsilon=epsilon / 2)
    units = [int(Fraction(m) / gamma) * n for m, n in zip(TRUE_MEAN, TRUE_ROWS, strict=True)]
    result = grouped_release.release_grouped_means(
        units, TRUE_ROWS, lower=lo, upper=hi, granularity=gamma, mechanism="laplace",
        epsilon=epsilon, confidence="0.95", rng=SeededTestRandom(seed),
    )  # fmt: skip
    explanation = result.to_dict()
    return {
        "kind": "grouped_mean", "label": LABEL, "columns": ["income"],
        "group_columns": ["region"], "category": None, "cells": list(CELLS), "shape": None,
        "row_labels": None, "col_labels": None, "values": list(explanation["estimates"]),
        "explanation": explanation, "epsilon": str(epsilon), "delta": "0",
    }  # fmt: skip


def _spec(entry: dict) -> dict:
    income = _domain("income", kind="numeric", type="float", lower="0", upper="200000")
    region = _domain("region", categories=list(REGIONS))
    return {
        "position": entry["position"], "kind": entry["kind"], "label": entry["label"],
        "columns": [income], "groups": [region], "category": None,
        "epsilon": entry["epsilon"], "delta": "0", "lower": "0", "upper": "200000",
        "sum_share": "1/2", "granularity": entry["explanation"]["sum"]["granularity"],
    }  # fmt: skip


def sink_histogram_cell(payload: dict, *, cell: int = 0) -> float:
    """Make the 1-D histogram's `cell` a noisy count of minus its half-width at 95 %, less
    10 (an interval wholly below zero, as noise can draw); return that half-width."""
    histogram = payload["statistics"][1]
    h = result_halfwidth(histogram["explanation"], confidence="0.95")
    value = -int(h) - 10
    histogram["values"][cell] = value
    histogram["explanation"]["values"][cell] = value
    return h


def build(*, project, owner, reviewer) -> Release:
    """The base release plus the grouped mean (position 6), with a sunk histogram cell."""
    release = build_release(project=project, owner=owner, reviewer=reviewer, publish=False)
    result = ReleaseResult.objects.get(release=release)
    payload = result.payload
    sink_histogram_cell(payload)
    entry = grouped_mean_entry()
    entry["position"] = len(payload["statistics"])
    payload["statistics"].append(entry)
    spec = dict(release.spec)
    spec["statistics"] = [*spec["statistics"], _spec(entry)]
    Statistic.objects.create(
        release=release, position=entry["position"], kind=entry["kind"], label=entry["label"],
        epsilon=Decimal(entry["epsilon"]), delta=Decimal(0),
    )  # fmt: skip
    ReleaseResult.objects.filter(pk=result.pk).update(payload=payload)
    Release.objects.filter(pk=release.pk).update(spec=spec)
    return lifecycle.release_publish(release=Release.objects.get(pk=release.pk), actor=owner)
