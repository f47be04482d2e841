"""The product's own name and version, as public documents state them.

The version is pyproject.toml's `[project] version`, read once: one place to raise it,
and every document that names the product (a deployment entry, a release's facts)
names the same one.
"""

from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

__all__ = ["PRODUCT_NAME", "product_version"]

PRODUCT_NAME = "dpportal"

_PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


@cache
def product_version() -> str:
    """The product's version ('0.1.0'), from pyproject.toml."""
    with _PYPROJECT.open("rb") as handle:
        return str(tomllib.load(handle)["project"]["version"])
