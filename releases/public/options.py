"""The reader's choices on a public release page: confidence level, intervals, display."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from django.utils.translation import gettext

from dpportal.errors import ValidationFailed

CONFIDENCE_LEVELS: tuple[str, ...] = ("0.9", "0.95", "0.99")
CONFIDENCE_LABELS: dict[str, str] = {"0.9": "90 %", "0.95": "95 %", "0.99": "99 %"}
DEFAULT_CONFIDENCE = "0.95"
INTERVAL_KINDS: tuple[str, ...] = ("per_cell", "simultaneous")
DISPLAY_MODES: tuple[str, ...] = ("raw", "rounded")


@dataclass(frozen=True)
class ViewOptions:
    """What the reader chose on the release page (validated)."""

    confidence: str = DEFAULT_CONFIDENCE
    intervals: str = "per_cell"
    display: str = "raw"
    page: int = 1  # of each long statistic's cells (releases.public.paging)

    @property
    def cache_variant(self) -> str:
        return f"{self.confidence}:{self.intervals}:{self.display}:{self.page}"


def confidence_parse(*, value: str | None) -> str:
    """The confidence level named by a query parameter: one of 0.9, 0.95, 0.99."""
    if value is None or value.strip() == "":
        return DEFAULT_CONFIDENCE
    text = value.strip().rstrip("%").strip()
    for level in CONFIDENCE_LEVELS:
        if (
            text == level
            or _same_number(text, level)
            or _same_number(text, str(100 * float(level)))
        ):
            return level
    raise ValidationFailed(
        gettext("confidence must be one of 0.9, 0.95 or 0.99 (90 %, 95 % or 99 %).")
    )


def _same_number(text: str, level: str) -> bool:
    try:
        return Decimal(text) == Decimal(level)
    except ArithmeticError:
        return False


def view_options_parse(*, query: dict[str, str]) -> ViewOptions:
    """The release page's options from its query string; bad values raise ValidationFailed."""
    confidence = confidence_parse(value=query.get("confidence"))
    intervals = (query.get("intervals") or "per_cell").strip()
    if intervals not in INTERVAL_KINDS:
        raise ValidationFailed(gettext("intervals must be 'per_cell' or 'simultaneous'."))
    display = (query.get("display") or "raw").strip()
    if display not in DISPLAY_MODES:
        raise ValidationFailed(gettext("display must be 'raw' or 'rounded'."))
    return ViewOptions(
        confidence=confidence, intervals=intervals, display=display, page=page_parse(query=query)
    )


#: the largest page number accepted (a page past a statistic's last shows its last)
MAX_PAGE = 1_000_000


def page_parse(*, query: dict[str, str]) -> int:
    """The `page` query parameter: a whole number from 1 (default 1)."""
    text = (query.get("page") or "1").strip()
    if not text.isascii() or not text.isdigit() or not (1 <= int(text) <= MAX_PAGE):
        raise ValidationFailed(
            gettext("page must be a whole number from 1 to %(max)s.") % {"max": f"{MAX_PAGE:,}"}
        )
    return int(text)
