"""What a statistic kind is: the one definition every surface and the compute path read.

A kind states, once: what it costs, how its preview half-width and its noise are
planned from public parameters, the mechanism records the ledger composes, how a
true aggregate is noised (the only method that sees one), and how a stored result
is read back: its intervals at any confidence and each noise part with its unit.
The review document, the owner's results, the public page with its downloads, the
registry and the API render these facts; none of them re-derives one.

Every method works from public parameters (a ReleasePlan, a frozen spec entry or a
stored result entry), except `noisy_entry`, which receives a true aggregate in
memory, draws the noise once and returns only noisy, public values.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from django.conf import settings
from django.utils.translation import gettext

from dpportal import messages
from dpportal.errors import ValidationFailed
from dpportal.privacy.accounting import Cost
from dpportal.privacy.accuracy import explanation_halfwidth
from dpportal.privacy.errors import PrivacyParameterError
from dpportal.privacy.mechanism_records import MechanismRecord, records_from_explanation
from dpportal.privacy.noise import NoiseSpec
from dpportal.privacy.rng import RandomSource

if TYPE_CHECKING:
    from releases.plans import ReleasePlan, StatisticPlan


def frac(value: object) -> Fraction:
    """An exact Fraction of a Decimal, an exact string or an int (never through a float)."""
    return value if isinstance(value, Fraction) else Fraction(Decimal(str(value)))


@contextmanager
def statistic_errors(stat: StatisticPlan, frame: str | None = None) -> Iterator[None]:
    """Turn the math's PrivacyParameterError into the builder's ValidationFailed.

    `with statistic_errors(stat):` prefixes the problem with "Statistic N", in the
    reader's language (the error's message records are translated here); `frame`
    words the sentence (default "%(where)s: %(problem)s").
    """
    try:
        yield
    except PrivacyParameterError as exc:
        where = gettext("Statistic %(number)s") % {"number": stat.position + 1}
        raise ValidationFailed(
            (frame or gettext("%(where)s: %(problem)s"))
            % {"where": where, "problem": messages.translated(exc.records)}
        ) from exc


@dataclass(frozen=True)
class NoisePart:
    """One noise draw of a statistic as a person reads it: its law and parameter in a unit.

    part: "" for a statistic with one draw; "sum", "count", "squares" for the parts
    of a mean or a spread. distribution: "discrete_laplace" or "discrete_gaussian".
    symbol: "scale" (b) or "sigma". value: the parameter in `unit`, exact. unit:
    "rows" for counts, "value" for the column's units, "value²" for sums of squares.
    factor: value units per noise unit (the grid a part was drawn on; 1 for counts).
    """

    part: str
    distribution: str
    symbol: str
    value: Fraction
    unit: str
    factor: Fraction


class Cell(NamedTuple):
    """One published cell of a stored result at one confidence: its value and interval.

    low/high: the interval's ends (None where the kind has no value interval:
    quantiles, the most common category); halfwidth: set where the interval is
    symmetric; rank_error: a quantile's rank bound (records); about_low/about_high: a
    quantile's rank error in the data's units, an estimate under the assumption its kind
    states (None when it cannot be made); flag: a code such as UNINFORMATIVE (see
    `uninformative`) or "clamped_low" explaining an edge case. A named tuple: pages
    read tens of thousands of them, and it is several times cheaper to make than a
    frozen dataclass.
    """

    value: float
    low: float | None = None
    high: float | None = None
    halfwidth: float | None = None
    rank_error: float | None = None
    flag: str | None = None
    about_low: float | None = None
    about_high: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


#: The flag of a cell whose noisy values say nothing about it (see `uninformative`).
UNINFORMATIVE = "uninformative"


def uninformative(
    *,
    noisy_count: int,
    count_explanation: dict[str, Any],
    confidence: object,
    low: float,
    high: float,
    lowest: float,
    highest: float,
) -> bool:
    """Whether a ratio cell (a mean, a spread) is too uninformative to show a value.

    Judged from public, noisy values only, at the confidence the release was computed
    at (stored with its explanation, so every surface and every confidence a reader
    picks flag the same cells). A cell is uninformative when either holds:

    - its noisy count N~ cannot be told from zero: N~ <= h, where h is the count
      noise's half-width at that confidence (the tail bound of DESIGN.md section 3,
      Pr[|Y| >= h] <= beta, for the discrete law actually sampled). The count's own
      interval [N~ - h, N~ + h] then reaches 0: the group may be empty, and an empty
      group has no mean or spread to estimate;
    - its interval [low, high] at that confidence covers the whole range the
      statistic can take, [lowest, highest] (a mean: the declared bounds): the noisy
      values then say nothing the public bounds did not, and a point in that range
      (the midpoint, for a non-positive count) is not an estimate.

    A flagged cell keeps its noisy value in the machine-readable downloads; pages
    show "too few records to estimate" instead of a number or a bar.
    """
    if noisy_count <= explanation_halfwidth(count_explanation, confidence):
        return True
    slack = 1e-9 * max(1.0, abs(highest - lowest))
    return low <= lowest + slack and high >= highest - slack


def clamped_at_zero(cell: Cell) -> Cell:
    """A count as shown "rounded and clamped at zero", with an interval that agrees.

    The shown value is v' = max(0, round(v)). A true count x is never negative, and
    clamping at 0 is the projection onto [0, inf), which never moves a value away
    from any point of that set: |max(0, v) - x| <= |v - x| for every x >= 0. So if
    x lies within h of the noisy v, it lies within h + |v' - max(0, v)| of v'
    (rounding moves it at most by that much). The shown interval is therefore
    [max(0, v' - h'), v' + h'] with h' = h + |v' - max(0, v)|: it holds whenever the
    noisy value's interval holds (same confidence), always contains the value shown
    beside it, and never goes below 0. A noisy count far below zero (an interval of
    -270 to -10) shows as 0 with the interval 0 to h: "at most h".
    """
    projected = max(0.0, cell.value)
    shown = float(max(0, round(cell.value)))
    if cell.halfwidth is not None:
        h = cell.halfwidth + abs(shown - projected)
        return cell._replace(value=shown, low=max(0.0, shown - h), high=shown + h)
    if cell.low is None or cell.high is None:
        return cell._replace(value=shown)
    low, high = max(0.0, cell.low), max(0.0, cell.high)
    return cell._replace(value=shown, low=min(low, shown), high=max(high, shown))


def shown_as(cell: Cell, shown: float) -> Cell:
    """A cell shown as the whole number `shown` (>= 0) instead of its noisy value, with an
    interval that agrees: if the true x is within h of the noisy v, it is within
    h' = h + |shown - v| of `shown`, and never below 0 (as clamped_at_zero argues)."""
    if cell.halfwidth is None:
        return clamped_at_zero(cell)
    h = cell.halfwidth + abs(shown - cell.value)
    return cell._replace(value=float(shown), low=max(0.0, shown - h), high=shown + h)


