"""Compile the message catalogues (locale/*/LC_MESSAGES/*.po -> .mo) with Babel.

Babel is pure Python, so installing the project needs no system gettext (msgfmt):
scripts/_venv.sh, the Dockerfile and the test session all run ``python -m
dpportal.catalogues``. The .po files are in the repository; the .mo files are not.
Fuzzy entries are compiled out (as msgfmt does), so a fuzzy guess never reaches a page.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"


def po_files(root: Path = LOCALE_DIR) -> list[Path]:
    return sorted(root.glob("*/LC_MESSAGES/*.po"))


def compile_all(root: Path = LOCALE_DIR) -> list[Path]:
    """Write each .po's .mo when it is missing or older than the .po; return those written."""
    written = []
    for po in po_files(root):
        mo = po.with_suffix(".mo")
        if mo.exists() and mo.stat().st_mtime >= po.stat().st_mtime:
            continue
        with po.open("rb") as handle:
            catalog = read_po(handle, locale=po.parent.parent.name)
        # A name of this process's own: test processes running side by side may compile
        # the same catalogue at once, and each renames its whole file into place.
        tmp = mo.with_suffix(f".mo.{os.getpid()}.tmp")
        with tmp.open("wb") as handle:
            write_mo(handle, catalog, use_fuzzy=False)
        tmp.replace(mo)
        written.append(mo)
    return written


if __name__ == "__main__":
    for path in compile_all():
        print(f"compiled {path.relative_to(LOCALE_DIR.parent)}", file=sys.stderr)
