"""Categories found in the data: the keys of a column that pass a private threshold.

For a column whose categories the owner cannot declare in advance, a release
publishes the values ("keys") held by enough persons, with their noisy counts or
the keys alone (partition selection, dpportal.privacy.partition_selection). The
aggregate is, per key, the number of DISTINCT persons holding it (rows when there
is no person column), each person counted in at most `keys_per_person` of their
keys (chosen uniformly at random with the release's CSPRNG); missing cells are not
a key. Counted by one query per statistic on DuckDB or Spark
(releases.compute.plan.Plan.keys_sql), the numpy readers as the oracle
(releases.compute.readers_keys). The selection needs a delta above 0 (a key's
mere presence is revealed with probability at most delta), so a Laplace release
refuses it.

A result entry holds the published keys as its cells, ordered by noisy count (then
key), their noisy counts as its values (none when keys only), "keys" (whether counts
are published, how many keys passed the threshold, whether the cap cut them) and
the selection's public parameters as its explanation, with the counts' noise under
"noise". No true count and no key that failed the threshold is ever stored. When
more keys pass than the cap (the statistic's max_keys), those with the largest
noisy counts are kept; keys only: a uniformly random subset from the CSPRNG, both
post-processing of the selection's output.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings
from django.utils.translation import gettext

from dpportal import formatting
from dpportal.errors import ValidationFailed
from dpportal.privacy.accuracy import result_halfwidth, spec_halfwidth
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.params import check_epsilon
from dpportal.privacy.partition_selection import KeySelection, plan_selection, select_keys
from dpportal.privacy.rng import RandomSource, uniform_keys
from releases.kinds.base import (
    Cell,
    NoisePart,
    StatisticKind,
    frac,
    noise_part,
    spec_noise_part,
    statistic_errors,
)
from releases.kinds.counting import entry_head

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan

#: the preview's release probabilities: the count a key needs to be published with each
PREVIEW_PROBABILITIES = ("0.5", "0.95")


@lru_cache(maxsize=256)
def _selection(
    epsilon: Fraction, delta: Fraction, keys_per_person: int, with_counts: bool
) -> KeySelection:
    """plan_selection, once per set of public parameters (a Gaussian threshold's search
    composes privacy loss distributions: the preview, review and worker ask often)."""
    return plan_selection(
        epsilon=epsilon, delta=delta, keys_per_person=keys_per_person, with_counts=with_counts
    )


def stat_selection(stat: StatisticPlan) -> KeySelection:
    """The selection of a parsed statistic at its (epsilon, delta) share."""
    with statistic_errors(stat):
        return _selection(
            frac(stat.epsilon), frac(stat.delta), int(stat.keys_per_person), stat.with_counts
        )


def entry_selection(entry: dict[str, Any]) -> KeySelection:
    """The selection of a frozen spec entry (see KeysKind.spec_fields): its epsilon parsed
    here, where it enters the math."""
    return _selection(
        check_epsilon(entry["epsilon"]),
        frac(entry["delta"]),
        int(entry["keys_per_person"]),
        bool(entry["with_counts"]),
    )


def counts_noise(selection: KeySelection) -> NoiseSpec | None:
    """The published counts' noise: none when only keys are published (a thresholding
    still draws noise then, but no value of it is published)."""
    return selection.noise_spec() if selection.with_counts else None


def published_order(
    selected: dict[str, int | None], *, cap: int, rng: RandomSource | None
) -> list[str]:
    """The published keys in order, at most `cap` of them: by noisy count (largest first),
    then key. Keys only: when more than `cap` passed, a uniformly random `cap` of them
    (keys from the CSPRNG), then by key. Post-processing of the selection's output."""
    keys = sorted(selected)
    with_counts = any(v is not None for v in selected.values())
    if with_counts:
        keys.sort(key=lambda k: -int(selected[k] or 0))
        return keys[:cap]
    if len(keys) > cap:
        order = np.argsort(uniform_keys(len(keys), rng), kind="stable")
        keys = sorted(keys[int(i)] for i in order[:cap])
    return keys


