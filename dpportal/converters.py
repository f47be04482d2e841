"""URL converters: project slugs in any script.

A project named 人口普查 gets the address /p/人口普查/ (percent-encoded on the wire,
shown readable by browsers) instead of none: slugify(allow_unicode=True) keeps
letters and digits of every script, and this converter accepts them back.
"""

from __future__ import annotations


class UnicodeSlugConverter:
    """Letters and digits of any script, '-' and '_' (Django's `slug` is ASCII only)."""

    regex = r"[-\w]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value
