"""A frozen specification's public domains as the OpenDP program reads them.

The program (releases.opendp_program, its body releases.opendp_runner) receives only
parsed, typed values: floats for bounds and edges, strings for categories and cell
labels, ints for positions. The kinds' `opendp_parameters` build their entries from
these helpers, so every kind words a column or an axis the same way.
"""

from __future__ import annotations

from typing import Any

from releases.kinds.base import frac


def column_parameters(domain: dict[str, Any]) -> dict[str, Any]:
    """A numeric column: its name and the codes that mean "missing" (as strings)."""
    return {
        "name": str(domain["name"]),
        "missing_codes": [str(c) for c in domain.get("missing_codes") or []],
    }


def axis_parameters(axis: Any, domain: dict[str, Any]) -> dict[str, Any]:
    """One declared axis (releases.compute.Axis) with its cells in the portal's order:
    categories, then "Other", then "Missing" (a missing cell only where declared), or
    bins by edges (clamped into the first and last edges), then "Missing"."""
    return {
        **column_parameters(domain),
        "categorical": bool(axis.categorical),
        "categories": [str(c) for c in domain.get("categories") or []] if axis.categorical else [],
        "edges": [float(frac(e)) for e in domain.get("bin_edges") or []]
        if not axis.categorical
        else [],
        "cells": [str(label) for label in axis.labels],
        "missing_cell": bool(axis.missing_cell),
    }


def axes_parameters(entry: dict[str, Any], axes: list) -> list[dict[str, Any]]:
    """The entry's axes, each with its frozen domain (matched by column name)."""
    domains = {str(d["name"]): d for d in entry.get("columns") or []}
    return [axis_parameters(axis, domains[str(axis.name)]) for axis in axes]
