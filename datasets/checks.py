"""System checks of the datasets app (run by `manage.py check`, migrate and runserver).

An allow-list for registering data in place that contains or lies inside dpportal's
own storage would reach every project's private files through it. Registration
refuses such locations anyway (datasets.locations); these checks stop the server
from starting with the setting.

- datasets.E001: a DPPORTAL_EXTERNAL_ROOTS folder contains or lies inside MEDIA_ROOT.
- datasets.E002: a DPPORTAL_EXTERNAL_S3_ROOTS location contains or lies inside
  DPPORTAL_S3_PREFIX of DPPORTAL_S3_BUCKET.
- datasets.E003: a DPPORTAL_EXTERNAL_S3_ROOTS entry is not s3://bucket/prefix/.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import Error, register

from datasets.locations import roots_containing_own_storage, s3_roots_overlapping_own_storage

ROOT_OVERLAPS_MEDIA = "datasets.E001"
S3_ROOT_OVERLAPS_STORAGE = "datasets.E002"
S3_ROOT_INVALID = "datasets.E003"


@register()
def external_roots_check(app_configs: Any = None, **kwargs: Any) -> list[Error]:
    errors = [
        Error(
            f"DPPORTAL_EXTERNAL_ROOTS entry {str(root)!r} contains or lies inside MEDIA_ROOT, "
            "dpportal's own storage.",
            hint="Allow only folders that are apart from MEDIA_ROOT.",
            id=ROOT_OVERLAPS_MEDIA,
        )
        for root in roots_containing_own_storage()
    ]
    try:
        overlapping = s3_roots_overlapping_own_storage()
    except ValueError as exc:
        return [*errors, Error(f"DPPORTAL_EXTERNAL_S3_ROOTS: {exc}", id=S3_ROOT_INVALID)]
    errors += [
        Error(
            f"DPPORTAL_EXTERNAL_S3_ROOTS entry 's3://{'/'.join([bucket, *parts])}/' contains "
            "or lies inside DPPORTAL_S3_PREFIX of DPPORTAL_S3_BUCKET, dpportal's own storage.",
            hint="Allow only prefixes that are apart from dpportal's own.",
            id=S3_ROOT_OVERLAPS_STORAGE,
        )
        for bucket, parts in overlapping
    ]
    return errors
