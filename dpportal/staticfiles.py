"""The static files storage: whitenoise's compressed manifest, hashed names always.

Django's manifest storage hands out the UNhashed name of a file while DEBUG is
on, so the embedded default of scripts/run.sh (DEBUG with collected files) would
serve plotly.js with `max-age=0` under a name that never changes. Forcing the
hashed name makes every mode that serves collected files cache-busting, and lets
whitenoise mark those files immutable.
"""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class HashedStaticFilesStorage(CompressedManifestStaticFilesStorage):
    def url(self, name: str | None, force: bool = False) -> str:
        return super().url(name, force=True)
