"""Removing large files: the name goes at once, the space when the thread closes it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from datasets.ingest import removal


def _release_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "release"]


def _open_descriptors_of(path: Path) -> list[str]:
    """This process's descriptors open on `path` (unlinked files read '<path> (deleted)')."""
    found = []
    for entry in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{entry}")
        except OSError:
            continue  # the listing's own descriptor, closed meanwhile
        if target.removesuffix(" (deleted)") == str(path):
            found.append(target)
    return found


def test_a_large_file_loses_its_name_at_once_and_its_descriptor_in_the_thread(tmp_path):
    path = tmp_path / "upload.csv"
    path.write_bytes(b"x" * removal.RELEASE_BYTES)
    gate = threading.Event()
    closed = []
    real_close = os.close

    def held_close(descriptor: int) -> None:  # the thread's close waits for the test
        if threading.current_thread().name == "release":
            gate.wait(10)
            closed.append(descriptor)
        real_close(descriptor)

    os.close = held_close
    try:
        removal.remove(path)
        assert not path.exists()  # nothing can open it again
        assert _open_descriptors_of(path) == [f"{path} (deleted)"]  # its space still held
        gate.set()
        for thread in _release_threads():
            thread.join(10)
    finally:
        os.close = real_close
    assert len(closed) == 1
    assert _open_descriptors_of(path) == []  # freed


def test_a_small_file_is_freed_in_place(tmp_path):
    path = tmp_path / "small.csv"
    path.write_bytes(b"a,b\n1,2\n")
    before = set(_release_threads())
    removal.remove(path)
    assert not path.exists()
    assert set(_release_threads()) <= before
    assert _open_descriptors_of(path) == []


def test_a_missing_file_or_a_link_is_fine(tmp_path):
    removal.remove(tmp_path / "never.csv")
    target = tmp_path / "target.csv"
    target.write_bytes(b"x" * removal.RELEASE_BYTES)
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    removal.remove(link)  # the link goes, never what it points to
    assert not link.is_symlink() and target.stat().st_size == removal.RELEASE_BYTES
