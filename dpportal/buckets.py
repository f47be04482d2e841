"""dpportal's own cells beside the declared categories: "Other" and "Missing".

A categorical axis has the declared categories, then "Other" (values outside the
list), then "Missing" (when the column's missing values are counted as a category);
a binned numeric axis has its bins, then "Missing" when counted. These two are the
product's buckets, not the data's: readers must never mistake one for a category.

So a declaration may not name a category like a bucket in any language (compared
after Unicode NFKC, case folding and trimming: "OTHER", "其他" and "(Missing)" are
all refused), and every page writes a bucket in its own form, "(Other)" and
"(Missing)" in the reader's language, with a note saying what it holds.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.utils import translation
from django.utils.translation import gettext, pgettext

#: the names the compute path gives the buckets (releases.compute.readers)
OTHER = "Other"
MISSING = "Missing"
#: a bucket's mark in a statistic's public data, by its name
MARKS = {OTHER: "other", MISSING: "missing"}


def normalized(text: str) -> str:
    """`text` as compared with a bucket's name: NFKC, case folded, trimmed."""
    return unicodedata.normalize("NFKC", str(text)).casefold().strip()


def bucket_name(mark: str) -> str:
    """The bucket's plain name in the active language ("Other", "其他")."""
    if mark == "missing":
        return pgettext("cell", "Missing")
    return pgettext("cell", "Other")


def bucket_text(mark: str) -> str:
    """How a page writes the bucket, in the active language: "(Other)", "(Missing)"."""
    return pgettext("bucket", "(%(bucket)s)") % {"bucket": bucket_name(mark)}


def bucket_note(mark: str) -> str:
    """What the bucket holds, for its tooltip, in the active language."""
    if mark == "missing":
        return gettext("dpportal's own cell: the records with no value")
    return gettext("dpportal's own cell: values outside the declared categories")


def bucket_holds(mark: str) -> str:
    """What the bucket holds, as words inside a sentence, in the active language."""
    if mark == "missing":
        return gettext("missing values counted as a category")
    return gettext("values outside the declared categories")


def bucket_names() -> dict[str, str]:
    """Every name a bucket is written with in any language, normalized -> its mark."""
    names: dict[str, str] = {}
    for code, _name in settings.LANGUAGES:
        with translation.override(code):
            for plain, mark in MARKS.items():
                names[normalized(plain)] = mark
                names[normalized(bucket_name(mark))] = mark
                names[normalized(bucket_text(mark))] = mark
    return names


def bucket_named(text: str) -> str | None:
    """The mark of the bucket `text` would be read as ("other", "missing"), or None."""
    return bucket_names().get(normalized(text))


def axis_marks(domain: Mapping[str, Any]) -> list[str]:
    """Per cell of one axis of a frozen spec (a column's public domain, in the order compute
    gives its cells): "" for a declared category or bin, "other" and "missing" for the
    buckets."""
    if domain.get("kind") == "categorical":
        marks = [""] * len(domain.get("categories") or []) + ["other"]
    else:
        marks = [""] * max(0, len(domain.get("bin_edges") or []) - 1)
    return marks + (["missing"] if domain.get("missing") == "category" else [])


def cell_marks(
    domains: Sequence[Mapping[str, Any]], *, cells: int, shape: Sequence[int] | None
) -> dict[str, list[str]]:
    """The bucket marks of a result's cells, found by their place on its axes, so that a
    bucket is told from a category even when an old declaration gave a category its name:
    {"cell_buckets"} for one axis, also {"row_buckets", "col_buckets"} for two. Empty when
    the cells are not the axes' (a count of one category, the most common category)."""
    axes = [axis_marks(d) for d in domains]
    if shape and len(axes) == 2 and [len(a) for a in axes] == list(shape):
        rows, cols = axes
        return {
            "cell_buckets": [r or c for r in rows for c in cols],
            "row_buckets": rows,
            "col_buckets": cols,
        }
    if len(axes) == 1 and len(axes[0]) == cells:
        return {"cell_buckets": axes[0]}
    return {}
