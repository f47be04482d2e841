"""Private files: what dpportal stores of a dataset is readable by its own user only.

A dataset's upload, its Parquet and its person-rows copy are files 0600 in folders
0700, from MEDIA_ROOT down, whatever the process's umask: another account on the
host can neither list the folders nor read the files. Files written by pyarrow or
DuckDB (which follow the umask) are chmod-ed before they are renamed into place;
until then they sit in a 0700 folder, where no one else can open them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

from django.conf import settings

FILE_MODE = 0o600
FOLDER_MODE = 0o700


def private_folder(path: Path) -> Path:
    """Create `path` if needed; it and its parents up to MEDIA_ROOT (when it lies below)
    are made FOLDER_MODE."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    root = Path(settings.MEDIA_ROOT).resolve()
    folder = path.resolve()
    chain = [folder]
    if folder.is_relative_to(root):
        chain += [p for p in folder.parents if p.is_relative_to(root)]
    for each in chain:
        os.chmod(each, FOLDER_MODE)
    return path


def private_file(path: Path | str) -> None:
    """Make a written file FILE_MODE (before it is renamed into place)."""
    os.chmod(path, FILE_MODE)


def open_private(path: Path) -> BinaryIO:
    """Open `path` for writing (truncated), created FILE_MODE; its folder made private."""
    private_folder(Path(path).parent)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, FILE_MODE)
    os.fchmod(descriptor, FILE_MODE)  # an existing file keeps its mode otherwise
    return os.fdopen(descriptor, "wb")
