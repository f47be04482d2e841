"""One column's PUBLIC domain: validation of what an owner declares for it.

The kinds an owner may give are categorical, numeric, date and excluded, whatever
type the ingest inferred (the type override): a text column may be declared date,
or numeric when most of its cells are numbers (the ingest's profile says so; the
other cells count as missing). Decimal numbers cannot be categories. A
date column is stored as categorical over the bins of its public range (year,
quarter, month or day), with `Column.date` saying how to read it
(datasets.domains). Missing-value codes (e.g. -9, 999) are public values that
every release computation treats as missing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation

from django.utils.translation import gettext, gettext_noop

from datasets.domains import DATE_BINS, DATE_FORMATS, date_bin_labels
from datasets.models import Column
from datasets.services.category_labels import set_category_labels
from dpportal.bidi import bidi_controls_in, shown
from dpportal.bilingual import LABEL_MAX_CHARS
from dpportal.buckets import bucket_holds, bucket_name, bucket_names, normalized

MAX_CATEGORIES = 1000
MAX_CATEGORY_LENGTH = 200
MAX_MISSING_CODES = 20
MAX_CODE_LENGTH = 50
DATE = "date"
KINDS = (Column.Kind.CATEGORICAL, Column.Kind.NUMERIC, DATE, Column.Kind.EXCLUDED)
DECLARED_FIELDS = [
    "kind",
    "categories",
    "lower",
    "upper",
    "bin_edges",
    "missing",
    "missing_codes",
    "date",
    "derived_from_data",
    "category_labels",
    "label",
    "label_zh",
    "bounds_estimate",
    "categories_source",
]
#: a date range with too many bins, by bin (translated when the problem is found)
_TOO_MANY_BINS = {
    "year": gettext_noop(
        "the range holds more than %(limit)s years: bin by a longer period or narrow the range."
    ),
    "quarter": gettext_noop(
        "the range holds more than %(limit)s quarters: bin by a longer period or narrow the range."
    ),
    "month": gettext_noop(
        "the range holds more than %(limit)s months: bin by a longer period or narrow the range."
    ),
    "day": gettext_noop(
        "the range holds more than %(limit)s days: bin by a longer period or narrow the range."
    ),
}


def column_kind(column: Column) -> str:
    """The kind as the owner declared it: 'date' for a date column."""
    return DATE if column.date else column.kind


def number(value: object, *, label: str, errors: list[str]) -> Decimal | None:
    text = str(value if value is not None else "").strip()
    if not text:
        errors.append(gettext("%(label)s is required.") % {"label": label})
        return None
    try:
        parsed = Decimal(text)
    except (InvalidOperation, ValueError):
        errors.append(gettext("%(label)s must be a number.") % {"label": label})
        return None
    if not parsed.is_finite():
        errors.append(gettext("%(label)s must be a finite number.") % {"label": label})
        return None
    if abs(parsed) >= Decimal("1e20") or parsed.as_tuple().exponent < -10:  # type: ignore[operator]
        errors.append(
            gettext("%(label)s must be below 10^20 with at most 10 decimal places.")
            % {"label": label}
        )
        return None
    return parsed


def lines(value: object, *, separator: str) -> list[str]:
    if isinstance(value, list | tuple):
        items = [str(v) for v in value]
    else:
        items = str(value or "").replace("\r", "").split(separator)
    return [item.strip() for item in items if item.strip()]


def declare_column(column: Column, spec: Mapping[str, object]) -> list[str]:
    """Validate `spec` and set the column's public domain; returns the problems found."""
    errors: list[str] = []
    kind = str(spec.get("kind") or "").strip()
    missing = str(spec.get("missing") or Column.Missing.DROP).strip()
    if kind not in KINDS:
        return [gettext("choose categorical, numeric, date or excluded.")]
    published = (column.kind, list(column.categories or []), bool(column.date))
    if missing not in Column.Missing.values:
        errors.append(gettext("choose what happens to missing values."))
    column.kind, column.missing = (Column.Kind.CATEGORICAL if kind == DATE else kind), missing
    column.categories, column.lower, column.upper, column.bin_edges = [], None, None, []
    column.missing_codes, column.date = [], {}
    if kind == Column.Kind.CATEGORICAL:
        _categorical(column, spec, errors)
    elif kind == Column.Kind.NUMERIC:
        _numeric(column, spec, errors)
    elif kind == DATE:
        _date(column, spec, errors)
    if kind != Column.Kind.EXCLUDED:
        _missing_codes(column, spec, errors, numeric=kind == Column.Kind.NUMERIC)
    set_category_labels(column, spec, errors)
    _labels(column, spec, errors)
    _estimate_kept(column)
    # categories published by a release stay recorded only while they are those values
    if (column.kind, list(column.categories or []), bool(column.date)) != published:
        column.categories_source = {}
    return errors


