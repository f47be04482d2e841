"""Words several parts of the product show for the same codes, in the reader's language."""

from __future__ import annotations

from django.utils.translation import gettext


def mechanism_label(code: str) -> str:
    """A release's mechanism family ("laplace", "gaussian") in words."""
    return {
        "laplace": gettext("Laplace mechanism (pure epsilon-differential privacy)"),
        "gaussian": gettext("Gaussian mechanism ((epsilon, delta)-differential privacy)"),
    }.get(code, code)
