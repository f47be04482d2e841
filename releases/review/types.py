"""The review document's typed values (built by releases.review.selectors).

Numbers stay exact here; the `*_text` fields are written with dpportal.formatting.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction

from budgets.models import BudgetRequest
from budgets.selectors import BudgetStanding, SpendStanding, StatisticLine
from datasets.models import Column
from releases.models import Release
from releases.review.text import domain_text


@dataclass(frozen=True)
class ColumnReview:
    """A column's declared public domain, as frozen in the release's specification."""

    name: str
    kind: str
    categories: tuple[str, ...]
    lower: Decimal | None
    upper: Decimal | None
    bin_edges: tuple[str, ...]
    missing: str
    derived_from_data: tuple[str, ...]
    domain_text: str

    @classmethod
    def of(cls, column: Column) -> ColumnReview:
        """The review of one declared column: its frozen domain and how a reviewer reads it."""
        return cls(
            name=column.name,
            kind=column.kind,
            categories=tuple(column.categories),
            lower=column.lower,
            upper=column.upper,
            bin_edges=tuple(column.bin_edges),
            missing=column.missing,
            derived_from_data=tuple(column.derived_from_data),
            domain_text=domain_text(column),
        )


@dataclass(frozen=True)
class NoiseReview:
    """One noise draw of a statistic (a mean has two: its sum's and its count's).

    `scale` (the Laplace scale b, or the Gaussian sigma) and the sensitivities are in
    the data's units: the sampled grid units times `granularity`.
    """

    part: str
    distribution: str
    parameter: str
    scale: Fraction
    unit: str
    l1_sensitivity: Fraction
    l2_sensitivity: Fraction
    granularity: Fraction
    epsilon: Fraction
    delta: Fraction
    scale_text: str
    sensitivity_text: str


@dataclass(frozen=True)
class StatisticReview:
    number: int
    label: str
    kind: str
    kind_text: str
    estimates_text: str
    columns: tuple[ColumnReview, ...]
    category: str
    clip_lower: Decimal | None
    clip_upper: Decimal | None
    clip_text: str
    cells: int
    out_of_range_text: str
    missing_text: str
    mechanism: str
    mechanism_text: str
    epsilon: Decimal
    delta: Decimal
    noise: tuple[NoiseReview, ...]
    unit: str
    n_guess: int | None
    halfwidth: float | None
    halfwidth_simultaneous: float | None
    halfwidth_text: str
    halfwidth_simultaneous_text: str
    # grouped kinds: (heading, text, data-param) rows such as groups, grid, epsilon split
    details: tuple[tuple[str, str, str], ...] = ()


@dataclass(frozen=True)
class PrivacyUnitReview:
    id_column: str
    contribution_bound: int
    text: str
    project_text: str


@dataclass(frozen=True)
class EarlierRelease:
    id: int
    title: str
    status: str
    status_text: str
    epsilon: Decimal
    delta: Decimal
    requested_at: datetime | None
    published_at: datetime | None


@dataclass(frozen=True)
class ReviewDocument:
    budget_request: BudgetRequest
    release: Release | None
    dataset_name: str
    mechanism: str
    mechanism_text: str
    confidence: Decimal | None
    confidence_text: str
    privacy_unit: PrivacyUnitReview | None
    statistics: tuple[StatisticReview, ...]
    preview_lines: tuple[StatisticLine, ...]
    notice: str
    budget: BudgetStanding
    spend: SpendStanding | None  # tight accounting (None: the ledger could not be accounted)
    earlier_releases: tuple[EarlierRelease, ...]
    earlier_epsilon_spent: Decimal
    earlier_delta_spent: Decimal
