"""The plan the builder's input parses to: a release and its statistics, typed, public only.

Values with no logic of their own, apart so that the parser (plan), the epsilon
split (allocation) and the statistics' own parsing (plan_stats) all name them
without importing one another in a circle.
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
    # grouped, quantile and spread kinds (releases.services.plan_stats)
    group_column: Column | None = None
    group_column2: Column | None = None
    quantiles: list[str] = field(default_factory=list)
    step: Decimal | None = None
    grid: tuple = ()  # quantiles: the public candidate grid (Fractions)

    @property
    def columns(self) -> list[Column]:
        return [c for c in (self.column, self.column2) if c is not None]

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

    @property
    def cost_epsilon(self) -> Decimal:
        return sum((s.epsilon for s in self.statistics), Decimal(0))

    @property
    def cost_delta(self) -> Decimal:
        return sum((s.delta for s in self.statistics), Decimal(0))