def exact_fraction(value: Any) -> Fraction:
    # stored as exact strings ("10/3", "0.0009765625"); *_float only as a fallback
    return Fraction(str(value)) if not isinstance(value, float) else Fraction(repr(value))


def noise_part(explanation: dict[str, Any], *, part: str, unit: str, factor: Fraction) -> NoisePart:
    """One stored noise explanation (NoiseSpec.describe) as a NoisePart in `unit`."""
    if explanation.get("noise") == "discrete_gaussian":
        symbol, raw = "sigma", explanation.get("sigma", explanation.get("sigma_float"))
    else:
        symbol, raw = "scale", explanation.get("scale", explanation.get("scale_float"))
    if raw is None:
        raise ValueError("the explanation names no noise parameter")
    return NoisePart(
        part=part,
        distribution=str(explanation.get("noise") or "discrete_laplace"),
        symbol=symbol,
        value=exact_fraction(raw) * factor,
        unit=unit,
        factor=factor,
    )


def spec_noise_part(spec: NoiseSpec, *, part: str, unit: str, factor: Fraction) -> NoisePart:
    """A planned NoiseSpec as the NoisePart its result will state (same unit, same value)."""
    gaussian = spec.noise == "discrete_gaussian"
    return NoisePart(
        part=part,
        distribution=spec.noise,
        symbol="sigma" if gaussian else "scale",
        value=Fraction(spec.sigma if gaussian else spec.scale) * factor,
        unit=unit,
        factor=factor,
    )


