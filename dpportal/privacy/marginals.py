"""The optimal Gaussian strategy for a workload of marginals, with exact variances.

Source: Y. Xiao, G. Wang, D. Zhang, D. Kifer, "An Optimal and Scalable Matrix
Mechanism for Noisy Marginals under Convex Loss Functions" (ResidualPlanner),
NeurIPS 2023. Notation: attributes i with domain sizes n_i; x_A the marginal
table on attributes A (a vector of prod n_i cells).

Residuals. Per attribute let Q_i be an orthonormal basis of the vectors summing
to 0 ((n_i - 1) x n_i, rows orthogonal to the all-ones vector). The residual of A
is r_A = (kron_{i in A} Q_i) x_A. For every S, since I = Q_i^T Q_i + J/n_i,

    x_S = sum_{A subset of S} (kron_{i in A} Q_i^T  kron_{i in S minus A} 1/n_i) r_A,   (1)

and the residual spaces are mutually orthogonal. The strategy measures r_A for
every A in the workload's closure (every subset of a published marginal), each
once, with noise N(0, s_A I), and estimates every published marginal by (1) with
the noisy residuals. The estimate is unbiased, and it is the only linear unbiased
estimate from those measurements (they are a basis of the residuals a published
table depends on): the published tables are consistent by construction, each
lower marginal being exactly the sum of every higher one over the attributes it
lacks (the terms of (1) for attributes summed out vanish: Q_i 1 = 0).

Privacy. One row in cell c moves x_A by e_c; the residual moves by
(kron Q_i) e_c, whose squared norm is p_A = prod_{i in A} (n_i - 1)/n_i, the same
for every cell. The measurements are independent, so (Renyi divergences add)
the strategy is rho-zCDP with rho = L**2 sum_A p_A / (2 s_A) when a person adds or
removes at most L rows (their shift is a sum of L one-row shifts, and the norm
sqrt(sum_A ||shift_A||**2 / s_A) obeys the triangle inequality).

Variance. Each cell of the estimate of S has the same variance (the diagonal of
(1) with Q_i^T Q_i = I - J/n_i):

    V_S = sum_{A subset of S} s_A prod_{i in A} (n_i - 1)/n_i prod_{i in S minus A} 1/n_i**2.

Optimum. The total squared error of the published tables is sum_A s_A v_A with
v_A = prod_{i in A} (n_i - 1) sum_{published S containing A} prod_{i in S minus A} 1/n_i.
Minimising it subject to sum_A p_A / (2 s_A) = rho_1 (Lagrange; ResidualPlanner's
closed form for the sum-of-variances loss, optimal among all Gaussian linear
mechanisms for marginals) gives s_A = sqrt(p_A / v_A) T / (2 rho_1),
T = sum_A sqrt(p_A v_A), and a total squared error of T**2 / (2 rho_1).

Exact noise. Each s_A is rounded UP to 6 significant digits (rho can only fall),
and the residual is measured with integer contrasts rather than Q_i: the
Helmert rows h_j = (1, ..., 1, -j, 0, ...) (j ones), j = 1..n-1, are orthogonal
integer vectors with ||h_j||**2 = j (j + 1) and Q_i = diag(1/||h_j||) H_i. So
coordinate (j_i) of A is the integer query (kron h_{j_i}) x_A plus independent
discrete Gaussian noise of variance s_A prod ||h_{j_i}||**2, drawn exactly
(dpportal.privacy.samplers.discrete_gaussian_variance). Dividing by the norms
gives r_A with noise of variance at most s_A per coordinate. Privacy holds
exactly: for integer shifts the discrete Gaussian's Renyi divergence is at most
the continuous one's, alpha Delta**2 / (2 sigma**2) (Canonne, Kamath, Steinke 2020,
Prop. 5 and Thm 14), so the coordinates of A add to alpha sum_j (h_j . e_c)**2 /
(2 s_A ||h_j||**2) = alpha p_A / (2 s_A): the same rho as above, with no
approximation. The variances stated are the continuous ones, s_A: a discrete
Gaussian's variance is below its parameter (CKS Prop. 19), by a relative
2e-7 or less once the parameter is 1 or more.

Budget. The statistic's (epsilon, delta) share is turned into the largest rho
whose zCDP conversion (CKS Cor. 13) meets it, through the same calibration as
every other Gaussian vector (calibration.gaussian_sigma, multivariate, at
Delta2 = 1), and the ledger records one zCDP Gaussian at that rho
(mechanism_records.zcdp_gaussian): the Renyi accountant composes it exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property
from typing import Any

from dpportal.privacy.calibration import gaussian_sigma
from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.marginal_workload import Marginal, Workload
from dpportal.privacy.mechanism_records import MechanismRecord
from dpportal.privacy.params import (
    check_confidence,
    check_contribution_bound,
    check_delta,
    check_epsilon,
    exact_str,
    round_up_sig,
)
from dpportal.privacy.tails import normal_upper_quantile

__all__ = [
    "MECHANISM",
    "MarginalPlan",
    "baseline_total_error",
    "epsilon_for_halfwidth",
    "plan_marginals",
]

MECHANISM = "residual_planner"
#: significant digits of each residual's noise variance (rounded up)
VARIANCE_DIGITS = 6


def _privacy_weight(workload: Workload, a: Marginal) -> Fraction:
    """p_A: the squared norm of one row's shift of residual A."""
    return math.prod(
        (Fraction(workload.sizes[i] - 1, workload.sizes[i]) for i in a), start=Fraction(1)
    )