def _estimate_kept(column: Column) -> None:
    """Forget where the bounds came from once they are not the estimate's any more (the
    owner typed others, or declared the column otherwise): typed bounds are the owner's."""
    estimate = column.bounds_estimate or {}
    if not estimate:
        return
    for end in ("lower", "upper"):
        given = estimate.get(end)
        declared = getattr(column, end)
        if (given is None) != (declared is None) or (
            given is not None and Decimal(str(given)) != Decimal(declared)
        ):
            column.bounds_estimate = {}
            return


def _labels(column: Column, spec: Mapping[str, object], errors: list[str]) -> None:
    """The column's label for readers in English and Chinese, when the spec gives them
    (kept as they are otherwise): at most LABEL_MAX_CHARS each, no direction control."""
    for field in ("label", "label_zh"):
        if field not in spec:
            continue
        text = str(spec.get(field) or "").strip()
        if len(text) > LABEL_MAX_CHARS:
            errors.append(
                gettext("a label may be at most %(limit)s characters.") % {"limit": LABEL_MAX_CHARS}
            )
        elif bidi_controls_in(text):
            errors.append(
                gettext("the label %(label)s holds an invisible direction control: remove it.")
                % {"label": shown(text)}
            )
        else:
            setattr(column, field, text)


def _categorical(column: Column, spec: Mapping[str, object], errors: list[str]) -> None:
    if column.suggested_type == Column.Type.FLOAT:
        errors.append(
            gettext(
                "this column holds decimal numbers: declare it numeric (with bin edges) instead."
            )
        )
    categories = lines(spec.get("categories"), separator="\n")
    if not categories:
        errors.append(gettext("list at least one category, one per line."))
    if len(categories) > MAX_CATEGORIES:
        errors.append(
            gettext("at most %(limit)s categories are allowed.") % {"limit": MAX_CATEGORIES}
        )
    if column.suggested_type == Column.Type.INTEGER:
        normalized = []
        for category in categories:
            try:
                normalized.append(str(int(category)))
            except ValueError:
                errors.append(
                    gettext("category '%(category)s' is not a whole number.")
                    % {"category": category[:50]}
                )
        categories = normalized
    if any(len(c) > MAX_CATEGORY_LENGTH for c in categories):
        errors.append(
            gettext("categories must be at most %(limit)s characters.")
            % {"limit": MAX_CATEGORY_LENGTH}
        )
    for category in categories:
        controls = bidi_controls_in(category)
        if controls:
            errors.append(
                gettext(
                    "category '%(category)s' holds the invisible direction control "
                    "%(controls)s, which changes how the text around it is displayed: "
                    "remove it."
                )
                % {"category": shown(category[:50]), "controls": ", ".join(controls)}
            )
    _bucket_names(categories, errors)
    duplicates = sorted({c for c in categories if categories.count(c) > 1})
    if duplicates:
        errors.append(
            gettext("categories are listed twice: %(categories)s.")
            % {"categories": ", ".join(duplicates[:10])}
        )
    column.categories = categories


def _bucket_names(categories: list[str], errors: list[str]) -> None:
    """Refuse a category named like one of dpportal's own cells, in any language or case
    (dpportal.buckets): a reader could not tell the two apart."""
    names = bucket_names()  # once: every language's names of the buckets
    for category in categories:
        mark = names.get(normalized(category))
        if mark is None:
            continue
        errors.append(
            gettext(
                "category '%(category)s' reads like “%(bucket)s”, the cell dpportal adds for "
                "%(holds)s: rename the category (for example '%(suggestion)s') so readers can "
                "tell them apart."
            )
            % {
                "category": category[:50],
                "bucket": bucket_name(mark),
                "holds": bucket_holds(mark),
                "suggestion": gettext("%(category)s (as answered)") % {"category": category[:50]},
            }
        )