class StatisticKind:
    """The interface every statistic kind implements; see the module docstring.

    Class attributes:
    - name: the stored code (releases.models.Statistic.Kind).
    - pure: the mechanism is pure epsilon-DP whatever the release's mechanism
      (no delta share is allocated to it).
    - grouped: its cells are the groups of declared grouping columns (optional ones
      unless groups_required).
    - bounded: the owner gives lower/upper (clipping bounds or a quantile grid).
    - fields: which builder fields it reads: "basic" (releases.services.plan),
      "grouped" (grouping columns, quantiles, grid: releases.services.plan_stats) or
      "crosstab" (columns and marginal tables: releases.services.plan_crosstab) or
      "bounds" (a column and its search grid: releases.services.plan_bounds).
    - clampable: its values are counts, shown rounded and clamped at 0 beside the noisy ones.
    - aggregate: what the compute readers produce for it: "count" (cell counts),
      "sum" (grid-unit sums), "sum_count" (sums and counts), "spread" (counts,
      centred sums and squares), "ranks" (counts per candidate cell) or "marginals"
      (one count array per maximal marginal table of a cross-tabulation) or
      "grid_counts" (counts per cell of a public search grid's edges: private bounds).
    """

    name: ClassVar[str]
    pure: ClassVar[bool] = False
    grouped: ClassVar[bool] = False
    groups_required: ClassVar[bool] = False
    bounded: ClassVar[bool] = False
    fields: ClassVar[str] = "basic"
    clampable: ClassVar[bool] = False
    aggregate: ClassVar[str] = "count"
    #: the name of a setting that caps this kind's cells below the per-statistic limit,
    #: in one statistic and in all the release's statistics that share the setting (a
    #: kind whose stored result costs more per cell to read back); None for none
    cell_limit_setting: ClassVar[str | None] = None
    #: its cells are its columns' (or groups') declared cells, so the pages can tell
    #: dpportal's own "Other" and "Missing" cells by their place; False for cells found in
    #: the data (a key named "Other" is a key)
    cells_on_axes: ClassVar[bool] = True

    # --- planning: public parameters only --------------------------------------------

    def value_cells(self, stat: StatisticPlan) -> int:
        """How many values the statistic publishes (a histogram's cells, a grouping's groups)."""
        return 1

    def cell_count(self, stat: StatisticPlan) -> int:
        """The statistic's cells, the unit of the cell limits: its published values times the
        noise parts read back for each (a mean's sum and count, a spread's count, sum and
        squares), since every surface formats and bounds each of them."""
        return self.value_cells(stat) * max(1, len(self.part_units(granularity=Fraction(1))))

    def cell_limit(self) -> int:
        """The most cells one statistic of this kind may have (settings, see cell_count)."""
        limit = int(settings.RELEASE_MAX_CELLS_PER_STATISTIC)
        if self.cell_limit_setting is not None:
            limit = min(limit, int(getattr(settings, self.cell_limit_setting)))
        return limit

    def cost(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Cost:
        """The statistic's (epsilon, delta) by basic composition of its parts."""
        delta = Fraction(0) if self.pure else frac(stat.delta)
        return Cost(frac(stat.epsilon), delta)

    def mechanism(self, release_mechanism: str) -> str:
        """The mechanism this statistic uses under the release's ("laplace"/"gaussian")."""
        return release_mechanism

    def mechanism_problem(self, release_mechanism: str) -> str | None:
        """Why this kind cannot be drawn under the release's mechanism, in the reader's
        language (None: it can); the builder refuses such a plan before anything else."""
        return None

    def accuracy(self, *, plan: ReleasePlan, stat: StatisticPlan) -> dict[str, Any]:
        """The preview: cells and half-widths per cell and for all cells at once."""
        raise NotImplementedError

    def noise(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[NoiseSpec, ...]:
        """The exact NoiseSpecs the mechanism will use (none for a selection)."""
        raise NotImplementedError

    def records(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[MechanismRecord]:
        """The mechanism records the ledger's accountant composes."""
        return [
            record
            for spec in self.noise(plan=plan, stat=stat)
            for record in records_from_explanation(spec.describe())
        ]

    def planned_parts(self, *, plan: ReleasePlan, stat: StatisticPlan) -> list[NoisePart]:
        """The noise parts the review document states (the result will state the same)."""
        units = self.part_units(granularity=self.planned_granularity(plan=plan, stat=stat))
        specs = self.noise(plan=plan, stat=stat)
        return [
            spec_noise_part(spec, part=part, unit=unit, factor=factor)
            for spec, (part, unit, factor) in zip(specs, units, strict=True)
        ]

    def planned_granularity(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """The grid a sum part is drawn on (1 where there is none)."""
        return Fraction(1)

    def planning_key(self, *, plan: ReleasePlan, stat: StatisticPlan) -> tuple[Any, ...]:
        """Everything accuracy/noise/records read of (plan, stat), hashable: equal keys
        give equal results (for memoising a sweep over totals)."""
        return ("position", stat.position, frac(stat.epsilon))

    def epsilon_for_target(self, *, plan: ReleasePlan, stat: StatisticPlan) -> Fraction:
        """The smallest epsilon meeting the statistic's target half-width (or rank error)."""
        raise NotImplementedError

    # --- the frozen specification ----------------------------------------------------

    def spec_fields(self, stat: Any, *, contribution_bound: int) -> dict[str, Any]:
        """The kind's own fields of a frozen spec entry (bounds, grid, groups, shares)."""
        return {}

    # --- drawing noise: the only method that receives a true aggregate ----------------

    def noisy_entry(
        self,
        *,
        entry: dict[str, Any],
        aggregate: Any,
        mechanism: str,
        confidence: str,
        contribution_bound: int,
        axes: list,
        rng: RandomSource | None = None,
    ) -> dict[str, Any]:
        """Noise one statistic's true aggregate once; return its public result entry."""
        raise NotImplementedError

    # --- reading a stored result ---------------------------------------------------------

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        """(part, unit, factor) of each noise draw, in the order the result stores them."""
        return [("", "rows", Fraction(1))]

    def explanation_parts(self, explanation: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """The stored explanation of each noise draw, in `part_units` order."""
        yield explanation

    def result_granularity(self, explanation: dict[str, Any]) -> Fraction:
        """The grid a stored result's sum part was drawn on (1 where there is none)."""
        return exact_fraction(explanation.get("granularity", "1"))

    def noise_parts(self, explanation: dict[str, Any]) -> list[NoisePart]:
        """Each noise draw of a stored result with its parameter in its own unit."""
        units = self.part_units(granularity=self.result_granularity(explanation))
        return [
            noise_part(part_explanation, part=part, unit=unit, factor=factor)
            for part_explanation, (part, unit, factor) in zip(
                self.explanation_parts(explanation), units, strict=True
            )
        ]

    def result_mechanism(self, entry: dict[str, Any], release_mechanism: str) -> str:
        """The mechanism a stored result was drawn with."""
        return str((entry.get("explanation") or {}).get("mechanism") or release_mechanism)

    def values_published(self, entry: dict[str, Any]) -> bool:
        """Whether a stored result publishes a value per cell (a selection may publish its
        cells alone: the most common category, keys found in the data without counts)."""
        return True

    def values(self, entry: dict[str, Any]) -> list[float]:
        """The stored noisy values as numbers, one per cell."""
        return [float(Decimal(v)) if isinstance(v, str) else float(v) for v in entry["values"]]

    def intervals(
        self, entry: dict[str, Any], *, confidence: object, simultaneous: bool = False
    ) -> list[Cell]:
        """Per cell: the value and its interval at `confidence` (post-processing only)."""
        raise NotImplementedError

    def display_values(self, entry: dict[str, Any]) -> list[int] | None:
        """A clampable kind's whole-number display of its cells, when the cells must agree
        with each other (None: each cell is shown rounded and clamped at 0 alone)."""
        return None

    def cell_accuracy_text(self, cell: Cell) -> str:
        """A kind whose cells have no value interval (quantiles): each cell's accuracy in
        words, in the reader's language; '' for the others (their interval says it)."""
        return ""

    def accuracy_note(self, entry: dict[str, Any]) -> str:
        """The assumption cell_accuracy_text is made under, in words ('' for none)."""
        return ""

    def selection_halfwidth(self, entry: dict[str, Any], *, confidence: object) -> float | None:
        """For a selection that publishes no value: the half-width of each noisy score."""
        return None

    def value_title(self, columns: list[str]) -> str:
        """What a value of this kind measures, in English ("sum of income")."""
        return ""

    def statement(self, entry: dict[str, Any]) -> str:
        """A result that is a sentence rather than values (private bounds), in the
        reader's language; '' for the kinds whose values and intervals say it."""
        return ""

    def limit_tradeoff(self, entry: dict[str, Any], *, confidence: object) -> list | None:
        """For a kind that measures rows per person: each candidate per-person limit L with
        the share of rows it keeps (dpportal.privacy.rows_per_person.Row), post-processing
        of the stored result; None for the others."""
        return None

    # --- the release as an OpenDP program (releases.opendp_program) --------------------

    #: why OpenDP has no counterpart of this kind, in English (the program prints it);
    #: read only where `opendp_parameters` gives None
    opendp_missing: ClassVar[str] = "OpenDP has no counterpart of this statistic"

    def opendp_parameters(self, entry: dict[str, Any], *, axes: list) -> dict[str, Any] | None:
        """A frozen spec entry's parameters as the OpenDP program reads them: "program"
        (the program's step: counts, argmax, sum, quantiles) and its typed values (floats,
        ints, strings; releases.kinds.opendp); None where OpenDP has no counterpart.
        `axes`: the entry's declared axes (releases.compute.Axis), as noisy_entry gets."""
        return None

    def layout(self, entry: dict[str, Any]) -> str:
        """How the public page draws it: bars, grouped_bars, heatmap, crosstab, figure,
        statement or quantiles."""
        if entry.get("shape"):
            return "grouped_bars"
        return "bars"


class SumAndCountParts:
    """The noise parts of a mean (grouped or not): its sum on the grid, its count in rows."""

    def part_units(self, *, granularity: Fraction) -> list[tuple[str, str, Fraction]]:
        return [("sum", "value", granularity), ("count", "rows", Fraction(1))]

    def result_granularity(self, explanation: dict[str, Any]) -> Fraction:
        return exact_fraction(explanation["sum"].get("granularity", "1"))

    def explanation_parts(self, explanation: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield explanation["sum"]
        yield explanation["count"]


def set_group_cells(out: dict[str, Any], axes: list) -> None:
    """Name a result entry's cells from its grouping axes (releases.compute.Axis):
    "All rows" without any, the labels of one, "row / column" of two (with its shape)."""
    if not axes:
        out["cells"] = ["All rows"]
    elif len(axes) == 2:
        rows, cols = axes[0].labels, axes[1].labels
        out["cells"] = [f"{r} / {c}" for r in rows for c in cols]
        out["shape"] = [len(rows), len(cols)]
        out["row_labels"], out["col_labels"] = list(rows), list(cols)
    else:
        out["cells"] = list(axes[0].labels)