def _error_weight(workload: Workload, a: Marginal) -> Fraction:
    """v_A: the total squared error of the published tables per unit of s_A."""
    inside = set(a)
    spread = sum(
        (
            math.prod(
                (Fraction(1, workload.sizes[i]) for i in s if i not in inside), start=Fraction(1)
            )
            for s in workload.marginals
            if inside <= set(s)
        ),
        start=Fraction(0),
    )
    return math.prod((workload.sizes[i] - 1 for i in a), start=1) * spread


def optimal_variances(workload: Workload, rho_one: Fraction) -> dict[Marginal, Fraction]:
    """s_A minimising the total squared error at zCDP rho_one for one row (module docstring),
    rounded up so that sum_A p_A / (2 s_A) <= rho_one exactly."""
    weights = {
        a: (_privacy_weight(workload, a), _error_weight(workload, a)) for a in workload.closure
    }
    total = sum(math.sqrt(p * v) for p, v in weights.values())
    factor = Fraction(1)
    while True:
        variances = {
            a: round_up_sig(
                Fraction(math.sqrt(p / v) * total / (2 * float(rho_one))) * factor, VARIANCE_DIGITS
            )
            for a, (p, v) in weights.items()
        }
        if sum(p / (2 * variances[a]) for a, (p, _) in weights.items()) <= rho_one:
            return variances
        factor *= Fraction(1000001, 1000000)