def _numeric(column: Column, spec: Mapping[str, object], errors: list[str]) -> None:
    if column.suggested_type == Column.Type.STRING and not (column.profile or {}).get(
        "unreadable_share"
    ):
        # the ingest found that most cells are not numbers (datasets.ingest.profile)
        errors.append(
            gettext(
                "this column holds text (most of its cells are not numbers): declare it "
                "categorical, date or excluded."
            )
        )
    lower = number(spec.get("lower"), label=gettext("the lower bound"), errors=errors)
    upper = number(spec.get("upper"), label=gettext("the upper bound"), errors=errors)
    if lower is not None and upper is not None and lower >= upper:
        errors.append(gettext("the lower bound must be below the upper bound."))
    column.lower, column.upper = lower, upper
    edges_text = lines(spec.get("bin_edges"), separator=",")
    edges = [
        number(e, label=gettext("bin edge '%(edge)s'") % {"edge": e[:50]}, errors=errors)
        for e in edges_text
    ]
    if edges and None not in edges:
        if len(edges) < 2:
            errors.append(gettext("give at least two bin edges, or none."))
        if any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
            errors.append(gettext("bin edges must be strictly increasing."))
        if lower is not None and upper is not None and (edges[0] < lower or edges[-1] > upper):
            errors.append(gettext("bin edges must lie within [lower, upper]."))
        column.bin_edges = [str(e) for e in edges]


def _day(value: object, *, label: str, errors: list[str]) -> dt.date | None:
    text = str(value if value is not None else "").strip()
    if not text:
        errors.append(
            gettext("%(label)s is required (a date such as 2024-01-31).") % {"label": label}
        )
        return None
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        errors.append(
            gettext("%(label)s must be a date written YYYY-MM-DD, such as 2024-01-31.")
            % {"label": label}
        )
        return None
    if not 1000 <= day.year <= 9999:
        errors.append(
            gettext("%(label)s must lie between the years 1000 and 9999.") % {"label": label}
        )
        return None
    return day


def _date(column: Column, spec: Mapping[str, object], errors: list[str]) -> None:
    unit = str(spec.get("date_bin") or "").strip()
    layout = str(spec.get("date_format") or "YYYY-MM-DD").strip()
    if unit not in DATE_BINS:
        errors.append(
            gettext("choose how dates are binned: by %(bins)s.")
            % {"bins": ", ".join(gettext(b) for b in DATE_BINS)}
        )
    if layout not in DATE_FORMATS:
        errors.append(
            gettext("choose how dates are written: %(formats)s.")
            % {"formats": ", ".join(DATE_FORMATS)}
        )
    if column.suggested_type == Column.Type.FLOAT:
        errors.append(gettext("this column holds decimal numbers, not dates."))
    lower = _day(spec.get("date_lower"), label=gettext("the first date"), errors=errors)
    upper = _day(spec.get("date_upper"), label=gettext("the last date"), errors=errors)
    if lower and upper and lower > upper:
        errors.append(gettext("the first date must not be after the last date."))
    if errors or lower is None or upper is None:
        return
    labels = date_bin_labels(lower, upper, unit, limit=MAX_CATEGORIES)
    if labels is None:
        errors.append(gettext(_TOO_MANY_BINS[unit]) % {"limit": MAX_CATEGORIES})
        return
    column.categories = labels
    column.date = {
        "bin": unit,
        "format": layout,
        "lower": lower.isoformat(),
        "upper": upper.isoformat(),
    }


def _missing_codes(
    column: Column, spec: Mapping[str, object], errors: list[str], *, numeric: bool
) -> None:
    codes = lines(spec.get("missing_codes"), separator=",")
    if len(codes) > MAX_MISSING_CODES:
        errors.append(
            gettext("at most %(limit)s missing-value codes are allowed.")
            % {"limit": MAX_MISSING_CODES}
        )
        return
    if any(len(c) > MAX_CODE_LENGTH for c in codes):
        errors.append(
            gettext("missing-value codes must be at most %(limit)s characters.")
            % {"limit": MAX_CODE_LENGTH}
        )
        return
    if numeric:
        parsed = [
            number(c, label=gettext("missing-value code '%(code)s'") % {"code": c}, errors=errors)
            for c in codes
        ]
        if None in parsed:
            return
        codes = [_plain(c) for c in parsed]  # type: ignore[arg-type]
    duplicates = sorted({c for c in codes if codes.count(c) > 1})
    if duplicates:
        errors.append(
            gettext("missing-value codes are listed twice: %(codes)s.")
            % {"codes": ", ".join(duplicates)}
        )
    clash = [c for c in codes if c in column.categories]
    if clash:
        errors.append(
            gettext("a missing-value code cannot also be a category: %(codes)s.")
            % {"codes": ", ".join(clash[:10])}
        )
    column.missing_codes = codes


def _plain(value: Decimal) -> str:
    text = format(value, "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
