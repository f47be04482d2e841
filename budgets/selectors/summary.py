"""A project's budget at one moment, exact: caps, spent, committed and what remains.

A value with no queries of its own: the budget selectors build it from the
ledger, and the accountant (accounting.cost_fits) reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from budgets import amounts


@dataclass(frozen=True)
class BudgetSummary:
    """A project's budget, exact: spent = charges; committed = charges + open reservations."""

    epsilon_cap: Decimal
    delta_cap: Decimal
    epsilon_spent: Decimal
    delta_spent: Decimal
    epsilon_committed: Decimal
    delta_committed: Decimal
    epsilon_remaining: Decimal
    delta_remaining: Decimal
    epsilon_reserved: Decimal = amounts.ZERO
    delta_reserved: Decimal = amounts.ZERO

    def after(self, *, epsilon: Decimal, delta: Decimal) -> dict[str, Decimal]:
        """What would remain after committing a further `epsilon`, `delta`."""
        return {
            "epsilon_remaining": amounts.sub(self.epsilon_remaining, epsilon),
            "delta_remaining": amounts.sub(self.delta_remaining, delta),
        }

    def percent(self, which: str) -> dict[str, float]:
        """Spent and committed as percentages of the cap (display only)."""
        cap = getattr(self, f"{which}_cap")
        if cap <= 0:
            return {"spent": 0.0, "committed": 0.0}
        spent = float(getattr(self, f"{which}_spent") / cap * 100)
        committed = float(getattr(self, f"{which}_committed") / cap * 100)
        return {"spent": min(spent, 100.0), "committed": min(committed, 100.0)}
