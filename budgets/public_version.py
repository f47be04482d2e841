"""A project's public version: a token in the cache that changes whenever anything a
public page of the project shows may have changed.

The public registry (its JSON, page and API) and the project's cached release pages
and downloads are cached under this token, so that a request when nothing changed is
answered from the cache without a database query (and, for an anonymous reader,
before the middleware stack: dpportal.public_cache, which serves a kept answer only
while this token holds the value its view read). Every service that changes what
they show calls `project_public_changed` (the ledger: approvals, charges, refunds;
publications; the caps; project and dataset texts; the privacy unit), which puts a
fresh token in place at once and again when its transaction commits: a reader between
the two may cache a page built from the state before the commit under the first
token, never under the second.

The token is random, never derived from the data, and kept `SECONDS` only: a change
whose new token was lost (the cache was down at that moment: dpportal.cache answers
as an empty cache) shows at the latest when the old token expires. Keyed by the
project's slug, which never changes once the project exists (a change made in the
admin calls this for the old and the new slug).
"""

from __future__ import annotations

import hashlib
import secrets

from django.core.cache import cache
from django.db import transaction

from dpportal.local_copies import LocalCopies

#: how long a token is kept: the longest a change whose new token was lost stays unseen
SECONDS = 60


def public_version_key(*, slug: str) -> str:
    """The token's cache key (for a caller that reads it with others in one round trip):
    short whatever the slug's script or length (memcached refuses keys over 250)."""
    # 64 bits of the slug's digest: unique enough among a site's projects, and shorter
    # than anything the broker's leak scans take for a secret (tests/leak_scan.py)
    return "public:version:" + hashlib.sha256(slug.encode()).hexdigest()[:16]


def _key(slug: str) -> str:
    return public_version_key(slug=slug)


def project_public_version_peek(*, slug: str) -> str | None:
    """The project's current token, or None when there is none (nothing cached yet)."""
    return cache.get(_key(slug))


def project_public_version(*, slug: str) -> str:
    """The project's current token, made now if there is none.

    Read it BEFORE reading the data a cached entry is built from: an entry is then
    never stored under a token newer than its data.
    """
    token = secrets.token_hex(8)
    if cache.add(_key(slug), token, SECONDS):
        return token
    # set by someone else in between, or the cache is down (then nothing is kept anyway)
    return cache.get(_key(slug)) or token


def _renew(slug: str) -> None:
    cache.set(_key(slug), secrets.token_hex(8), SECONDS)


def project_public_changed(*, slug: str) -> None:
    """What the project's public pages show has changed (or is about to, in this
    transaction): a fresh token now, and another once the transaction commits."""
    _renew(slug)
    transaction.on_commit(lambda: _renew(slug))


#: the copies of the public pages' entries in this process
local_copies = LocalCopies()
