"""What a tight accountant needs to know about one noisy statistic: a `MechanismRecord`.

A record names the mechanism that produced a statistic and its exact public
parameters, frozen with the release's specification, plus the (epsilon, delta)
it was charged by basic composition and a multiplicity `count` (equal records
are composed by self-composition, so `count` copies cost one PLD power).

kinds (sensitivity, scale and sigma are in the units the noise was drawn in:
counts, or grid units for sums; sensitivity is an integer there):

| kind | parameters | basic cost of one use |
| discrete_laplace | sensitivity Delta, scale b | (Delta / b, 0): pure DP (CKS 2020, Section 2) |
| discrete_gaussian | sensitivity Delta, sigma, and the charged (eps, delta) | (eps, delta) |
| report_noisy_max | epsilon (= L / b for Laplace noise of scale b on monotone counts) | (eps, 0) |
| permute_and_flip | epsilon of ONE selection (a quantile) | (eps, 0): pure DP |
| zcdp_gaussian | l2 sensitivity Delta2 (rational), sigma, charged (eps, delta) | (eps, delta) |
| generic_eps_delta | epsilon, delta: any (eps, delta)-DP mechanism | (eps, delta) |

A histogram whose L rows per person may land in several cells is recorded as a
one-coordinate shift by L (sensitivity L): dpportal.privacy.calibration shows
that a single cell moved by L is the worst case among the shift patterns for
the discrete Gaussian, and tests/privacy checks the same numerically for the
discrete Laplace (exact hockey-stick divergence over every partition of L).

A vector of iid discrete Gaussian noise on which one person may move SEVERAL
coordinates (a grouped sum or mean part, a spread part, with L > 1 and more
than one cell) is a `zcdp_gaussian` record: its shift v has ||v||_2 <= Delta2
(dpportal.privacy.grouped, the l2 sensitivity its sigma was calibrated to), and
the multivariate discrete Gaussian with such a shift is rho-zCDP with
rho = Delta2**2 / (2 sigma**2) (Canonne, Kamath, Steinke 2020, Thm 14), i.e.
its Renyi divergence of every order alpha > 1 is at most alpha rho. This is the
form it is composed in (dpportal.privacy.rdp), because no exact one-dimensional
privacy profile is known for it: the privacy loss of a multivariate DISCRETE
Gaussian depends on the whole shift pattern, not on ||v||_2 alone, so recording
it as a 1-D shift by Delta2 would not be justified. Its charged (eps, delta)
(calibration.gaussian_sigma, CKS Cor. 13 at that rho) is kept too: it is the
record's basic cost and its stand-in in the PLD accountant.

A release's k quantiles are k independent permute-and-flip selections, each
pure eps_i-DP (McKenna & Sheldon 2020): one `permute_and_flip` record each.

`records_from_explanation` turns a stored result explanation (NoiseSpec.describe,
MeanResult.to_dict) into records, so ledger rows written before mechanism
records existed can still be accounted: anything it does not recognise becomes
a generic (eps, delta) record, which is always valid.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from dpportal.privacy.errors import PrivacyParameterError, gettext_noop
from dpportal.privacy.params import check_epsilon, exact_str, to_fraction

__all__ = [
    "RECORD_KINDS",
    "MechanismRecord",
    "records_from_explanation",
    "merge_records",
]

RECORD_KINDS = (
    "discrete_laplace",
    "discrete_gaussian",
    "report_noisy_max",
    "permute_and_flip",
    "zcdp_gaussian",
    "generic_eps_delta",
)
#: kinds whose only guarantee used is pure epsilon-DP (delta = 0)
PURE_KINDS = ("report_noisy_max", "permute_and_flip")


def _positive(value: object, name: str) -> Fraction:
    x = to_fraction(value, name)
    if x <= 0:
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be > 0, got %(value)s"), name=name, value=repr(value)
        )
    return x


def _integer(value: object, name: str) -> Fraction:
    x = _positive(value, name)
    if x.denominator != 1:
        raise PrivacyParameterError(
            gettext_noop("%(name)s must be an integer (in noise units), got %(value)s"),
            name=name,
            value=repr(value),
        )
    return x


@dataclass(frozen=True)
class MechanismRecord:
    """One mechanism, `count` times: exact parameters and its basic (epsilon, delta) per use.

    Build records with the class methods (`discrete_laplace`, `discrete_gaussian`,
    `report_noisy_max`, `generic`); they validate and convert to Fractions.
    """

    kind: str
    epsilon: Fraction
    delta: Fraction = Fraction(0)
    sensitivity: Fraction | None = None
    scale: Fraction | None = None
    sigma: Fraction | None = None
    count: int = 1

    def __post_init__(self) -> None:
        if self.kind not in RECORD_KINDS:
            raise PrivacyParameterError(
                gettext_noop("unknown mechanism kind %(kind)s"), kind=repr(self.kind)
            )
        if isinstance(self.count, bool) or not isinstance(self.count, int) or self.count < 1:
            raise PrivacyParameterError(
                gettext_noop("count must be an integer >= 1, got %(count)s"), count=repr(self.count)
            )
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        delta = to_fraction(self.delta, "delta")
        if not 0 <= delta < 1:
            raise PrivacyParameterError(
                gettext_noop("delta must be in [0, 1), got %(delta)s"), delta=repr(self.delta)
            )
        object.__setattr__(self, "delta", delta)
        if self.kind in ("discrete_laplace", "discrete_gaussian"):
            object.__setattr__(self, "sensitivity", _integer(self.sensitivity, "sensitivity"))
        if self.kind == "discrete_laplace":
            scale = _positive(self.scale, "scale")
            object.__setattr__(self, "scale", scale)
            if self.delta != 0 or self.epsilon < self.sensitivity / scale:
                raise PrivacyParameterError(
                    gettext_noop("a discrete Laplace record costs (sensitivity / scale, 0) or more")
                )
        if self.kind == "zcdp_gaussian":
            object.__setattr__(self, "sensitivity", _positive(self.sensitivity, "sensitivity"))
        if self.kind in ("discrete_gaussian", "zcdp_gaussian"):
            object.__setattr__(self, "sigma", _positive(self.sigma, "sigma"))
            if self.delta == 0:
                raise PrivacyParameterError(
                    gettext_noop("a discrete Gaussian record needs its charged delta")
                )
        if self.kind == "report_noisy_max" and self.delta != 0:
            raise PrivacyParameterError(
                gettext_noop("Report Noisy Max with Laplace noise is pure (delta = 0)")
            )
        if self.kind == "permute_and_flip" and self.delta != 0:
            raise PrivacyParameterError(gettext_noop("permute-and-flip is pure (delta = 0)"))

    @classmethod
    def discrete_laplace(
        cls, *, sensitivity: object, scale: object, count: int = 1
    ) -> MechanismRecord:
        """Discrete Laplace noise of scale b on a query of integer sensitivity Delta."""
        sens, b = _integer(sensitivity, "sensitivity"), _positive(scale, "scale")
        return cls("discrete_laplace", sens / b, Fraction(0), sens, b, None, count)

    @classmethod
    def discrete_gaussian(
        cls, *, sensitivity: object, sigma: object, epsilon: object, delta: object, count: int = 1
    ) -> MechanismRecord:
        """Discrete Gaussian N_Z(0, sigma**2) noise, charged (epsilon, delta) by basic sums."""
        return cls("discrete_gaussian", epsilon, delta, sensitivity, None, sigma, count)

    @classmethod
    def report_noisy_max(cls, *, epsilon: object, count: int = 1) -> MechanismRecord:
        """Report Noisy Max with Laplace noise of scale L / epsilon on monotone counts: eps-DP."""
        return cls("report_noisy_max", epsilon, Fraction(0), count=count)

    @classmethod
    def zcdp_gaussian(
        cls, *, sensitivity: object, sigma: object, epsilon: object, delta: object, count: int = 1
    ) -> MechanismRecord:
        """iid discrete Gaussian N_Z(0, sigma**2) on a vector whose shift has l2 norm <= Delta2.

        rho-zCDP with rho = Delta2**2 / (2 sigma**2) (CKS 2020, Thm 14); charged
        (epsilon, delta) by basic sums. Delta2 may be a rational upper bound.
        """
        return cls("zcdp_gaussian", epsilon, delta, sensitivity, None, sigma, count)

    @classmethod
    def permute_and_flip(cls, *, epsilon: object, count: int = 1) -> MechanismRecord:
        """One permute-and-flip selection at epsilon: pure eps-DP (McKenna & Sheldon 2020)."""
        return cls("permute_and_flip", epsilon, Fraction(0), count=count)

    @classmethod
    def generic(cls, *, epsilon: object, delta: object = 0, count: int = 1) -> MechanismRecord:
        """Any (epsilon, delta)-DP mechanism, accounted by its guarantee alone."""
        return cls("generic_eps_delta", epsilon, delta, count=count)

    @property
    def rho(self) -> Fraction | None:
        """The zCDP rho = Delta2**2 / (2 sigma**2) of a Gaussian record (None otherwise).

        For a discrete_gaussian record it is the one-coordinate case of CKS 2020, Thm 14.
        """
        if self.kind not in ("discrete_gaussian", "zcdp_gaussian"):
            return None
        return self.sensitivity * self.sensitivity / (2 * self.sigma * self.sigma)

    @property
    def key(self) -> tuple[Any, ...]:
        """Everything but the count: records with equal keys are the same mechanism."""
        return (self.kind, self.epsilon, self.delta, self.sensitivity, self.scale, self.sigma)

    def times(self, multiplicity: int) -> MechanismRecord:
        """The same mechanism used `multiplicity` times as often."""
        return replace(self, count=self.count * multiplicity)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable, exact strings: enough for anyone to recompute the total."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "epsilon": exact_str(self.epsilon),
            "delta": exact_str(self.delta),
            "count": self.count,
        }
        for name in ("sensitivity", "scale", "sigma"):
            value = getattr(self, name)
            if value is not None:
                out[name] = exact_str(value)
        if self.kind == "zcdp_gaussian":
            out["rho"] = exact_str(self.rho)  # derived, for readers; from_dict ignores it
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MechanismRecord:
        """The inverse of to_dict (strings, Decimals or numbers accepted)."""
        return cls(
            kind=data["kind"],
            epsilon=data["epsilon"],
            delta=data.get("delta", 0),
            sensitivity=data.get("sensitivity"),
            scale=data.get("scale"),
            sigma=data.get("sigma"),
            count=int(data.get("count", 1)),
        )


def merge_records(records: Iterable[MechanismRecord]) -> list[MechanismRecord]:
    """Equal mechanisms merged into one record whose count is the sum (order of first use)."""
    merged: dict[tuple[Any, ...], MechanismRecord] = {}
    for record in records:
        seen = merged.get(record.key)
        merged[record.key] = (
            record if seen is None else replace(seen, count=seen.count + record.count)
        )
    return list(merged.values())


def _from_noise(explanation: Mapping[str, Any]) -> MechanismRecord:
    """One noised coordinate block (count, histogram, sum, a mean's part, argmax)."""
    statistic = explanation.get("statistic")
    noise = explanation.get("noise")
    eps, delta = explanation["epsilon"], explanation.get("delta", "0")
    if statistic == "argmax":
        return MechanismRecord.report_noisy_max(epsilon=eps)
    if noise == "discrete_laplace" and "scale" in explanation:
        return MechanismRecord.discrete_laplace(
            sensitivity=explanation["l1_sensitivity"], scale=explanation["scale"]
        )
    if noise == "discrete_gaussian" and "sigma" in explanation:
        return MechanismRecord.discrete_gaussian(
            sensitivity=explanation["l2_sensitivity"],
            sigma=explanation["sigma"],
            epsilon=eps,
            delta=delta,
        )
    return MechanismRecord.generic(epsilon=eps, delta=delta)


def records_from_explanation(explanation: Mapping[str, Any]) -> list[MechanismRecord]:
    """Records of one stored statistic: a mean gives two (sum part, count part).

    Statistics this module does not know are generic (eps, delta) records, which
    every accountant may use soundly.
    """
    if explanation.get("statistic") == "mean":
        return [_from_noise(explanation["sum"]), _from_noise(explanation["count"])]
    if explanation.get("statistic") in ("count", "histogram", "sum", "argmax"):
        return [_from_noise(explanation)]
    return [
        MechanismRecord.generic(epsilon=explanation["epsilon"], delta=explanation.get("delta", "0"))
    ]
