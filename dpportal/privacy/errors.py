"""The one exception the privacy math raises for bad parameters."""

from __future__ import annotations

__all__ = ["PrivacyParameterError"]


class PrivacyParameterError(ValueError):
    """A privacy parameter is outside the range where the math is valid.

    Raised for: epsilon <= 0, NaN or infinite; delta outside [0, 1), or 0 where
    the Gaussian mechanism needs delta > 0; confidence outside (0, 1);
    lower > upper; an empty category list; a contribution bound L < 1; a cell
    count k < 1; a granularity that is not a positive power of two; and any
    other parameter that would make a stated guarantee false. The message
    names the parameter and the value received, so it can be shown to a data
    owner as is.
    """
