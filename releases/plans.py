"""A release's parsed plan: its statistics' public parameters, typed, before any data.

The builder's input is parsed once into these (releases.services.plan); every
statistic kind (releases.kinds) reads them to cost, preview and noise a statistic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal

from budgets.models import Project
from datasets.models import Column, Dataset


@dataclass
class StatisticPlan:
    position: int
    kind: str
    label: str
    label_zh: str = ""
    description: str = ""
    description_zh: str = ""
    column: Column | None = None
    column2: Column | None = None
    category: str = ""
    lower: Decimal | None = None
    upper: Decimal | None = None
    weight: Decimal = Decimal(1)
    hold: bool = False
    epsilon_given: Decimal | None = None
    target_halfwidth: float | None = None
    n_guess: int | None = None
    epsilon: Decimal = Decimal(0)
    delta: Decimal = Decimal(0)
    # grouping columns, quantiles and their grid (releases.services.plan_stats)
    group_column: Column | None = None
    group_column2: Column | None = None
    quantiles: list[str] = field(default_factory=list)
    step: Decimal | None = None
    grid: tuple = ()  # quantiles: the public candidate grid (Fractions)
    # cross-tabulation (releases.services.plan_crosstab): its declared columns, the
    # marginals to publish (canonical tuples of column indices, the total () included
    # when asked) and, when the owner asked for "all up to K columns", that K
    axes: list[Column] = field(default_factory=list)
    marginals: tuple[tuple[int, ...], ...] = ()
    way: int | None = None
    # private bounds (releases.services.plan_bounds): ends, outside, centre, unit, limit
    search: dict = field(default_factory=dict)
    # categories found in the data (releases.services.plan_keys): at most this many keys of
    # one person counted, their noisy counts published or not, the most keys published
    keys_per_person: int = 1
    with_counts: bool = True
    max_keys: int = 0

    @property
    def columns(self) -> list[Column]:
        if self.axes:
            return list(self.axes)
        return [c for c in (self.column, self.column2) if c is not None]

    @property
    def total(self) -> bool:
        """A cross-tabulation publishes the total count (the empty marginal)."""
        return () in self.marginals

    @property
    def group_columns(self) -> list[Column]:
        return [c for c in (self.group_column, self.group_column2) if c is not None]


@dataclass
class ReleasePlan:
    project: Project
    dataset: Dataset
    title: str
    description: str
    mechanism: str
    confidence: Decimal
    epsilon: Decimal
    delta: Decimal
    statistics: list[StatisticPlan] = field(default_factory=list)
    title_zh: str = ""
    description_zh: str = ""

    @property
    def cost_epsilon(self) -> Decimal:
        return sum((s.epsilon for s in self.statistics), Decimal(0))

    @property
    def cost_delta(self) -> Decimal:
        return sum((s.delta for s in self.statistics), Decimal(0))