@dataclass(frozen=True)
class MarginalPlan:
    """The strategy for one workload at one budget: exact noise variances and what they give.

    epsilon, delta: the statistic's share; sigma: the calibrated zCDP Gaussian at
    Delta2 = 1 (rho_charged = 1 / (2 sigma**2), what the ledger records);
    variances: s_A per residual of the closure (orthonormal units, exact).
    """

    workload: Workload
    epsilon: Fraction
    delta: Fraction
    contribution_bound: int
    sigma: Fraction
    variances: dict[Marginal, Fraction]

    @property
    def rho_charged(self) -> Fraction:
        return 1 / (2 * self.sigma * self.sigma)

    @cached_property
    def rho(self) -> Fraction:
        """The zCDP the measurements spend (at most rho_charged)."""
        return self.contribution_bound**2 * sum(
            _privacy_weight(self.workload, a) / (2 * s) for a, s in self.variances.items()
        )

    def cell_variance(self, marginal: Marginal) -> Fraction:
        """V_S: the variance of every cell of the published table `marginal`."""
        sizes, inside = self.workload.sizes, set(marginal)
        out = Fraction(0)
        for a, s in self.variances.items():
            if set(a) <= inside:
                term = s * _privacy_weight(self.workload, a)
                for i in inside - set(a):
                    term /= sizes[i] * sizes[i]
                out += term
        return out

    def halfwidth(self, marginal: Marginal, confidence: object, cells: int = 1) -> float:
        """The per-cell interval half-width at `confidence`, Bonferroni over `cells`."""
        beta = 1 - float(check_confidence(confidence))
        return normal_upper_quantile(beta / (2 * max(1, cells))) * math.sqrt(
            self.cell_variance(marginal)
        )

    @cached_property
    def total_error(self) -> Fraction:
        """The expected total squared error of all published cells: sum_S cells_S V_S."""
        return sum(
            (self.workload.cells(m) * self.cell_variance(m) for m in self.workload.marginals),
            start=Fraction(0),
        )

    def records(self) -> list[MechanismRecord]:
        """One zCDP Gaussian at rho_charged: the measurements are rho-zCDP, rho <= rho_charged."""
        return [
            MechanismRecord.zcdp_gaussian(
                sensitivity=1, sigma=self.sigma, epsilon=self.epsilon, delta=self.delta
            )
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "mechanism": MECHANISM,
            "sizes": list(self.workload.sizes),
            "marginals": [list(m) for m in self.workload.marginals],
            "epsilon": exact_str(self.epsilon),
            "delta": exact_str(self.delta),
            "contribution_bound": self.contribution_bound,
            "sigma": exact_str(self.sigma),
            "rho_charged": exact_str(self.rho_charged),
            "rho": exact_str(self.rho),
            "residuals": [
                {"marginal": list(a), "variance": exact_str(s)} for a, s in self.variances.items()
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MarginalPlan:
        return cls(
            workload=Workload.of(data["sizes"], data["marginals"]),
            epsilon=Fraction(data["epsilon"]),
            delta=Fraction(data["delta"]),
            contribution_bound=int(data["contribution_bound"]),
            sigma=Fraction(data["sigma"]),
            variances={tuple(r["marginal"]): Fraction(r["variance"]) for r in data["residuals"]},
        )


def plan_marginals(
    workload: Workload, *, epsilon: object, delta: object, contribution_bound: object = 1
) -> MarginalPlan:
    """The optimal strategy for `workload` at the statistic's (epsilon, delta) share."""
    eps = check_epsilon(epsilon)
    dlt = check_delta(delta, mechanism="gaussian")
    if dlt == 0:
        raise PrivacyParameterError(gettext_noop("a cross-tabulation needs a delta above 0"))
    bound = int(check_contribution_bound(contribution_bound))
    calibration = gaussian_sigma(epsilon=eps, delta=dlt, l2_sensitivity=1, multivariate=True)
    rho_one = calibration.rho / (bound * bound)
    return MarginalPlan(
        workload=workload,
        epsilon=eps,
        delta=dlt,
        contribution_bound=bound,
        sigma=calibration.sigma,
        variances=optimal_variances(workload, rho_one),
    )


def baseline_total_error(
    workload: Workload, rho: Fraction, contribution_bound: int = 1
) -> Fraction:
    """Total squared error of publishing each marginal as its own Gaussian histogram at rho
    split equally: each cell's variance is L**2 k / (2 rho) for k tables (one row moves one
    cell of each table by 1)."""
    k = len(workload.marginals)
    per_cell = Fraction(contribution_bound**2 * k) / (2 * rho)
    return workload.published_cells * per_cell


def epsilon_for_halfwidth(
    workload: Workload,
    *,
    target: object,
    delta: object,
    confidence: object,
    contribution_bound: object = 1,
) -> Fraction:
    """The smallest epsilon (3 significant digits, rounded up) whose largest per-cell
    half-width over the published tables is at most `target`."""
    goal = float(Fraction(str(target)) if not isinstance(target, Fraction) else target)
    if not goal > 0:
        raise PrivacyParameterError(gettext_noop("the target half-width must be above 0"))

    def widest(eps: Fraction) -> float:
        plan = plan_marginals(
            workload, epsilon=eps, delta=delta, contribution_bound=contribution_bound
        )
        return max(plan.halfwidth(m, confidence) for m in workload.marginals)

    low, high = Fraction(1, 10000), Fraction(1)
    while widest(high) > goal:
        low, high = high, high * 4
        if high > 10000:
            raise PrivacyParameterError(
                gettext_noop("no epsilon up to 10000 reaches a half-width of %(target)s"),
                target=goal,
            )
    for _ in range(40):
        mid = (low + high) / 2
        if widest(mid) > goal:
            low = mid
        else:
            high = mid
        if high - low < high / 10000:
            break
    eps = round_up_sig(high, 3)
    while widest(eps) > goal:
        eps = round_up_sig(eps * Fraction(1001, 1000), 3)
    return eps