class KeysKind(StatisticKind):
    name = "keys"
    opendp_missing = (
        "the portal's partition selection, with its thresholds and keys per person: OpenDP's "
        "threshold mechanisms are calibrated differently"
    )
    fields = "keys"
    aggregate = "keys"
    clampable = True
    cells_on_axes = False

    # --- planning: public parameters only --------------------------------------------

    def mechanism_problem(self, release_mechanism: str) -> str | None:
        if release_mechanism != "gaussian":
            return gettext(
                "Categories found in the data need a delta above 0, which a Laplace release "
                "does not have: choose the Gaussian mechanism and a delta."
            )
        return None

    def mechanism(self, release_mechanism: str) -> str:
        return "partition_selection"

    def value_cells(self, stat: StatisticPlan) -> int:
        return max(1, int(stat.max_keys or settings.RELEASE_KEYS_MAX_SHOWN))

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return [("", "rows", Fraction(1))]

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """The persons a key needs to be published with probability 50 % and 95 %, the
        public threshold, and the counts' half-width (none when keys only)."""
        selection = stat_selection(stat)
        spec = counts_noise(selection)
        with statistic_errors(stat):
            needed = {p: selection.count_for_probability(float(p)) for p in PREVIEW_PROBABILITIES}
            halfwidth = float(spec_halfwidth(spec, frac(plan.confidence))) if spec else None
        return {
            "cells": self.value_cells(stat),
            "halfwidth": halfwidth,
            "halfwidth_simultaneous": None,
            "n_guess": None,
            "selection": selection.mechanism,
            "threshold": selection.threshold,
            "keys_per_person": selection.keys_per_person,
            "with_counts": selection.with_counts,
            "persons_for_probability": needed,
            # the builder writes them into its sentence as they are (it formats nothing)
            "persons_for_probability_text": {p: formatting.integer(n) for p, n in needed.items()},
        }

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        spec = counts_noise(stat_selection(stat))
        return (spec,) if spec is not None else ()

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        return list(stat_selection(stat).records())

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        return [
            spec_noise_part(spec, part="", unit="rows", factor=Fraction(1))
            for spec in self.noise(plan=plan, stat=stat)
        ]

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        return (
            "keys",
            frac(stat.epsilon),
            frac(stat.delta),
            stat.keys_per_person,
            stat.with_counts,
            stat.max_keys,
            frac(plan.confidence),
        )

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        raise ValidationFailed(
            gettext(
                "Statistic %(number)s: categories found in the data take no target "
                "half-width; give their epsilon."
            )
            % {"number": stat.position + 1}
        )

    # --- the frozen specification ----------------------------------------------------

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        """keys_per_person, with_counts and max_keys as the statistic stores them."""
        stored = getattr(stat, "keys", None) or {}
        return {
            "keys_per_person": int(stored.get("keys_per_person") or 1),
            "with_counts": bool(stored.get("with_counts", True)),
            "max_keys": int(stored.get("max_keys") or settings.RELEASE_KEYS_MAX_SHOWN),
        }

    # --- drawing noise: the only method that receives a true aggregate ----------------

    def noisy_entry(
        self, *, entry, aggregate, mechanism, confidence, contribution_bound, axes, rng=None
    ) -> dict[str, Any]:
        """`aggregate`: {key: distinct persons holding it} (memory only, dropped here)."""
        selection = entry_selection(entry)
        selected = select_keys(aggregate, selection, rng)
        order = published_order(selected, cap=int(entry["max_keys"]), rng=rng)
        out = entry_head(entry)
        out["cells"] = order
        out["values"] = [int(selected[k]) for k in order] if selection.with_counts else []
        out["keys"] = {
            "with_counts": selection.with_counts,
            "passed": len(selected),
            "capped": len(selected) > len(order),
            "max_keys": int(entry["max_keys"]),
        }
        del selected
        out["explanation"] = {**selection.to_dict(), "statistic": "keys"}
        spec = counts_noise(selection)
        if spec is not None:
            out["explanation"]["noise"] = spec.describe()
        return out

    # --- reading a stored result ---------------------------------------------------------

    def explanation_parts(self, explanation: dict[str, Any]):
        if explanation.get("noise"):
            yield explanation["noise"]

    def noise_parts(self, explanation: dict[str, Any]) -> list[NoisePart]:
        return [
            noise_part(part, part="", unit="rows", factor=Fraction(1))
            for part in self.explanation_parts(explanation)
        ]

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        return "partition_selection"

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """value ± h for each published key's noisy count (none when keys only). The
        interval describes the noise of a count; a published key's count passed the
        threshold, so near it the noisy counts lean high (the page says so)."""
        noise = (entry.get("explanation") or {}).get("noise")
        if not noise:
            return []
        values = self.values(entry)
        explanation = {**noise, "cells": max(1, len(values))}
        h = float(result_halfwidth(explanation, confidence=confidence, simultaneous=simultaneous))
        return [Cell(v, v - h, v + h, h) for v in values]

    def values_published(self, entry: dict[str, Any]) -> bool:
        return bool((entry.get("keys") or {}).get("with_counts", True))

    def selection_halfwidth(self, entry: dict[str, Any], *, confidence: object) -> float | None:
        return None

    def value_title(self, columns: list[str]) -> str:
        return "count"

    def layout(self, entry: dict[str, Any]) -> str:
        return "bars" if (entry.get("keys") or {}).get("with_counts", True) else "keys"


KINDS = (KeysKind(),)
