"""System checks of the datasets app (run by `manage.py check`, migrate and runserver).

datasets.E001: an allowed root for registering local data in place
(DPPORTAL_EXTERNAL_ROOTS) contains or lies inside MEDIA_ROOT, dpportal's own folder:
every project's private files would be reachable through it. Registration refuses
such locations anyway (datasets.locations); the check stops the server from starting
with the setting.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from datasets.locations import roots_containing_own_storage

ROOT_OVERLAPS_MEDIA = "datasets.E001"


@register()
def external_roots_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    return [
        Error(
            f"DPPORTAL_EXTERNAL_ROOTS entry {str(root)!r} contains or lies inside MEDIA_ROOT, "
            "dpportal's own storage.",
            hint="Allow only folders that are apart from MEDIA_ROOT.",
            id=ROOT_OVERLAPS_MEDIA,
        )
        for root in roots_containing_own_storage()
    ]
