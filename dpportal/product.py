"""The product's name and version, as public documents state them.

The version is the one in pyproject.toml, read once: from the installed package's
metadata when dpportal is installed, else from the pyproject.toml beside the code
(the image copies the whole repository).
"""

from __future__ import annotations

import tomllib
from importlib import metadata
from pathlib import Path

NAME = "dpportal"

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _version() -> str:
    try:
        return metadata.version(NAME)
    except metadata.PackageNotFoundError:
        with PYPROJECT.open("rb") as handle:
            return str(tomllib.load(handle)["project"]["version"])


VERSION = _version()
